//! The `json` column as `Utf8View`: views into the log's own bytes (the part of the log
//! an event was framed from, one Arrow buffer shared by all its rows) instead of a copy
//! of each event's text. Texts that are not a slice of such a buffer (a payload joined
//! from several `data:` lines, invalid UTF-8 repaired, a log read as a stream) are copied
//! into the batch's own block.
//!
//! Also the other columns whose arrow checks are known to pass ([`Trusted`]): the string
//! columns ([`Utf8Strings`]) and the `type` keys ([`DictKeys`]). Each type is made one
//! way only, that cannot make what arrow would refuse: the views by [`JsonViews`] from
//! `&str`s inside UTF-8 blocks, the others by a constructor that checks what arrow would,
//! in a cheaper way. All of them are made into arrays by one hook, [`ColumnsFn`]: arrow's
//! checked constructors here and in every Rust test, unchecked ones in the binding.

use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, StringArray, StringViewArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};

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

    /// Bytes written as text (copied `&str`s, JSON written from checked `str`s), checked
    /// whole here: one check a batch instead of one a text.
    fn from_written(b: Vec<u8>) -> Self {
        assert!(simdutf8::basic::from_utf8(&b).is_ok(), "texts written from `str`s are UTF-8");
        Utf8Block(Buffer::from_vec(b))
    }

    pub fn buffer(&self) -> &Buffer {
        &self.0
    }
}

/// The views of a `json` column and the buffers they point into.
///
/// Guarantee (unsafe code relies on it: the binding's `ColumnsFn`): `StringViewArray::
/// try_new(views, buffers, None)` accepts them. It holds by how the one maker of a
/// `Utf8Views`, [`JsonViews`], makes each view, with no pass over the views afterwards:
/// a view is made from a `&str` (UTF-8 by its type, with char boundaries at both ends),
/// its prefix and inline bytes copied from that `&str`; a long one points either into the
/// part's [`Utf8Block`] (made from a `&str` over exactly its bytes), at the text's own
/// address checked to lie inside it, or into block 0, where the text was copied or
/// written and which is checked to be UTF-8 when the column is finished. So every view is
/// a `&str` of its blocks. [`views_fit`] checks each view as arrow does but for the pass
/// over the bytes: in every build with debug assertions (the Rust tests, the sanitizer
/// lane) for every column made, and every Rust test builds its columns through
/// [`checked_columns`], which checks them again.
pub struct Utf8Views {
    views: Vec<u128>,
    blocks: Vec<Utf8Block>,
}

impl Utf8Views {
    /// Made by [`JsonViews::finish`] only (a failed check is a bug there, never bad input).
    fn new(views: Vec<u128>, blocks: Vec<Utf8Block>) -> Self {
        debug_assert!(views_fit(&views, &blocks), "a view of the json column is not a `&str` of its blocks");
        Utf8Views { views, blocks }
    }

    pub fn into_parts(self) -> (Vec<u128>, Vec<Buffer>) {
        (self.views, self.blocks.into_iter().map(|b| b.0).collect())
    }
}

/// The parts of a nullable `Utf8` column, made by [`StrColumn`].
///
/// Guarantee (unsafe code relies on it: the binding's `ColumnsFn`): `StringArray::
/// try_new(OffsetBuffer::new(offsets), values, nulls)` accepts them. [`Utf8Strings::new`],
/// the only way to make one, checks that the offsets start at 0 and end at `values`'
/// length, that `nulls` has a bit per row, and that `values` is UTF-8 with every offset on
/// a char boundary (once a column, so the bytes are pushed with no check a value:
/// `&str` slicing's two char boundary checks were ~15 instructions a value). The offsets
/// never fall by how their one maker, [`StrColumn`], makes them: each is the values'
/// length as it grows, below 2 GiB since the last one is (checked in builds with debug
/// assertions too).
pub struct Utf8Strings {
    offsets: Vec<i32>,
    values: Vec<u8>,
    nulls: Option<NullBuffer>,
}

