//! Direct reads of CPython objects' memory past the limited API, for the object walker's
//! hot path (`walk.rs`), the Struct field slots (`plan.rs`), and msgspec's vectorcall slot
//! for the Structs' metaclass (`struct_vectorcall`, used by `construct.rs`): every read of
//! CPython memory the limited API does not offer is in this one module.
//!
//! The limited API reaches a list item, a str's UTF-8, a float or an int only through a
//! function call each (`PyList_GetItem`, `PyUnicode_AsUTF8AndSize`, ...), where orjson and
//! msgspec read the objects' memory. This module reads the same memory, and is sure of
//! the layout before it does: [`Layout::detect`] runs once at module init and enables
//! each kind of read only when
//! * the interpreter is CPython 3.10–3.13 (the layouts below; 3.14 changed `str`), on a
//!   64-bit little-endian target (the bit-field order of `str`'s state), and
//! * the read agrees with the public API on real objects made for the check: the same
//!   pointers (list and tuple items, a str's UTF-8 buffer), sizes and values.
//!
//! Otherwise that kind of value goes through the API, as before. Reading memory calls no
//! symbol outside the stable ABI: the wheel stays abi3 (`abi3audit --strict`).
//!
//! Layouts read (CPython headers, 64-bit):
//! * every object: `ob_refcnt`, `ob_type`; var-sized ones then `ob_size` at 16; the count
//!   is a plain `Py_ssize_t` (3.10, 3.11), or (3.12, 3.13) its low 32 bits are the count and
//!   all ones mark an immortal object, whose count never changes (`Py_INCREF` / `Py_DECREF`
//!   of `object.h`, reproduced by [`Layout::incref`] / [`Layout::decref`]);
//! * `list`: `ob_item` (a pointer to the items) at 24; `tuple`: the items inline at 24;
//! * `float`: the `double` at 16;
//! * `int`: 30-bit digits from 24; the digit count and sign at 16, as a signed size
//!   (3.10, 3.11) or as `lv_tag` = count << 3 | sign (0 positive, 1 zero, 2 negative) (3.12+);
//! * `dict` (3.11–3.13, combined tables only: a split table, e.g. an instance `__dict__`,
//!   goes through `PyDict_Next`): `ma_keys` at 32, `ma_values` at 40 (NULL when combined);
//!   the keys object holds `dk_log2_index_bytes` at 9, `dk_kind` at 10 (0: any keys,
//!   entries of hash, key, value; else str keys, entries of key, value), `dk_nentries` at
//!   24, the index table at 32 and the entries after it;
//! * `str` (PEP 393): `length` at 16, `state` at 32 (bits: interned 0–1, kind 2–4,
//!   compact 5, ascii 6); `sizeof(PyASCIIObject)` is 48 (3.10, 3.11: a `wstr` pointer) or
//!   40; compact ASCII data follows it; a compact non-ASCII str has `utf8_length` and the
//!   `utf8` pointer (NULL until the UTF-8 is first asked for) right after it;
//! * `PyMemberDescrObject` (a `__slots__` member): the common descriptor header
//!   (`d_type`, `d_name`, `d_qualname`), then the `PyMemberDef` pointer;
//! * the instance dict of a class with a managed dict (`Py_TPFLAGS_MANAGED_DICT`, 3.11+, what
//!   msgspec's `dict=True` Structs have): a pointer three words before the object, NULL
//!   until the dict is made (3.11: the word before it points to the attributes' values
//!   when they are kept apart from a dict; 3.12: the word itself does, tagged in its low
//!   bit; 3.13: a class with inline values has them after the object, `Py_TPFLAGS_INLINE_VALUES`):
//!   read only when there are no such values, so that a NULL means "no attributes";
//! * `PyTypeObject`: `tp_version_tag` (an `unsigned int`) at 384, after `tp_del`: the
//!   interpreter gives a class a new tag whenever it (or a base) changes (`PyType_Modified`:
//!   0 until an attribute lookup assigns the next one), so an unchanged tag says a plan
//!   built from the class still describes it.

use std::os::raw::c_int;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{IntoPyDict, PyFloat, PyList, PyString, PyTuple, PyType};

const OB_SIZE: usize = 16;
const SEQ_ITEMS: usize = 24;
const FLOAT_VALUE: usize = 16;
const INT_DIGITS: usize = 24;
const STR_LENGTH: usize = 16;
const STR_STATE: usize = 32;
const STATE_KIND_SHIFT: u32 = 2;
const STATE_COMPACT: u32 = 1 << 5;
const STATE_ASCII: u32 = 1 << 6;
const DIGIT_BITS: u32 = 30;
// dict (3.11-3.13): `PyDictObject` then `PyDictKeysObject` (dictobject.c's private header:
// dk_refcnt, dk_log2_size, dk_log2_index_bytes, dk_kind, dk_version, dk_usable,
// dk_nentries, then the index table and the entries).
const DICT_KEYS: usize = 32;
const DICT_VALUES: usize = 40;
const DK_LOG2_INDEX_BYTES: usize = 9;
const DK_KIND: usize = 10;
const DK_NENTRIES: usize = 24;
const DK_INDICES: usize = 32;
const DK_KIND_GENERAL: u8 = 0;
const TP_VERSION_TAG: usize = 384;
const TPFLAGS_INLINE_VALUES: std::os::raw::c_ulong = 1 << 2;
const TPFLAGS_MANAGED_DICT: std::os::raw::c_ulong = 1 << 4;

/// How an int's digit count and sign are stored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum IntRepr {
    /// Through the API (`PyLong_AsLongLongAndOverflow`).
    Api,
    /// `ob_size`: the digit count, negative for negative numbers (3.10, 3.11).
    SignedSize,
    /// `lv_tag`: digit count << 3 | sign (3.12, 3.13).
    Tagged,
}

/// How reference counts are changed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RefRepr {
    /// Through the API (`Py_IncRef` / `Py_DecRef`, a call each under the limited API).
    Api,
    /// A plain `Py_ssize_t` (3.10, 3.11).
    Plain,
    /// Immortal objects (3.12, 3.13): the low 32 bits all ones.
    Immortal,
}

