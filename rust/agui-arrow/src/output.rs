//! Sources streamed into one output: a Parquet file ([`write_parquet`]) or another
//! wire format ([`convert`]), in constant memory.

use std::io::Write;

use agui_core::log::{write_event, Output};

use crate::issue::Issue;
use crate::rows::each_row;
use crate::source::{Control, Options, Source};

/// Counts of [`write_parquet`] and [`convert`].
#[derive(Debug, Clone, Default)]
pub struct WriteInfo {
    pub rows: u64,
    pub bytes_in: u64,
    pub issues: Vec<Issue>,
}

/// Stream the sources, one after the other, into one Parquet file (snappy, one row
/// group per [`BATCH_ROWS`](crate::BATCH_ROWS) rows): memory stays that of one batch and one
/// row group. (Only with the `parquet` feature, a default.)
#[cfg(feature = "parquet")]
pub fn write_parquet<W: Write + Send>(
    sources: &[Source<'_>],
    opts: &Options,
    control: &Control,
    out: W,
) -> Result<WriteInfo, Issue> {
    use crate::batch::{BatchBuilder, BATCH_ROWS};
    use crate::schema::schema;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;

    let parquet_issue = |e: parquet::errors::ParquetError| Issue::io(format!("cannot write Parquet: {e}"));
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(BATCH_ROWS))
        .build();
    let mut writer = ArrowWriter::try_new(out, schema(), Some(props)).map_err(parquet_issue)?;
    let mut info = WriteInfo::default();
    let mut write_error = None;
    for src in sources {
        let mut builder = BatchBuilder::new(src.name.clone()).columns_with(opts.columns);
        let mut flush = |builder: &mut BatchBuilder, writer: &mut ArrowWriter<W>| {
            if write_error.is_none() {
                if let Err(e) = writer.write(&builder.finish()) {
                    write_error = Some(parquet_issue(e));
                }
            } else {
                builder.finish();
            }
        };
        // Rows written, not events seen: with `collect`, bad events are in `issues` only.
        let mut written = 0u64;
        let seen = each_row(src, opts, control, &mut info.issues, |ev, json, f| {
            builder.push(ev, json, f);
            written += 1;
            if builder.full() {
                flush(&mut builder, &mut writer);
            }
        })?;
        if !builder.is_empty() {
            flush(&mut builder, &mut writer);
        }
        if let Some(e) = write_error.take() {
            return Err(e);
        }
        info.rows += written;
        if let Some(s) = seen {
            info.bytes_in += s.bytes;
        }
    }
    writer.close().map_err(parquet_issue)?;
    Ok(info)
}

/// Stream the sources' events, one after the other, into `out` as SSE, protobuf or
/// JSON lines. Each event is checked as a row first (JSON, `type`, the table's members),
/// so what is written is what `to_arrow` would read.
pub fn convert<W: Write>(
    sources: &[Source<'_>],
    opts: &Options,
    control: &Control,
    to: Output,
    out: &mut W,
) -> Result<WriteInfo, Issue> {
    let mut info = WriteInfo::default();
    let mut buf = Vec::with_capacity(1 << 20);
    // Encoding problems (protobuf output only) are per event: collected like the rows'
    // own, or the first one fails the call. A write error always does.
    let mut encode_issues = Vec::new();
    let mut failure: Option<Issue> = None;
    let io_issue = |e: std::io::Error| Issue::write(&e);
    for src in sources {
        let mut written = 0u64;
        let seen = each_row(src, opts, control, &mut info.issues, |ev, json, _| {
            if failure.is_some() {
                return;
            }
            let mark = buf.len();
            if let Err(e) = write_event(&mut buf, to, json.as_bytes()) {
                buf.truncate(mark);
                let issue = Issue {
                    source: src.name.clone(),
                    index: Some(ev.index),
                    offset: Some(ev.offset),
                    kind: e.kind(),
                    message: e.to_string(),
                    field: None,
                };
                if opts.collect {
                    if let Err(limit) = crate::rows::collect(issue, &mut encode_issues, opts, control) {
                        failure = Some(limit);
                    }
                } else {
                    failure = Some(issue);
                }
                return;
            }
            written += 1;
            if buf.len() >= 1 << 20 {
                if let Err(e) = out.write_all(&buf) {
                    failure = Some(io_issue(e));
                }
                buf.clear();
            }
        })?;
        if let Some(f) = failure.take() {
            return Err(f);
        }
        info.rows += written;
        if let Some(s) = seen {
            info.bytes_in += s.bytes;
        }
    }
    out.write_all(&buf).and_then(|_| out.flush()).map_err(io_issue)?;
    info.issues.extend(encode_issues);
    Ok(info)
}
