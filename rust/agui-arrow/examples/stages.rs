//! Where the time of `to_arrow` goes, stage by stage, on an SSE or protobuf log given
//! as a path: `cargo run --release -p agui-arrow --example stages -- LOG` (milliseconds,
//! best of 7; the stages are cumulative). `+copy` is the floor of any design that keeps
//! the `json` column: framing and copying each payload once. `+members` (protobuf): the
//! columns read where the JSON mapping wrote them, instead of `+parse`'s second parse.
//! `python -m benches --stages [--callgrind]` runs it on the bench suite's logs.
//!
//! `AGUI_STAGES_ONCE=N`: only `decode_many` on one thread, N times, over the log as a
//! shared buffer (as the binding hands it `bytes`): for an instruction count that the
//! load of a shared machine does not move (`valgrind --tool=callgrind`).
//! `AGUI_STAGES_THREADS=T` there: on T threads (the log cut into parts as `to_arrow` cuts
//! it; callgrind counts every thread's instructions).
//! There the columns agui-arrow vouches for are made as the binding makes them
//! (`Options::columns`: arrow's unchecked constructors); with `AGUI_STAGES_CHECKED=1` by
//! arrow's checked ones (what every Rust test runs).

use std::time::Instant;

use agui_arrow::{fields, BatchBuilder, Control, Input, Options, Source};
use agui_core::log::{Limits, LogError, LogReader};

/// This thread's CPU time in seconds (`/proc/thread-self/schedstat`, nanoseconds): on a
/// loaded machine wall time measures the load more than the code.
fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace().next().and_then(|n| n.parse::<f64>().ok()).unwrap_or(0.0) * 1e-9
}

/// Best of 7 in milliseconds, wall time; with `AGUI_STAGES_CPU=1` this thread's CPU time
/// instead (single-threaded stages only), averaged over 16 runs each (the kernel's count
/// moves in ticks of a few milliseconds).
fn best<F: FnMut() -> usize>(mut f: F) -> (f64, usize) {
    let reps = if std::env::var_os("AGUI_STAGES_CPU").is_some() { 16 } else { 0 };
    let mut best = f64::MAX;
    let mut n = 0;
    for _ in 0..7 {
        let (t, c) = (Instant::now(), cpu());
        n = f();
        let took = if reps == 0 {
            t.elapsed().as_secs_f64()
        } else {
            for _ in 1..reps {
                n = f();
            }
            (cpu() - c) / reps as f64
        };
        best = best.min(took);
    }
    (best * 1e3, n)
}

/// The columns of one event as `to_arrow` reads them (protobuf: where the mapping wrote them).
fn row_fields<'a>(ev: &agui_core::log::Event<'_>, s: &'a str) -> fields::Fields<'a> {
    let depth = agui_core::limits::DEFAULT_MAX_DEPTH;
    fields::parse(s, ev.members, depth).unwrap()
}