impl Utf8Strings {
    fn new(offsets: Vec<i32>, values: Vec<u8>, nulls: Option<NullBuffer>) -> Self {
        // (A negative last offset, as a `usize`, is no length: `values` past 2 GiB fail.)
        assert!(offsets.first() == Some(&0) && offsets.last().map(|&o| o as usize) == Some(values.len()));
        // Non-decreasing (from 0 to the values' length, so all of them within the values).
        debug_assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "a string column's offsets never decrease");
        assert!(nulls.as_ref().is_none_or(|n| n.len() + 1 == offsets.len()));
        // All ASCII (an `or` of the bytes, vectorised): UTF-8 with a char boundary at every
        // offset. Else checked as arrow checks it: UTF-8, and no offset inside a char.
        let ascii = values.iter().fold(0u8, |a, &b| a | b) < 0x80;
        let boundary = |o: &i32| values.get(*o as usize).is_none_or(|&b| (b as i8) >= -0x40);
        assert!(
            ascii || (simdutf8::basic::from_utf8(&values).is_ok() && offsets.iter().all(boundary)),
            "a string column's values are whole `&str`s"
        );
        Utf8Strings { offsets, values, nulls }
    }

    pub fn into_parts(self) -> (ScalarBuffer<i32>, Buffer, Option<NullBuffer>) {
        (self.offsets.into(), Buffer::from_vec(self.values), self.nulls)
    }
}

/// The keys of a dictionary column (no nulls) and its values.
///
/// Guarantee (the binding's `ColumnsFn` relies on it): `DictionaryArray::try_new(
/// Int32Array::new(keys, None), values)` accepts them: [`DictKeys::new`] checked every
/// key against `values`' length (one pass with no branch a key, against arrow's ~15
/// instructions a key in `try_new`).
pub struct DictKeys {
    keys: Vec<i32>,
    values: ArrayRef,
}

impl DictKeys {
    /// `None` when a key is negative or past the values.
    pub fn new(keys: Vec<i32>, values: ArrayRef) -> Option<Self> {
        // A fold with no early exit: vectorised (a compare and an `or` a key; an
        // unsigned max has no SSE2 instruction, and was ~3 instructions a key).
        let n = u32::try_from(values.len()).unwrap_or(u32::MAX);
        let bad = keys.iter().fold(false, |bad, &k| bad | (k as u32 >= n));
        (!bad).then_some(DictKeys { keys, values })
    }

    pub fn into_parts(self) -> (ScalarBuffer<i32>, ArrayRef) {
        (self.keys.into(), self.values)
    }
}

/// A column made here whose arrow checks are known to pass (each type says why).
pub enum Trusted {
    /// The `json` column (`Utf8View`).
    Views(Utf8Views),
    /// A string column (`Utf8`).
    Strings(Utf8Strings),
    /// The `type` column (`Dictionary(Int32, Utf8)`).
    Keys(DictKeys),
}

/// Makes the arrays of the [`Trusted`] columns. [`checked_columns`] is arrow's own
/// constructors, which check them again (the `json` column's UTF-8, ~10 ns an event, a
/// pass over the log's bytes after the SIMD check of each part; every offset and the
/// UTF-8 of the string columns; every dictionary key); the Python binding gives one
/// that relies on each type's guarantee.
pub type ColumnsFn = fn(Trusted) -> ArrayRef;

/// The columns as arrow checks them.
pub fn checked_columns(column: Trusted) -> ArrayRef {
    match column {
        Trusted::Views(views) => {
            let (views, buffers) = views.into_parts();
            Arc::new(StringViewArray::try_new(views.into(), buffers, None).expect("Utf8Views' guarantee"))
        }
        Trusted::Strings(strings) => {
            let (offsets, values, nulls) = strings.into_parts();
            Arc::new(StringArray::try_new(OffsetBuffer::new(offsets), values, nulls).expect("Utf8Strings' guarantee"))
        }
        Trusted::Keys(keys) => {
            let (keys, values) = keys.into_parts();
            Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::new(keys, None), values).expect("DictKeys' guarantee"))
        }
    }
}

