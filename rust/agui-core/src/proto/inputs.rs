//! The `.proto` files the generated code in `pb.rs` and `schema.json` comes from, and the
//! digests that tie the three together. The generator (`tools/protogen`) heads `pb.rs` with
//! a digest of the `.proto` files and one of the generated text (the code below the header
//! and `schema.json`); a test of this crate recomputes both, so that a change to
//! `proto/*.proto` without regenerating, or an edit of the generated files, fails `cargo test`.

use std::path::Path;

/// The schema's files, in `proto/`, in the order they are compiled and digested.
pub const FILES: [&str; 3] = ["events.proto", "types.proto", "patch.proto"];

/// The header's line of the `.proto` files' digest: this prefix, then 16 hex digits.
pub const INPUTS_PREFIX: &str = "// proto inputs (FNV-1a 64 of the files' names and bytes): ";
/// The header's line of the generated text's digest: this prefix, then 16 hex digits.
pub const OUTPUT_PREFIX: &str = "// generated text (FNV-1a 64 of the code below and schema.json): ";
/// Lines of `pb.rs` before the generated code: what it is, how to regenerate, the digests.
pub const HEADER_LINES: usize = 4;

/// FNV-1a (64-bit) over the parts, each followed by a 0 byte: a change detector, not a
/// cryptographic hash.
fn fnv1a(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The digest of the `.proto` files in `proto_dir` (their names and bytes).
pub fn inputs_digest(proto_dir: &Path) -> std::io::Result<String> {
    let mut parts = Vec::new();
    for name in FILES {
        parts.push(name.as_bytes().to_vec());
        parts.push(std::fs::read(proto_dir.join(name))?);
    }
    Ok(fnv1a(&parts.iter().map(Vec::as_slice).collect::<Vec<_>>()))
}

/// The digest of the generated text: `pb.rs` below its header, and `schema.json`.
pub fn output_digest(code: &str, schema: &str) -> String {
    fnv1a(&[code.as_bytes(), schema.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pb.rs` and `schema.json` are the generator's output, unedited, for the `.proto` files
    /// as they are (`tools/protogen --check` regenerates and compares the text itself).
    #[test]
    fn generated_code_is_of_the_proto_files() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
        let pb = include_str!("pb.rs");
        let header: Vec<&str> = pb.splitn(HEADER_LINES + 1, '\n').collect();
        let regenerate = "regenerate them with `cargo run --manifest-path tools/protogen/Cargo.toml`";
        assert_eq!(
            header[2],
            format!("{INPUTS_PREFIX}{}", inputs_digest(&dir).unwrap()),
            "proto/*.proto changed since src/proto/pb.rs and schema.json were generated: {regenerate}"
        );
        assert_eq!(
            header[3],
            format!("{OUTPUT_PREFIX}{}", output_digest(header[HEADER_LINES], include_str!("schema.json"))),
            "src/proto/pb.rs or schema.json differ from what the generator wrote: {regenerate}"
        );
    }
}
