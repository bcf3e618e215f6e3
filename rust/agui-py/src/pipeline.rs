//! Producer thread + consumer on the calling thread, for whole-buffer decoding.
//!
//! The typed decoders end in one msgspec call per part, which holds the GIL for the whole
//! part. A Python worker thread therefore cannot prepare the next part meanwhile (it needs
//! the GIL to start); a Rust thread that never touches Python can. `pipelined` runs
//! `produce` on such a thread and hands each item to `consume` on the calling thread, in
//! order, waiting for items with the GIL released. The thread plumbing is the core's
//! (`agui_core::pipeline`, also behind `replay_log`'s pipelining).

use pyo3::prelude::*;

/// Run `produce` on a scoped thread until it returns `(item, true)` (the last item) and
/// pass every item to `consume`, in order. At most `agui_core::pipeline::QUEUE` items
/// wait in between. An error from `consume` stops the producer (its next hand-over
/// fails) and is returned once the thread has ended.
pub fn pipelined<T: Send>(
    py: Python<'_>,
    mut produce: impl FnMut() -> (T, bool) + Send,
    consume: impl FnMut(T) -> PyResult<()>,
) -> PyResult<()> {
    agui_core::pipeline::pipelined(
        move |send| loop {
            let (item, last) = produce();
            if !send(item) || last {
                return;
            }
        },
        consume,
        |rx| py.detach(move || (rx.recv(), rx)),
    )
}
