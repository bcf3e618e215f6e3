//! Producer thread + consumer on the calling thread, for whole-buffer decoding.
//!
//! The typed decoders end in one msgspec call per part, which holds the GIL for the whole
//! part. A Python worker thread therefore cannot prepare the next part meanwhile (it needs
//! the GIL to start); a Rust thread that never touches Python can. `pipelined` runs
//! `produce` on such a thread and hands each item to `consume` on the calling thread, in
//! order, waiting for items with the GIL released.

use pyo3::prelude::*;

/// Run `produce` on a scoped thread until it returns `(item, true)` (the last item) and
/// pass every item to `consume`, in order. At most two items wait in between (bounded
/// memory, enough to keep both sides busy). An error from `consume` stops the producer
/// (its next hand-over fails) and is returned once the thread has ended.
pub fn pipelined<T: Send>(
    py: Python<'_>,
    mut produce: impl FnMut() -> (T, bool) + Send,
    mut consume: impl FnMut(T) -> PyResult<()>,
) -> PyResult<()> {
    std::thread::scope(|s| {
        let (tx, mut rx) = std::sync::mpsc::sync_channel::<T>(2);
        s.spawn(move || loop {
            let (item, last) = produce();
            // A send fails only when the consumer stopped.
            if tx.send(item).is_err() || last {
                return;
            }
        });
        loop {
            let (msg, back) = py.detach(move || (rx.recv(), rx));
            rx = back;
            match msg {
                Err(_) => return Ok(()), // the producer is done and everything was consumed
                Ok(item) => consume(item)?,
            }
        }
    })
}
