//! Per-event cost of the core replay on a recorded SSE log (bytes in, final messages and
//! state out), split into its parts. Generate the log with
//! `python benches/_stream_log.py LOG`, then
//! `cargo run --release -p agui-core --example stream_replay -- LOG`.

use agui_core::sse::{SseParser, DEFAULT_MAX_BUFFER};
use agui_core::stream::{parse_event, replay, replay_log, replay_log_pipelined, replay_sse, replay_sse_many, ReplayOptions};
use serde_json::Value;
use std::time::Instant;

fn frames(log: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut p = SseParser::new(DEFAULT_MAX_BUFFER);
    p.feed(log, |f| out.push(f.data.to_vec())).unwrap();
    p.finish(|f| out.push(f.data.to_vec())).unwrap();
    out
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, f64) {
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64()
        })
        .collect();
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (samples[0], samples[runs / 2])
}

/// CPU time of the process so far (user + system), from /proc/self/stat (0 elsewhere).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|x| x.parse::<f64>().ok()).sum());
    ticks / 100.0
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: stream_replay LOG [--pipelined|--threshold]");
    let log = std::fs::read(&path).expect("read the log (see the module doc)");
    let payloads = frames(&log);
    let n = payloads.len() as f64;
    let runs = 9;
    let empty = || Value::Object(Default::default());
    let report = |what: &str, (min, med): (f64, f64)| {
        println!("{what:44} min {:8.1} ms  median {:8.1} ms  {:6.0} ns/event (median)", min * 1e3, med * 1e3, med * 1e9 / n);
    };
    println!("{path}: {} bytes, {} events, {runs} runs", log.len(), payloads.len());
    if std::env::args().nth(2).as_deref() == Some("--dump") {
        // The final messages and state as JSON, to compare with another replayer.
        let r = replay_sse(&log, Vec::new(), empty(), ReplayOptions::default());
        let out = serde_json::json!({"messages": r.messages, "state": r.state});
        std::fs::write(std::env::args().nth(3).expect("--dump PATH"), out.to_string()).unwrap();
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("--pipelined") {
        // Only the pipelined replay, for a profiler's per-thread view (`perf report --sort tid`).
        report(
            "replay_log_pipelined",
            time(30, || replay_log_pipelined(&log[..], None, Vec::new(), empty(), ReplayOptions::default()).messages.len()),
        );
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("--threshold") {
        // One thread vs pipelined on the log's first bytes (cut after a frame), interleaved:
        // where the second thread starts to pay (`stream::PIPELINE_MIN`).
        // From the third frame: the run opens with a ~200 KB state snapshot, which would
        // make every small prefix one event.
        let body = {
            let mut at = 0;
            for _ in 0..2 {
                at += log[at..].windows(2).position(|w| w == b"\n\n").map_or(0, |i| i + 2);
            }
            &log[at..]
        };
        for kb in [16usize, 32, 64, 128, 256, 512, 1024] {
            let cut = body[..kb << 10].windows(2).rposition(|w| w == b"\n\n").map_or(0, |i| i + 2);
            let part = &body[..cut];
            let runs = (8192 / kb).clamp(15, 400);
            let (mut one, mut two) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                let t = Instant::now();
                std::hint::black_box(replay_log(part, None, Vec::new(), empty(), ReplayOptions::default()));
                one.push(t.elapsed().as_secs_f64());
                let t = Instant::now();
                std::hint::black_box(replay_log_pipelined(part, None, Vec::new(), empty(), ReplayOptions::default()));
                two.push(t.elapsed().as_secs_f64());
            }
            one.sort_by(f64::total_cmp);
            two.sort_by(f64::total_cmp);
            println!(
                "{kb:5} KB: one thread min {:8.3} ms median {:8.3} ms; pipelined min {:8.3} ms median {:8.3} ms; one/pipelined {:.2}x min {:.2}x median",
                one[0] * 1e3, one[runs / 2] * 1e3, two[0] * 1e3, two[runs / 2] * 1e3, one[0] / two[0], one[runs / 2] / two[runs / 2]
            );
        }
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("--profile-log") {
        // replay_log on one thread, then pipelined (framing + parsing on a second thread),
        // interleaved, with the process CPU time per run (Linux: /proc/self/stat).
        let (mut one, mut two) = (Vec::new(), Vec::new());
        for _ in 0..20 {
            for (pipelined, out) in [(false, &mut one), (true, &mut two)] {
                let (c, t) = (cpu_seconds(), Instant::now());
                let r = if pipelined {
                    replay_log_pipelined(&log[..], None, Vec::new(), empty(), ReplayOptions::default())
                } else {
                    replay_log(&log[..], None, Vec::new(), empty(), ReplayOptions::default())
                };
                std::hint::black_box(r);
                out.push((t.elapsed().as_secs_f64(), cpu_seconds() - c));
            }
        }
        for (what, runs) in [("replay_log, one thread", &mut one), ("replay_log_pipelined", &mut two)] {
            let (mut wall, mut cpu): (Vec<f64>, Vec<f64>) = runs.iter().copied().unzip();
            wall.sort_by(f64::total_cmp);
            let cpu_ms = cpu.iter().sum::<f64>() / cpu.len() as f64 * 1e3;
            cpu.clear();
            println!("{what:30} wall min {:6.1} ms median {:6.1} ms  CPU {cpu_ms:6.1} ms per run (mean)", wall[0] * 1e3, wall[wall.len() / 2] * 1e3);
        }
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("--profile") {
        // Only the user's path, for a profiler.
        report("replay_sse", time(30, || replay_sse(&log, Vec::new(), empty(), ReplayOptions::default()).messages.len()));
        return;
    }

    let check = replay_sse(&log, Vec::new(), empty(), ReplayOptions::default());
    assert!(check.error.is_none(), "{:?}", check.error);
    println!("final: {} messages, {} state keys", check.messages.len(), check.state.as_object().map_or(0, |o| o.len()));

    report("SSE framing only", time(runs, || frames(&log).len()));
    report("framing + JSON -> Value", time(runs, || frames(&log).iter().filter(|p| parse_event(p).is_ok()).count()));
    let events: Vec<Value> = payloads.iter().map(|p| parse_event(p).unwrap()).collect();
    report(
        "replay of parsed events (clone incl.)",
        time(runs, || replay(events.clone(), Vec::new(), empty(), ReplayOptions::default()).messages.len()),
    );
    report("clone of the parsed events (to subtract)", time(runs, || events.clone().len()));
    report(
        "replay_sse (bytes -> messages + state)",
        time(runs, || replay_sse(&log, Vec::new(), empty(), ReplayOptions::default()).messages.len()),
    );
    let verify = ReplayOptions { verify: true, ..ReplayOptions::default() };
    report(
        "replay_log, one thread",
        time(runs, || replay_log(&log[..], None, Vec::new(), empty(), ReplayOptions::default()).messages.len()),
    );
    report(
        "replay_log_pipelined (two threads)",
        time(runs, || replay_log_pipelined(&log[..], None, Vec::new(), empty(), ReplayOptions::default()).messages.len()),
    );
    report("replay_sse with verification", time(runs, || replay_sse(&log, Vec::new(), empty(), verify).messages.len()));
    // Two logs, one thread then two (per-event figures are per event of one log).
    let logs: Vec<&[u8]> = vec![&log, &log];
    let one = time(runs, || replay_sse_many(&logs, ReplayOptions::default(), 1).len());
    let two = time(runs, || replay_sse_many(&logs, ReplayOptions::default(), 2).len());
    report("2 logs, 1 thread", one);
    report("2 logs, 2 threads", two);
    println!("2-thread throughput gain: {:.2}x (min) {:.2}x (median)", one.0 / two.0, one.1 / two.1);
}