/// Which direct reads hold on this interpreter (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// `sizeof(PyASCIIObject)`; 0: strings through the API.
    str_head: usize,
    /// list and tuple items read in place.
    seq: bool,
    float: bool,
    int: IntRepr,
    /// `__slots__` member descriptors read for their offset (`member_offset`).
    member: bool,
    /// combined-table dicts iterated in place (`dict_direct`, `dict_next`).
    dict: bool,
    /// reference counts changed in place (`incref`, `decref`).
    refcnt: RefRepr,
    /// a class's version tag read (`type_version`).
    version: bool,
    /// managed instance dicts read (`instance_dict`): the minor version (11, 12, 13), 0: off.
    managed_dict: u8,
}

impl Layout {
    /// Every read through the API.
    const API: Layout =
        Layout { str_head: 0, seq: false, float: false, int: IntRepr::Api, member: false, dict: false, refcnt: RefRepr::Api, version: false, managed_dict: 0 };

    /// Whether instances of `ty` keep their dict where [`managed_dict`](Self::managed_dict)
    /// reads it: a class with a managed dict and (3.13) no inline values. The flags are
    /// fixed when the class is made, so a plan asks once per class (asking per object was
    /// a call through the API, ~65 instructions per Struct written).
    ///
    pub(crate) fn managed_class(self, ty: &Bound<'_, PyType>) -> bool {
        // SAFETY: `ty` is a live type object and the GIL is held (its token).
        unsafe { self.managed_type(ty.as_type_ptr()) }
    }

    /// [`managed_class`](Self::managed_class) of a type pointer.
    ///
    /// # Safety
    /// `ty` must be a live type object; the GIL must be held.
    unsafe fn managed_type(self, ty: *mut ffi::PyTypeObject) -> bool {
        if self.managed_dict == 0 {
            return false;
        }
        // SAFETY: the contract: a live type object, the GIL held; PyType_GetFlags only reads it.
        let flags = unsafe { ffi::PyType_GetFlags(ty) };
        flags & TPFLAGS_MANAGED_DICT != 0 && !(self.managed_dict >= 13 && flags & TPFLAGS_INLINE_VALUES != 0)
    }

    /// The instance dict of `obj`, whose class is a [`managed_class`](Self::managed_class):
    /// `Some(null)` (none yet: no attributes beyond its slots), `Some(dict)` (borrowed), or
    /// None (its attributes are values kept apart from a dict: ask the API).
    ///
    /// # Safety
    /// `obj` must be a live object whose class is a `managed_class`; the GIL must be held.
    #[inline(always)]
    pub(crate) unsafe fn managed_dict(self, obj: *mut ffi::PyObject) -> Option<*mut ffi::PyObject> {
        // SAFETY: the contract: a live object of a managed class (its managed-dict words lie before
        // it, the layout of this interpreter's minor version, gated by detect and checked by
        // check_managed_dict).
        unsafe {
            let words = obj as *const usize;
            let dict = *words.sub(3);
            let values_apart = match self.managed_dict {
                11 => *words.sub(4) != 0,
                12 => dict & 1 != 0,
                _ => false,
            };
            (!values_apart).then_some(dict as *mut ffi::PyObject)
        }
    }

    /// The instance dict of `obj` when it can be told without making one: `Some(null)`
    /// (none yet: no attributes beyond its slots), `Some(dict)` (borrowed), or None (ask
    /// the API, `PyObject_GenericGetDict`, which makes an empty dict if there is none).
    ///
    /// # Safety
    /// `obj` must be a live object; the GIL must be held.
    #[inline(always)]
    pub(crate) unsafe fn instance_dict(self, obj: *mut ffi::PyObject) -> Option<*mut ffi::PyObject> {
        // SAFETY: the contract: a live object (its type readable), then managed_dict's contract
        // once its class is a managed one.
        unsafe {
            if !self.managed_type(ffi::Py_TYPE(obj)) {
                return None;
            }
            self.managed_dict(obj)
        }
    }

