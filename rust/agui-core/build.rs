//! Compiles `proto/*.proto` (the AG-UI 1.0 wire schema) into Rust types at build time.
//!
//! No system `protoc`: `protox` parses the files in pure Rust (it also ships the
//! well-known `google/protobuf/struct.proto`), and `prost-build` generates code from
//! the resulting descriptors. `google.protobuf.Value`/`Struct` are mapped to our own
//! order-preserving types (`crate::proto::wkt`) because prost's map-based `Struct`
//! loses the entry order the reference writes (byte-exact frames need it).
//!
//! A compact JSON summary of the schema (message -> fields) is also written to
//! OUT_DIR so the layer-agreement test can compare .proto, Rust and Python.

use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let proto_dir = manifest.join("../../proto");
    let files = ["events.proto", "types.proto", "patch.proto"];
    for f in &files {
        println!("cargo:rerun-if-changed={}", proto_dir.join(f).display());
    }
    let fds = protox::compile(files.iter().map(|f| proto_dir.join(f)), [&proto_dir])
        .expect("compiling proto/*.proto with protox");

    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("schema.json"), schema_summary(&fds)).unwrap();

    prost_build::Config::new()
        .extern_path(".google.protobuf.Value", "crate::proto::wkt::Value")
        .extern_path(".google.protobuf.Struct", "crate::proto::wkt::Struct")
        .compile_fds(fds)
        .expect("generating Rust code with prost-build");
}

/// `{"package.Message": [[name, number, label, type], ...], ...}` for every ag_ui message
/// (nested ones as `Outer.Inner`), plus `"enum package.Enum": [[name, number], ...]`.
fn schema_summary(fds: &prost_types::FileDescriptorSet) -> String {
    use prost_types::field_descriptor_proto::{Label, Type};
    let mut out = String::from("{");
    let mut first = true;
    fn msg(
        out: &mut String,
        first: &mut bool,
        prefix: &str,
        m: &prost_types::DescriptorProto,
    ) {
        let full = format!("{}{}", prefix, m.name());
        if !*first {
            out.push(',');
        }
        *first = false;
        write!(out, "\"{}\":[", full).unwrap();
        for (i, f) in m.field.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let label = if f.label() == Label::Repeated {
                "repeated"
            } else if f.proto3_optional() {
                "optional"
            } else if f.oneof_index.is_some() {
                "oneof"
            } else {
                "implicit"
            };
            let ty = match f.r#type() {
                Type::Message | Type::Enum => f.type_name().trim_start_matches('.').to_string(),
                t => format!("{:?}", t).to_lowercase(),
            };
            write!(out, "[\"{}\",{},\"{}\",\"{}\"]", f.name(), f.number(), label, ty).unwrap();
        }
        out.push(']');
        for n in &m.nested_type {
            if n.options.as_ref().and_then(|o| o.map_entry).unwrap_or(false) {
                continue;
            }
            msg(out, first, &format!("{}.", full), n);
        }
    }
    for file in &fds.file {
        if file.package() != "ag_ui" {
            continue;
        }
        for m in &file.message_type {
            msg(&mut out, &mut first, "ag_ui.", m);
        }
        for e in &file.enum_type {
            if !first {
                out.push(',');
            }
            first = false;
            write!(out, "\"enum ag_ui.{}\":[", e.name()).unwrap();
            for (i, v) in e.value.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write!(out, "[\"{}\",{}]", v.name(), v.number()).unwrap();
            }
            out.push(']');
        }
    }
    out.push('}');
    out
}
