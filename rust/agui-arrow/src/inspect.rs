//! `agui-fast inspect`: a source's rows aggregated into a [`Report`].

use std::collections::{BTreeMap, HashSet};

use agui_core::log::Format;

use crate::issue::Issue;
use crate::rows::each_row;
use crate::source::{Control, Options, Source};

/// What `agui-fast inspect` prints for a log.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub format: Option<Format>,
    pub gzip: bool,
    pub bytes: u64,
    pub events: u64,
    pub types: BTreeMap<String, u64>,
    pub runs: usize,
    pub threads: usize,
    pub messages: usize,
    pub tool_calls: usize,
    /// Token counts summed over the log's events (each event's count an `i64`, as its
    /// column): exact, however many events (`i128` holds any such sum).
    pub usage: [Option<i128>; 6],
    pub first_timestamp: Option<i64>,
    pub last_timestamp: Option<i64>,
    pub issues: Vec<Issue>,
}

/// Aggregate one source's rows (with `collect`, bad events are listed, not fatal).
pub fn inspect(src: &Source<'_>, opts: &Options, control: &Control) -> Result<Report, Issue> {
    let mut report = Report::default();
    let mut runs = HashSet::new();
    let mut threads = HashSet::new();
    let mut messages = HashSet::new();
    let mut tool_calls = HashSet::new();
    let mut issues = Vec::new();
    let mut by_type = [0u64; agui_core::proto::EVENT_TYPES.len()];
    let info = each_row(src, opts, control, &mut issues, |_, _, f| {
        by_type[f.ty_index as usize] += 1;
        for (set, v) in [
            (&mut runs, f.run_id()),
            (&mut threads, f.thread_id()),
            (&mut messages, f.message_id()),
            (&mut tool_calls, f.tool_call_id()),
        ] {
            if let Some(v) = v {
                if !set.contains(v) {
                    set.insert(v.to_string());
                }
            }
        }
        if let Some(u) = f.usage {
            for (acc, v) in report.usage.iter_mut().zip(u.counts()) {
                if let Some(v) = v {
                    *acc = Some(acc.unwrap_or(0) + i128::from(v));
                }
            }
        }
        if let Some(t) = f.timestamp {
            report.first_timestamp = Some(report.first_timestamp.map_or(t, |m| m.min(t)));
            report.last_timestamp = Some(report.last_timestamp.map_or(t, |m| m.max(t)));
        }
    })?
    .unwrap_or_default();
    for (name, n) in agui_core::proto::EVENT_TYPES.iter().zip(by_type) {
        if n > 0 {
            report.types.insert(name.to_string(), n);
        }
    }
    report.format = info.format;
    report.gzip = info.gzip;
    report.bytes = info.bytes;
    report.events = report.types.values().sum();
    report.runs = runs.len();
    report.threads = threads.len();
    report.messages = messages.len();
    report.tool_calls = tool_calls.len();
    report.issues = issues;
    Ok(report)
}