    /// A Struct's instance dict (its extras), None when it has none: read directly when it
    /// can be ([`instance_dict`](Self::instance_dict)), without making a dict where none was
    /// made yet (a decoded or constructed Struct has none until an extra is set; making an
    /// empty one per event and operation cost a fifth of a replay); else through
    /// `PyObject_GenericGetDict`, which makes one (an error for an object without `__dict__`).
    pub(crate) fn extras_dict<'py>(self, v: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // SAFETY: `v` is a live object and the GIL is held (the token).
        let managed = unsafe { self.managed_type(ffi::Py_TYPE(v.as_ptr())) };
        self.class_extras(v, managed)
    }

    /// [`extras_dict`](Self::extras_dict) of an instance of a class whose
    /// [`managed_class`](Self::managed_class) is `managed` (known from its plan): the common
    /// case (no dict yet) inline, with no call.
    #[inline(always)]
    pub(crate) fn class_extras<'py>(self, v: &Bound<'py, PyAny>, managed: bool) -> PyResult<Option<Bound<'py, PyAny>>> {
        if managed {
            // SAFETY: `v` is a live object of a managed class and the GIL is held (the
            // token); the dict is borrowed from it (a new reference is taken), only read.
            match unsafe { self.managed_dict(v.as_ptr()) } {
                Some(d) if d.is_null() => return Ok(None),
                // SAFETY: a managed dict read as just above: a live dict borrowed from the live
                // object `v`; a new reference is taken.
                Some(d) => return Ok(Some(unsafe { Bound::from_borrowed_ptr(v.py(), d) })),
                None => {}
            }
        }
        generic_dict(v).map(Some)
    }

    /// Whether `v` has no instance attributes beyond its slots: an empty or absent
    /// `__dict__` ([`extras_dict`](Self::extras_dict)); an object without one has none
    /// either; a dict subclass counts its items (construction's `_given.Extras`, whose
    /// items are the extras).
    pub(crate) fn no_extras(self, v: &Bound<'_, PyAny>) -> bool {
        // The common case read in place, with no reference taken (a replay asks per event
        // and per operation).
        // SAFETY: `v` is a live object and the GIL is held; the dict is borrowed, only read.
        match unsafe { self.instance_dict(v.as_ptr()) } {
            Some(d) if d.is_null() => return true,
            // SAFETY: `d` is the live instance dict of the live object `v`, only read, under the
            // GIL.
            Some(d) if unsafe { ffi::PyDict_Check(d) } != 0 => return unsafe { ffi::PyDict_Size(d) } == 0,
            _ => {}
        }
        match self.extras_dict(v) {
            Ok(Some(d)) => d.cast_into::<pyo3::types::PyDict>().is_ok_and(|d| d.is_empty()),
            Ok(None) | Err(_) => true,
        }
    }

    /// [`no_extras`](Self::no_extras) of an instance of a class whose
    /// [`managed_class`](Self::managed_class) is `managed` (known from its plan): the common
    /// case (no dict made) read with no call.
    #[inline(always)]
    pub(crate) fn no_class_extras(self, v: &Bound<'_, PyAny>, managed: bool) -> bool {
        // SAFETY: `v` is a live object of a managed class (the caller's plan says so) and the
        // GIL is held (the token); the word is only compared with NULL.
        if managed && unsafe { self.managed_dict(v.as_ptr()) }.is_some_and(|d| d.is_null()) {
            return true;
        }
        self.no_extras(v)
    }

    /// The version tag of a class (`tp_version_tag`): the same nonzero tag means the class
    /// has not changed since it was read; 0 means changed and not looked up since (or out
    /// of tags). None when the read is off.
    ///
    #[inline(always)]
    pub(crate) fn version_of(self, ty: &Bound<'_, PyType>) -> Option<u32> {
        // SAFETY: `ty` is a live type object.
        unsafe { self.type_version(ty.as_type_ptr()) }
    }

    /// [`version_of`](Self::version_of) the class of `obj`.
    #[inline(always)]
    pub(crate) fn version_of_class(self, obj: &Bound<'_, PyAny>) -> Option<u32> {
        // SAFETY: the type of a live object is a live type object.
        unsafe { self.type_version(obj.get_type_ptr()) }
    }

    /// [`version_of`](Self::version_of) a type pointer.
    ///
    /// # Safety
    /// `ty` must be a live type object.
    #[inline(always)]
    pub(crate) unsafe fn type_version(self, ty: *mut ffi::PyTypeObject) -> Option<u32> {
        // SAFETY: the contract: a live type object; tp_version_tag's offset is the one detect's
        // gate and check_version confirmed.
        self.version.then(|| unsafe { *((ty as *const u8).add(TP_VERSION_TAG) as *const u32) })
    }

    /// `Py_INCREF`, in place when the layout holds (the limited API's is a call).
    ///
    /// # Safety
    /// `o` must be a live object; the GIL must be held.
    #[inline(always)]
    pub(crate) unsafe fn incref(self, o: *mut ffi::PyObject) {
        // SAFETY: the contract: a live object, the GIL held; the in-place forms only when
        // check_refcnt confirmed them (RefRepr).
        unsafe {
            match self.refcnt {
                RefRepr::Api => ffi::Py_IncRef(o),
                RefRepr::Plain => *(o as *mut isize) += 1,
                RefRepr::Immortal => {
                    let low = o as *mut u32;
                    let c = (*low).wrapping_add(1);
                    if c != 0 {
                        *low = c;
                    }
                }
            }
        }
    }

    /// `Py_DECREF`: in place unless the count drops to zero (the API then deallocates).
    ///
    /// # Safety
    /// `o` must be a live object holding a reference the caller owns; the GIL must be held.
    #[inline(always)]
    pub(crate) unsafe fn decref(self, o: *mut ffi::PyObject) {
        // SAFETY: the contract: a live object holding a reference the caller owns, the GIL held; in
        // place only when check_refcnt confirmed it, and never the last reference (the API
        // deallocates).
        unsafe {
            let c = *(o as *const isize);
            match self.refcnt {
                RefRepr::Immortal if (c as i32) < 0 => {}
                RefRepr::Plain | RefRepr::Immortal if c > 1 => *(o as *mut isize) = c - 1,
                _ => ffi::Py_DecRef(o),
            }
        }
    }

    /// Whether `d`'s entries can be read in place ([`Layout::dict_next`]): the reads hold
    /// and its table is combined (a combined table never becomes split).
    ///
    /// # Safety
    /// `d` must be a live `dict` (or subclass instance).
    #[inline(always)]
    pub(crate) unsafe fn dict_direct(self, d: *mut ffi::PyObject) -> bool {
        // SAFETY: the contract: a live dict; ma_values' offset is the one detect's gate and
        // check_dict confirmed (`self.dict` on).
        self.dict && unsafe { (*((d as *const u8).add(DICT_VALUES) as *const *const u8)).is_null() }
    }

    /// The next entry `(key, value)` of a dict at or after entry `*pos`, advancing `*pos`
    /// past it; None at the end. The table is read again at each call (walking a value may
    /// run Python code that changes the dict), as `PyDict_Next` does. Borrowed.
    ///
    /// # Safety
    /// `d` must be a live `dict` for which [`Layout::dict_direct`] held.
    #[inline(always)]
    pub(crate) unsafe fn dict_next(self, d: *mut ffi::PyObject, pos: &mut usize) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
        // SAFETY: the contract (dict_direct held for this live dict), as dict_entries and next
        // require.
        unsafe { self.dict_entries(d).next(pos) }
    }

    /// The entry table of a dict as it is now, for [`DictEntries::next`]: what
    /// [`Layout::dict_next`] reads at each call, read once (additive: for a loop that
    /// takes it again only after Python code may have run).
    ///
    /// # Safety
    /// `d` must be a live `dict` for which [`Layout::dict_direct`] held.
    #[inline(always)]
    pub(crate) unsafe fn dict_entries(self, d: *mut ffi::PyObject) -> DictEntries {
        // SAFETY: the contract: a live dict with a combined table (dict_direct), whose keys object
        // and entries are laid out as check_dict confirmed; read before any Python code runs.
        unsafe {
            let keys = *((d as *const u8).add(DICT_KEYS) as *const *const u8);
            let n = *(keys.add(DK_NENTRIES) as *const isize) as usize;
            let entries = keys.add(DK_INDICES + (1usize << *keys.add(DK_LOG2_INDEX_BYTES)));
            let (stride, key_at) = if *keys.add(DK_KIND) == DK_KIND_GENERAL { (24, 8) } else { (16, 0) };
            DictEntries { first_key: entries.add(key_at), n, stride }
        }
    }

    /// The UTF-8 text of a `str`, read in place: compact ASCII data, or the cached UTF-8
    /// buffer of a compact non-ASCII str. None: ask the API (which also caches the UTF-8).
    ///
    /// # Safety
    /// `s` must be a live `str` object (or subclass instance); the slice lives as long
    /// as it does.
    #[inline(always)]
    pub(crate) unsafe fn str_utf8<'s>(self, s: *mut ffi::PyObject) -> Option<&'s [u8]> {
        if self.str_head == 0 {
            return None;
        }
        let base = s as *const u8;
        // SAFETY: the contract: a live str (its header read at the offsets check_str confirmed);
        // the compact data or the cached UTF-8 buffer lives as long as the str, which never changes
        // it.
        unsafe {
            let state = *(base.add(STR_STATE) as *const u32);
            if state & STATE_COMPACT == 0 {
                return None;
            }
            if state & STATE_ASCII != 0 {
                let len = *(base.add(STR_LENGTH) as *const isize) as usize;
                return Some(std::slice::from_raw_parts(base.add(self.str_head), len));
            }
            let utf8 = *(base.add(self.str_head + 8) as *const *const u8);
            if utf8.is_null() {
                return None;
            }
            let len = *(base.add(self.str_head) as *const isize) as usize;
            Some(std::slice::from_raw_parts(utf8, len))
        }
    }

    /// Whether a `str` is known to hold no character past U+FFFF: a compact str of the 1-
    /// or 2-byte kind (PEP 393), read in place. False when it may, or the read is off.
    ///
    /// # Safety
    /// `s` must be a live `str` object (or subclass instance).
    #[inline(always)]
    pub(crate) unsafe fn str_within_bmp(self, s: *mut ffi::PyObject) -> bool {
        if self.str_head == 0 {
            return false;
        }
        // SAFETY: the contract: a live str, its state word at the offset check_str confirmed.
        let state = unsafe { *((s as *const u8).add(STR_STATE) as *const u32) };
        state & STATE_COMPACT != 0 && matches!((state >> STATE_KIND_SHIFT) & 7, 1 | 2)
    }

    /// Item `i` of a list, or None past its end (the size is read at each call: walking
    /// an item may run Python code that changes the list). Borrowed.
    ///
    /// # Safety
    /// `list` must be a live exact `list`; `self.seq` must hold (see [`Layout::seq`]).
    #[inline(always)]
    pub(crate) unsafe fn list_item(self, list: *mut ffi::PyObject, i: usize) -> Option<*mut ffi::PyObject> {
        let base = list as *const u8;
        // SAFETY: the contract: a live exact list, `self.seq` on (check_seq confirmed ob_size and
        // ob_item).
        unsafe {
            let n = *(base.add(OB_SIZE) as *const isize) as usize;
            if i >= n {
                return None;
            }
            let items = *(base.add(SEQ_ITEMS) as *const *const *mut ffi::PyObject);
            Some(*items.add(i))
        }
    }

    /// The items of a list as they are now ([`Layout::list_item`] reads the same at each
    /// call). Valid only while no Python code runs (which may resize or change the list):
    /// take them again after.
    ///
    /// # Safety
    /// `list` must be a live exact `list`; `self.seq` must hold; the slice must not be used
    /// after Python code ran.
    #[inline(always)]
    pub(crate) unsafe fn list_items_now<'t>(self, list: *mut ffi::PyObject) -> &'t [*mut ffi::PyObject] {
        let base = list as *const u8;
        // SAFETY: the contract: a live exact list, `self.seq` on; the slice is used before Python
        // code runs.
        unsafe {
            let n = *(base.add(OB_SIZE) as *const isize) as usize;
            if n == 0 {
                return &[];
            }
            let items = *(base.add(SEQ_ITEMS) as *const *const *mut ffi::PyObject);
            std::slice::from_raw_parts(items, n)
        }
    }

    /// The items of a tuple (immutable: borrowed for as long as the tuple lives).
    ///
    /// # Safety
    /// `tuple` must be a live exact `tuple`; `self.seq` must hold.
    #[inline(always)]
    pub(crate) unsafe fn tuple_items<'t>(self, tuple: *mut ffi::PyObject) -> &'t [*mut ffi::PyObject] {
        let base = tuple as *const u8;
        // SAFETY: the contract: a live exact tuple, `self.seq` on; a tuple's items never change.
        unsafe {
            let n = *(base.add(OB_SIZE) as *const isize) as usize;
            std::slice::from_raw_parts(base.add(SEQ_ITEMS) as *const *mut ffi::PyObject, n)
        }
    }

    /// Whether list and tuple items are read in place.
    #[inline(always)]
    pub(crate) fn seq(self) -> bool {
        self.seq
    }

    /// Whether combined-table dicts are read in place (`dict_direct` can hold).
    #[inline(always)]
    pub(crate) fn dicts(self) -> bool {
        self.dict
    }

    /// The value of an exact `float`, read in place when the layout holds.
    ///
    /// # Safety
    /// `f` must be a live exact `float`.
    #[inline(always)]
    pub(crate) unsafe fn float(self, f: *mut ffi::PyObject) -> Option<f64> {
        // SAFETY: the contract: a live exact float; ob_fval's offset confirmed by check_float.
        self.float.then(|| unsafe { *((f as *const u8).add(FLOAT_VALUE) as *const f64) })
    }

    /// The value of an exact `int` of at most two digits (|v| < 2**60), read in place;
    /// None for larger ints or when the layout does not hold (ask the API).
    ///
    /// # Safety
    /// `v` must be a live exact `int`.
    #[inline(always)]
    pub(crate) unsafe fn small_int(self, v: *mut ffi::PyObject) -> Option<i64> {
        let base = v as *const u8;
        // SAFETY: the contract: a live exact int; the size or tag word confirmed by check_int.
        let (n, negative) = unsafe {
            match self.int {
                IntRepr::Api => return None,
                IntRepr::SignedSize => {
                    let size = *(base.add(OB_SIZE) as *const isize);
                    (size.unsigned_abs(), size < 0)
                }
                IntRepr::Tagged => {
                    let tag = *(base.add(OB_SIZE) as *const usize);
                    (tag >> 3, tag & 3 == 2)
                }
            }
        };
        // SAFETY: the digits read are within the count read above (0 to 2 digits), of a live exact
        // int.
        let digit = |i: usize| unsafe { *(base.add(INT_DIGITS + 4 * i) as *const u32) } as u64;
        let magnitude = match n {
            0 => 0,
            1 => digit(0),
            2 => digit(0) | digit(1) << DIGIT_BITS,
            _ => return None,
        } as i64;
        Some(if negative { -magnitude } else { magnitude })
    }

    /// The offset of a `__slots__` object member (`T_OBJECT_EX`) in instances of `ty`,
    /// when `descr` is a member descriptor named `name` defined on a base of `ty` and the
    /// slot lies inside the instance; None otherwise (the caller calls the descriptor).
    /// `member_type` is `types.MemberDescriptorType`. The descriptor is read in the order
    /// that keeps every read inside what is already confirmed: its type first, then its
    /// name and owner, and only then its member definition.
    pub(crate) fn member_offset(
        self,
        ty: &Bound<'_, PyType>,
        name: &Bound<'_, PyString>,
        descr: &Bound<'_, PyAny>,
        member_type: &Bound<'_, PyAny>,
        basicsize: usize,
    ) -> Option<usize> {
        #[repr(C)]
        struct MemberDescr {
            ob_base: ffi::PyObject,
            d_type: *mut ffi::PyTypeObject,
            d_name: *mut ffi::PyObject,
            d_qualname: *mut ffi::PyObject,
            d_member: *mut ffi::PyMemberDef,
        }
        if !self.member || !descr.get_type().is(member_type) {
            return None;
        }
        let d = descr.as_ptr() as *const MemberDescr;
        // SAFETY: `descr` is a live member descriptor (its type checked above): its header, then
        // its name and owner confirmed before its PyMemberDef is read.
        unsafe {
            let d_name = (*d).d_name;
            if d_name.is_null() || ffi::PyUnicode_Check(d_name) == 0 {
                return None;
            }
            if ffi::PyUnicode_Compare(d_name, name.as_ptr()) != 0 {
                ffi::PyErr_Clear();
                return None;
            }
            if (*d).d_type.is_null() || ffi::PyType_IsSubtype(ty.as_ptr() as *mut ffi::PyTypeObject, (*d).d_type) == 0 {
                return None;
            }
            let def = (*d).d_member;
            if def.is_null() || (*def).type_code != ffi::Py_T_OBJECT_EX || (*def).flags & ffi::Py_RELATIVE_OFFSET != 0 {
                return None;
            }
            let off = (*def).offset;
            let min = std::mem::size_of::<ffi::PyObject>() as isize;
            let ptr = std::mem::size_of::<*mut ffi::PyObject>() as isize;
            if off < min || off + ptr > basicsize as isize || off % ptr != 0 {
                return None;
            }
            Some(off as usize)
        }
    }

    /// What holds on this interpreter: the version gate, then each read checked against
    /// the API on objects made here. Never fails: a read that cannot be confirmed is off.
    fn detect(py: Python<'_>) -> Layout {
        let v = py.version_info();
        let known = ((3, 10)..(3, 14)).contains(&(v.major, v.minor))
            && cfg!(target_pointer_width = "64")
            && cfg!(target_endian = "little");
        if !known || public_api_only() {
            return Layout::API;
        }
        let old = v.minor <= 11;
        let mut lay = Layout::API;
        lay.member = true; // confirmed per descriptor (name, owner, kind, bounds)
        lay.seq = check_seq(py);
        lay.float = check_float(py);
        lay.int = if check_int(py, if old { IntRepr::SignedSize } else { IntRepr::Tagged }) {
            if old {
                IntRepr::SignedSize
            } else {
                IntRepr::Tagged
            }
        } else {
            IntRepr::Api
        };
        lay.str_head = check_str(py, if old { 48 } else { 40 });
        lay.dict = v.minor >= 11 && check_dict(py);
        let refcnt = if old { RefRepr::Plain } else { RefRepr::Immortal };
        lay.refcnt = if check_refcnt(py, refcnt) { refcnt } else { RefRepr::Api };
        lay.version = check_version(py);
        lay.managed_dict = if v.minor >= 11 && check_managed_dict(py, v.minor) { v.minor } else { 0 };
        // The checks above ran the API: leave no error behind.
        // SAFETY: the GIL is held (detect's token).
        unsafe { ffi::PyErr_Clear() };
        lay
    }
}

