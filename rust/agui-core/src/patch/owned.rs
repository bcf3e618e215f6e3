//! The containers a copy-on-write document may write in place (the binding's Python
//! documents: those it created during a patch, or owns from patch to patch), known by
//! address and kept alive by a handle so an address cannot be reused while remembered.
//! A vector scanned linearly while small (most patches create a handful of containers),
//! a hash set beyond.

use std::collections::HashSet;

use super::cache::FastBuild;

/// Past this many containers, lookups go through the hash set.
const SCAN_MAX: usize = 32;
/// Containers kept before the set is pruned again (see [`Owned::prune`]).
const PRUNE_MIN: usize = 4096;

pub struct Owned<H> {
    keep: Vec<(usize, H)>,
    /// The addresses of `keep` once it is past `SCAN_MAX` (empty before).
    index: HashSet<usize, FastBuild>,
    prune_at: usize,
}

impl<H> Default for Owned<H> {
    fn default() -> Self {
        Owned { keep: Vec::new(), index: HashSet::default(), prune_at: PRUNE_MIN }
    }
}

impl<H> Owned<H> {
    /// Remember the container at `addr`, held alive by `handle`.
    pub fn insert(&mut self, addr: usize, handle: H) {
        self.keep.push((addr, handle));
        if self.keep.len() > SCAN_MAX {
            if self.index.is_empty() {
                self.index.extend(self.keep.iter().map(|(a, _)| *a));
            } else {
                self.index.insert(addr);
            }
        }
    }

    pub fn contains(&self, addr: usize) -> bool {
        if self.keep.len() > SCAN_MAX {
            self.index.contains(&addr)
        } else {
            self.keep.iter().any(|(a, _)| *a == addr)
        }
    }

    pub fn len(&self) -> usize {
        self.keep.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keep.is_empty()
    }

    /// Forget everything (the document was handed out: nothing is ours to write).
    pub fn clear(&mut self) {
        self.keep.clear();
        self.index.clear();
    }

    /// Forget the containers `alive` says are gone (no longer in the document: removed,
    /// or left by a rolled-back patch), once the set has doubled since the last time:
    /// linear overall, and the set stays bounded by the document.
    pub fn prune(&mut self, mut alive: impl FnMut(&H) -> bool) {
        if self.keep.len() <= self.prune_at {
            return;
        }
        self.keep.retain(|(_, h)| alive(h));
        self.index.clear();
        if self.keep.len() > SCAN_MAX {
            self.index.extend(self.keep.iter().map(|(a, _)| *a));
        }
        self.prune_at = (2 * self.keep.len()).max(PRUNE_MIN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_by_address_small_and_large() {
        let mut o = Owned::default();
        for a in 0..100usize {
            assert!(!o.contains(a * 8));
            o.insert(a * 8, a);
            assert!((0..=a).all(|b| o.contains(b * 8)), "after {a}");
            assert!(!o.contains(a * 8 + 1));
        }
        o.clear();
        assert!(o.is_empty() && !o.contains(0) && !o.contains(99 * 8));
    }

    #[test]
    fn prunes_only_past_the_threshold_then_doubles_it() {
        let mut o = Owned::default();
        for a in 0..PRUNE_MIN {
            o.insert(a, a);
        }
        o.prune(|_| false);
        assert_eq!(o.len(), PRUNE_MIN, "not past the threshold yet");
        o.insert(PRUNE_MIN, PRUNE_MIN);
        o.prune(|h| h % 2 == 0);
        assert_eq!(o.len(), PRUNE_MIN / 2 + 1);
        assert!(o.contains(2) && !o.contains(3) && o.contains(PRUNE_MIN));
        assert_eq!(o.prune_at, 2 * o.len(), "twice the size");
        o.prune(|_| false);
        assert_eq!(o.len(), PRUNE_MIN / 2 + 1, "not past the new threshold");
    }
}
