//! Every `unsafe` step of the binding, and nothing else: direct reads of CPython objects'
//! memory (`layout`), the object walker over them (`walk`), the GIL-guarded caches (`gil`).
pub(crate) mod gil;
pub(crate) mod layout;
pub(crate) mod walk;
