//! Every `unsafe` step of the binding, and nothing else: the one module where the crate's
//! `unsafe_code = "deny"` (Cargo.toml) is allowed. Each block carries a `SAFETY:` comment
//! (`clippy::undocumented_unsafe_blocks` is denied too) saying what makes it sound, and
//! each read of CPython memory past the limited API the version gate it stands on
//! (`layout::Layout::detect`: CPython 3.10–3.13, 64-bit little-endian, every kind of read
//! checked against the API at import; `layout::struct_vectorcall`: 3.10–3.14). With
//! `AGUI_FAST_PUBLIC_API=1` in the environment at import, every read goes through the
//! API and construction through `tp_call`: the paths of interpreters whose layouts are not
//! known here, tested on the ones that are.
//!
//! * `layout`: the direct reads of object memory and the reference counts changed in place;
//! * `walk`: the one object walker over them (`Walker`), generic over its sink;
//! * `dump`: the sink of `model_dump`'s Python mode (`PyDump`: Python objects);
//! * `construct`: the Structs' metaclass call slot (`tp_call`, vectorcall) and `PyRead`,
//!   the reading of Python values by the core's construction checks;
//! * `entry`: the `METH_O` entry point of `EventEncoder.encode`;
//! * `gil`: the GIL-guarded caches (`GilCell`);
//! * `api`: C API calls without a safe PyO3 form (GC pause, type flags, data descriptors);
//! * `arrow`: a Python `bytes` as an Arrow buffer, and the columns agui-arrow vouches for;
//! * `float`: doubles formatted in place by the JSON writer.
#![allow(unsafe_code)]

pub(crate) mod api;
pub(crate) mod arrow;
pub(crate) mod construct;
pub(crate) mod entry;
pub(crate) mod float;
pub(crate) mod gil;
pub(crate) mod layout;
pub(crate) mod dump;
pub(crate) mod walk;
