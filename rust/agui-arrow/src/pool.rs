//! The worker threads kept between calls (a rayon pool): a call on several threads wakes
//! workers that are already there instead of starting threads, so it pays no thread
//! start and its workers' caches and allocator heaps are warm (docs/logs.md).
//!
//! One pool per process, as large as the most threads a call has asked for (the calling
//! thread waits for them: `run_on` says why). A child made by `fork()` has the pool's
//! memory but none of its threads: the pool is tied to the process id and built anew
//! in the child, the parent's copy leaked there (dropping it would wake threads that do
//! not exist, behind locks that may have been held at the fork).

use std::sync::{Arc, Mutex, TryLockError};

use rayon_core::{ThreadPool, ThreadPoolBuilder};

struct Pool {
    pid: u32,
    pool: Arc<ThreadPool>,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

/// A pool of this process with at least `workers` threads, or `None` when there is none
/// to be had now: threads cannot be started (a process at its thread limit), or the lock
/// is held, by another call taking the pool at this moment or, in a forked child, by a
/// thread that did not survive the fork (so this never waits on it). The caller then
/// starts threads of its own.
pub(crate) fn get(workers: usize) -> Option<Arc<ThreadPool>> {
    #[cfg(test)]
    if crate::tests::NO_THREADS.with(std::cell::Cell::get) {
        return None;
    }
    take(&POOL, workers, std::process::id())
}

/// [`get`] from `slot`, for process `pid`.
fn take(slot: &Mutex<Option<Pool>>, workers: usize, pid: u32) -> Option<Arc<ThreadPool>> {
    let mut slot = match slot.try_lock() {
        Ok(slot) => slot,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    match slot.take() {
        Some(p) if p.pid == pid && p.pool.current_num_threads() >= workers => {
            let pool = p.pool.clone();
            *slot = Some(p);
            return Some(pool);
        }
        // Smaller: dropped here, its threads end once the calls using it are done.
        Some(p) if p.pid == pid => drop(p),
        // Another process's (we are a forked child): its threads are not ours.
        Some(p) => std::mem::forget(p),
        None => {}
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(workers)
        .thread_name(|i| format!("agui-arrow-{i}"))
        .build()
        .ok()?;
    let pool = Arc::new(pool);
    *slot = Some(Pool { pid, pool: pool.clone() });
    Some(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_grown_and_rebuilt_in_a_child() {
        let slot = Mutex::new(None);
        let a = take(&slot, 1, 10).unwrap();
        assert!(Arc::ptr_eq(&a, &take(&slot, 1, 10).unwrap()), "kept between calls");
        let b = take(&slot, 2, 10).unwrap();
        assert!(!Arc::ptr_eq(&a, &b) && b.current_num_threads() == 2, "grown");
        assert!(Arc::ptr_eq(&b, &take(&slot, 1, 10).unwrap()), "not shrunk");
        // Another pid: a forked child, which has none of the parent's threads.
        let c = take(&slot, 1, 11).unwrap();
        assert!(!Arc::ptr_eq(&b, &c) && c.current_num_threads() == 1);
        // The lock held (in a child: by a thread lost in the fork): no wait, no pool.
        let held = slot.lock().unwrap();
        assert!(take(&slot, 1, 11).is_none());
        drop(held);
        // The pool's threads run the work, the calling thread too.
        let names = Mutex::new(Vec::new());
        let barrier = std::sync::Barrier::new(2);
        let work = || {
            barrier.wait();
            names.lock().unwrap().push(std::thread::current().name().map(str::to_string));
        };
        c.in_place_scope(|s| {
            s.spawn(|_| work());
            work();
        });
        let mut want = vec![Some("agui-arrow-0".to_string()), std::thread::current().name().map(str::to_string)];
        let mut names = names.into_inner().unwrap();
        names.sort();
        want.sort();
        assert_eq!(names, want);
    }
}
