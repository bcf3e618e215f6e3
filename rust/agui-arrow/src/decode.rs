//! Sources into record batches: each source read whole ([`decode_source`]), cut into
//! parts, or framed on the calling thread for workers; many sources in order
//! ([`decode_many`]) on the threads of the kept pool.

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use crate::batch::BatchBuilder;
use crate::issue::Issue;
use crate::parallel::decode_source_parallel;
use crate::parts::{decode_source_parts, plain_source};
use crate::pool;
use crate::rows::each_row;
use crate::source::{Control, Options, Source};
use arrow_array::RecordBatch;

/// Decode one source on `threads` threads: cut into parts when it is plain, else read
/// whole by the core reader (on more threads: framed by the calling thread, parsed by
/// the others).
pub(crate) fn decode_one(src: &Source<'_>, opts: &Options, control: &Control, threads: usize) -> Result<Option<Decoded>, Issue> {
    match plain_source(src, opts) {
        Some((format, len)) => decode_source_parts(src, format, len, opts, control, threads),
        None if threads > 1 => decode_source_parallel(src, opts, control, threads),
        None => decode_source(src, opts, control),
    }
}

/// The batches and issues of one source.
#[derive(Default)]
pub struct Decoded {
    pub batches: Vec<RecordBatch>,
    pub issues: Vec<Issue>,
}

/// Decode one source into record batches.
pub fn decode_source(src: &Source<'_>, opts: &Options, control: &Control) -> Result<Option<Decoded>, Issue> {
    let mut out = Decoded::default();
    let mut builder = BatchBuilder::new(src.name.clone()).columns_with(opts.columns);
    let info = each_row(src, opts, control, &mut out.issues, |ev, json, f| {
        builder.push(ev, json, f);
        if builder.full() {
            out.batches.push(builder.finish());
        }
    })?;
    if info.is_none() {
        return Ok(None);
    }
    if !builder.is_empty() {
        out.batches.push(builder.finish());
    }
    Ok(Some(out))
}

/// Run `work` on `threads` threads (`work` takes its items from a shared counter until
/// none are left, so any of them can do all of it): `threads` workers of the kept pool
/// ([`pool`]) while the calling thread waits, or, when there is no pool to be had, the
/// calling thread and `threads - 1` scoped ones. The calling thread takes no share on the
/// pool: its allocator heap is the cold one (what it allocates is freed with the table and
/// purged before its next call, so the kernel zeroed fresh pages for it every call, ~3% of
/// a call's CPU in `perf`, none on a worker, whose heap gets the pages freed to it back at
/// its next call). Two threads cost 8-13% more CPU than one with the caller working,
/// ~3% with it waiting. A thread that cannot be started (a process at its thread
/// limit) is not an error: the others, the calling thread at least, do its share.
pub(crate) fn run_on<F: Fn() + Sync>(threads: usize, work: F) {
    if threads <= 1 {
        return work();
    }
    if let Some(pool) = pool::get(threads) {
        return pool.in_place_scope(|s| {
            for _ in 0..threads {
                s.spawn(|_| work());
            }
        });
    }
    std::thread::scope(|s| {
        for _ in 1..threads {
            if spawn(s, &work).is_err() {
                break;
            }
        }
        work();
    });
}

/// A scoped thread (`Err` at the process's thread limit, or in a test that asks for it).
pub(crate) fn spawn<'s, 'e, F: FnOnce() + Send + 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    f: F,
) -> std::io::Result<std::thread::ScopedJoinHandle<'s, ()>> {
    #[cfg(test)]
    if crate::tests::NO_THREADS.with(std::cell::Cell::get) {
        return Err(std::io::Error::other("no thread (test)"));
    }
    std::thread::Builder::new().spawn_scoped(s, f)
}

/// One source's outcome, filled by whichever thread decoded it (`None` until then).
pub(crate) type Slot = Mutex<Option<Result<Option<Decoded>, Issue>>>;

/// The most threads one call runs on (more than a machine's cores only wait their turn).
pub const MAX_THREADS: usize = 256;

/// Decode many sources, `threads` at a time (each source on one thread; at most
/// [`MAX_THREADS`]), in source order. Without `collect`, the first failing source (in
/// order) fails the call and the others stop early.
pub fn decode_many(sources: &[Source<'_>], threads: usize, opts: &Options, control: &Control) -> Result<Decoded, Issue> {
    let threads = threads.min(MAX_THREADS);
    // Fewer sources than threads: one source at a time, its events parsed on every
    // thread. Otherwise one source per thread.
    let pipelined = threads > 1 && sources.len() < threads;
    let threads = if pipelined { threads } else { threads.clamp(1, sources.len().max(1)) };
    let runners = if pipelined { 1 } else { threads };
    let results: Vec<Slot> = sources.iter().map(|_| Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(src) = sources.get(i) else { break };
        if control.cancel.load(Ordering::Relaxed) {
            break;
        }
        let r = decode_one(src, opts, control, if pipelined { threads } else { 1 });
        if r.is_err() {
            control.cancel.store(true, Ordering::Relaxed);
        }
        *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    };
    run_on(runners, work);
    let mut out = Decoded::default();
    let mut first_error = None;
    for r in results {
        match r.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(Some(d))) => {
                out.batches.extend(d.batches);
                out.issues.extend(d.issues);
            }
            Some(Err(e)) if first_error.is_none() => first_error = Some(e),
            _ => {}
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}
