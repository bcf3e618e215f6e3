//! The state of a native object that several Python threads may share (a decoder fed
//! from two threads, a document patched from a thread pool).
//!
//! Calls take turns, as the standard library's decompressors do: a call that finds the
//! object busy waits for the call in progress, with the GIL released while it waits
//! (that call may itself have released the GIL for its work, or be running Python code of
//! the decoding chain). Without this, PyO3's borrow check would answer the second thread
//! with `RuntimeError: Already borrowed`. A call made from inside a call on the same
//! object and thread (only a callback could make one) cannot wait for itself: it raises
//! `RuntimeError`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;

pub struct Shared<T> {
    /// `None` only while the object is freed.
    state: Mutex<Option<T>>,
    /// The thread whose call holds `state` (0: none): tells a re-entrant call from a
    /// concurrent one.
    owner: AtomicUsize,
    /// The nesting the state's values may reach: each call, and the state's drop, run
    /// on a stack with room for it (`agui_core::limits::deep`).
    max_depth: usize,
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        agui_core::limits::deep(self.max_depth, || drop(state));
    }
}

/// A number unique to the calling thread while it lives (the address of a thread-local).
fn this_thread() -> usize {
    thread_local!(static MARK: u8 = const { 0 });
    MARK.with(|m| m as *const u8 as usize)
}

/// Clears the owner when the call ends, a panic included.
struct Turn<'a, T> {
    guard: MutexGuard<'a, Option<T>>,
    owner: &'a AtomicUsize,
}

impl<T> Drop for Turn<'_, T> {
    fn drop(&mut self) {
        self.owner.store(0, Ordering::Relaxed);
    }
}

impl<T> Shared<T> {
    pub fn new(state: T) -> Self {
        Shared::deep(state, agui_core::limits::DEFAULT_MAX_DEPTH)
    }

    /// The state of an object whose values nest at most `max_depth` levels.
    pub fn deep(state: T, max_depth: usize) -> Self {
        Shared { state: Mutex::new(Some(state)), owner: AtomicUsize::new(0), max_depth }
    }

    /// The nesting the state's values may reach (given to [`deep`](Self::deep)).
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Run `f` on the state, once the calls of other threads before it are done.
    pub fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut T) -> PyResult<R>) -> PyResult<R> {
        let me = this_thread();
        let guard = match self.state.try_lock() {
            Ok(guard) => guard,
            // A panic in an earlier call (raised to Python as PanicException) left it.
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                if self.owner.load(Ordering::Relaxed) == me {
                    return Err(PyRuntimeError::new_err(
                        "re-entrant call: this object is in the middle of a call on the same thread",
                    ));
                }
                self.state.lock_py_attached(py).unwrap_or_else(PoisonError::into_inner)
            }
        };
        self.owner.store(me, Ordering::Relaxed);
        let mut turn = Turn { guard, owner: &self.owner };
        let state = turn.guard.as_mut().expect("the state is only taken when the object is freed");
        agui_core::limits::deep(self.max_depth, || f(state))
    }
}
