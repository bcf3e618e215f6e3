//! agui-py: the thin PyO3 binding of agui-core, built as `agui_fast._native`.
//! Each submodule registers its own functions and classes; logic lives in agui-core.
//! Every raw step past PyO3's safe API is in `ffi`, each with the comment that justifies
//! it; the rest of the crate is safe Rust (the crate's lints in Cargo.toml enforce both).

use pyo3::prelude::*;

// mimalloc: the protobuf decoder allocates many small prost strings and vectors per
// event; with glibc malloc/free, payload-heavy events decoded ~40 % slower.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod args;
mod arrow;
mod construct;
mod decoder;
mod dump;
mod encode;
mod errors;
mod ffi;
mod patch;
mod pipeline;
mod plan;
mod proto;
mod shared;
mod sse;
mod stream;

/// Whether the core runs nested work on the thread's own stack only, as the interpreter
/// checks its recursion by the stack pointer (`agui_core::limits::set_host_checks_stack`).
#[pyfunction]
fn host_checks_stack() -> bool {
    agui_core::limits::host_checks_stack()
}

// The GIL is required: see gil.rs (stated here, not left to PyO3's default).
#[pymodule(gil_used = true)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_MAX_DEPTH", agui_core::limits::DEFAULT_MAX_DEPTH)?;
    m.add("DEFAULT_MAX_ERRORS", agui_arrow::DEFAULT_MAX_ERRORS)?;
    m.add("DEFAULT_MAX_PATCH_BYTES", agui_core::limits::DEFAULT_MAX_PATCH_BYTES)?;
    // The direct reads of object memory are checked against the API once, here.
    ffi::layout::get(m.py());
    // CPython 3.14 and later check their recursion by the stack pointer: their code must
    // not run on a stack segment of the core's (`agui_core::limits::set_host_checks_stack`).
    agui_core::limits::set_host_checks_stack(m.py().version_info() >= (3, 14));
    args::register(m)?;
    construct::register(m)?;
    arrow::register(m)?;
    encode::register(m)?;
    dump::register(m)?;
    patch::register(m)?;
    // Test-only helpers live in a private submodule, off the public surface.
    let testing = PyModule::new(m.py(), "_testing")?;
    proto::register(m, &testing)?;
    sse::register(m, &testing)?;
    stream::register(m)?;
    testing.add_function(wrap_pyfunction!(ffi::layout::direct_reads, &testing)?)?;
    testing.add_function(wrap_pyfunction!(host_checks_stack, &testing)?)?;
    m.add_submodule(&testing)?;
    Ok(())
}
