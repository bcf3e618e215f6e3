//! The two tables: the events table ([`schema`]) and the errors table of `collect`
//! mode ([`errors_schema`]).

use std::sync::{Arc, OnceLock};

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// The token-usage columns, in order (sums over the event's `usage` entries).
pub const USAGE_COLUMNS: [&str; 6] = [
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
];


pub(crate) fn dict() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The events table (see docs/logs.md).
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let mut fields = vec![
                Field::new("source", dict(), true),
                Field::new("index", DataType::UInt64, false),
                Field::new("offset", DataType::UInt64, false),
                Field::new("type", dict(), false),
                Field::new("timestamp", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), true),
            ];
            for name in ["thread_id", "run_id", "parent_run_id", "message_id", "tool_call_id", "role", "name", "delta"] {
                fields.push(Field::new(name, DataType::Utf8, true));
            }
            for name in USAGE_COLUMNS {
                fields.push(Field::new(name, DataType::Int64, true));
            }
            fields.push(Field::new("json", DataType::Utf8View, false));
            Arc::new(Schema::new(fields))
        })
        .clone()
}

/// The errors table of `collect` mode.
pub fn errors_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("source", DataType::Utf8, true),
                Field::new("index", DataType::UInt64, true),
                Field::new("offset", DataType::UInt64, true),
                Field::new("error", DataType::Utf8, false),
                Field::new("message", DataType::Utf8, false),
                Field::new("field", DataType::Utf8, true),
            ]))
        })
        .clone()
}