/// The binding's `Options::columns` (`rust/agui-py/src/arrow.rs`, where the safety
/// argument is), for counts of what `to_arrow` runs.
fn trusted(column: agui_arrow::Trusted) -> agui_arrow::arrow_array::ArrayRef {
    use agui_arrow::arrow_array::{types::Int32Type, DictionaryArray, Int32Array, StringArray, StringViewArray};
    use agui_arrow::Trusted;
    use std::sync::Arc;
    match column {
        Trusted::Views(v) => {
            let (views, buffers) = v.into_parts();
            // SAFETY: `Utf8Views`' guarantee.
            Arc::new(unsafe { StringViewArray::new_unchecked(views.into(), buffers.into(), None) })
        }
        Trusted::Strings(s) => {
            let (offsets, values, nulls) = s.into_parts();
            // SAFETY: `Utf8Strings`' guarantee.
            let offsets = unsafe { agui_arrow::arrow_buffer::OffsetBuffer::new_unchecked(offsets) };
            Arc::new(unsafe { StringArray::new_unchecked(offsets, values, nulls) })
        }
        Trusted::Keys(k) => {
            let (keys, values) = k.into_parts();
            // SAFETY: `DictKeys`' guarantee.
            Arc::new(unsafe { DictionaryArray::<Int32Type>::new_unchecked(Int32Array::new(keys, None), values) })
        }
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("LOG");
    let data = std::fs::read(&path).unwrap();
    if let Some(n) = std::env::var("AGUI_STAGES_ONCE").ok().and_then(|n| n.parse::<usize>().ok()) {
        let buffer = agui_arrow::arrow_buffer::Buffer::from(data.as_slice());
        let threads = std::env::var("AGUI_STAGES_THREADS").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
        let mut opts = Options::default();
        if std::env::var_os("AGUI_STAGES_CHECKED").is_none() {
            opts.columns = trusted;
        }
        let mut rows = 0;
        for _ in 0..n {
            let src = [Source { input: Input::Buffer(buffer.clone()), name: None }];
            let d = agui_arrow::decode_many(&src, threads, &opts, &Control::default()).unwrap();
            rows += d.batches.iter().map(|b| b.num_rows()).sum::<usize>();
        }
        println!("{rows} rows");
        return;
    }
    let frame = || {
        let mut n = 0;
        LogReader::open(&data[..], None).unwrap().for_each(&Limits::default(), |_| -> Result<(), LogError> { n += 1; Ok(()) }).unwrap();
        n
    };
    println!("framing        {:?}", best(frame));
    let copy = || {
        let mut out = Vec::with_capacity(data.len());
        LogReader::open(&data[..], None).unwrap().for_each(&Limits::default(), |ev| -> Result<(), LogError> {
            out.extend_from_slice(ev.json);
            Ok(())
        }).unwrap();
        out.len()
    };
    println!("+copy          {:?}", best(copy));
    let parse = || {
        let mut n = 0;
        LogReader::open(&data[..], None).unwrap().for_each(&Limits::default(), |ev| -> Result<(), LogError> {
            let s = std::str::from_utf8(ev.json).unwrap();
            let f = fields::parse(s, None, agui_core::limits::DEFAULT_MAX_DEPTH).unwrap();
            n += f.ty.len();
            Ok(())
        }).unwrap();
        n
    };
    println!("+parse         {:?}", best(parse));
    // Protobuf: the columns read where the JSON mapping wrote them (what `to_arrow` does),
    // against `+parse` above, which parses the mapping's text again.
    let members = || {
        let mut n = 0;
        LogReader::open(&data[..], None).unwrap().for_each(&Limits::default(), |ev| -> Result<(), LogError> {
            let s = std::str::from_utf8(ev.json).unwrap();
            let f = row_fields(&ev, s);
            n += f.ty.len();
            Ok(())
        }).unwrap();
        n
    };
    println!("+members       {:?}", best(members));
    let build = || {
        let mut b = BatchBuilder::new(None);
        let mut rows = 0;
        LogReader::open(&data[..], None).unwrap().for_each(&Limits::default(), |ev| -> Result<(), LogError> {
            let s = std::str::from_utf8(ev.json).unwrap();
            let f = row_fields(&ev, s);
            b.push(&ev, s, &f);
            if b.len() >= 65536 {
                rows += b.finish().num_rows();
            }
            Ok(())
        }).unwrap();
        rows + b.finish().num_rows()
    };
    println!("+build         {:?}", best(build));
    for threads in [1, 2] {
        let all = || {
            let src = [Source { input: Input::Bytes(&data), name: None }];
            let d = agui_arrow::decode_many(&src, threads, &Options::default(), &Control::default()).unwrap();
            d.batches.iter().map(|b| b.num_rows()).sum()
        };
        println!("decode_many {threads}t {:?}", best(all));
    }
    // What a persistent worker would save per call: starting and joining a scoped thread.
    let spawn = || {
        std::thread::scope(|s| {
            s.spawn(|| ());
        });
        1
    };
    println!("thread start+join {:.1} us", best(spawn).0 * 1e3);
}
