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
        let mut w = [0u8; 8];
        let rest = chunks.remainder();
        w[..rest.len()].copy_from_slice(rest);
        self.write_u64(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
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

/// `BuildHasher` of [`FastHasher`], for `HashMap`/`HashSet`.
pub type FastBuild = BuildHasherDefault<FastHasher>;

/// What [`SlotCache::get`] found.
pub enum Lookup<T> {
    Hit(T),
    /// `Some(slot)`: the caller should [`SlotCache::put`] the value it builds there.
    Miss(Option<usize>),
}

/// A direct-mapped cache of `slots` entries keyed by strings.
pub struct SlotCache<V> {
    slots: Vec<Option<(Box<str>, V)>>,
    /// Hash of the last miss per slot.
    seen: Vec<u64>,
}

impl<V> SlotCache<V> {
    pub fn new(slots: usize) -> Self {
        SlotCache { slots: (0..slots.max(1)).map(|_| None).collect(), seen: vec![0; slots.max(1)] }
    }

    /// Look `key` up; `read` turns a hit into the caller's form.
    pub fn get<T>(&mut self, key: &str, read: impl FnOnce(&V) -> T) -> Lookup<T> {
        let mut h = FastHasher::default();
        h.write(key.as_bytes());
        let hash = h.finish();
        let slot = (hash >> 7) as usize % self.slots.len();
        if let Some((k, v)) = &self.slots[slot] {
            if **k == *key {
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
        self.slots.get_mut(slot)?.replace((key.into(), v))
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
