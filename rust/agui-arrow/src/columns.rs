//! The primitive columns of a batch being built, as plain vectors made into Arrow
//! arrays once, when the batch is finished.
//!
//! Why not arrow's `PrimitiveBuilder`: each append also keeps its null bitmap builder
//! (~33 instructions an append, callgrind), and a nullable column must be padded with
//! nulls before each value. Here a value is a `Vec` push: of the value (a column every
//! row has a value in), or of its row and value (a nullable one: the zeros and validity
//! bits are written when the batch is finished). The string columns keep arrow's
//! `StringBuilder`: the same scheme for them made no fewer instructions per append, and
//! `StringArray::try_new` then checks every offset and the UTF-8 again.

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::PrimitiveArray;
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};

/// A nullable primitive column: the rows that have a value and their values, made into
/// the column (zeros and validity bits) when the batch is finished.
pub(crate) struct OptColumn<T: ArrowPrimitiveType> {
    /// (Most of these columns are sparse: a timestamp on a few events, the usage counts
    /// of a run's end. Writing a value's row in place, the nulls before it filled then,
    /// was a `memset` call a value, ~100 instructions with its validity byte.)
    set: Vec<(usize, T::Native)>,
}

impl<T: ArrowPrimitiveType> Default for OptColumn<T> {
    fn default() -> Self {
        OptColumn { set: Vec::new() }
    }
}

impl<T: ArrowPrimitiveType> OptColumn<T> {
    /// `value` in row `row`, after those of the rows before it.
    #[inline]
    pub(crate) fn set(&mut self, row: usize, value: T::Native) {
        self.set.push((row, value));
    }

    /// The column of `rows` rows (`None`: no row has a value); it starts over.
    pub(crate) fn finish(&mut self, rows: usize) -> Option<PrimitiveArray<T>> {
        if self.set.is_empty() {
            return None;
        }
        // (The zeros of the null rows written run by run, as they come: the whole column
        // zeroed first was a `rep stosb` of its bytes, counted a byte by callgrind.)
        let (mut values, mut bits) = (Vec::with_capacity(rows), vec![0u8; rows.div_ceil(8)]);
        for &(row, value) in &self.set {
            values.resize(row, T::Native::default());
            values.push(value);
            bits[row / 8] |= 1 << (row % 8);
        }
        values.resize(rows, T::Native::default());
        self.set.clear();
        let nulls = NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(bits), 0, rows));
        Some(PrimitiveArray::new(ScalarBuffer::from(values), Some(nulls)))
    }
}

/// A column every row has a value in.
pub(crate) fn primitive<T: ArrowPrimitiveType>(values: &mut Vec<T::Native>, capacity: usize) -> PrimitiveArray<T> {
    let values = std::mem::replace(values, Vec::with_capacity(capacity));
    PrimitiveArray::new(ScalarBuffer::from(values), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;

    /// Values at scattered rows (first, last, runs, gaps past a byte of validity bits)
    /// read back as set, every other row null; the column starts over after `finish`.
    #[test]
    fn sparse_columns_read_back() {
        for rows in [1usize, 7, 8, 9, 64, 65, 1000] {
            // (Every row, and a third of them with others scattered.)
            for every in [1usize, 3] {
                let want: Vec<Option<i64>> =
                    (0..rows).map(|r| (r % every == 0 || r % 17 == 5 || r + 1 == rows).then_some(r as i64 - 3)).collect();
                let mut p = OptColumn::<Int64Type>::default();
                for round in 0..2 {
                    for (r, v) in want.iter().enumerate() {
                        if let Some(v) = v {
                            p.set(r, *v);
                        }
                    }
                    let b = p.finish(rows).unwrap();
                    assert_eq!(b.len(), rows, "round {round}");
                    assert_eq!(b.iter().collect::<Vec<_>>(), want);
                    assert_eq!(b.null_count(), want.iter().filter(|v| v.is_none()).count());
                }
                assert!(p.finish(rows).is_none());
            }
        }
        let mut all = Vec::new();
        all.extend([1u64, 2, 3]);
        let a = primitive::<arrow_array::types::UInt64Type>(&mut all, 8);
        assert_eq!((a.values().to_vec(), a.null_count(), all.len(), all.capacity()), (vec![1, 2, 3], 0, 0, 8));
    }
}
