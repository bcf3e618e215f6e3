//! agui-arrow: AG-UI logs as Arrow record batches and Parquet files, in pure Rust.
//!
//! Every log is read by the core crate's one reader ([`agui_core::log`]); each event
//! becomes one row of [`schema`] (its columns read by [`fields::parse`]), or, with
//! `collect`, one row of [`errors_schema`]. Several sources, or the parts of one, decode
//! in parallel on the calling thread and worker threads kept between calls (`pool.rs`;
//! [`decode_many`]); [`write_parquet`] streams batches into a Parquet
//! file (constant memory); [`inspect`] aggregates the same rows into a [`Report`].
//!
//! The modules, by concern:
//! - `schema`: the events and errors tables;
//! - `source`: what is read and how ([`Source`], [`Options`], [`Control`]);
//! - `issue`: what goes wrong ([`Issue`], [`errors_batch`]);
//! - `batch`: rows into record batches ([`BatchBuilder`]; `columns`, [`views`]);
//! - `rows`: the one loop over a source's events and rows;
//! - `decode`: sources into batches ([`decode_many`]), whole, in parts (`parts`) or
//!   framed for workers (`parallel`), on the kept threads (`pool`);
//! - `output`: Parquet and the wire formats ([`write_parquet`], [`convert`]);
//! - `inspect`: a log's summary ([`inspect`]).

#![forbid(unsafe_code)]

mod batch;
mod columns;
mod decode;
pub mod fields;
mod inspect;
mod issue;
mod output;
mod parallel;
mod parts;
mod pool;
mod rows;
mod schema;
mod source;
pub mod views;

pub use batch::{BatchBuilder, BATCH_ROWS};
pub use decode::{decode_many, decode_source, Decoded, MAX_THREADS};
pub use fields::{Fields, RowError, Usage};
pub use inspect::{inspect, Report};
pub use issue::{errors_batch, Issue};
#[cfg(feature = "parquet")]
pub use output::write_parquet;
pub use output::{convert, WriteInfo};
pub use schema::{errors_schema, schema, USAGE_COLUMNS};
pub use source::{Control, Input, Options, Source, SourceInfo, DEFAULT_MAX_ERRORS};
pub use views::{checked_columns, ColumnsFn, DictKeys, Trusted, Utf8Block, Utf8Strings, Utf8Views};
// The Arrow crates of this crate's types, for the binding.
pub use {arrow_array, arrow_buffer, arrow_schema};

#[cfg(test)]
mod tests;
