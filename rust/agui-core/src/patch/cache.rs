//! Reusing what a patch's pointers parse to across calls: a small direct-mapped cache
//! keyed by short strings (pointer texts, key tokens), and a cheap hasher for them.
//!
//! Memory stays bounded (a fixed number of slots). An entry is stored only when its key
//! misses twice in a row in its slot, so one-off keys (ids) cost no allocation and evict
//! nothing useful.

use std::hash::{BuildHasherDefault, Hasher};

/// FxHash-style hasher for pointer-sized keys (object addresses: the binding's class and
/// object caches) and short strings: SipHash was a visible share of a one-operation patch.
#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        // A product's low bits depend only on the factors' low bits, and an address's low
        // 4 bits are always 0: rotated, the well-mixed high bits pick hash-table buckets
        // (rustc-hash's finish does the same).
        self.0.rotate_left(26)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        self.write_u64(tail(rest) ^ ((rest.len() as u64) << 59));
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// The last 0–7 bytes of a key as one word, without a copy of variable length (keys are
/// mostly short: this is most of their hashing). Every byte counts (the two halves of 4–7
/// bytes overlap), and the caller mixes in the length.
#[inline]
fn tail(b: &[u8]) -> u64 {
    let n = b.len();
    let word = |i: usize| u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
    match n {
        4.. => word(0) | word(n - 4) << 32,
        1.. => u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16,
        _ => 0,
    }
}

/// `BuildHasher` of [`FastHasher`], for `HashMap`/`HashSet`.
pub type FastBuild = BuildHasherDefault<FastHasher>;

/// What [`SlotCache::get`] found.
pub enum Lookup<T> {
    Hit(T),
    /// `Some(slot)`: the caller should [`SlotCache::put`] the value it builds there.
    Miss(Option<usize>),
}

#[inline]
fn key_hash(key: &str) -> u64 {
    let mut h = FastHasher::default();
    h.write(key.as_bytes());
    h.finish()
}

/// A direct-mapped cache of `slots` entries (rounded up to a power of two) keyed by
/// strings.
pub struct SlotCache<V> {
    /// An entry: its key's hash (compared before the key), the key, the value.
    slots: Vec<Option<(u64, Box<str>, V)>>,
    /// Hash of the last miss per slot.
    seen: Vec<u64>,
    mask: usize,
}

impl<V> SlotCache<V> {
    pub fn new(slots: usize) -> Self {
        let n = slots.max(1).next_power_of_two();
        SlotCache { slots: (0..n).map(|_| None).collect(), seen: vec![0; n], mask: n - 1 }
    }

    /// Look `key` up; `read` turns a hit into the caller's form.
    #[inline]
    pub fn get<T>(&mut self, key: &str, read: impl FnOnce(&V) -> T) -> Lookup<T> {
        let hash = key_hash(key);
        let slot = (hash >> 7) as usize & self.mask;
        if let Some((kh, k, v)) = &self.slots[slot] {
            if *kh == hash && crate::copy::same_short(k.as_bytes(), key.as_bytes()) {
                return Lookup::Hit(read(v));
            }
        }
        let again = self.seen[slot] == hash;
        self.seen[slot] = hash;
        Lookup::Miss(again.then_some(slot))
    }

    /// Store `v` for `key` in `slot` (from a [`Lookup::Miss`]); returns the entry it
    /// replaces, for the caller to drop when it suits it.
    pub fn put(&mut self, slot: usize, key: &str, v: V) -> Option<(Box<str>, V)> {
        self.slots.get_mut(slot)?.replace((key_hash(key), key.into(), v)).map(|(_, k, v)| (k, v))
    }
}

/// Parsed pointers by text ([`super::Pointer`]: shared tokens, so a hit allocates
/// nothing): what readers of many patches keep from patch to patch.
#[derive(Default)]
pub struct PointerCache(Option<SlotCache<super::Pointer>>);

const POINTER_SLOTS: usize = 512;
const POINTER_MAX_LEN: usize = 128;

impl PointerCache {
    pub fn get(&mut self, text: &str) -> Result<super::Pointer, super::PatchError> {
        if text.len() > POINTER_MAX_LEN {
            return super::Pointer::parse(text);
        }
        let cache = self.0.get_or_insert_with(|| SlotCache::new(POINTER_SLOTS));
        match cache.get(text, super::Pointer::clone) {
            Lookup::Hit(p) => Ok(p),
            Lookup::Miss(slot) => {
                let p = super::Pointer::parse(text)?;
                if let Some(slot) = slot {
                    cache.put(slot, text, p.clone());
                }
                Ok(p)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn hit(c: &mut SlotCache<u32>, k: &str) -> Option<u32> {
        match c.get(k, |v| *v) {
            Lookup::Hit(v) => Some(v),
            Lookup::Miss(_) => None,
        }
    }

    #[test]
    fn addresses_spread_over_small_tables() {
        // Objects 16 bytes apart (the low 4 bits of an address are 0): the bits a table of
        // 64 buckets indexes by must still differ, not only their top two.
        let buckets: HashSet<u64> = (0..64u64)
            .map(|i| {
                let mut h = FastHasher::default();
                h.write_usize((0x7f3a_1c00_0000 + 16 * i) as usize);
                h.finish() & 63
            })
            .collect();
        assert!(buckets.len() >= 32, "{} buckets of 64", buckets.len());
    }

    #[test]
    fn short_keys_hash_apart() {
        // Every key of 0..=4 bytes over a small alphabet (each byte of a short key counts),
        // and keys that differ in one byte anywhere or only in length.
        let alphabet = [b'a', b'z', b'0', b'_', 0xC3, 0xA9];
        let mut keys: Vec<Vec<u8>> = vec![vec![]];
        let mut all = HashSet::new();
        for _ in 0..4 {
            keys = keys.iter().flat_map(|k| alphabet.iter().map(move |&c| [k.as_slice(), &[c]].concat())).collect();
            for k in &keys {
                let mut h = FastHasher::default();
                h.write(k);
                assert!(all.insert(h.finish()), "{k:?}");
            }
        }
        for len in 0..=24usize {
            for i in 0..len {
                let mut k = vec![b'x'; len];
                k[i] = b'y';
                let mut h = FastHasher::default();
                h.write(&k);
                assert!(all.insert(h.finish()), "{len} {i}");
            }
            let mut h = FastHasher::default();
            h.write(&vec![b'x'; len]);
            assert!(all.insert(h.finish()), "{len}");
        }
    }

    #[test]
    fn admits_on_the_second_miss_and_hits_after() {
        let mut c = SlotCache::new(64);
        assert!(matches!(c.get("/a/b", |v: &u32| *v), Lookup::Miss(None)));
        let Lookup::Miss(Some(slot)) = c.get("/a/b", |v| *v) else { panic!("second miss admits") };
        assert!(c.put(slot, "/a/b", 7).is_none());
        assert_eq!(hit(&mut c, "/a/b"), Some(7));
        assert_eq!(hit(&mut c, "/a/c"), None);
    }

    #[test]
    fn bounded_and_exact() {
        let mut c = SlotCache::new(4);
        for round in 0..3 {
            for i in 0..100u32 {
                let k = format!("/k{i}");
                match c.get(&k, |v| *v) {
                    Lookup::Hit(v) => assert_eq!(v, i, "round {round}"),
                    Lookup::Miss(Some(slot)) => {
                        c.put(slot, &k, i);
                    }
                    Lookup::Miss(None) => {}
                }
            }
        }
        assert_eq!(c.slots.len(), 4);
    }
}
