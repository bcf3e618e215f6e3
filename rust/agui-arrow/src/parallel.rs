//! One source that cannot be cut into parts (compressed, or a stream) on several
//! threads: the calling thread reads and frames it, the workers make the rows.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use agui_core::log::Event;

use crate::batch::{BatchBuilder, BATCH_ROWS};
use crate::decode::{decode_source, spawn, Decoded};
use crate::fields;
use crate::issue::Issue;
use crate::rows::{each_event, row_event, Stop};
use crate::source::{Control, Options, Source};

/// Events of one source packed for a worker: their JSON texts back to back.
#[derive(Default)]
pub(crate) struct Packed {
    seq: usize,
    data: Vec<u8>,
    /// (frame index, byte offset, end of its JSON text in `data`)
    events: Vec<(u64, u64, usize)>,
}

/// Payload bytes per part: big enough to amortise the hand-over, small enough to
/// balance the workers.
pub(crate) const PART_BYTES: usize = 1 << 20;

/// Decode one source on `workers` threads: the calling thread reads and frames it (the
/// core reader: cheap) and packs the events into parts; the workers turn parts into
/// batches. Positions come from the reader, so they are exact; results are put back in
/// order. Memory stays bounded: at most `2 * workers` parts wait.
pub(crate) fn decode_source_parallel(src: &Source<'_>, opts: &Options, control: &Control, workers: usize) -> Result<Option<Decoded>, Issue> {
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc::sync_channel;

    let (tx, rx) = sync_channel::<Packed>(workers * 2);
    let rx = Mutex::new(rx);
    let results: Mutex<BTreeMap<usize, Result<Decoded, Issue>>> = Mutex::new(BTreeMap::new());
    // The first failing part (raise mode): parts after it are skipped, parts before it
    // still run, so the error reported is the first in the log.
    let failed_at = AtomicUsize::new(usize::MAX);
    let mut reader_issues = Vec::new();
    let read = std::thread::scope(|s| {
        let mut started = 0;
        for _ in 0..workers {
            let worker = spawn(s, || loop {
                let part = match rx.lock().unwrap_or_else(|p| p.into_inner()).recv() {
                    Ok(p) => p,
                    Err(_) => break,
                };
                if part.seq > failed_at.load(Ordering::Relaxed) {
                    continue;
                }
                let mut out = Decoded::default();
                let mut builder = BatchBuilder::new(src.name.clone()).columns_with(opts.columns);
                let mut shape = fields::Shape::default();
                let mut start = 0;
                let mut r = Ok(());
                for &(index, offset, end) in &part.events {
                    let ev = Event { index, offset, json: &part.data[start..end], members: None };
                    start = end;
                    r = row_event(&ev, None, &src.name, opts, control, &mut out.issues, &mut shape, &mut |ev, json, f| {
                        builder.push(ev, json, f)
                    });
                    if r.is_err() {
                        break;
                    }
                }
                let r = match r {
                    Ok(()) => {
                        if !builder.is_empty() {
                            out.batches.push(builder.finish());
                        }
                        Ok(out)
                    }
                    Err(Stop::Issue(issue)) => {
                        failed_at.fetch_min(part.seq, Ordering::Relaxed);
                        control.cancel.store(true, Ordering::Relaxed);
                        Err(issue)
                    }
                    Err(Stop::Cancelled) => unreachable!("row_event does not cancel"),
                };
                results.lock().unwrap_or_else(|p| p.into_inner()).insert(part.seq, r);
            });
            started += usize::from(worker.is_ok());
        }
        // No worker to be had (a process at its thread limit): read on this thread alone.
        if started == 0 {
            return None;
        }
        let mut part = Packed::default();
        let read = each_event(src, opts, control, &mut reader_issues, |ev, _| {
            part.data.extend_from_slice(ev.json);
            part.events.push((ev.index, ev.offset, part.data.len()));
            // (Rows too: a log of tiny events would pack millions into one part.)
            if part.data.len() >= PART_BYTES || part.events.len() >= BATCH_ROWS {
                let seq = part.seq + 1;
                let full = std::mem::replace(&mut part, Packed { seq, ..Packed::default() });
                // The workers only hang up when they are gone (a panic).
                tx.send(full).map_err(|_| Stop::Cancelled)?;
            }
            Ok(())
        });
        if !part.events.is_empty() {
            let _ = tx.send(part);
        }
        drop(tx);
        Some(read)
    });
    let Some(read) = read else { return decode_source(src, opts, control) };
    let mut out = Decoded::default();
    for (_, r) in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let d = r?;
        out.batches.extend(d.batches);
        out.issues.extend(d.issues);
    }
    // A framing problem comes after every event before it.
    let info = read?;
    out.issues.extend(reader_issues);
    Ok(info.map(|_| out))
}