/// A dict's entry table read at one moment ([`Layout::dict_entries`]). Valid only while no
/// Python code runs (which may resize the table or change the dict): take it again after.
#[derive(Clone, Copy)]
pub(crate) struct DictEntries {
    /// The key of entry 0; its value follows it.
    first_key: *const u8,
    n: usize,
    stride: usize,
}

impl DictEntries {
    /// The next entry `(key, value)` at or after entry `*pos`, advancing `*pos` past it;
    /// None at the end. Borrowed.
    ///
    /// # Safety
    /// The dict it was read from is live and no Python code ran since it was read.
    #[inline(always)]
    pub(crate) unsafe fn next(self, pos: &mut usize) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
        // SAFETY: the contract: the dict this table was read from is live and no Python code ran
        // since, so entries 0..n lie in its table and hold live objects or NULL values.
        unsafe {
            while *pos < self.n {
                let e = self.first_key.add(*pos * self.stride);
                *pos += 1;
                let v = *(e.add(8) as *const *mut ffi::PyObject);
                if !v.is_null() {
                    return Some((*(e as *const *mut ffi::PyObject), v));
                }
            }
            None
        }
    }

    /// The value slot of entry `i`, when the table holds that entry (a key and a value).
    ///
    /// # Safety
    /// As for [`DictEntries::next`]: the dict it was read from is live and no Python code
    /// ran since it was read.
    #[inline(always)]
    pub(crate) unsafe fn value_slot(self, i: usize) -> Option<*mut *mut ffi::PyObject> {
        if i >= self.n {
            return None;
        }
        // SAFETY: the contract: entry i (< n) lies in the live dict's table, its key then
        // its value at the offsets check_dict confirmed.
        unsafe {
            let e = self.first_key.add(i * self.stride);
            let slot = e.add(8) as *mut *mut ffi::PyObject;
            (!(*(e as *const *mut ffi::PyObject)).is_null() && !(*slot).is_null()).then_some(slot)
        }
    }
}

