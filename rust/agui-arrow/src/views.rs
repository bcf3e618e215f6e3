//! The `json` column as `Utf8View`: views into the log's own bytes (the part of the log
//! an event was framed from, one Arrow buffer shared by all its rows) instead of a copy
//! of each event's text. Texts that are not a slice of such a buffer (a payload joined
//! from several `data:` lines, invalid UTF-8 repaired, a log read as a stream) are copied
//! into the batch's own block.

use arrow_array::StringViewArray;
use arrow_buffer::Buffer;

/// A buffer of valid UTF-8. It is made from a `&str` over exactly its bytes (the type's
/// proof that they are UTF-8; a `Buffer` is immutable), so a view into it needs no UTF-8
/// check of its own beyond starting and ending on char boundaries.
#[derive(Clone, Debug)]
pub struct Utf8Block(Buffer);

impl Utf8Block {
    /// `None` unless `text` is `buffer`'s bytes themselves (same address and length).
    pub fn new(buffer: Buffer, text: &str) -> Option<Self> {
        (buffer.as_ptr() == text.as_ptr() && buffer.len() == text.len()).then_some(Utf8Block(buffer))
    }

    fn from_string(s: String) -> Self {
        Utf8Block(Buffer::from_vec(s.into_bytes()))
    }

    pub fn buffer(&self) -> &Buffer {
        &self.0
    }
}

/// The views of a `json` column and the buffers they point into.
///
/// Guarantee (unsafe code relies on it: the binding's `ViewsFn`): `StringViewArray::
/// try_new(views, buffers, None)` accepts them. Each view is made here, from a `&str`
/// that is either copied into block 0 or lies inside a [`Utf8Block`]: a `&str` inside a
/// UTF-8 buffer starts and ends on its char boundaries, so the view's bytes are that
/// `&str`. Every Rust test builds its columns through [`checked_views`], which checks it.
pub struct Utf8Views {
    views: Vec<u128>,
    blocks: Vec<Utf8Block>,
}

impl Utf8Views {
    pub fn into_parts(self) -> (Vec<u128>, Vec<Buffer>) {
        (self.views, self.blocks.into_iter().map(|b| b.0).collect())
    }
}

/// Makes the `Utf8View` array of a `json` column. [`checked_views`] is arrow's own
/// constructor, which checks every string's UTF-8 again (~10 ns an event, a pass over
/// the log's bytes after the SIMD check of each part); the Python binding gives one that
/// relies on [`Utf8Views`]' guarantee.
pub type ViewsFn = fn(Utf8Views) -> StringViewArray;

/// The views as arrow checks them.
pub fn checked_views(views: Utf8Views) -> StringViewArray {
    let (views, buffers) = views.into_parts();
    StringViewArray::try_new(views.into(), buffers, None).expect("Utf8Views' guarantee")
}

/// Strings up to this long are held in the view itself.
const INLINE: usize = 12;

/// The view of `s`: inline when short, else `block` at `offset`.
#[inline]
fn view(s: &[u8], block: u32, offset: u32) -> u128 {
    // (Events are bounded by the framing limits, megabytes by default; a text of 4 GiB
    // cannot be a view: fail loudly rather than make a wrong one.)
    assert!(s.len() <= u32::MAX as usize, "an event of 4 GiB or more cannot be a Utf8View row");
    if s.len() <= INLINE {
        let mut v = [0u8; 16];
        v[..4].copy_from_slice(&(s.len() as u32).to_le_bytes());
        v[4..4 + s.len()].copy_from_slice(s);
        return u128::from_le_bytes(v);
    }
    let prefix = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
    (s.len() as u128) | (prefix as u128) << 32 | (block as u128) << 64 | (offset as u128) << 96
}

