//! The primitive columns of a batch being built, as plain vectors (values and validity
//! bits) made into Arrow arrays once, when the batch is finished.
//!
//! Why not arrow's `PrimitiveBuilder`: each append also keeps its null bitmap builder
//! (~33 instructions an append, callgrind), and a nullable column must be padded with
//! nulls before each value. Here a value is a `Vec` push (and one bit when nullable); the
//! rows without one are filled with zeros when the next value comes or when the batch is
//! finished, and their validity bit stays unset. The string columns keep arrow's
//! `StringBuilder`: the same scheme for them made no fewer instructions per append, and
//! `StringArray::try_new` then checks every offset and the UTF-8 again (docs/logs.md,
//! stop 22).

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::PrimitiveArray;
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};

/// Validity bits (Arrow's layout: bit `r % 8` of byte `r / 8`), grown as rows get a value.
#[derive(Default)]
struct Validity(Vec<u8>);

impl Validity {
    /// (Grown to the bits of `capacity` rows at once: a byte at a time was a `memset`
    /// call every 8 rows of a dense column.)
    #[inline]
    fn set(&mut self, row: usize, capacity: usize) {
        let byte = row / 8;
        if byte >= self.0.len() {
            self.0.resize((byte + 1).max(capacity.div_ceil(8)), 0);
        }
        self.0[byte] |= 1 << (row % 8);
    }

    /// The null buffer of `rows` rows; the vector starts over.
    fn finish(&mut self, rows: usize) -> NullBuffer {
        let mut bits = std::mem::take(&mut self.0);
        bits.resize(rows.div_ceil(8), 0);
        NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(bits), 0, rows))
    }
}

/// A nullable primitive column.
pub(crate) struct OptColumn<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    valid: Validity,
}

impl<T: ArrowPrimitiveType> Default for OptColumn<T> {
    fn default() -> Self {
        OptColumn { values: Vec::new(), valid: Validity::default() }
    }
}

impl<T: ArrowPrimitiveType> OptColumn<T> {
    #[inline]
    pub(crate) fn set(&mut self, row: usize, value: T::Native, capacity: usize) {
        if self.values.capacity() == 0 {
            self.values.reserve(capacity);
        }
        if self.values.len() < row {
            self.values.resize(row, T::Native::default());
        }
        self.values.push(value);
        self.valid.set(row, capacity);
    }

    /// The column of `rows` rows (`None`: no row has a value); it starts over.
    pub(crate) fn finish(&mut self, rows: usize) -> Option<PrimitiveArray<T>> {
        if self.values.is_empty() {
            return None;
        }
        let mut values = std::mem::take(&mut self.values);
        values.resize(rows, T::Native::default());
        Some(PrimitiveArray::new(ScalarBuffer::from(values), Some(self.valid.finish(rows))))
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
            let want: Vec<Option<i64>> =
                (0..rows).map(|r| (r % 3 == 0 || r % 17 == 5 || r + 1 == rows).then_some(r as i64 - 3)).collect();
            let mut p = OptColumn::<Int64Type>::default();
            for round in 0..2 {
                for (r, v) in want.iter().enumerate() {
                    if let Some(v) = v {
                        p.set(r, *v, 4);
                    }
                }
                let b = p.finish(rows).unwrap();
                assert_eq!(b.len(), rows, "round {round}");
                assert_eq!(b.iter().collect::<Vec<_>>(), want);
                assert_eq!(b.null_count(), want.iter().filter(|v| v.is_none()).count());
            }
            assert!(p.finish(rows).is_none());
        }
        let mut all = Vec::new();
        all.extend([1u64, 2, 3]);
        let a = primitive::<arrow_array::types::UInt64Type>(&mut all, 8);
        assert_eq!((a.values().to_vec(), a.null_count(), all.len(), all.capacity()), (vec![1, 2, 3], 0, 0, 8));
    }
}