/// A nullable `Utf8` column of a batch being built. `offsets` is empty until the
/// batch's first value, then holds one offset more than the rows it covers. A row with
/// no value is an empty string (its offset repeated) filled in, with its validity bit
/// cleared, when the next value comes or at the end: a value costs no bit. Arrow's
/// `StringBuilder` was ~62 instructions an append, and a call for the nulls before each
/// value.
#[derive(Default)]
pub(crate) struct StrColumn {
    offsets: Vec<i32>,
    /// The bytes of the values' `&str`s (checked UTF-8 by `Utf8Strings::new`).
    values: Vec<u8>,
    /// Validity bits (Arrow's layout), all set up to the rows they cover, made at the
    /// first null row (none: every row has a value).
    valid: Vec<u8>,
    /// Rows the batch is sized for (read when the column is reserved: not a value's
    /// argument, which held a register through the row writers' loops).
    capacity: usize,
}

impl StrColumn {
    /// A column of a batch sized for `capacity` rows.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        StrColumn { capacity, ..StrColumn::default() }
    }

    #[inline(always)]
    /// `value`: the bytes of a `&str`, char boundaries at both ends.
    pub(crate) fn set(&mut self, row: usize, value: &[u8]) {
        if self.offsets.len() <= row {
            self.fill(row, self.capacity);
        }
        agui_core::copy::push_short(&mut self.values, value);
        // (A batch is closed once its events' texts reach `BATCH_JSON_BYTES`, and a
        // value is never longer than its event's text. Past 2 GiB the offsets would wrap
        // and the last one, as a `usize`, not be `values`' length: `Utf8Strings::new`
        // fails then, so none is ever wrong; a check a value was 2 instructions.)
        self.offsets.push(self.values.len() as i32);
    }

    /// Null rows up to `row` (not included); the batch's first value reserves the column.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, row: usize, capacity: usize) {
        if self.offsets.is_empty() {
            self.offsets.reserve(capacity.max(row) + 1);
            self.offsets.push(0);
            // (Most values are short ids and deltas.)
            self.values.reserve(capacity * 8);
        }
        let (covered, end) = (self.offsets.len() - 1, self.values.len() as i32);
        if covered < row {
            self.offsets.extend(std::iter::repeat_n(end, row - covered));
            // (`clear_bits` reads whole words: room for one past the last bit.)
            if self.valid.len() < row / 8 + 8 {
                self.valid.resize((row / 8).max(capacity / 8) + 8, 0xff);
            }
            clear_bits(&mut self.valid, covered, row);
        }
    }

    /// The column of `rows` rows (`None`: no row has a value); it starts over.
    pub(crate) fn finish(&mut self, rows: usize) -> Option<Utf8Strings> {
        if self.offsets.is_empty() {
            return None;
        }
        self.fill(rows, 0);
        let nulls = (!self.valid.is_empty()).then(|| {
            let mut bits = std::mem::take(&mut self.valid);
            bits.resize(rows.div_ceil(8), 0xff);
            NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(bits), 0, rows))
        });
        Some(Utf8Strings::new(std::mem::take(&mut self.offsets), std::mem::take(&mut self.values), nulls))
    }
}

/// Clears bits `start..end` (Arrow's layout) of `bits`, which holds them and the 8
/// bytes from the one of bit `end` on.
fn clear_bits(bits: &mut [u8], start: usize, end: usize) {
    // Up to 64 bits at a time, as the little-endian word at the byte of the first (bit
    // `r` is bit `r - 8 * byte` of the word at `byte`): most runs are a few rows, one
    // word (masks a byte and a `memset` call between were ~40 instructions a run).
    let mut at = start;
    while at < end {
        let byte = at / 8;
        let (lo, n) = (at % 8, (end - at).min(64 - at % 8));
        let word: &mut [u8; 8] = (&mut bits[byte..byte + 8]).try_into().expect("8 bytes");
        let mask = (u64::MAX >> (64 - n)) << lo;
        *word = (u64::from_le_bytes(*word) & !mask).to_le_bytes();
        at += n;
    }
}