/// The `json` column of a batch being built.
#[derive(Default)]
pub(crate) struct JsonViews {
    views: Vec<u128>,
    /// The part blocks views point into: block `1 + i` of the array (block 0: `copied`).
    blocks: Vec<Utf8Block>,
    /// Texts copied (not in the part's block).
    copied: String,
    /// The block of the part being read, and its block number in this batch once a view
    /// points into it.
    part: Option<(Utf8Block, Option<u32>)>,
}

impl JsonViews {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        JsonViews { views: Vec::with_capacity(rows), ..JsonViews::default() }
    }

    /// The block the next texts are slices of (`None`: copy them).
    pub(crate) fn set_part(&mut self, part: Option<Utf8Block>) {
        self.part = part.map(|b| (b, None));
    }

    // Always inlined: with two row writers (`push`, `push_form`) the compiler made it a
    // call, ~15 instructions an event more (callgrind, stop 25: 309.18M -> 306.27M).
    #[inline(always)]
    pub(crate) fn push(&mut self, text: &str) {
        let s = text.as_bytes();
        if s.len() <= INLINE {
            self.views.push(view(s, 0, 0));
            return;
        }
        if let Some((block, number)) = &mut self.part {
            let offset = (s.as_ptr() as usize).wrapping_sub(block.0.as_ptr() as usize);
            // In the block (offsets are u32: a part past 4 GiB is copied from there on).
            if offset <= block.0.len() && s.len() <= block.0.len() - offset && offset <= u32::MAX as usize {
                let blocks = &mut self.blocks;
                let n = *number.get_or_insert_with(|| {
                    blocks.push(block.clone());
                    blocks.len() as u32
                });
                self.views.push(view(s, n, offset as u32));
                return;
            }
        }
        // (A batch is closed once its texts reach `BATCH_JSON_BYTES`, far below 4 GiB.)
        let offset = u32::try_from(self.copied.len()).expect("a batch's copied texts stay below 4 GiB");
        self.copied.push_str(text);
        self.views.push(view(s, 0, offset));
    }

    /// The column so far; it starts over (the part stays the same).
    pub(crate) fn finish(&mut self, make: ViewsFn) -> StringViewArray {
        let mut blocks = Vec::with_capacity(1 + self.blocks.len());
        blocks.push(Utf8Block::from_string(std::mem::take(&mut self.copied)));
        blocks.append(&mut self.blocks);
        if let Some((_, number)) = &mut self.part {
            *number = None;
        }
        make(Utf8Views { views: std::mem::take(&mut self.views), blocks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_and_copies_read_back() {
        let text = "{\"a\":1}|{\"type\":\"RUN_STARTED\",\"runId\":\"r\"}|{\"é\":\"ü\"}xyz";
        let buffer = Buffer::from(text.as_bytes());
        assert!(Utf8Block::new(buffer.clone(), &text[1..]).is_none());
        let block = Utf8Block::new(buffer.clone(), std::str::from_utf8(buffer.as_slice()).unwrap()).unwrap();
        let inside: Vec<&str> = std::str::from_utf8(buffer.as_slice()).unwrap().split('|').collect();
        let mut j = JsonViews::with_capacity(2);
        j.push("copied before the part, long enough");
        j.set_part(Some(block));
        for s in &inside {
            j.push(s);
        }
        j.push("{\"copied\":\"after\",\"x\":1}");
        let a = j.finish(checked_views);
        let want = ["copied before the part, long enough", inside[0], inside[1], inside[2], "{\"copied\":\"after\",\"x\":1}"];
        assert_eq!(a.iter().map(Option::unwrap).collect::<Vec<_>>(), want);
        // One copy block and the part; the part's long texts are not copied.
        assert_eq!(a.data_buffers().len(), 2);
        assert_eq!(a.data_buffers()[0].len(), want[0].len() + want[4].len());
        // The next batch points into the part again.
        j.push(inside[1]);
        let b = j.finish(checked_views);
        assert_eq!(b.value(0), inside[1]);
        assert_eq!((b.data_buffers().len(), b.data_buffers()[0].len()), (2, 0));
    }
}
