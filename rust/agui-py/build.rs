//! Exposes PyO3's interpreter cfgs (`Py_GIL_DISABLED`, `Py_3_x`) to this crate's code, so
//! `gil.rs` can refuse free-threaded builds at compile time.
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
