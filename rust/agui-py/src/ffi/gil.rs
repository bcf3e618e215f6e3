//! The one place where this extension relies on the GIL for thread safety.
//!
//! Process-wide caches (per-class field plans, JSON Pointer token tables) are plain cells
//! guarded by the GIL instead of locks, and plans are shared through `Rc` (the atomic count
//! of `Arc` was a measurable part of encoding a small event). That is sound only when
//! holding a `Python<'py>` token means no other thread runs Python or this module's code:
//! a GIL build of CPython, with the module declaring that it needs the GIL.
//!
//! Both halves of that assumption are enforced, not assumed:
//! * building for a free-threaded CPython (`Py_GIL_DISABLED`) is a compile error below;
//! * the module is declared `gil_used = true` (`lib.rs`), so an interpreter that could
//!   run without the GIL re-enables it when importing us.

#[cfg(Py_GIL_DISABLED)]
compile_error!(
    "agui_fast._native relies on the GIL (see rust/agui-py/src/gil.rs): \
     free-threaded CPython builds are not supported yet"
);

use pyo3::Python;
use std::cell::UnsafeCell;

/// A cell whose contents are only ever touched while holding the GIL.
///
/// Every access goes through [`GilCell::with`], which requires a `Python<'_>` token, and
/// the closure must not call into Python (no borrow is held across a call that could
/// release the GIL or re-enter this module), so borrows never overlap.
pub(crate) struct GilCell<T>(UnsafeCell<T>);

// SAFETY: see the module documentation: the GIL serialises every access, and GIL builds
// are the only ones this crate compiles for.
unsafe impl<T: Send> Sync for GilCell<T> {}

impl<T> GilCell<T> {
    pub(crate) const fn new(v: T) -> Self {
        GilCell(UnsafeCell::new(v))
    }

    /// Run `f` with exclusive access. `f` must not call into Python.
    #[inline]
    pub(crate) fn with<R>(&self, _py: Python<'_>, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: the GIL (proved by `_py`) serialises threads; `f` does not call Python,
        // so it cannot re-enter and alias the borrow.
        unsafe { f(&mut *self.0.get()) }
    }
}

/// Marks a value holding `Rc`s or borrowed Python pointers as movable into a `GilCell`.
///
/// `Rc` counts are only touched with the GIL held (in `GilCell`s and on the stack of calls
/// holding a `Python` token), so moving such values between the threads that take turns
/// holding the GIL is sound on the GIL builds this crate compiles for.
pub(crate) struct GilBound<T>(pub(crate) T);

// SAFETY: see above and the module documentation.
unsafe impl<T> Send for GilBound<T> {}