/// Strings up to this long are held in the view itself.
const INLINE: usize = 12;

/// Whether `StringViewArray::try_new` accepts every view over `blocks`, but for the pass
/// over the bytes: an inline view's padding is zero and its bytes UTF-8; a longer one
/// lies inside its block, starts and ends there on char boundaries (the block is UTF-8,
/// so its bytes are), and its prefix is its first four bytes.
fn views_fit(views: &[u128], blocks: &[Utf8Block]) -> bool {
    let blocks: Vec<&[u8]> = blocks.iter().map(|b| b.0.as_slice()).collect();
    let continues = |c: u8| (c as i8) < -0x40;
    let mut misfits = 0u32;
    for &v in views {
        let len = v as u32 as usize;
        if len <= INLINE {
            let bytes = v.to_le_bytes();
            let padding = len == INLINE || v >> (32 + 8 * len) == 0;
            // All ASCII (the padding is zero), or checked.
            let ascii = (v >> 32) & 0x8080_8080_8080_8080_8080_8080 == 0;
            misfits |= !(padding && (ascii || std::str::from_utf8(&bytes[4..4 + len]).is_ok())) as u32;
            continue;
        }
        let (prefix, n, offset) = ((v >> 32) as u32, (v >> 64) as u32 as usize, (v >> 96) as u32 as usize);
        let Some(&block) = blocks.get(n) else { return false };
        // (Offsets and lengths are u32s: their sum does not overflow.)
        let Some(text) = block.get(offset..offset + len) else { return false };
        // The prefix is the text's first four bytes (`len` > 4), so the start is a char
        // boundary when the first byte is not a continuation byte; the end is when the
        // byte after the text is not (or the text ends the block).
        let head = u32::from_le_bytes([text[0], text[1], text[2], text[3]]);
        let after = block.get(offset + len).is_some_and(|&c| continues(c));
        misfits |= (head ^ prefix) | continues(text[0]) as u32 | after as u32;
    }
    misfits == 0
}

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
    long_view(s, block, offset)
}

/// The view of `s`, longer than [`INLINE`] and shorter than 4 GiB, at `offset` of `block`.
#[inline(always)]
fn long_view(s: &[u8], block: u32, offset: u32) -> u128 {
    let prefix = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
    (s.len() as u128) | (prefix as u128) << 32 | (block as u128) << 64 | (offset as u128) << 96
}

/// The `json` column of a batch being built.
#[derive(Default)]
pub(crate) struct JsonViews {
    views: Vec<u128>,
    /// The part blocks views point into: block `1 + i` of the array (block 0: `copied`).
    blocks: Vec<Utf8Block>,
    /// Texts copied (not in the part's block) or written here (block 0: checked UTF-8
    /// when the batch is finished).
    copied: Vec<u8>,
    /// Rows the batch is sized for (`copied` reserved by them when texts are written).
    rows: usize,
    /// The block of the part being read ...
    part: Option<Utf8Block>,
    /// ... its address and length (0 when there is none), read by every view as plain
    /// numbers ...
    part_at: usize,
    part_len: usize,
    /// ... and its block number in this batch once a view points into it (0: none yet).
    part_number: u32,
}

impl JsonViews {
    pub(crate) fn with_capacity(rows: usize) -> Self {
        JsonViews { views: Vec::with_capacity(rows), rows, ..JsonViews::default() }
    }

    /// The block the next texts are slices of (`None`: copy them).
    /// (A part of 4 GiB or more is copied: the views' offsets and lengths are u32, and
    /// within a shorter part they need no check of their own.)
    pub(crate) fn set_part(&mut self, part: Option<Utf8Block>) {
        self.part = part.filter(|b| b.0.len() <= u32::MAX as usize);
        (self.part_at, self.part_len) = self.part.as_ref().map_or((0, 0), |b| (b.0.as_ptr() as usize, b.0.len()));
        self.part_number = 0;
    }

    /// The part's block number in this batch, its first view being made.
    #[cold]
    fn add_part(&mut self) -> u32 {
        let block = self.part.clone().expect("a view into the part has a part");
        self.blocks.push(block);
        self.part_number = self.blocks.len() as u32;
        self.part_number
    }

