//! The one place where this extension relies on the GIL for thread safety.
//!
//! Process-wide caches (per-class field plans, JSON Pointer token tables, the encoder's
//! reused buffers) are plain cells guarded by the GIL instead of locks, and plans are
//! shared through `Rc` (the atomic count of `Arc` was a measurable part of encoding a small
//! event). That is sound only when holding a `Python<'py>` token means no other thread
//! runs Python or this module's code: a GIL build of CPython, with the module declaring
//! that it needs the GIL.
//!
//! Both halves of that assumption are enforced, not assumed:
//! * building for a free-threaded CPython (`Py_GIL_DISABLED`) is a compile error below;
//! * the module is declared `gil_used = true` (`lib.rs`), so an interpreter that could
//!   run without the GIL re-enables it when importing us.
//!
//! Within one thread, a cell is borrowed by one closure at a time: [`GilCell::with`] marks
//! the cell busy for the closure's run and declines (returns `None`) a second borrow made
//! meanwhile, e.g. by Python code that a decref in the closure ran and that called back
//! into this module. Callers treat a declined borrow as a cache miss.

#[cfg(Py_GIL_DISABLED)]
compile_error!(
    "agui_fast._native relies on the GIL (see rust/agui-py/src/ffi/gil.rs): \
     free-threaded CPython builds are not supported yet"
);

use std::cell::{Cell, UnsafeCell};

use pyo3::Python;

/// A cell whose contents are only ever touched while holding the GIL, by one closure at a
/// time ([`GilCell::with`]).
pub(crate) struct GilCell<T> {
    busy: Cell<bool>,
    value: UnsafeCell<T>,
}

/// Contents a [`GilCell`] may hand from one thread to another while the GIL passes between
/// them: values whose only thread-unsafe parts are `Rc` counts and borrowed Python
/// pointers, which every thread touches only while holding the GIL.
///
/// # Safety
/// The type must hold nothing tied to one thread other than `Rc`s and Python references
/// (no guards, no thread-local handles), and its `Rc`s must only be cloned or dropped with
/// the GIL held (an `Rc` cannot leave a thread, so a clone taken out of a cell stays on a
/// thread that held the GIL to take it, and is dropped there).
pub(crate) unsafe trait GilShare {}

// SAFETY: every access to `busy` and `value` holds the GIL (the `Python` token `with`
// requires), which serialises the threads (with the happens-before of its lock), and this
// crate is built for GIL builds of CPython only (above); `T: GilShare` may move between
// threads that take turns holding the GIL.
unsafe impl<T: GilShare> Sync for GilCell<T> {}

impl<T> GilCell<T> {
    pub(crate) const fn new(v: T) -> Self {
        GilCell { busy: Cell::new(false), value: UnsafeCell::new(v) }
    }

    /// Run `f` with exclusive access to the contents; `None` (and `f` not run) when the cell
    /// is already borrowed further up this thread's stack.
    #[inline]
    pub(crate) fn with<R>(&self, _py: Python<'_>, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        if self.busy.replace(true) {
            return None;
        }
        /// Clears the flag when `f` returns or unwinds.
        struct Release<'a>(&'a Cell<bool>);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let _release = Release(&self.busy);
        // SAFETY: the GIL (proved by `_py`) serialises threads, and `busy` was clear: no
        // other `&mut` to the contents exists on this thread until `_release` clears it.
        Some(f(unsafe { &mut *self.value.get() }))
    }
}

// The contents of the crate's cells. SAFETY (each): its only thread-bound parts are `Rc`s
// (plans, enum tables) and Python references or pointers, touched with the GIL held only.
// SAFETY: plain bytes.
unsafe impl GilShare for Vec<u8> {}
// SAFETY: see above: `Rc` plans of the walker, keyed by type address.
unsafe impl GilShare for Option<crate::plan::TypeMap> {}
// SAFETY: see above: `Rc` construction plans, keyed by type address.
unsafe impl GilShare for Option<crate::construct::Plans> {}
// SAFETY: see above: owned references to `str` objects (released with the GIL held, by
// the walker that took them) and `Rc` plans.
unsafe impl GilShare for Option<crate::ffi::walk::Spare> {}
// SAFETY: see above: `Py` references only.
unsafe impl<V: Send> GilShare for Option<agui_core::patch::cache::SlotCache<V>> {}
