//! The JSON writer's doubles formatted in place (the one step of the encoders past safe Rust).

use agui_core::json::F64Text;

/// Finite doubles formatted by zmij straight into the output's spare capacity (what orjson
/// does), instead of into zmij's buffer and then copied (`agui_core::json::CopiedF64`):
/// the same text, a third less time per float (`docs/encoder.md`).
pub(crate) struct InPlaceF64;

// `zmij::Buffer` is its digit bytes (`[MaybeUninit<u8>; N]`, no other field): any bytes
// of the right size and alignment are a valid one.
const _: () = assert!(std::mem::size_of::<zmij::Buffer>() <= 32 && std::mem::align_of::<zmij::Buffer>() == 1);

impl F64Text for InPlaceF64 {
    #[inline(always)]
    fn finite(out: &mut Vec<u8>, x: f64) {
        out.reserve(32);
        let at = out.len();
        // SAFETY: at least 32 bytes of spare capacity, viewed as a zmij buffer (only
        // `MaybeUninit<u8>` inside, alignment 1, at most 32 bytes: asserted above). zmij
        // writes its text from the buffer's start; the length is set only to what it
        // wrote, and only when the text it returns does start there.
        unsafe {
            let spare = out.as_mut_ptr().add(at);
            let text = (*spare.cast::<zmij::Buffer>()).format_finite(x);
            if text.as_ptr() == spare.cast_const() {
                out.set_len(at + text.len());
                return;
            }
        }
        agui_core::json::CopiedF64::finite(out, x)
    }
}
