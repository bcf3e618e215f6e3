//! Producer thread + consumer on the calling thread, for batch decoding.
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

/// A file read on a Rust thread, chunk by chunk, each chunk turned into an item by
/// `process` (`None` at the end of the file); the iterator classes of the SSE and protobuf
/// log readers hand the items to Python one at a time. At most two items wait, so memory
/// stays bounded by a few chunks. Dropping it stops and joins the thread.
pub struct FileThread<T: Send + 'static> {
    // A Mutex only to make the owning class Sync (PyO3 requires it); the owner's
    // `&mut self` already serialises the calls.
    rx: std::sync::Mutex<Option<std::sync::mpsc::Receiver<std::io::Result<T>>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<T: Send + 'static> FileThread<T> {
    /// Open `path` (an error raises here, as `OSError`) and start reading. `process`
    /// returns `(item, last)`; after a last item the thread ends.
    pub fn spawn(
        path: &std::path::Path,
        chunk_size: usize,
        mut process: impl FnMut(Option<&[u8]>) -> (T, bool) + Send + 'static,
    ) -> PyResult<Self> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<T>>(2);
        let mut buf = vec![0u8; chunk_size.max(1)];
        let thread = std::thread::spawn(move || loop {
            let n = match file.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let (item, last) = process(if n == 0 { None } else { Some(&buf[..n]) });
            // A send fails only when the reader was dropped.
            if tx.send(Ok(item)).is_err() || last || n == 0 {
                return;
            }
        });
        Ok(FileThread { rx: std::sync::Mutex::new(Some(rx)), thread: Some(thread) })
    }

    /// The next item (waiting with the GIL released), `None` once the thread is done; a
    /// read error raises `OSError` and ends the stream.
    pub fn next(&mut self, py: Python<'_>) -> PyResult<Option<T>> {
        let slot = self.rx.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(rx) = slot.take() else { return Ok(None) };
        let (msg, rx) = py.detach(move || (rx.recv(), rx));
        match msg {
            Ok(Ok(item)) => {
                *slot = Some(rx);
                Ok(Some(item))
            }
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Ok(None),
        }
    }
}

impl<T: Send + 'static> Drop for FileThread<T> {
    fn drop(&mut self) {
        // Closing the channel makes the thread's next send fail; it then returns.
        let slot = self.rx.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        drop(slot.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