fn check_seq(py: Python<'_>) -> bool {
    let probe = Layout { seq: true, ..Layout::API };
    let items = [PyString::new(py, "a").into_any(), py.None().into_bound(py), PyFloat::new(py, 1.5).into_any()];
    let (Ok(list), Ok(tuple)) = (PyList::new(py, &items), PyTuple::new(py, &items)) else { return false };
    let _ = list.append(py.None()); // grown: ob_item reallocated, size != allocated
    // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
    // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
    // object, and what is read is compared with the API before any read is enabled (list and tuple
    // items, the list grown so that its item array was reallocated).
    unsafe {
        let (l, t) = (list.as_ptr(), tuple.as_ptr());
        let n = ffi::PyList_Size(l) as usize;
        let list_ok = (0..n).all(|i| probe.list_item(l, i) == Some(ffi::PyList_GetItem(l, i as ffi::Py_ssize_t)))
            && probe.list_item(l, n).is_none();
        let ts = probe.tuple_items(t);
        let tuple_ok = ts.len() == ffi::PyTuple_Size(t) as usize
            && ts.iter().enumerate().all(|(i, p)| *p == ffi::PyTuple_GetItem(t, i as ffi::Py_ssize_t));
        list_ok && tuple_ok
    }
}

fn check_dict(py: Python<'_>) -> bool {
    let probe = Layout { dict: true, ..Layout::API };
    // str keys with a deleted entry; other keys (the general entry layout); index tables
    // of 1 and 2 bytes per slot (the same shift gives 4 and 8).
    let code = c"[{'a': 1, 'b': 2, 'c': 3}, {1: 'x', 'y': None, (2,): 3.5},
        {f'k{i}': i for i in range(50)}, {f'k{i}': i for i in range(300)}, {i: i for i in range(300)}]";
    let Ok(dicts) = py.eval(code, None, None) else { return false };
    let Ok(dicts) = dicts.cast_into::<PyList>() else { return false };
    let _ = dicts.get_item(0).and_then(|d| d.del_item("b"));
    let split = py.eval(c"type('O', (), {})()", None, None).and_then(|o| {
        o.setattr("a", 1)?;
        o.getattr("__dict__")
    });
    // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
    // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
    // object, and what is read is compared with the API before any read is enabled (combined dicts
    // of both entry kinds and index widths); PyDict_Next is the API read against which it is
    // compared.
    let same = |d: &Bound<'_, PyAny>| unsafe {
        let p = d.as_ptr();
        if !probe.dict_direct(p) {
            return false;
        }
        let (mut pos, mut upos) = (0 as ffi::Py_ssize_t, 0usize);
        let (mut k, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
        loop {
            let api = ffi::PyDict_Next(p, &mut pos, &mut k, &mut v) != 0;
            match probe.dict_next(p, &mut upos) {
                Some((dk, dv)) if api && dk == k && dv == v && upos == pos as usize => {}
                None if !api => return true,
                _ => return false,
            }
        }
    };
    // A split table (an instance __dict__) must be declined, never read as combined.
    // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
    // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
    // object, and what is read is compared with the API before any read is enabled: a split table
    // must be declined.
    let split_declined = split.as_ref().map(|d| !unsafe { probe.dict_direct(d.as_ptr()) }).unwrap_or(false);
    dicts.iter().all(|d| same(&d)) && split_declined
}

