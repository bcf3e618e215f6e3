//! JSON Patch apply on `serde_json::Value`, input `[doc, patch]` as JSON text (a leading
//! space selects the fast-json-patch dialect). Checks: no panic; a failed patch leaves the
//! document byte-for-byte unchanged (member order included); the document never nests
//! deeper than the limit; moving the operations' values and cloning them agree.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::patch::{apply_patch, apply_patch_owned, parse_patch, Dialect, Options};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use common::{depth, doc_and_patch, MAX_DEPTH};

fuzz_target!(|data: &[u8]| {
    let dialect = if data.first() == Some(&b' ') { Dialect::FastJsonPatch } else { Dialect::Rfc6902 };
    let opts = Options { dialect, max_depth: MAX_DEPTH, ..Options::default() };
    let Some((doc, patch)) = doc_and_patch(data) else { return };
    let before = serde_json::to_string(&doc).unwrap();
    let Ok(ops) = parse_patch(&patch) else { return };

    let mut cloned = doc.clone();
    let r1 = apply_patch(&mut cloned, &ops, &opts);
    let mut owned = doc.clone();
    let r2 = apply_patch_owned(&mut owned, ops.clone(), &opts);
    assert_eq!(r1, r2);
    let after = serde_json::to_string(&cloned).unwrap();
    assert_eq!(after, serde_json::to_string(&owned).unwrap());
    match r1 {
        Err(e) => {
            assert_eq!(after, before, "not atomic: {e}");
            assert!(e.index.is_some_and(|i| i < ops.len()), "{e}");
        }
        Ok(()) => assert!(depth(&cloned) <= MAX_DEPTH),
    }
});
