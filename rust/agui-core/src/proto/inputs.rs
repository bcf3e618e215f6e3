//! The `.proto` files the generated code in `pb.rs` and `schema.json` comes from, and a
//! digest of their bytes. The generator (`tools/protogen`) writes the digest into `pb.rs`;
//! a test of this crate recomputes it, so that a change to `proto/*.proto` without
//! regenerating fails `cargo test`.

use std::path::Path;

/// The schema's files, in `proto/`, in the order they are compiled and digested.
pub const FILES: [&str; 3] = ["events.proto", "types.proto", "patch.proto"];

/// The line of `pb.rs` that records the digest: this prefix, then 16 hex digits.
pub const DIGEST_PREFIX: &str = "// proto inputs (FNV-1a 64 of the files' names and bytes): ";

/// FNV-1a (64-bit) over each file's name and bytes, each followed by a 0 byte: a change
/// detector, not a cryptographic hash.
pub fn digest(proto_dir: &Path) -> std::io::Result<String> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for name in FILES {
        let bytes = std::fs::read(proto_dir.join(name))?;
        for part in [name.as_bytes(), &[0], &bytes, &[0]] {
            for &b in part {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    Ok(format!("{h:016x}"))
}

#[cfg(test)]
mod tests {
    /// `pb.rs` and `schema.json` were generated from the `.proto` files as they are (the full
    /// regeneration, `tools/protogen --check`, also compares the generated text itself).
    #[test]
    fn generated_code_is_of_the_proto_files() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
        let want = format!("{}{}\n", super::DIGEST_PREFIX, super::digest(&dir).unwrap());
        assert!(
            include_str!("pb.rs").contains(&want),
            "proto/*.proto changed since src/proto/pb.rs and schema.json were generated: \
             regenerate them with `cargo run --manifest-path tools/protogen/Cargo.toml`"
        );
    }
}