fn check_refcnt(py: Python<'_>, repr: RefRepr) -> bool {
    // A debug build (`Py_REF_DEBUG`) also counts references in a global total.
    let Ok(sys) = py.import("sys") else { return false };
    if sys.hasattr("gettotalrefcount").unwrap_or(true) {
        return false;
    }
    let probe = Layout { refcnt: repr, ..Layout::API };
    let count = |o: &Bound<'_, PyAny>| sys.getattr("getrefcount").and_then(|f| f.call1((o,))?.extract::<isize>()).ok();
    let o = PyList::empty(py).into_any();
    let Some(c0) = count(&o) else { return false };
    // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
    // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
    // object, and what is read is compared with the API before any read is enabled; `o` is a fresh
    // list this function owns a reference to, the GIL held.
    unsafe { probe.incref(o.as_ptr()) };
    let c1 = count(&o);
    // SAFETY: the reference taken just above.
    unsafe { probe.decref(o.as_ptr()) };
    let mortal_ok = c1 == Some(c0 + 1) && count(&o) == Some(c0);
    // 3.12+: None is immortal, its count never changes. (On 3.10, 3.11 its count moves
    // with any Python code run meanwhile: not a probe.)
    let immortal_ok = repr != RefRepr::Immortal || {
        let none = py.None().into_bound(py);
        let n0 = count(&none);
        // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
        // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
        // object, and what is read is compared with the API before any read is enabled; None is
        // immortal on the versions the Immortal form is probed for, and each decref undoes the
        // incref before it.
        unsafe {
            probe.incref(none.as_ptr());
            probe.decref(none.as_ptr());
            probe.decref(none.as_ptr());
            probe.incref(none.as_ptr());
        }
        n0.is_some() && count(&none) == n0
    };
    mortal_ok && immortal_ok
}

/// The tag read behaves as a version tag on a class made here: nonzero once an attribute
/// was looked up, 0 after the class is changed, then a new nonzero tag; a subclass's
/// changes with its base's.
fn check_version(py: Python<'_>) -> bool {
    let probe = Layout { version: true, ..Layout::API };
    let Ok(classes) = py.eval(c"(lambda b: (b, type('D', (b,), {})))(type('B', (), {'a': 1}))", None, None) else { return false };
    let (Ok(base), Ok(sub)) = (classes.get_item(0), classes.get_item(1)) else { return false };
    // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
    // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
    // object, and what is read is compared with the API before any read is enabled; `c` is a class
    // made here and alive.
    let tag = |c: &Bound<'_, PyAny>| unsafe { probe.type_version(c.as_ptr() as *mut ffi::PyTypeObject) };
    let look = |c: &Bound<'_, PyAny>| c.getattr("a").is_ok();
    let ok = (|| {
        if !(look(&base) && look(&sub)) {
            return None;
        }
        let (b1, s1) = (tag(&base)?, tag(&sub)?);
        base.setattr("z", 2).ok()?;
        let (b0, s0) = (tag(&base)?, tag(&sub)?);
        if !(look(&base) && look(&sub)) {
            return None;
        }
        let (b2, s2) = (tag(&base)?, tag(&sub)?);
        Some(b1 != 0 && s1 != 0 && b1 != s1 && b0 == 0 && s0 == 0 && b2 != 0 && s2 != 0 && b2 != b1 && s2 != s1)
    })();
    ok == Some(true)
}

