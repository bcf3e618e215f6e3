//! RFC 6901 pointers: parsing never panics, and what parses round-trips exactly.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::patch::{escape, existing_index, format_pointer, insert_index, parse_index, parse_pointer, unescape, Dialect, Pointer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_pointer(text) {
        Ok(tokens) => {
            // Escaping is canonical, so formatting the tokens gives the text back.
            assert_eq!(format_pointer(&tokens), text);
            let p = Pointer::parse(text).expect("same parser");
            assert_eq!(&*p.tokens, &tokens[..]);
            for t in &tokens {
                assert_eq!(unescape(&escape(t)).unwrap(), *t);
                for dialect in [Dialect::Rfc6902, Dialect::FastJsonPatch] {
                    if let Ok(i) = parse_index(t, dialect) {
                        assert!(t.bytes().all(|b| b.is_ascii_digit()));
                        if dialect == Dialect::Rfc6902 {
                            assert_eq!(i.to_string(), *t, "canonical decimal only");
                        }
                    }
                    let _ = existing_index(t, 10, dialect);
                    if let Ok(i) = insert_index(t, 10, dialect) {
                        assert!(i <= 10);
                    }
                }
            }
        }
        Err(e) => assert!(e.reason.contains("pointer") || e.reason.contains("escape"), "{e}"),
    }
});
