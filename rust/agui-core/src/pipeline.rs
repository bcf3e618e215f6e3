//! Two threads over one source: a producer on a scoped thread hands items (batches, never
//! single events: a hand-over costs about a microsecond) to a consumer on the calling
//! thread, in order, through a bounded channel. The one thread plumbing behind every
//! pipelined whole-input call: the binding's `decode_sse` / `decode_protobuf` (framing
//! ahead of Python decoding).

use std::sync::mpsc::{Receiver, RecvError};

/// Items waiting between the two sides: bounded memory, enough to keep both busy.
pub const QUEUE: usize = 2;

/// Stack of the producer thread: the stack of a main thread, because parsing and
/// dropping values nested up to `limits::MAX_DEPTH_CAP` levels recurses that deep.
/// Unoptimised builds (`cargo test`) use several times more stack per level: reserved
/// address space, not memory, so they get 8 times as much.
pub const STACK: usize = if cfg!(debug_assertions) { 64 << 20 } else { 8 << 20 };

/// Run `produce` on a scoped thread and pass every item it sends to `consume`, in order.
/// `produce` gets a `send` function that returns `false` once the consumer has stopped
/// (then it should return). An error from `consume` stops the consumer: it is returned
/// once the producer has ended. `wait` receives the next item (`Err` when the producer
/// is done and everything was consumed); it is handed the receiver by value so a binding
/// can wait with its interpreter lock released (`|rx| (rx.recv(), rx)` otherwise).
pub fn pipelined<T: Send, E>(
    produce: impl FnOnce(&mut dyn FnMut(T) -> bool) + Send,
    mut consume: impl FnMut(T) -> Result<(), E>,
    mut wait: impl FnMut(Receiver<T>) -> (Result<T, RecvError>, Receiver<T>),
) -> Result<(), E> {
    // The producer is taken by whichever side runs it: the new thread, or this one when no
    // thread can be started (a process at its thread limit gets the result, not a panic).
    let producer = std::sync::Mutex::new(Some(produce));
    let take = || producer.lock().unwrap_or_else(|e| e.into_inner()).take();
    std::thread::scope(|s| {
        let (tx, mut rx) = std::sync::mpsc::sync_channel::<T>(QUEUE);
        let spawned = std::thread::Builder::new().stack_size(STACK).spawn_scoped(s, move || {
            if let Some(produce) = take() {
                produce(&mut |item| tx.send(item).is_ok())
            }
        });
        if spawned.is_err() {
            let mut failed = None;
            if let Some(produce) = take() {
                produce(&mut |item| match consume(item) {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                });
            }
            return failed.map_or(Ok(()), Err);
        }
        loop {
            let (msg, back) = wait(rx);
            rx = back;
            match msg {
                Err(_) => return Ok(()),
                Ok(item) => consume(item)?,
            }
        }
    })
}

/// Free `value` on a thread of its own, which nobody waits for: the last step of a large
/// whole-input call (a replay's final messages and state: a few percent of its time) need
/// not hold up the caller. When no thread can be started, the value is freed here.
pub fn drop_aside<T: Send + 'static>(value: T) {
    // A failed spawn drops the closure, and the value with it, on this thread.
    let _ = std::thread::Builder::new().stack_size(STACK).spawn(move || drop(value));
}

/// [`pipelined`] waiting plainly (no interpreter lock to release).
pub fn run<T: Send, E>(produce: impl FnOnce(&mut dyn FnMut(T) -> bool) + Send, consume: impl FnMut(T) -> Result<(), E>) -> Result<(), E> {
    pipelined(produce, consume, |rx| (rx.recv(), rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_arrive_in_order_and_an_error_stops_the_producer() {
        let mut got = Vec::new();
        run(
            |send| {
                for i in 0..100 {
                    if !send(i) {
                        return;
                    }
                }
            },
            |i| -> Result<(), ()> {
                got.push(i);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());

        let sent = std::sync::atomic::AtomicUsize::new(0);
        let r = run(
            |send| {
                for i in 0..1_000_000 {
                    sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if !send(i) {
                        return;
                    }
                }
            },
            |i| if i == 5 { Err(i) } else { Ok(()) },
        );
        assert_eq!(r, Err(5));
        // The producer stopped soon after: at most the queue and one blocked send beyond.
        assert!(sent.into_inner() <= 5 + QUEUE + 2);
    }
}