/// `PyObject_GenericGetDict` (makes an empty dict where there is none): out of line, as
/// the walk's Structs rarely need it.
#[cold]
#[inline(never)]
fn generic_dict<'py>(v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `v` is a live object and the GIL is held (the token); the call returns a new
    // reference or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(v.py(), ffi::PyObject_GenericGetDict(v.as_ptr(), std::ptr::null_mut())) }
}

/// The instance-dict read agrees with `__dict__` on a msgspec `dict=True` Struct (no dict
/// yet, then the very dict made) and declines a plain object whose attributes are values
/// kept apart from a dict (never claims "no attributes" where there are some).
fn check_managed_dict(py: Python<'_>, minor: u8) -> bool {
    let probe = Layout { managed_dict: minor, ..Layout::API };
    // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
    // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
    // object, and what is read is compared with the API before any read is enabled; `o` is an
    // instance made here and alive.
    let read = |o: &Bound<'_, PyAny>| unsafe { probe.instance_dict(o.as_ptr()) };
    let ok = (|| -> PyResult<bool> {
        let ms = py.import("msgspec")?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("dict", true)?;
        let fields = PyList::new(py, [("a", py.get_type::<pyo3::types::PyInt>())])?;
        let cls = ms.getattr("defstruct")?.call(("P", fields), Some(&kwargs))?;
        let fresh = ms.getattr("convert")?.call1(([("a", 1)].into_py_dict(py)?, &cls))?;
        let made = cls.call((), Some(&[("a", 2)].into_py_dict(py)?))?;
        let mut ok = true;
        for obj in [fresh, made] {
            ok &= read(&obj) == Some(std::ptr::null_mut());
            let d = obj.getattr("__dict__")?;
            ok &= read(&obj) == Some(d.as_ptr());
            obj.setattr("extra", 3)?;
            ok &= read(&obj) == Some(d.as_ptr()) && d.len()? == 1;
        }
        let plain = py.eval(c"type('O', (), {})()", None, None)?;
        plain.setattr("a", 1)?;
        ok &= match read(&plain) {
            None => true,
            Some(p) => p == plain.getattr("__dict__")?.as_ptr(),
        };
        Ok(ok)
    })();
    // SAFETY: the GIL is held (the token).
    unsafe { ffi::PyErr_Clear() };
    ok.unwrap_or(false)
}

fn check_float(py: Python<'_>) -> bool {
    let probe = Layout { float: true, ..Layout::API };
    [0.0, -1.5, 1e300, f64::MIN_POSITIVE].iter().all(|&x| {
        let f = PyFloat::new(py, x);
        // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
        // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
        // object, and what is read is compared with the API before any read is enabled; `f` is an
        // exact float made here.
        unsafe { probe.float(f.as_ptr()) == Some(ffi::PyFloat_AsDouble(f.as_ptr())) }
    })
}

fn check_int(py: Python<'_>, repr: IntRepr) -> bool {
    // sys.int_info: 30-bit digits in 32-bit words, what the reads assume.
    let info = py.import("sys").and_then(|s| s.getattr("int_info"));
    let digits_ok = info
        .and_then(|i| Ok((i.getattr("bits_per_digit")?.extract::<u32>()?, i.getattr("sizeof_digit")?.extract::<u32>()?)))
        .is_ok_and(|(bits, size)| bits == DIGIT_BITS && size == 4);
    if !digits_ok {
        return false;
    }
    let probe = Layout { int: repr, ..Layout::API };
    let two_digits = 1i64 << 60;
    let small = [0, 1, -1, 7, -42, (1 << 30) - 1, -(1 << 30), 1 << 30, two_digits - 1, -(two_digits - 1)];
    let large = [two_digits, -two_digits, i64::MAX, i64::MIN];
    let read = |x: i64| -> Option<(Option<i64>, i64)> {
        // SAFETY: the GIL is held; the call returns a new reference or NULL.
        let o = unsafe { Bound::from_owned_ptr_or_opt(py, ffi::PyLong_FromLongLong(x))? };
        let mut overflow: c_int = 0;
        // SAFETY: `o` is a live int, the GIL held.
        let api = unsafe { ffi::PyLong_AsLongLongAndOverflow(o.as_ptr(), &mut overflow) };
        // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
        // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
        // object, and what is read is compared with the API before any read is enabled; `o` is an
        // exact int made here.
        (overflow == 0).then(|| (unsafe { probe.small_int(o.as_ptr()) }, api))
    };
    small.iter().all(|&x| read(x) == Some((Some(x), x))) && large.iter().all(|&x| read(x) == Some((None, x)))
}

/// `sizeof(PyASCIIObject)` when the str reads agree with the API, else 0.
fn check_str(py: Python<'_>, head: usize) -> usize {
    // `sys.getsizeof("")` is the header plus the terminating NUL of a compact ASCII str.
    let size = py.import("sys").and_then(|s| s.getattr("getsizeof")?.call1(("",))?.extract::<usize>());
    if size.ok() != Some(head + 1) {
        return 0;
    }
    let probe = Layout { str_head: head, ..Layout::API };
    // (text, kind, ascii): ASCII, Latin-1, BMP and astral compact strings.
    let cases: [(&str, u32, bool); 5] =
        [("", 1, true), ("plain ascii text", 1, true), ("café", 1, false), ("a → b", 2, false), ("😀 x", 4, false)];
    for (text, kind, ascii) in cases {
        let s = PyString::new(py, text);
        let p = s.as_ptr();
        // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
        // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
        // object, and what is read is compared with the API before any read is enabled; `s` is a
        // compact str made here (its header is at least 40 bytes).
        let state = unsafe { *((p as *const u8).add(STR_STATE) as *const u32) };
        if state & STATE_COMPACT == 0
            || (state & STATE_ASCII != 0) != ascii
            || (state >> STATE_KIND_SHIFT) & 7 != kind
            // SAFETY: the same header read as just above.
            || unsafe { *((p as *const u8).add(STR_LENGTH) as *const isize) } != text.chars().count() as isize
        {
            return 0;
        }
        // Before the API is asked, a non-ASCII str has no UTF-8 yet or the same buffer.
        // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
        // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
        // object, and what is read is compared with the API before any read is enabled (the state
        // read above says compact).
        let before = unsafe { probe.str_utf8(p) }.map(|b| b.as_ptr());
        let mut n: ffi::Py_ssize_t = 0;
        // SAFETY: `p` is a live str, the GIL held.
        let api = unsafe { ffi::PyUnicode_AsUTF8AndSize(p, &mut n) } as *const u8;
        if api.is_null() || before.is_some_and(|b| b != api) {
            return 0;
        }
        // SAFETY: as just above: the same live str, compact.
        match unsafe { probe.str_utf8(p) } {
            Some(b) if b.as_ptr() == api && b.len() == n as usize && b == text.as_bytes() => {}
            _ => return 0,
        }
    }
    // A str subclass instance is not compact (its data lives apart): never read in place.
    let sub = py
        .eval(c"type('S', (str,), {})('sub')", None, None)
        // SAFETY: a probe of a layout on an object made here, of the type it reads, after detect's
        // version gate (CPython 3.10-3.13, 64-bit little-endian): the offsets lie inside such an
        // object, and what is read is compared with the API before any read is enabled: a str
        // subclass instance (not compact) must be declined by the state bit.
        .map(|o| unsafe { probe.str_utf8(o.as_ptr()) }.is_none());
    if sub.ok() != Some(true) {
        return 0;
    }
    head
}

