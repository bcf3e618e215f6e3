//! The two steps of the Arrow handover past arrow-rs's checks: a Python `bytes` shared as
//! an Arrow buffer without a copy, and the columns agui-arrow vouches for made without
//! arrow's checks of them again (each on the guarantee of its `agui_arrow::Trusted` type).

use std::sync::Arc;

use agui_arrow::arrow_array::types::Int32Type;
use agui_arrow::arrow_array::{ArrayRef, DictionaryArray, Int32Array, StringArray, StringViewArray};
use agui_arrow::arrow_buffer::{Buffer, OffsetBuffer};
use agui_arrow::Trusted;
use pyo3::pybacked::PyBackedBytes;

/// The bytes of a Python `bytes` object as an Arrow buffer, without a copy: the `json`
/// column's views point into it, and the buffer keeps the object alive.
pub(crate) fn bytes_buffer(bytes: PyBackedBytes) -> Buffer {
    let data: &[u8] = &bytes;
    let (ptr, len) = (std::ptr::NonNull::from(data).cast::<u8>(), data.len());
    // SAFETY: `ptr..ptr + len` is the data of `bytes` (a `bytes` object's, which Python
    // never changes nor moves, or for a `bytearray` PyO3's own copy, behind an `Arc`):
    // valid and unchanged for as long as `bytes` lives, and moving `bytes` into the
    // owner does not move the data. The buffer owns `bytes` and drops it when the last
    // buffer slice over it is dropped, on any thread: PyO3 defers the reference count's
    // decrement to the next time the GIL is held. (`AssertUnwindSafe`: the owner is
    // only ever dropped, never read.)
    unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(std::panic::AssertUnwindSafe(bytes))) }
}

/// The columns agui-arrow vouches for without arrow's checks of them again: the `json`
/// column's UTF-8 (~10 ns an event, a pass over the log's bytes after the SIMD check of
/// each part), the string columns' offsets and UTF-8 and the `type` keys (together
/// ~90 instructions an event in `to_arrow`, callgrind). Each type's guarantee is stated
/// on it: the string columns' bytes and the keys are checked by their one constructor, in
/// cheaper ways than arrow's; the views and the offsets' order are right by how their one
/// maker makes them (checked too in builds with debug assertions); every Rust test builds
/// its columns through arrow's checked constructors (`agui_arrow::checked_columns`), which
/// check them again.
pub(crate) fn trusted_columns(column: Trusted) -> ArrayRef {
    match column {
        Trusted::Views(views) => {
            let (views, buffers) = views.into_parts();
            // SAFETY: `try_new` accepts them: `Utf8Views`' guarantee (its one maker,
            // agui-arrow's `JsonViews`, makes each view from a `&str` inside a block that
            // is UTF-8: the part's bytes, or the batch's copies, checked when finished;
            // every view checked as arrow does but for the pass over the bytes in every
            // build with debug assertions).
            Arc::new(unsafe { StringViewArray::new_unchecked(views.into(), buffers.into(), None) })
        }
        Trusted::Strings(strings) => {
            let (offsets, values, nulls) = strings.into_parts();
            // SAFETY: `StringArray::try_new(OffsetBuffer::new(offsets), values, nulls)`
            // accepts them: `Utf8Strings`' guarantee (its one constructor checked the
            // offsets from 0 to the values' length, a null bit per row, the values UTF-8
            // with every offset on a char boundary; its one maker makes offsets that never
            // fall).
            Arc::new(unsafe { StringArray::new_unchecked(OffsetBuffer::new_unchecked(offsets), values, nulls) })
        }
        Trusted::Keys(keys) => {
            let (keys, values) = keys.into_parts();
            // SAFETY: `DictionaryArray::try_new` accepts them: `DictKeys`' guarantee
            // (every key checked to be a position in `values` when it was made).
            Arc::new(unsafe { DictionaryArray::<Int32Type>::new_unchecked(Int32Array::new(keys, None), values) })
        }
    }
}