    // Always inlined: with two row writers (`push`, `push_form`) the compiler made it a
    // call, ~15 instructions an event more (callgrind).
    #[inline(always)]
    pub(crate) fn push(&mut self, text: &str) {
        let s = text.as_bytes();
        if s.len() <= INLINE {
            self.views.push(view(s, 0, 0));
            return;
        }
        let offset = (s.as_ptr() as usize).wrapping_sub(self.part_at);
        // In the part's block (shorter than 4 GiB: `set_part`; with no part, `part_len`
        // is 0 and no text this long is in it). (An end past `usize` is not: a text
        // before the part wraps its offset.)
        if offset.checked_add(s.len()).is_some_and(|end| end <= self.part_len) {
            let n = if self.part_number == 0 { self.add_part() } else { self.part_number };
            self.views.push(long_view(s, n, offset as u32));
            return;
        }
        // (A batch is closed once its texts reach `BATCH_JSON_BYTES`, far below 4 GiB.)
        let offset = u32::try_from(self.copied.len()).expect("a batch's copied texts stay below 4 GiB");
        self.copied.extend_from_slice(s);
        self.views.push(view(s, 0, offset));
    }

    /// The view of a text `write` appends to block 0 (protobuf flat events: their JSON
    /// written once, here); its length.
    #[inline(always)]
    pub(crate) fn push_written(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> usize {
        let n = self.try_push_written(|out| {
            write(out);
            true
        });
        n.unwrap_or_default()
    }

    /// [`JsonViews::push_written`] of a writer that may fail (`false`: protobuf nested
    /// events): then no view, and block 0 cut back to its length before, so its bytes
    /// are those it had (`None`). `write` only appends (the views made before point into
    /// the bytes before).
    #[inline(always)]
    pub(crate) fn try_push_written(&mut self, write: impl FnOnce(&mut Vec<u8>) -> bool) -> Option<usize> {
        if self.copied.capacity() == 0 {
            // (Sized for the batch's rows, short events: most batches then never regrow.)
            self.copied.reserve(self.rows * 96);
        }
        let start = self.copied.len();
        if !write(&mut self.copied) {
            self.copied.truncate(start);
            return None;
        }
        let s = &self.copied[start..];
        // The texts of block 0 start on char boundaries (`Utf8Views`' guarantee).
        assert!(s.first().is_none_or(|&b| (b as i8) >= -0x40), "a text starts on a char boundary");
        // (As in `push`: a batch's texts stay far below 4 GiB.)
        let offset = u32::try_from(start).expect("a batch's copied texts stay below 4 GiB");
        self.views.push(view(s, 0, offset));
        Some(s.len())
    }

    /// Block 0 so far (the tests of its rollback).
    #[cfg(test)]
    pub(crate) fn block0(&self) -> &[u8] {
        &self.copied
    }

    /// The column so far; it starts over (the part stays the same).
    pub(crate) fn finish(&mut self, make: ColumnsFn) -> ArrayRef {
        let mut blocks = Vec::with_capacity(1 + self.blocks.len());
        blocks.push(Utf8Block::from_written(std::mem::take(&mut self.copied)));
        blocks.append(&mut self.blocks);
        self.part_number = 0;
        // (The next batch's views sized again: taken empty, they regrew from nothing.)
        let views = std::mem::replace(&mut self.views, Vec::with_capacity(self.rows));
        make(Trusted::Views(Utf8Views::new(views, blocks)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

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
        let a = j.finish(checked_columns);
        let a = a.as_string_view();
        let want = ["copied before the part, long enough", inside[0], inside[1], inside[2], "{\"copied\":\"after\",\"x\":1}"];
        assert_eq!(a.iter().map(Option::unwrap).collect::<Vec<_>>(), want);
        // One copy block and the part; the part's long texts are not copied.
        assert_eq!(a.data_buffers().len(), 2);
        assert_eq!(a.data_buffers()[0].len(), want[0].len() + want[4].len());
        // The next batch points into the part again.
        j.push(inside[1]);
        let b = j.finish(checked_columns);
        let b = b.as_string_view();
        assert_eq!(b.value(0), inside[1]);
        assert_eq!((b.data_buffers().len(), b.data_buffers()[0].len()), (2, 0));
    }
}

#[cfg(test)]
mod string_tests {
    use super::*;
    use agui_core::test_rng::Rng;
    use arrow_array::cast::AsArray;
    use arrow_array::Array;

    /// The column of `want` (row by row) through `StrColumn`, made by arrow's checked
    /// constructor, twice (the column starts over after `finish`).
    fn check(want: &[Option<&str>], capacity: usize) {
        let mut c = StrColumn::with_capacity(capacity);
        for round in 0..2 {
            for (row, v) in want.iter().enumerate() {
                if let Some(v) = v {
                    c.set(row, v.as_bytes());
                }
            }
            let Some(strings) = c.finish(want.len()) else {
                assert!(want.iter().all(Option::is_none), "round {round}: {want:?}");
                continue;
            };
            let a = checked_columns(Trusted::Strings(strings));
            let a = a.as_string::<i32>();
            assert_eq!(a.iter().collect::<Vec<_>>(), want, "round {round}");
            assert_eq!(a.null_count(), want.iter().filter(|v| v.is_none()).count(), "round {round}: {want:?}");
            assert_eq!(a, &StringArray::from(want.to_vec()));
        }
    }

    /// Null runs and offsets: a first value late in the batch, values at its first and
    /// last rows, nulls only, runs across and within bytes of validity bits, long gaps
    /// past the capacity, empty strings (not null), multi-byte UTF-8.
    #[test]
    fn string_columns_read_back() {
        check(&[], 4);
        check(&[None; 9], 4);
        check(&[Some("")], 4);
        check(&[None, None, Some("é")], 1);
        check(&[Some("a"), None, None, None, None, None, None, None, None, Some("b")], 2);
        let values = ["", "msg-1", "état ", "ü", "😀 tool", "a much longer delta than the others, over sixteen bytes", "\u{0}"];
        let mut rng = Rng(26);
        for rows in [1usize, 7, 8, 9, 16, 17, 63, 64, 65, 200, 3000] {
            for density in [0, 1, 3, 8, 10] {
                let want: Vec<Option<&str>> = (0..rows)
                    .map(|r| {
                        let v = (rng.below(10) < density).then(|| values[rng.below(values.len())]);
                        // The first and last rows of some batches.
                        if (r == 0 || r + 1 == rows) && density == 3 { Some(values[r % values.len()]) } else { v }
                    })
                    .collect();
                check(&want, 4);
                check(&want, rows);
            }
        }
    }

    /// Values not whole `&str`s are refused when the column is made: bytes that are not
    /// UTF-8, and UTF-8 with an offset inside a char (`é` pushed a byte at a time).
    #[test]
    fn string_columns_check_their_values() {
        let e = "é".as_bytes();
        for values in [vec![&e[..1]], vec![b"a".as_slice(), &e[..1], &e[1..]], vec![&e[..1], &e[1..]]] {
            let made = std::panic::catch_unwind(|| {
                let mut c = StrColumn::with_capacity(4);
                for (row, v) in values.iter().enumerate() {
                    c.set(row, v);
                }
                c.finish(values.len()).map(drop)
            });
            assert!(made.is_err(), "{values:?}");
        }
        let mut c = StrColumn::with_capacity(4);
        c.set(0, e);
        c.set(2, "😀".as_bytes());
        assert!(c.finish(3).is_some());
    }

    /// Offsets that fall are refused in builds with debug assertions (whatever the rest says).
    #[test]
    #[cfg(debug_assertions)]
    fn string_offsets_never_fall() {
        let made = std::panic::catch_unwind(|| Utf8Strings::new(vec![0, 2, 1, 3], b"abc".to_vec(), None));
        assert!(made.is_err());
        assert!(std::panic::catch_unwind(|| Utf8Strings::new(vec![0, 1, 1, 3], b"abc".to_vec(), None)).is_ok());
    }

    /// Views arrow refuses are refused when the column is made, and only those: each
    /// case against arrow's own check.
    #[test]
    fn views_are_checked_as_arrow_checks_them() {
        let text = "0123456789abcdef-é-0123456789abcdef";
        let buffer = Buffer::from(text.as_bytes());
        let block = Utf8Block::new(buffer.clone(), std::str::from_utf8(buffer.as_slice()).unwrap()).unwrap();
        let at = |s: &str| text.find(s).unwrap() as u32;
        let mut bad_inline = view(b"abc", 0, 0).to_le_bytes();
        bad_inline[4] = 0xc3;
        let mut padded = view(b"abc", 0, 0).to_le_bytes();
        padded[10] = b'x';
        let cases = [
            view(b"short", 0, 0),
            view("é-ü".as_bytes(), 0, 0),
            u128::from_le_bytes(bad_inline),
            u128::from_le_bytes(padded),
            long_view(&text.as_bytes()[..16], 1, 0),
            long_view(&text.as_bytes()[..16], 2, 0),
            long_view(&text.as_bytes()[..16], 1, 20),
            long_view(&text.as_bytes()[..16], 1, 25),
            long_view(&text.as_bytes()[2..18], 1, 2),
            long_view(&text.as_bytes()[2..18], 1, 3),
            long_view(&text.as_bytes()[..17], 1, 0),
            long_view(&text.as_bytes()[..18], 1, 0),
            long_view(&text.as_bytes()[at("é") as usize + 1..at("é") as usize + 15], 1, at("é") + 1),
        ];
        let mut accepted = 0;
        for v in cases {
            let blocks = vec![Utf8Block::from_written(Vec::new()), block.clone()];
            let arrow = StringViewArray::try_new(vec![v].into(), blocks.iter().map(|b| b.0.clone()).collect::<Vec<_>>(), None).is_ok();
            let ours = views_fit(&[v], &blocks);
            assert_eq!(ours, arrow, "{:032x}", v);
            accepted += ours as usize;
        }
        assert_eq!(accepted, 5);
    }

    /// Builds with debug assertions check every column's views when it is made.
    #[test]
    #[cfg(debug_assertions)]
    fn views_are_checked_in_debug_builds() {
        let blocks = vec![Utf8Block::from_written(b"0123456789abcdef".to_vec())];
        let made = |v| std::panic::catch_unwind(|| Utf8Views::new(vec![v], blocks.clone()).views.len()).is_ok();
        assert!(made(long_view(b"0123456789abcdef", 0, 0)));
        assert!(!made(long_view(b"0123456789abcdef", 0, 1)));
    }

    /// Keys are checked against the values: negative or past them, none is made.
    #[test]
    fn dict_keys_are_checked() {
        let values: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c"]));
        for (keys, ok) in [(vec![], true), (vec![0, 2, 1, 2], true), (vec![0, 3], false), (vec![-1], false), (vec![i32::MIN, 0], false)] {
            let made = DictKeys::new(keys.clone(), values.clone());
            assert_eq!(made.is_some(), ok, "{keys:?}");
            if let Some(k) = made {
                let a = checked_columns(Trusted::Keys(k));
                assert_eq!(a.as_dictionary::<Int32Type>().keys().values().to_vec(), keys);
            }
        }
        // Any key passes the check of an empty dictionary only when there is none.
        assert!(DictKeys::new(vec![0], Arc::new(StringArray::from(Vec::<&str>::new()))).is_none());
    }

    /// `clear_bits` against a bit at a time.
    #[test]
    fn clear_bits_clears_the_run_only() {
        for start in 0..80 {
            for end in start..220 {
                let mut bits = vec![0xffu8; end / 8 + 8];
                clear_bits(&mut bits, start, end);
                for i in 0..bits.len() * 8 {
                    assert_eq!(bits[i / 8] >> (i % 8) & 1 == 0, (start..end).contains(&i), "{start}..{end} bit {i}");
                }
            }
        }
    }
}