/// `AGUI_FAST_PUBLIC_API=1` (read once, when the module is imported): every read through
/// the API and construction through `tp_call`, the paths an interpreter whose layout is not
/// known here takes (3.14 and later), so that they are tested on the ones that are.
pub(crate) fn public_api_only() -> bool {
    static ONLY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ONLY.get_or_init(|| std::env::var_os("AGUI_FAST_PUBLIC_API").is_some_and(|v| v == "1"))
}

static LAYOUT: PyOnceLock<Layout> = PyOnceLock::new();

/// The reads that hold on this interpreter (detected once, at module init).
#[inline]
pub(crate) fn get(py: Python<'_>) -> Layout {
    *LAYOUT.get_or_init(py, || Layout::detect(py))
}

/// Which direct reads are on, for tests: `{"str": bool, "seq": ..., "float": ..., "int": ...,
/// "member": ..., "version": ..., "managed_dict": ...}`.
#[pyfunction]
pub(crate) fn direct_reads(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let lay = get(py);
    let d = pyo3::types::PyDict::new(py);
    d.set_item("str", lay.str_head != 0)?;
    d.set_item("seq", lay.seq)?;
    d.set_item("float", lay.float)?;
    d.set_item("int", lay.int != IntRepr::Api)?;
    d.set_item("member", lay.member)?;
    d.set_item("dict", lay.dict)?;
    d.set_item("refcnt", lay.refcnt != RefRepr::Api)?;
    d.set_item("version", lay.version)?;
    d.set_item("managed_dict", lay.managed_dict != 0)?;
    Ok(d)
}

/// msgspec's `Struct_vectorcall`, read from a plain Struct class (`probe`) at the offset
/// that `StructMeta`'s `tp_vectorcall_offset` names (for the Structs' metaclass,
/// `construct.rs`: the one direct read here that is not the walker's).
///
/// The limited API has no accessor for either (before 3.12 / 3.14), so the read is gated
/// like the others: CPython 3.10–3.14 (the `PyTypeObject` layout they share), 64-bit
/// little-endian, not `AGUI_FAST_PUBLIC_API=1`; and the layout is checked first against
/// what the limited API *can* read: the call, new, free and is_gc slots and the bases and
/// MRO of `StructMeta`, and `type`'s own vectorcall offset. Otherwise, or on any mismatch
/// (another layout, a debug build): None, and construction stays on the `tp_call` path.
pub(crate) fn struct_vectorcall(base: &Bound<'_, PyType>, probe: &Bound<'_, PyType>) -> Option<ffi::vectorcallfunc> {
    /// A pointer-sized word at `offset` in `obj` (a live object at least `offset + 8`
    /// bytes long).
    unsafe fn word(obj: *mut ffi::PyObject, offset: usize) -> usize {
        // SAFETY: the contract: a live object at least offset + 8 bytes long.
        unsafe { *((obj as *const u8).add(offset) as *const usize) }
    }
    const VECTORCALL_OFFSET: usize = 56;
    const CALL: usize = 128;
    const NEW: usize = 312;
    const FREE: usize = 320;
    const IS_GC: usize = 328;
    const BASES: usize = 336;
    const MRO: usize = 344;
    const VECTORCALL: usize = 400;
    let v = base.py().version_info();
    let known = ((3, 10)..(3, 15)).contains(&(v.major, v.minor))
        && cfg!(target_pointer_width = "64")
        && cfg!(target_endian = "little");
    if !known || public_api_only() || !probe.get_type().is(base) {
        return None;
    }
    let b = base.as_ptr();
    let tp = b as *mut ffi::PyTypeObject;
    let bases = base.getattr("__bases__").ok()?;
    let mro = base.getattr("__mro__").ok()?;
    // SAFETY: every object read is a type object, larger than VECTORCALL + 8 bytes (the
    // layout being probed); the reads are compared before any value is trusted.
    unsafe {
        let slot = |s: c_int| ffi::PyType_GetSlot(tp, s) as usize;
        let type_type = std::ptr::addr_of_mut!(ffi::PyType_Type) as *mut ffi::PyObject;
        let ok = word(type_type, VECTORCALL_OFFSET) == VECTORCALL
            && word(b, VECTORCALL_OFFSET) == VECTORCALL
            && word(b, CALL) == slot(ffi::Py_tp_call)
            && word(b, NEW) == slot(ffi::Py_tp_new)
            && word(b, FREE) == slot(ffi::Py_tp_free)
            && word(b, IS_GC) == slot(ffi::Py_tp_is_gc)
            && word(b, BASES) == bases.as_ptr() as usize
            && word(b, MRO) == mro.as_ptr() as usize;
        ffi::PyErr_Clear();
        if !ok {
            return None;
        }
        let f = word(probe.as_ptr(), VECTORCALL);
        (f != 0).then(|| std::mem::transmute::<usize, ffi::vectorcallfunc>(f))
    }
}
