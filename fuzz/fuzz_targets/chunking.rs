//! Chunk splits derived from the input, shared by the streaming targets: the same
//! stream fed whole and fed in these chunks must give the same result.

/// Split `data` into consecutive chunks whose sizes (0 to `1 << (seed & 7)`, so empty
/// chunks too: feeding nothing must change nothing) come from a xorshift generator
/// seeded by `seed` and the length. Concatenated, the chunks are `data`.
pub fn chunks(data: &[u8], seed: u8) -> Vec<&[u8]> {
    let max = 1u64 << (seed & 7);
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (u64::from(seed) << 32) ^ data.len() as u64;
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let n = (state % (max + 1)) as usize;
        let end = (i + n).min(data.len());
        out.push(&data[i..end]);
        i = end;
    }
    out
}
