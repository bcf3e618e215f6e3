//! The one walk over Python objects, generic over its output (`agui_core::sink::Sink`):
//! JSON text (`encode.rs`: `dumps`, the SSE encoders), the protobuf encoder's tree
//! (`proto.rs`), MessagePack. Type dispatch, member order, omission, extras, enums,
//! pydantic's JSON-mode rules and the depth limit exist here once; a sink only spells.
//!
//! Values:
//! * exact `str`, `int` (any size), `float`, `bool`, `None`, `dict`, `list`, `tuple`: fast
//!   paths on the exact type;
//! * objects with a plan (`plan.rs`: msgspec Structs, `__agui_fields__`, pydantic models):
//!   members in plan order, then extras in insertion order, then computed fields; a field
//!   holding `msgspec.UNSET` is left out;
//! * `enum.Enum` members → their value; subclasses of str/int/float/dict/list/tuple → as
//!   their base type; set/frozenset → an array in iteration order (pydantic's JSON mode);
//! * anything else (datetime, UUID, Decimal, bytes, dataclasses, SecretStr, customised
//!   pydantic models ...), in pydantic mode: written by `pydantic_core.to_json` itself,
//!   so the bytes are exactly the reference's; an object pydantic refuses too is an
//!   `EncodeError`. Dict keys that are not strings follow pydantic's key rules the same
//!   way (`1` → `"1"`, `None` → `"None"`). Strict mode (`pydantic=False`) refuses both.
//!
//! Omission (the ag_ui base model's rule): a field marked omittable is left out when its
//! value is `None` or a non-finite float; an extra whose key equals the name or wire key
//! of an omittable field is left out on the same condition. Every other `None` is written.
//!
//! Unpaired surrogates: an `EncodeError` for JSON (pydantic refuses them); U+FFFD for the
//! protobuf tree (`lossy_surrogates`, what `@ag-ui/proto`'s UTF-8 encoder writes; a pair
//! of surrogates is the character they form, as in JavaScript).
//!
//! Nesting deeper than `max_depth` (default `agui_core::limits::DEFAULT_MAX_DEPTH`) is an
//! `EncodeError`, recursive structures included.

//! **The walk's invariant** (what every `unsafe` block below stands on): a pointer a
//! walker method is given is a live object, either held by the caller (the value given
//! to `walk`, a `Held` reference, a tuple's item, which lives as long as the tuple) or
//! borrowed from a container the walk holds, read in place (or by the API) since the
//! last time Python code could have run. Nothing between such a read and the use of the
//! pointer runs Python code: a leaf (exact `str`, `int`, `float`, `bool`, `None`) is
//! written to a [`WalkSink`], whose contract is to run none; anything else is held
//! (`Held`, a reference counted in place where the layout allows) before it is walked,
//! and the container's items or entries are read again after it. The GIL is held
//! throughout (the walker holds the token).

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::os::raw::c_int;
use std::rc::Rc;

use agui_core::proto::node::{Node, TreeBuilder};
use agui_core::sink::{PreStr, Scalar, Sink};
use pyo3::exceptions::PyUnicodeEncodeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString, PyType};

use crate::construct::Check;
use crate::ffi::gil::GilCell;
use crate::ffi::layout::Layout;
use crate::ffi::construct::PyRead;
use crate::plan::{dump_plan, encode_error, kind_of, type_name, DumpField, DumpMode, DumpPlan, Field, FieldCheck, Getter, Kind, Plan, PlanKind};

/// How a walk treats what plain JSON data does not cover.
#[derive(Clone, Copy)]
pub(crate) struct Opts {
    /// pydantic's JSON mode for other values and non-str dict keys (else `EncodeError`).
    pub pydantic: bool,
    /// Unpaired surrogates become U+FFFD (protobuf) instead of an `EncodeError` (JSON).
    pub lossy_surrogates: bool,
    pub max_depth: u32,
}

impl Opts {
    pub(crate) const JSON: Opts =
        Opts { pydantic: true, lossy_surrogates: false, max_depth: agui_core::limits::DEFAULT_MAX_DEPTH as u32 };
    pub(crate) const PROTO: Opts = Opts { lossy_surrogates: true, ..Opts::JSON };
}

pub(crate) struct Walker<'py, 'a, S: WalkSink<'a>> {
    py: Python<'py>,
    pub(crate) sink: S,
    depth: u32,
    opts: Opts,
    /// The direct reads of object memory that hold on this interpreter (layout.rs).
    lay: Layout,
    /// Strong references to the `str` objects whose UTF-8 a borrowing sink keeps.
    keep: Vec<*mut ffi::PyObject>,
    /// Plans and enum tables whose strings a borrowing sink keeps.
    kinds: Vec<Kind>,
    /// A value that does not fit its field's schema, while the error unwinds: the path
    /// from the value being walked down to it, and what was wrong (`Walker::walk` raises it).
    violation: Option<(String, String)>,
    /// The plans of the nested objects' classes met in this walk, with the class's version
    /// tag they were found under (`kind_of`'s rule), looked up before the shared cache (a
    /// message snapshot's ~500 Structs are of five classes): entries are only added, so
    /// a plan found here lives until the walker is dropped.
    /// (Dropped by hand, in `Drop`: the field's own drop was an out-of-line call per walk,
    /// 22 instructions of a small event's ~1,330, for a memo that is mostly empty.)
    memo: ManuallyDrop<Vec<(usize, u32, Rc<Plan>)>>,
    /// `model_dump`'s choices (`Walker::dumping`): keys by attribute name, Enum members
    /// kept, `exclude_none`.
    dump: Dump,
    /// Set where a Python-mode walk meets what only the Python loop of `core/_dump.py`
    /// spells (a key that is not an exact `str`, a foreign Struct, more than `max_depth`
    /// levels): the walk stops with an error and the caller runs that loop instead.
    pub(crate) gave_up: bool,
    _a: PhantomData<&'a ()>,
}

/// The options of `model_dump` the walker applies (see [`Walker::dumping`]).
#[derive(Clone, Copy, Default)]
pub(crate) struct Dump {
    /// The members of our Structs keyed by attribute name (`message_id`), not by alias.
    pub by_name: bool,
    /// Python mode: Enum members kept (pydantic's Python mode), else their values.
    pub enums: bool,
    /// Members of msgspec Structs whose value is None (in JSON: written as null) left
    /// out; in JSON only where the data's filter reaches them in pydantic's way (through
    /// Structs, dicts of str keys, lists and tuples).
    pub exclude_none: bool,
}

/// A sink the walker writes to while it holds pointers borrowed from containers.
///
/// # Safety
/// Writing a leaf or a key (`null`, `bool`, `i64`, `big_int`, `f64`, `str`, `str_ref`,
/// `key`, `key_ref`, `key_pre`, `scalar`) runs no Python code, nor frees a
/// Python object that could run some: after it the walker goes on with the items and
/// entries it read in place before, trusting their containers unchanged.
pub(crate) unsafe trait WalkSink<'a>: Sink<'a> {
    /// `model_dump`'s Python mode (`ffi::dump::PyDump`): the walker gives the values it
    /// keeps as they are (`py_value`) and dict keys as the key objects (`py_key`), and
    /// makes a Struct a dict by the Python mode's rules (`Walker::py_struct`).
    const PYTHON: bool = false;

    /// A Python object kept as it is (Python mode only).
    ///
    /// # Safety
    /// `v` must be a live object; the GIL must be held.
    #[inline(always)]
    unsafe fn py_value(&mut self, _v: *mut ffi::PyObject) {}

    /// The key of the next member: a live exact `str` (Python mode only).
    ///
    /// # Safety
    /// `k` must be a live exact `str`; the GIL must be held.
    #[inline(always)]
    unsafe fn py_key(&mut self, _k: *mut ffi::PyObject) {}

    /// Remove member `k` (a live exact `str`) from the innermost object if it is there
    /// (Python mode only: an extra holding None under an omittable field's key, which the
    /// reference leaves out with the field it replaced).
    ///
    /// # Safety
    /// `k` must be a live exact `str`; the GIL must be held.
    unsafe fn py_discard(&mut self, _k: *mut ffi::PyObject) {}

    /// Where the next member starts (JSON only: `exclude_none` of JSON-mode data).
    #[inline(always)]
    fn member_mark(&self) -> (usize, bool) {
        (0, false)
    }

    /// Forget the member written since `mark` if its value was written as null.
    #[inline(always)]
    fn drop_null_member(&mut self, _mark: (usize, bool)) {}
}

// SAFETY: the core's JSON writer only writes bytes (agui-core has no Python in it), and
// its doubles go through `InPlaceF64`, which only formats.
unsafe impl<'a> WalkSink<'a> for agui_core::json::JsonSink<Vec<u8>, crate::ffi::float::InPlaceF64> {
    #[inline(always)]
    fn member_mark(&self) -> (usize, bool) {
        agui_core::json::JsonSink::member_mark(self)
    }
    #[inline(always)]
    fn drop_null_member(&mut self, mark: (usize, bool)) {
        agui_core::json::JsonSink::drop_null_member(self, mark)
    }
}
// SAFETY: the core's tree builder only builds a Rust tree (agui-core has no Python in it).
unsafe impl<'a> WalkSink<'a> for TreeBuilder<'a> {}
// SAFETY: the patch document's value builder makes, for a leaf, a `None`, `bool`, `int`,
// `float` or `str` object (none of them tracked by the cyclic GC, so making one starts
// no collection and no finalizer runs; a big int is `int(text)` and a string with kept
// surrogates `bytes.decode`, C code of the interpreter), takes a cached key string, and
// sets a member of a dict it made with an exact `str` key (no `__hash__` or `__eq__` of
// user code). Containers are made at `begin_*`/`end_*`, which the walker reaches only
// holding what it walks, reading in place again after.
unsafe impl<'a, 'py> WalkSink<'a> for crate::patch::PyBuilder<'py> {}

/// The most classes [`Walker::memo`] keeps (a scan per object, so few).
const MEMO_CLASSES: usize = 8;

impl<'a, S: WalkSink<'a>> Walker<'_, 'a, S> {
    /// Release what the walk kept alive; the emptied vectors, for reuse.
    fn into_spare(mut self) -> Spare {
        for p in self.keep.drain(..) {
            // SAFETY: each pointer in `keep` is a reference this walker took (`string`), released
            // once, under the GIL (the walker holds its token).
            unsafe { ffi::Py_DECREF(p) };
        }
        self.kinds.clear();
        (std::mem::take(&mut self.keep), std::mem::take(&mut self.kinds))
    }
}

impl<'a, S: WalkSink<'a>> Drop for Walker<'_, 'a, S> {
    fn drop(&mut self) {
        for p in self.keep.drain(..) {
            // SAFETY: as in `into_spare`.
            unsafe { ffi::Py_DECREF(p) };
        }
        if self.memo.capacity() != 0 {
            // SAFETY: dropped here only, once, and the walker is not used after `drop`.
            unsafe { ManuallyDrop::drop(&mut self.memo) }
        }
    }
}

/// Extend a borrow to the walk's lifetime `'a`. Sound because a sink that keeps such
/// borrows (`Sink::BORROWS`) gets them only from owners the walker keeps alive (`keep`,
/// `kinds`) until it is dropped, and every tree built from them is dropped first
/// (`with_tree`); other sinks use them during the call only.
#[inline(always)]
unsafe fn extend<'a, T: ?Sized>(r: &T) -> &'a T {
    // SAFETY: the caller's contract (see above).
    unsafe { &*(r as *const T) }
}

static TO_JSON: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static TO_JSON_KWARGS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

impl<'py, 'a, S: WalkSink<'a>> Walker<'py, 'a, S> {
    /// A walker into a sink that copies what it is given (`S::BORROWS` false, checked at
    /// compile time): nothing it outputs borrows from the walked objects. A borrowing
    /// sink's tree is only had through [`with_tree`], which drops it before the walker.
    pub(crate) fn new(py: Python<'py>, sink: S, opts: Opts) -> Self {
        const { assert!(!S::BORROWS, "a borrowing sink is walked by with_tree only") };
        Self::any_sink(py, sink, opts)
    }

    fn any_sink(py: Python<'py>, sink: S, opts: Opts) -> Self {
        let lay = crate::ffi::layout::get(py);
        Walker { py, sink, depth: 0, opts, lay, keep: Vec::new(), kinds: Vec::new(), violation: None, memo: ManuallyDrop::new(Vec::new()), dump: Dump::default(), gave_up: false, _a: PhantomData }
    }

    /// With `model_dump`'s options: for a Python-mode sink (`WalkSink::PYTHON`) all of
    /// them, for JSON `by_name` only.
    pub(crate) fn dumping(mut self, dump: Dump) -> Self {
        self.dump = dump;
        self
    }

    /// [`Walker::walk`] with `model_dump`'s options for this walk only.
    pub(crate) fn dumping_walk(&mut self, dump: Dump, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let before = std::mem::replace(&mut self.dump, dump);
        let r = self.walk(obj);
        self.dump = before;
        r
    }

    /// Walk with `exclude_none` off: pydantic's filter of JSON-mode data does not reach
    /// below a set, an Enum member, a dict with keys that are not all `str`.
    #[cold]
    fn unfiltered<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let outer = std::mem::take(&mut self.dump.exclude_none);
        let r = f(self);
        self.dump.exclude_none = outer;
        r
    }

    /// Stop a Python-mode walk: the caller takes the Python loop (see `gave_up`).
    #[cold]
    fn give_up(&mut self) -> PyErr {
        self.gave_up = true;
        pyo3::exceptions::PyValueError::new_err("left to the Python loop")
    }

    /// Walk one whole value (`ptr`: a valid reference kept alive by the caller). A schema
    /// violation found below it is raised here as an `EncodeError` naming the field's path
    /// from this value (`TextMessageContentEvent.delta`, `MessagesSnapshotEvent.messages[3].content`).
    pub(crate) fn walk(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let ptr = obj.as_ptr();
        self.depth = 0;
        self.value(ptr).map_err(|e| match self.violation.take() {
            Some((path, msg)) => {
                // SAFETY: `ptr` is the live object `walk` was given; its type is live with it; a
                // new reference is taken.
                let ty = unsafe { Bound::from_borrowed_ptr(self.py, ffi::Py_TYPE(ptr) as *mut ffi::PyObject) };
                let name = ty.cast::<PyType>().ok().and_then(|t| t.name().ok()).map(|n| n.to_string()).unwrap_or_default();
                let field = format!("{name}{path}");
                let err = encode_error(self.py, format!("{field}: {msg}"));
                let _ = err.value(self.py).setattr("field", field);
                err
            }
            None => e,
        })
    }

    /// A value of a declared field that its schema refuses: the error unwinds to `walk`,
    /// each container on the way adding its step to the path (`at`).
    #[cold]
    fn mismatch(&mut self, f: &Field, m: Mismatch) -> PyErr {
        let step = format!(".{}", f.attr.bind(self.py));
        self.mismatch_at(step, m)
    }

    /// A value refused by its schema, `step` below the value being walked (`.field`, `[3]`).
    #[cold]
    fn mismatch_at(&mut self, step: String, m: Mismatch) -> PyErr {
        let v = m.got;
        // SAFETY: Py_None only takes the address of the None singleton.
        let got = if v == unsafe { ffi::Py_None() } {
            "None".to_string()
        } else {
            // SAFETY: `v` is borrowed from the value being walked, which the walk still holds while
            // the error unwinds; a new reference is taken before any Python code runs.
            let any = unsafe { Bound::from_borrowed_ptr(self.py, v) };
            let repr = any.repr().map(|r| r.to_string()).unwrap_or_default();
            let repr = if repr.chars().count() > 40 { format!("{}...", repr.chars().take(40).collect::<String>()) } else { repr };
            format!("{} {repr}", any.get_type().name().map(|n| n.to_string()).unwrap_or_default())
        };
        self.violation = Some((format!("{step}{}", m.at), format!("expected {}, got {got}", m.expected)));
        pyo3::exceptions::PyValueError::new_err("schema violation")
    }

    /// Add a step (`.field`, `[3]`) to the path of a schema violation unwinding through here.
    #[cold]
    fn at(&mut self, e: PyErr, step: impl FnOnce(Python<'py>) -> String) -> PyErr {
        if let Some((path, _)) = &mut self.violation {
            path.insert_str(0, &step(self.py));
        }
        e
    }

    #[inline]
    fn enter(&mut self) -> PyResult<()> {
        self.depth += 1;
        if self.depth > self.opts.max_depth {
            if S::PYTHON {
                return Err(self.give_up());
            }
            return Err(encode_error(
                self.py,
                format!("maximum nesting depth exceeded ({}): is the object recursive?", self.opts.max_depth),
            ));
        }
        if self.sink.full() {
            return Err(encode_error(self.py, "the output's limit was reached".to_string()));
        }
        Ok(())
    }

    #[inline]
    fn hold(&mut self, kind: &Kind) {
        if S::BORROWS {
            self.kinds.push(kind.clone());
        }
    }

    /// A str object (exact or subclass) as a value or a key.
    #[inline(always)]
    fn string(&mut self, ptr: *mut ffi::PyObject, key: bool) -> PyResult<()> {
        // SAFETY: the UTF-8 buffer belongs to the str object (its data, or the UTF-8 cached
        // on it), alive for the call, and kept alive for 'a when the sink keeps it (below).
        let bytes: &'a [u8] = match unsafe { self.lay.str_utf8(ptr) } {
            Some(b) => b,
            None => {
                let mut size: ffi::Py_ssize_t = 0;
                // SAFETY: the walk's invariant (module docs): `ptr` is a live str; the GIL is held.
                let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(ptr, &mut size) };
                if data.is_null() {
                    return self.surrogates(ptr, key);
                }
                // SAFETY: PyUnicode_AsUTF8AndSize returned the str's cached UTF-8 buffer (non-
                // NULL), `size` bytes long, alive as long as the str.
                unsafe { std::slice::from_raw_parts(data as *const u8, size as usize) }
            }
        };
        // SAFETY: CPython's UTF-8 of a str is valid UTF-8 (surrogates are refused above).
        let s: &'a str = unsafe { std::str::from_utf8_unchecked(bytes) };
        if S::BORROWS {
            // SAFETY: `ptr` is a live str (the invariant); the reference is released by
            // `into_spare` or `drop`.
            unsafe { ffi::Py_INCREF(ptr) };
            self.keep.push(ptr);
        }
        if key {
            self.sink.key_ref(s)
        } else {
            self.sink.str_ref(s)
        }
        Ok(())
    }

    /// A str whose UTF-8 could not be read (unpaired surrogates): `owned_text` decides.
    #[cold]
    fn surrogates(&mut self, ptr: *mut ffi::PyObject, key: bool) -> PyResult<()> {
        // SAFETY: the GIL is held.
        unsafe { ffi::PyErr_Clear() }; // `owned_text` reads it again and sees the error
        // SAFETY: the walk's invariant (module docs); a new reference is taken.
        let s = unsafe { Bound::from_borrowed_ptr(self.py, ptr) }.cast_into::<PyString>()?;
        let text = self.owned_text(&s)?;
        if key {
            self.sink.key(&text)
        } else {
            self.sink.str(&text)
        }
        Ok(())
    }

    fn int(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        let mut overflow: c_int = 0;
        // SAFETY: the walk's invariant (module docs): `ptr` is a live int.
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(ptr, &mut overflow) };
        if overflow == 0 {
            // SAFETY: the GIL is held.
            if v == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
                return Err(PyErr::fetch(self.py));
            }
            self.sink.i64(v);
            return Ok(());
        }
        let text = self.big_int_text(ptr)?;
        self.sink.big_int(&text);
        Ok(())
    }

    /// Exact decimal of an int beyond i64 (int's own repr, never a subclass's).
    #[cold]
    fn big_int_text(&self, ptr: *mut ffi::PyObject) -> PyResult<String> {
        // SAFETY: the walk's invariant (module docs); a new reference is taken.
        let b = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
        // SAFETY: the walk's invariant (module docs).
        let r = if unsafe { ffi::Py_TYPE(ptr) } == &raw mut ffi::PyLong_Type {
            b.repr()?
        } else {
            self.py.get_type::<pyo3::types::PyInt>().call1((b,))?.repr()?
        };
        Ok(r.to_str()?.to_owned())
    }

    #[cold]
    fn float(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        // SAFETY: the walk's invariant (module docs): `ptr` is a live float (or subclass).
        let v = unsafe { ffi::PyFloat_AsDouble(ptr) };
        // SAFETY: the GIL is held.
        if v == -1.0 && unsafe { !ffi::PyErr_Occurred().is_null() } {
            return Err(PyErr::fetch(self.py));
        }
        self.sink.f64(v);
        Ok(())
    }

    /// Any value. `ptr` must be a valid reference kept alive by the caller.
    ///
    /// The leaves (exact str, None, bool, int, float) are dispatched inline at each call
    /// site; everything else goes through one out-of-line call (`compound`): a leaf then
    /// costs no call, and the big frame of the compound walk is set up only for values
    /// that need it.
    #[inline(always)]
    fn value(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        if self.leaf(ptr)? {
            return Ok(());
        }
        self.compound(ptr)
    }

    /// Writes `ptr` when it is a leaf (exact str, None, bool, int, float: no Python code
    /// runs) and says whether it was. (A `bool`, not an `Option<PyResult<()>>`: the hot
    /// loops then test one flag instead of moving a whole result around per item.)
    #[inline(always)]
    fn leaf(&mut self, ptr: *mut ffi::PyObject) -> PyResult<bool> {
        // SAFETY: the walk's invariant (module docs): `ptr` is live; its type is compared by
        // address; the in-place reads are taken only for the exact types they are for, and only as
        // the layout allows (each off unless detect confirmed it).
        unsafe {
            let tp = ffi::Py_TYPE(ptr);
            if S::PYTHON {
                // Kept as they are (the same objects).
                let leaf = tp == &raw mut ffi::PyUnicode_Type
                    || ptr == ffi::Py_None()
                    || tp == &raw mut ffi::PyLong_Type
                    || tp == &raw mut ffi::PyFloat_Type
                    || tp == &raw mut ffi::PyBool_Type;
                if leaf {
                    self.sink.py_value(ptr);
                }
                return Ok(leaf);
            }
            if tp == &raw mut ffi::PyUnicode_Type {
                self.string(ptr, false)?;
            } else if ptr == ffi::Py_None() {
                self.sink.null();
            } else if tp == &raw mut ffi::PyBool_Type {
                self.sink.bool(ptr == ffi::Py_True());
            } else if tp == &raw mut ffi::PyLong_Type {
                match self.lay.small_int(ptr) {
                    Some(v) => self.sink.i64(v),
                    None => self.int(ptr)?,
                }
            } else if tp == &raw mut ffi::PyFloat_Type {
                match self.lay.float(ptr) {
                    Some(v) => self.sink.f64(v),
                    None => self.float(ptr)?,
                }
            } else {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A value that is not a leaf (see [`Walker::value`]): containers and objects, each
    /// level with the stack it needs (`nest`).
    #[inline(never)]
    fn compound(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        // SAFETY: the walk's invariant (module docs): `ptr` is live (borrowed from a container read
        // since the last Python code ran, or held); `Held` takes a reference before anything can
        // run Python code.
        agui_core::limits::nest(|| unsafe {
            let tp = ffi::Py_TYPE(ptr);
            // Hold a strong reference while walking it, as the caller may have a borrowed
            // one (from a dict or list) and walking it can run Python code. (Leaves never
            // run Python code.)
            let _keep = Held::new(self.lay, ptr);
            if tp == &raw mut ffi::PyDict_Type {
                return self.dict(ptr);
            }
            if tp == &raw mut ffi::PyList_Type {
                return self.list(ptr, None);
            }
            if tp == &raw mut ffi::PyTuple_Type {
                return self.tuple(ptr);
            }
            if let Some(plan) = self.memo_plan(tp) {
                return self.object(ptr, plan);
            }
            self.other(ptr, tp)
        })
    }

    /// The plan of `tp` from [`Walker::memo`], if it was found there under the class's
    /// current version tag (none where the tag is not read: the shared cache decides).
    /// A sink that borrows from plans goes through `other`, which holds them.
    #[inline(always)]
    fn memo_plan(&self, tp: *mut ffi::PyTypeObject) -> Option<&'a Plan> {
        if S::BORROWS || self.memo.is_empty() {
            return None;
        }
        // SAFETY: `tp` is the type of a live object the walk holds.
        let now = unsafe { self.lay.type_version(tp) }?;
        let (_, _, plan) = self.memo.iter().find(|(t, v, _)| *t == tp as usize && *v == now)?;
        // SAFETY: the memo's entries are never removed during the walk (the walker owns
        // them until it is dropped), and an `Rc`'s value does not move with the vector. A
        // class freed during the walk and another made at its address has another tag
        // (the interpreter's tags are never reused), so no entry matches it.
        Some(unsafe { extend(Rc::as_ref(plan)) })
    }

    fn other(&mut self, ptr: *mut ffi::PyObject, tp: *mut ffi::PyTypeObject) -> PyResult<()> {
        // SAFETY: `tp` is the type of a live object the walk holds.
        let ty = unsafe { Borrowed::from_ptr(self.py, tp as *mut ffi::PyObject).cast_unchecked::<PyType>() };
        let kind = kind_of(self.py, self.lay, &ty)?;
        if S::PYTHON && !matches!(kind, Kind::Plan(_)) {
            return self.py_other(ptr, &kind);
        }
        match &kind {
            Kind::Plan(plan) => {
                self.hold(&kind);
                // Nested objects only: a small event's one object costs no allocation.
                if !S::BORROWS && self.depth > 0 && self.memo.len() < MEMO_CLASSES {
                    // SAFETY: `tp` is the type of a live object the walk holds.
                    if let Some(v) = unsafe { self.lay.type_version(tp) }.filter(|&v| v != 0) {
                        let n = self.memo.len();
                        self.memo.reserve_exact(MEMO_CLASSES - n);
                        self.memo.push((tp as usize, v, plan.clone()));
                    }
                }
                // SAFETY: the plan lives in the cache and, for a borrowing sink, in `kinds`.
                let plan: &'a Plan = unsafe { extend(Rc::as_ref(plan)) };
                self.object(ptr, plan)
            }
            Kind::Enum(info) => {
                if let Some(s) = info.members.get(&(ptr as usize)) {
                    self.hold(&kind);
                    // SAFETY: the enum table lives in the plan cache and, for a borrowing sink, in
                    // `kinds` (`hold` above) until the walker is dropped.
                    self.sink.scalar(unsafe { extend::<Scalar>(s) });
                    return Ok(());
                }
                self.enter()?;
                let value = self.enum_value(ptr)?;
                self.unfiltered(|w| w.value(value.as_ptr()))?;
                self.depth -= 1;
                Ok(())
            }
            Kind::StrSub => self.string(ptr, false),
            Kind::IntSub => self.int(ptr),
            Kind::FloatSub => self.float(ptr),
            Kind::DictSub => self.dict(ptr),
            Kind::ListSub => self.list(ptr, None),
            Kind::TupleSub => self.tuple(ptr),
            Kind::Set if self.opts.pydantic => self.unfiltered(|w| w.set(ptr)),
            Kind::IsoTime(base) if self.opts.pydantic => self.iso_time(ptr, *base),
            Kind::Text if self.opts.pydantic => {
                // SAFETY: the walk's invariant (module docs); a new reference is taken.
                let text = unsafe { Bound::from_borrowed_ptr(self.py, ptr) }.str()?;
                self.string(text.as_ptr(), false)
            }
            Kind::Foreign => self.foreign(ptr),
            Kind::Set | Kind::Unknown if self.opts.pydantic => self.foreign(ptr),
            Kind::Set | Kind::Unknown | Kind::IsoTime(_) | Kind::Text => {
                let ty: Bound<'py, PyType> =
                    // SAFETY: `tp` is the type of a live object the walk holds; a new reference is
                    // taken; it is a type object.
                    unsafe { Bound::from_borrowed_ptr(self.py, tp as *mut ffi::PyObject).cast_into_unchecked() };
                Err(encode_error(self.py, format!("Unable to serialize unknown type: {}", type_name(&ty))))
            }
        }
    }

    /// The value of an Enum member: its `_value_` instance attribute (a plain
    /// attribute read, where `.value` runs a Python-level property), else `.value`.
    #[inline]
    fn enum_value(&self, ptr: *mut ffi::PyObject) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the walk's invariant (module docs); a new reference is taken.
        let obj = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
        match obj.getattr(intern!(self.py, "_value_")) {
            Ok(v) => Ok(v),
            Err(_) => obj.getattr(intern!(self.py, "value")),
        }
    }

    /// `pydantic_core.to_json(obj, by_alias=True, inf_nan_mode="null")`: the reference's
    /// own serializer, for what the walker does not write itself.
    #[cold]
    fn pydantic_json(&self, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let py = self.py;
        let fail = |e: PyErr| {
            encode_error(py, format!("Unable to serialize unknown type: {}: {e}", type_name(&obj.get_type())))
        };
        let to_json = TO_JSON
            .get_or_try_init(py, || -> PyResult<Py<PyAny>> { Ok(py.import("pydantic_core")?.getattr("to_json")?.unbind()) })
            .map_err(fail)?;
        let kwargs = TO_JSON_KWARGS.get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            let kw = PyDict::new(py);
            kw.set_item("by_alias", true)?;
            kw.set_item("inf_nan_mode", "null")?;
            Ok(kw.unbind())
        })?;
        let out = to_json.bind(py).call((obj,), Some(kwargs.bind(py))).map_err(fail)?;
        out.cast_into::<PyBytes>().map_err(|e| fail(e.into()))
    }

    #[cold]
    fn foreign(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        // SAFETY: the walk's invariant (module docs); a new reference is taken.
        let obj = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
        let json = self.pydantic_json(&obj)?;
        self.sink
            .raw_json(json.as_bytes())
            .map_err(|e| encode_error(self.py, format!("{}: {e}", type_name(&obj.get_type()))))
    }

    /// A datetime, date or time as pydantic writes it: the ISO text, with `Z` for a zero
    /// offset; an offset with seconds (rare) is left to pydantic, which spells it its own way.
    fn iso_time(&mut self, ptr: *mut ffi::PyObject, base: usize) -> PyResult<()> {
        // SAFETY: the walk's invariant (module docs); a new reference is taken.
        let obj = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
        let iso = obj.call_method0(intern!(self.py, "isoformat"))?;
        match agui_core::json::iso_time(iso.cast::<PyString>()?.to_str()?, base) {
            agui_core::json::IsoTime::AsIs => self.string(iso.as_ptr(), false),
            agui_core::json::IsoTime::Zulu(z) => {
                self.sink.str(&z);
                Ok(())
            }
            agui_core::json::IsoTime::Other => self.foreign(ptr),
        }
    }

    fn set(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        self.enter()?;
        self.sink.begin_array();
        // SAFETY: the walk's invariant (module docs); a new reference is taken.
        let obj = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
        for item in obj.try_iter()? {
            let item = item?;
            self.value(item.as_ptr())?;
        }
        self.sink.end_array();
        self.depth -= 1;
        Ok(())
    }

    /// The text of a dict key that is not an exact str: a str subclass, an Enum member
    /// with a str value, else (pydantic mode) pydantic's key rules (`1` -> "1", `None` ->
    /// "None", a date -> its ISO text): pydantic is asked for `{key: None}` and the key it
    /// wrote is taken.
    #[cold]
    fn key_text(&mut self, key: &Bound<'py, PyAny>) -> PyResult<String> {
        match kind_of(self.py, self.lay, &key.get_type())? {
            Kind::StrSub => return self.owned_text(key.cast::<PyString>()?),
            Kind::Enum(_) => {
                let value = self.enum_value(key.as_ptr())?;
                if let Ok(s) = value.cast::<PyString>() {
                    return self.owned_text(s);
                }
            }
            _ => {}
        }
        if !self.opts.pydantic {
            let repr = key.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
            return Err(encode_error(
                self.py,
                format!("dict keys must be str, got {} key {}", type_name(&key.get_type()), repr),
            ));
        }
        let one = PyDict::new(self.py);
        one.set_item(key, self.py.None())?;
        let json = self.pydantic_json(one.as_any())?;
        let m: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(json.as_bytes())
            .map_err(|e| encode_error(self.py, format!("dict key {key}: {e}")))?;
        Ok(m.keys().next().cloned().unwrap_or_default())
    }

    /// A str's text as an owned `String` (unpaired surrogates as the walk treats them).
    fn owned_text(&self, s: &Bound<'py, PyString>) -> PyResult<String> {
        match s.to_str() {
            Ok(t) => Ok(t.to_owned()),
            Err(e) if self.opts.lossy_surrogates && e.is_instance_of::<PyUnicodeEncodeError>(self.py) => {
                let wtf8 = s.call_method1(intern!(self.py, "encode"), ("utf-8", "surrogatepass"))?;
                Ok(agui_core::json::wtf8_to_utf8_lossy(wtf8.cast::<PyBytes>()?.as_bytes()))
            }
            Err(e) => Err(self.unpaired(e)),
        }
    }

    #[cold]
    fn unpaired(&self, err: PyErr) -> PyErr {
        if !err.is_instance_of::<PyUnicodeEncodeError>(self.py) {
            return err;
        }
        encode_error(self.py, format!("string contains an unpaired surrogate (surrogates not allowed): {err}"))
    }

    // Inline in `compound`: a nested container then costs one call, not two.
    #[inline(always)]
    fn dict(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        self.enter()?;
        self.sink.begin_object();
        let mark = self.sink.object_mark();
        // SAFETY: a live dict (the caller holds it).
        let direct = unsafe { self.lay.dict_direct(ptr) };
        // The table as read now; read again after each value that may run Python code.
        // SAFETY: `ptr` is a live dict (the caller holds it) for which dict_direct held.
        let mut table = direct.then(|| unsafe { self.lay.dict_entries(ptr) });
        let (mut pos, mut upos): (ffi::Py_ssize_t, usize) = (0, 0);
        loop {
            let (k, v) = if let Some(t) = table {
                // SAFETY: read from this live dict since the last Python code ran.
                match unsafe { t.next(&mut upos) } {
                    Some(kv) => kv,
                    None => break,
                }
            } else {
                let (mut k, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
                // SAFETY: `ptr` is a live dict (the caller holds it); the GIL is held.
                if unsafe { ffi::PyDict_Next(ptr, &mut pos, &mut k, &mut v) } == 0 {
                    break;
                }
                (k, v)
            };
            // SAFETY: `k` is a key borrowed from the live dict, read since the last Python code
            // ran.
            if unsafe { ffi::Py_TYPE(k) } != &raw mut ffi::PyUnicode_Type {
                if S::PYTHON {
                    return Err(self.give_up());
                }
                // Other keys may spell the same text as another key once written: start
                // the object again, merging them (below).
                self.sink.rewind_object(mark);
                self.unfiltered(|w| w.merged_dict(ptr))?;
                break;
            }
            if S::PYTHON {
                // SAFETY: `k` is a live exact str borrowed from the dict (checked just above).
                unsafe { self.sink.py_key(k) };
            } else {
                self.string(k, true)?;
            }
            // A leaf runs no Python code and holds no field to name.
            if !self.leaf(v)? {
                // Walking it may run Python code that drops the key from the dict: hold
                // the key for the path of a schema violation found below.
                // SAFETY: as just above: `k` is live; the reference is released when `_key` drops.
                let _key = unsafe { Held::new(self.lay, k) };
                self.compound(v).map_err(|e| {
                    self.at(e, |py| {
                        // SAFETY: `k` is held by `_key` while the error unwinds; a new reference is
                        // taken.
                        let key = unsafe { Bound::from_borrowed_ptr(py, k) };
                        format!("[{}]", key.repr().map(|r| r.to_string()).unwrap_or_default())
                    })
                })?;
                if direct {
                    // SAFETY: `ptr` is the live dict, read again after Python code may have run.
                    table = Some(unsafe { self.lay.dict_entries(ptr) });
                }
            }
        }
        self.sink.end_object(true);
        self.depth -= 1;
        Ok(())
    }

    /// The members of a dict with keys that are not all exact str. The reference writes
    /// the JSON-mode dict that its model serializer returns, so keys spelled alike merge
    /// as in a Python dict: first position, last value.
    #[cold]
    fn merged_dict(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        // SAFETY: the walk's invariant (module docs); a new reference is taken.
        let d = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
        let d = d.cast::<PyDict>()?;
        let mut members: Vec<(String, Bound<'py, PyAny>)> = Vec::with_capacity(d.len());
        let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (k, v) in d.iter() {
            let text = if k.is_exact_instance_of::<PyString>() {
                self.owned_text(k.cast::<PyString>()?)?
            } else {
                self.key_text(&k)?
            };
            match index.get(&text) {
                Some(&i) => members[i].1 = v,
                None => {
                    index.insert(text.clone(), members.len());
                    members.push((text, v));
                }
            }
        }
        for (text, v) in &members {
            self.sink.key(text);
            self.value(v.as_ptr())?;
        }
        Ok(())
    }

    /// `key: value` from borrowed references of an extras dict entry; false when the key is
    /// not an exact str.
    fn entry(&mut self, k: *mut ffi::PyObject, v: *mut ffi::PyObject) -> PyResult<bool> {
        // SAFETY: the walk's invariant (module docs): `k` is a live key borrowed from the extras
        // dict.
        if unsafe { ffi::Py_TYPE(k) } == &raw mut ffi::PyUnicode_Type {
            self.string(k, true)?;
            self.value(v)?;
            return Ok(true);
        }
        // Other keys can run Python code: hold both first.
        // SAFETY: the walk's invariant (module docs); new references are taken before the key's
        // text is asked (Python code).
        let key = unsafe { Bound::from_borrowed_ptr(self.py, k) };
        // SAFETY: the walk's invariant (module docs); new references are taken before the key's
        // text is asked (Python code).
        let value = unsafe { Bound::from_borrowed_ptr(self.py, v) };
        let text = self.key_text(&key)?;
        self.sink.key(&text);
        self.value(value.as_ptr())?;
        Ok(false)
    }

    /// A list (or subclass instance): items read in place when the layout holds.
    /// `items`: the schema check of each item (a Struct field's list), made as the walk
    /// reaches the item instead of in a pass of its own.
    #[inline(always)]
    fn list(&mut self, ptr: *mut ffi::PyObject, items: Option<&Check>) -> PyResult<()> {
        self.enter()?;
        self.sink.begin_array();
        let mut i = 0;
        let seq = self.lay.seq();
        // The items as they are now, read again after anything that may run Python code.
        // SAFETY: a live list (the caller holds it); `seq` confirmed the layout.
        let mut now = if seq { unsafe { self.lay.list_items_now(ptr) } } else { &[] };
        loop {
            let item = if seq {
                match now.get(i) {
                    Some(&item) => item,
                    None => break,
                }
            } else {
                // SAFETY: `ptr` is a live list (the caller holds it).
                if i as ffi::Py_ssize_t >= unsafe { ffi::PyList_Size(ptr) } {
                    break;
                }
                // SAFETY: `ptr` is a live list; `i` is below its size just read.
                let item = unsafe { ffi::PyList_GetItem(ptr, i as ffi::Py_ssize_t) };
                if item.is_null() {
                    return Err(PyErr::fetch(self.py));
                }
                item
            };
            if let Some(c) = items {
                // SAFETY: `item` is borrowed from the list, alive for the call.
                if let Err(m) = unsafe { conforms(self.py, self.lay, c, item) } {
                    return Err(self.mismatch_at(format!("[{i}]"), m));
                }
            }
            // A leaf's error (an API read failing) has no field path to add.
            if !self.leaf(item)? {
                // (The item check above calls no Python code that could change the list
                // before `item` is walked: the item is still borrowed from it here.)
                self.compound(item).map_err(|e| self.at(e, |_| format!("[{i}]")))?;
                if seq {
                    // SAFETY: `ptr` is the live list (the caller holds it), `seq` on; read again
                    // after Python code may have run.
                    now = unsafe { self.lay.list_items_now(ptr) };
                }
            }
            i += 1;
        }
        self.sink.end_array();
        self.depth -= 1;
        Ok(())
    }

    fn tuple(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        self.enter()?;
        self.sink.begin_array();
        if self.lay.seq() {
            // SAFETY: a live tuple (the caller holds it; immutable, so its items live as
            // long as it does); `seq` confirmed the layout.
            for (i, &item) in unsafe { self.lay.tuple_items(ptr) }.iter().enumerate() {
                self.value(item).map_err(|e| self.at(e, |_| format!("[{i}]")))?;
            }
        } else {
            // SAFETY: `ptr` is a live tuple (the caller holds it).
            let n = unsafe { ffi::PyTuple_Size(ptr) };
            for i in 0..n {
                // SAFETY: `ptr` is a live tuple; `i` is below its size.
                let item = unsafe { ffi::PyTuple_GetItem(ptr, i) };
                if item.is_null() {
                    return Err(PyErr::fetch(self.py));
                }
                self.value(item).map_err(|e| self.at(e, |_| format!("[{i}]")))?;
            }
        }
        self.sink.end_array();
        self.depth -= 1;
        Ok(())
    }

    /// A declared member of a Struct, held to its schema first (our own Structs). An exact
    /// list's items are checked by the walk of the list itself (one pass over them).
    #[inline(always)]
    fn checked_field(&mut self, plan: &'a Plan, f: &'a Field, key: &'a PreStr, v: *mut ffi::PyObject) -> PyResult<()> {
        if let (Some(c), Some(schema)) = (f.check, &plan.schema) {
            // SAFETY: `v` is borrowed from the instance, alive for the call.
            if !unsafe { plainly_valid(c, v) } {
                let check = &schema.checks[c.index];
                if let Some(items) = list_items(check, v) {
                    self.sink.key_pre(key);
                    // SAFETY: `v` is a live field value borrowed from the instance the walk holds;
                    // the reference is released when `_keep` drops.
                    let _keep = unsafe { Held::new(self.lay, v) };
                    return self.list(v, Some(items)).map_err(|e| self.at(e, |py| format!(".{}", f.attr.bind(py))));
                }
                // SAFETY: `v` is a live field value borrowed from the instance the walk holds; the
                // check runs no Python code.
                if let Err(m) = unsafe { conforms(self.py, self.lay, check, v) } {
                    return Err(self.mismatch(f, m));
                }
            }
        }
        self.field(f, key, v).map_err(|e| self.at(e, |py| format!(".{}", f.attr.bind(py))))
    }

    /// A declared member, unless the omission rule leaves it out.
    #[inline(always)]
    fn field(&mut self, f: &'a Field, key: &'a PreStr, v: *mut ffi::PyObject) -> PyResult<()> {
        // SAFETY: `v` is a live value borrowed from the instance the walk holds.
        if f.omit_if_none && unsafe { is_absent(v) } {
            return Ok(());
        }
        self.sink.key_pre(key);
        self.value(v)
    }

    fn object(&mut self, ptr: *mut ffi::PyObject, plan: &'a Plan) -> PyResult<()> {
        if S::PYTHON {
            return self.py_struct(ptr, plan);
        }
        // Keys by attribute name for our own Structs (others are written as they are);
        // null members of msgspec Structs dropped with `exclude_none`, not below other objects.
        let (mut names, mut drop_nulls) = (None, false);
        let outer_none = self.dump.exclude_none;
        if self.dump.by_name || outer_none {
            if let PlanKind::Struct { .. } = plan.kind {
                let d = self.dump_plan(ptr, plan)?;
                if self.dump.by_name && d.mode == DumpMode::Other {
                    return Err(encode_error(self.py, "a foreign Struct is keyed by attribute name in Python".to_string()));
                }
                if self.dump.by_name && d.mode == DumpMode::Native {
                    names = Some(&d.fields[..]);
                }
                drop_nulls = outer_none && d.mode != DumpMode::Pass;
            }
            self.dump.exclude_none = drop_nulls;
        }
        let r = self.object_members(ptr, plan, names, drop_nulls);
        self.dump.exclude_none = outer_none;
        r
    }

    fn object_members(&mut self, ptr: *mut ffi::PyObject, plan: &'a Plan, names: Option<&'a [DumpField]>, drop_nulls: bool) -> PyResult<()> {
        self.enter()?;
        let py = self.py;
        // The caller (`compound`) holds the object: borrowed, no count change.
        // SAFETY: `ptr` is live: the caller (`compound`) holds it for the call.
        let obj = unsafe { pyo3::Borrowed::from_ptr(py, ptr) };
        if let PlanKind::PydanticRoot = plan.kind {
            let root = obj.getattr(plan.fields[0].attr.bind(py))?;
            self.value(root.as_ptr())?;
            self.depth -= 1;
            return Ok(());
        }
        self.sink.begin_object();
        // Extras may repeat a member's key: the object's keys are then not distinct.
        let mut distinct = true;
        match &plan.kind {
            PlanKind::Pydantic { extra } => {
                // SAFETY: `ptr` is a live object; the call returns a new reference or NULL with an
                // exception set.
                let d = unsafe {
                    Bound::from_owned_ptr_or_err(py, ffi::PyObject_GenericGetDict(ptr, std::ptr::null_mut()))?
                };
                if !d.is_exact_instance_of::<PyDict>() {
                    return Err(encode_error(py, format!("{}: __dict__ is not a dict", type_name(&obj.get_type()))));
                }
                let dp = d.as_ptr();
                // Instance dicts hold the fields in declared order under the very key
                // objects of __pydantic_fields__: walk the dict alongside the plan and
                // only fall back to lookups once the order differs.
                let mut pos: ffi::Py_ssize_t = 0;
                let mut in_order = true;
                for f in &plan.fields {
                    let mut v: *mut ffi::PyObject = std::ptr::null_mut();
                    if in_order {
                        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
                        let mut pv: *mut ffi::PyObject = std::ptr::null_mut();
                        // SAFETY: `dp` is the live instance dict (`d` holds it); the GIL is held.
                        if unsafe { ffi::PyDict_Next(dp, &mut pos, &mut k, &mut pv) } != 0 && k == f.attr.as_ptr() {
                            v = pv;
                        } else {
                            in_order = false;
                        }
                    }
                    if v.is_null() {
                        // SAFETY: `dp` is the live instance dict, `f.attr` a live str the plan
                        // holds; a borrowed result.
                        v = unsafe { ffi::PyDict_GetItemWithError(dp, f.attr.as_ptr()) };
                        if v.is_null() {
                            // SAFETY: the GIL is held.
                            if unsafe { !ffi::PyErr_Occurred().is_null() } {
                                return Err(PyErr::fetch(py));
                            }
                            continue; // field not set (e.g. model_construct): pydantic skips it
                        }
                    }
                    self.field(f, &f.key, v)?;
                }
                let ex = extra.read(&obj, intern!(py, "__pydantic_extra__").as_unbound())?;
                if !ex.is_none() {
                    distinct &= self.extras_named(&ex, plan, None, false)?;
                }
                for f in &plan.computed {
                    let v = obj.getattr(f.attr.bind(py))?;
                    self.field(f, &f.key, v.as_ptr())?;
                }
            }
            PlanKind::PydanticRoot => unreachable!(),
            PlanKind::Struct { has_dict, managed } => {
                for (i, f) in plan.fields.iter().enumerate() {
                    let key = names.map_or(&f.key, |n| &n[i].name_json);
                    let mark = self.sink.member_mark();
                    if let Getter::ConstScalar(s) = &f.getter {
                        self.sink.key_pre(key);
                        self.sink.scalar(s);
                        if drop_nulls {
                            self.sink.drop_null_member(mark);
                        }
                        continue;
                    }
                    // Borrowed from the instance, which `obj` keeps alive; `value` takes
                    // its own reference before anything can run Python code.
                    // SAFETY: `ptr` is a live instance of exactly the plan's class: the plan was
                    // found for its type (`kind_of`, the memo).
                    if let Some(v) = unsafe { in_place(&f.getter, ptr) } {
                        if v as usize != plan.unset {
                            self.checked_field(plan, f, key, v)?;
                            if drop_nulls {
                                self.sink.drop_null_member(mark);
                            }
                        }
                        continue;
                    }
                    let v = f.getter.read(&obj, &f.attr)?;
                    if v.as_ptr() as usize == plan.unset {
                        continue;
                    }
                    self.checked_field(plan, f, key, v.as_ptr())?;
                    if drop_nulls {
                        self.sink.drop_null_member(mark);
                    }
                }
                if *has_dict {
                    if let Some(ex) = self.lay.class_extras(&obj, *managed)? {
                        distinct &= self.extras_named(&ex, plan, names, drop_nulls)?;
                    }
                }
            }
        }
        self.sink.end_object(distinct);
        self.depth -= 1;
        Ok(())
    }

    /// The [`DumpPlan`] of the class of `ptr` (a live instance of the class `plan` is for).
    fn dump_plan(&self, ptr: *mut ffi::PyObject, plan: &'a Plan) -> PyResult<&'a DumpPlan> {
        if let Some(d) = plan.dump.get() {
            return Ok(d);
        }
        // SAFETY: `ptr` is a live object the walk holds; its type lives with it (a new reference).
        let ty = unsafe { Bound::from_borrowed_ptr(self.py, ffi::Py_TYPE(ptr) as *mut ffi::PyObject).cast_into_unchecked::<PyType>() };
        dump_plan(self.py, &ty, plan)
    }

    /// Python mode: a value whose class has no plan. Enum members are kept (or their
    /// value, not walked), subclasses of dict, list and tuple copied as a dict or a list,
    /// everything else kept as it is.
    fn py_other(&mut self, ptr: *mut ffi::PyObject, kind: &Kind) -> PyResult<()> {
        match kind {
            Kind::Enum(_) if !self.dump.enums => {
                let value = self.enum_value(ptr)?;
                // SAFETY: `value` is a live object held for the call.
                unsafe { self.sink.py_value(value.as_ptr()) };
                Ok(())
            }
            Kind::DictSub => self.dict(ptr),
            Kind::ListSub => self.list(ptr, None),
            Kind::TupleSub => self.tuple(ptr),
            _ => {
                // SAFETY: the walk's invariant (module docs): `ptr` is live.
                unsafe { self.sink.py_value(ptr) };
                Ok(())
            }
        }
    }

    /// Python mode: an object with a plan. One of our Structs becomes a dict: its fields
    /// in plan order under their names or aliases (one omittable when None left out, any
    /// None with `exclude_none`), then its extras, set as a dict update sets them (an
    /// extra repeating a field's key takes its place). A pydantic model, or a class that
    /// is no msgspec Struct, is kept as it is; another Struct is left to the Python loop.
    fn py_struct(&mut self, ptr: *mut ffi::PyObject, plan: &'a Plan) -> PyResult<()> {
        let PlanKind::Struct { has_dict, managed } = plan.kind else {
            // SAFETY: the walk's invariant (module docs): `ptr` is live.
            unsafe { self.sink.py_value(ptr) };
            return Ok(());
        };
        let dump = self.dump_plan(ptr, plan)?;
        match dump.mode {
            DumpMode::Native => {}
            DumpMode::Pass => {
                // SAFETY: as above.
                unsafe { self.sink.py_value(ptr) };
                return Ok(());
            }
            DumpMode::Other => return Err(self.give_up()),
        }
        self.enter()?;
        let py = self.py;
        // SAFETY: `ptr` is live: the caller (`compound`) holds it for the call.
        let obj = unsafe { pyo3::Borrowed::from_ptr(py, ptr) };
        let none = self.dump.exclude_none;
        // (whether the instance has extras, read at its first field left out)
        let mut extras: Option<bool> = None;
        self.sink.begin_object();
        for (f, d) in plan.fields.iter().zip(&dump.fields) {
            let key = if self.dump.by_name { &d.name } else { &d.wire };
            // A field read in place is borrowed from the instance; one read through its
            // getter is held here.
            let held;
            // SAFETY: `ptr` is a live instance of exactly the plan's class (the plan was found
            // for its type).
            let v = match (&d.konst, unsafe { in_place(&f.getter, ptr) }) {
                (Some(c), _) => c.as_ptr(),
                (None, Some(v)) => v,
                (None, None) => {
                    held = f.getter.read(&obj, &f.attr)?;
                    held.as_ptr()
                }
            };
            // SAFETY: None's address only.
            if v == unsafe { ffi::Py_None() } && (f.omit_if_none || none) {
                // An extra of this key (not None) takes the field's place, as a dict update
                // sets it: its place is kept here (`exclude_none` leaves the field out first,
                // so the extra then follows the fields).
                if !none && has_dict && *extras.get_or_insert_with(|| !self.lay.no_extras(&obj)) && self.extra_named(&obj, managed, key)? {
                    // SAFETY: as below; None is live (the extras' entry replaces it).
                    unsafe {
                        self.sink.py_key(key.as_ptr());
                        self.sink.py_value(ffi::Py_None());
                    }
                }
                continue;
            }
            // SAFETY: the plan's key, a live exact str (interned when the plan was made).
            unsafe { self.sink.py_key(key.as_ptr()) };
            self.value(v)?;
        }
        if has_dict {
            if let Some(ex) = self.lay.class_extras(&obj, managed)? {
                let d = ex.cast::<PyDict>().map_err(|_| encode_error(py, "extra fields must be a dict".to_string()))?;
                let mut pos: ffi::Py_ssize_t = 0;
                let mut k: *mut ffi::PyObject = std::ptr::null_mut();
                let mut v: *mut ffi::PyObject = std::ptr::null_mut();
                // SAFETY: `d` is a live dict (held by `ex`); the GIL is held.
                while unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
                    // SAFETY: `k` is a live key borrowed from the dict, read just now.
                    if unsafe { ffi::Py_TYPE(k) } != &raw mut ffi::PyUnicode_Type {
                        return Err(self.give_up());
                    }
                    // SAFETY: `k` and `v` are live, borrowed from the dict, read just now; `k` an
                    // exact str.
                    unsafe {
                        if v == ffi::Py_None() {
                            if none {
                                // (pydantic's exclude_none skips the extra: a field of that key stays)
                                continue;
                            }
                            if !plan.omit_keys.is_empty() && self.omittable_key(k, &plan.omit_keys) {
                                // The reference's model serializer leaves out every key of an
                                // omittable field (name or alias) holding None, after the extras
                                // were set: the field this extra replaced goes too.
                                self.sink.py_discard(k);
                                continue;
                            }
                        }
                        self.sink.py_key(k);
                    }
                    // Walking the value may run Python code that drops the key: held meanwhile.
                    // SAFETY: `k` is live (just above); released when `_key` drops.
                    let _key = unsafe { Held::new(self.lay, k) };
                    self.value(v)?;
                }
            }
        }
        self.sink.end_object(true);
        self.depth -= 1;
        Ok(())
    }

    /// Does the instance hold an extra `key` that is not None?
    #[cold]
    fn extra_named(&self, obj: &Bound<'py, PyAny>, managed: bool, key: &Py<PyString>) -> PyResult<bool> {
        let Some(ex) = self.lay.class_extras(obj, managed)? else { return Ok(false) };
        let Ok(d) = ex.cast::<PyDict>() else { return Ok(false) };
        // (a dict of exact str keys for our Structs: the lookup runs no Python code)
        Ok(d.get_item(key.bind(self.py))?.is_some_and(|v| !v.is_none()))
    }

    /// Is the extra's key `k` one of `keys` (the omittable fields' names and wire keys)?
    ///
    /// # Safety
    /// `k` must be a live object; the GIL must be held.
    unsafe fn omittable_key(&self, k: *mut ffi::PyObject, keys: &[String]) -> bool {
        // SAFETY: the contract; a new reference is taken.
        let key = unsafe { Bound::from_borrowed_ptr(self.py, k) };
        let hit = key.cast::<PyString>().ok().and_then(|s| s.to_str().ok()).is_some_and(|s| keys.iter().any(|o| o == s));
        // SAFETY: the GIL is held (a key that is no str, or one with a lone surrogate).
        unsafe { ffi::PyErr_Clear() };
        hit
    }

    /// An extra attribute of one of our Structs may not repeat a declared field's name or
    /// wire key (`ev.messageId = ...`, `ev.type = ...`): the object would carry the key twice.
    /// True when the entry *is* the declared field: one read through getattr, with no
    /// descriptor on the class, lives in this dict (`BaseEvent(type=...)`'s `type`) and was
    /// written already.
    #[inline]
    fn clash(&mut self, k: *mut ffi::PyObject, plan: &Plan, names: Option<&[DumpField]>) -> PyResult<bool> {
        // SAFETY: the walk's invariant (module docs): `k` is a live key borrowed from the extras
        // dict; a new reference is taken.
        let key = unsafe { Bound::from_borrowed_ptr(self.py, k) };
        let Some(text) = key.cast::<PyString>().ok().and_then(|s| s.to_str().ok()) else {
            // SAFETY: the GIL is held.
            unsafe { ffi::PyErr_Clear() };
            return Ok(false);
        };
        // Only the wire key would repeat a member: an unknown member spelled like a field's
        // Python name (`"message_id"` beside `"messageId"`, kept by a decoder) is a member of
        // its own, written as the reference's models write it.
        // (the key each field was written under: its wire key, or its name)
        fn written<'f>(names: Option<&'f [DumpField]>, i: usize, f: &'f Field) -> &'f str {
            names.map_or(&*f.key.text, |n| &*n[i].name_json.text)
        }
        let Some((i, f)) = plan.fields.iter().enumerate().find(|(i, f)| written(names, *i, f) == text || f.attr.bind(self.py).to_str().ok() == Some(text)) else {
            return Ok(false);
        };
        let attr = f.attr.bind(self.py).to_string();
        if matches!(f.getter, Getter::GetAttr) && attr == text {
            return Ok(true);
        }
        if written(names, i, f) != text {
            return Ok(false);
        }
        self.violation = Some((
            format!(".{text}"),
            format!("an extra attribute named like the declared field `{attr}` (assign `{attr}` itself)"),
        ));
        Err(pyo3::exceptions::PyValueError::new_err("schema violation"))
    }

    /// Extra members (after the declared ones) from a dict, in insertion order, with the
    /// omission rule for keys of omittable fields. True when there were none.
    fn extras_named(&mut self, extra: &Bound<'py, PyAny>, plan: &Plan, names: Option<&[DumpField]>, drop_nulls: bool) -> PyResult<bool> {
        let py = self.py;
        let d = extra.cast::<PyDict>().map_err(|_| encode_error(py, "extra fields must be a dict".to_string()))?;
        if d.is_empty() {
            return Ok(true);
        }
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: `d` is a live dict (held by the caller); the GIL is held.
        while unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
            if plan.schema.is_some() && self.clash(k, plan, names)? {
                continue;
            }
            // SAFETY: `k` and `v` are live, borrowed from the extras dict, read since the last
            // Python code ran.
            if !plan.omit_keys.is_empty() && unsafe { is_absent(v) && self.omittable_key(k, &plan.omit_keys) } {
                continue;
            }
            let mark = self.sink.member_mark();
            self.entry(k, v)?;
            if drop_nulls {
                self.sink.drop_null_member(mark);
            }
        }
        Ok(false)
    }
}

/// A strong reference held for a scope (a value being walked, which Python code run
/// below could otherwise free), counted in place where the layout allows
/// (`Layout::incref`: under the limited API each count change is otherwise a call).
struct Held {
    ptr: *mut ffi::PyObject,
    lay: Layout,
}

impl Held {
    /// # Safety
    /// `ptr` must be a live object; the GIL must be held (a walk holds it throughout).
    #[inline(always)]
    unsafe fn new(lay: Layout, ptr: *mut ffi::PyObject) -> Held {
        // SAFETY: the contract (see above).
        unsafe { lay.incref(ptr) };
        Held { ptr, lay }
    }
}

impl Drop for Held {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the reference taken in `new`, released under the walk's GIL.
        unsafe { self.lay.decref(self.ptr) }
    }
}

/// The item check of a list check (`List`, or `Optional(List)`) that `v`, an exact list
/// long enough for it, passes in kind: its items are then checked during the walk.
#[inline(always)]
fn list_items(check: &Check, v: *mut ffi::PyObject) -> Option<&Check> {
    let check = match check {
        Check::Optional(inner) => inner,
        c => c,
    };
    match check {
        // SAFETY: `v` is a live field value borrowed from the instance the walk holds.
        Check::List(item, min) if unsafe { ffi::Py_TYPE(v) } == &raw mut ffi::PyList_Type => {
            // SAFETY: `v` is a live exact list.
            (unsafe { ffi::PyList_Size(v) } as usize >= *min).then_some(&**item)
        }
        _ => None,
    }
}

/// The keep-alive vectors of a finished tree walk (empty, capacity kept), for the next
/// one: encoding a small event then allocates little besides the tree itself.
pub(crate) type Spare = (Vec<*mut ffi::PyObject>, Vec<Kind>);
static SPARE: GilCell<Option<Spare>> = GilCell::new(None);

/// An exception that user code raised during a walk (a property, a computed field, a dict
/// key's `__hash__`) as an `EncodeError` caused by it, as pydantic wraps such exceptions
/// in its serialization error: encoders raise the project's errors (or `TypeError`) only.
/// The project's own errors, `TypeError`, `MemoryError` and what is not an `Exception`
/// (`KeyboardInterrupt`) pass unchanged.
pub(crate) fn user_error(py: Python<'_>, e: PyErr) -> PyErr {
    use pyo3::exceptions::{PyException, PyMemoryError, PyTypeError};
    let ours = crate::errors::error_class(py, "AguiError").map(|c| e.is_instance(py, &c)).unwrap_or(false);
    if ours || !e.is_instance_of::<PyException>(py) || e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyMemoryError>(py) {
        return e;
    }
    let err = encode_error(py, format!("{} raised while encoding: {}", type_name(&e.get_type(py)), e.value(py)));
    err.set_cause(py, Some(e));
    err
}

/// Walk `obj` into a protobuf encoder tree and hand it to `f`.
pub(crate) fn with_tree<'py, T>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    opts: Opts,
    f: impl for<'a> FnOnce(&Node<'a>) -> T,
) -> PyResult<T> {
    // A re-entrant walk (Python code run by this one) simply finds no spare.
    let (keep, kinds) = SPARE.with(py, |c| c.take()).flatten().unwrap_or_default();
    let mut w = Walker::any_sink(py, TreeBuilder::new(), opts);
    (w.keep, w.kinds) = (keep, kinds);
    // The tree is read and freed recursively: on a stack with room for its depth.
    let out = agui_core::limits::deep(opts.max_depth as usize, || {
        let r = w.walk(obj).map_err(|e| user_error(py, e));
        let node = w.sink.finish().unwrap_or(Node::Null);
        // `node` borrows what `w` keeps: it is dropped at the end of this block, first.
        r.map(|()| f(&node))
    });
    let (keep, kinds) = w.into_spare();
    if keep.capacity() <= 4096 && kinds.capacity() <= 4096 {
        SPARE.with(py, |c| *c = Some((keep, kinds)));
    }
    out
}

/// A field read in place, borrowed from the instance (kept alive by the caller), or None
/// when it must go through `Getter::read`: not a slot, or an unset slot (its descriptor
/// raises the AttributeError).
///
/// # Safety
/// `obj` must be a live instance of the class the getter's plan was built for (its slot
/// offset lies inside such an instance: `Layout::member_offset` checked it against the
/// class's basic size); the GIL must be held.
#[inline]
unsafe fn in_place(g: &Getter, obj: *mut ffi::PyObject) -> Option<*mut ffi::PyObject> {
    match g {
        Getter::Slot(offset, ..) => {
            // SAFETY: see the function's contract: a pointer-sized slot inside `obj`.
            let v = unsafe { *((obj as *const u8).add(*offset) as *const *mut ffi::PyObject) };
            (!v.is_null()).then_some(v)
        }
        _ => None,
    }
}

/// Field `f` of `obj` as a new reference: read in place from its slot when `plan` was
/// built for exactly `obj`'s class (plans are per class, `plan::kind_of`), else (not a
/// slot, an unset slot, another class) through its getter.
pub(crate) fn field<'py>(obj: &Bound<'py, PyAny>, plan: &Plan, f: &Field) -> PyResult<Bound<'py, PyAny>> {
    if obj.get_type_ptr() as usize == plan.class {
        // SAFETY: `obj` is a live instance of exactly the plan's class (compared above),
        // the GIL is held (its token); the slot's object is borrowed from `obj` and a
        // reference to it is taken at once.
        if let Some(v) = unsafe { in_place(&f.getter, obj.as_ptr()) } {
            // SAFETY: as just above; the slot's object is borrowed from `obj`, a new reference is
            // taken.
            return Ok(unsafe { Bound::from_borrowed_ptr(obj.py(), v) });
        }
    }
    f.getter.read(obj, &f.attr)
}

/// True when `v` passes its field's check without looking further.
///
/// # Safety
/// `v` must be a live object.
#[inline(always)]
unsafe fn plainly_valid(c: FieldCheck, v: *mut ffi::PyObject) -> bool {
    // SAFETY: a live object's type is readable.
    unsafe { ffi::Py_TYPE(v) as usize == c.exact || (c.none_ok && v == ffi::Py_None()) }
}

/// True when the value "has no value" for the omission rule: None or a non-finite float.
///
/// # Safety
/// `ptr` must be a live object; the GIL must be held.
#[inline]
unsafe fn is_absent(ptr: *mut ffi::PyObject) -> bool {
    // SAFETY: see the contract: a live object's type is readable, an exact float's value too.
    unsafe {
        if ptr == ffi::Py_None() {
            return true;
        }
        if ffi::Py_TYPE(ptr) == &raw mut ffi::PyFloat_Type {
            return !ffi::PyFloat_AsDouble(ptr).is_finite();
        }
    }
    false
}

/// Does `v` fit its field's schema (the construction check of the field, read as a schema:
/// `ffi::construct::PyRead`)? `Err` says what was expected and where below the field
/// (`[3]` in a list).
///
/// # Safety
/// `v` must be a live object, borrowed for the call; nothing here runs Python code.
unsafe fn conforms(py: Python<'_>, lay: Layout, check: &Check, v: *mut ffi::PyObject) -> Result<(), Mismatch> {
    agui_core::construct::check(&PyRead::<true>(py, Some(lay)), check, v).map_err(|m: agui_core::construct::Mismatch<_, _, _>| {
        let lit = |s: &Py<PyString>| s.bind(py).to_string_lossy().into_owned();
        let class = |c: usize| {
            // SAFETY: `c` is the address of a class a plan names (kept alive by it).
            let t = unsafe { Bound::from_borrowed_ptr(py, c as *mut ffi::PyObject) };
            t.cast_into::<PyType>().ok().and_then(|t| t.name().ok()).map(|n| n.to_string()).unwrap_or_default()
        };
        Mismatch { at: m.path(), expected: m.expected(&lit, &class), got: m.got }
    })
}

/// A value that does not fit its field's schema: where below the field, what was
/// expected, and the value found there (borrowed from the field's value).
struct Mismatch {
    at: String,
    expected: String,
    got: *mut ffi::PyObject,
}

/// A field of a Struct as a plain event's member (see `stream::push_fields`).
pub(crate) enum PlainField<'a> {
    /// Left out of the JSON, as the writer leaves it out: msgspec's `UNSET`, or `None`
    /// where the field is omitted when None.
    Omitted,
    /// An exact `str`, and whether it is known to hold no character past U+FFFF.
    Str(&'a str, bool),
    /// An exact `int` within 64 bits.
    Int(i64),
    /// Anything else: `None` written as `null`, a str holding a lone surrogate, an int past
    /// 64 bits, a value of another type.
    Other,
}

/// Where the fields of a class's instances lie, for reading them as plain members
/// ([`with_plain_fields`]): the slots of its plan's fields, in plan order, the tag left
/// out. Made from a plan's slot getters only, so only offsets the plan checked are read.
pub(crate) struct PlainSlots {
    class: usize,
    unset: usize,
    /// (offset, omitted when None)
    slots: Vec<(usize, bool)>,
}

impl PlainSlots {
    /// The slots of `plan`'s fields and, for each, its index in the plan; None when a field
    /// is neither a slot nor the tag (the first constant `str`).
    pub(crate) fn of(plan: &Plan) -> Option<(PlainSlots, Vec<usize>)> {
        let (mut slots, mut indexes, mut tagged) = (Vec::new(), Vec::new(), false);
        for (i, f) in plan.fields.iter().enumerate() {
            match &f.getter {
                Getter::ConstScalar(Scalar::Str(_)) if !tagged => tagged = true,
                Getter::Slot(offset, _) => {
                    slots.push((*offset, f.omit_if_none));
                    indexes.push(i);
                }
                _ => return None,
            }
        }
        Some((PlainSlots { class: plan.class, unset: plan.unset, slots }, indexes))
    }
}

/// The most `str` fields [`with_plain_fields`] reads.
const PLAIN_STRS: usize = 8;

/// References taken in place, released in place on drop.
struct HeldMany {
    lay: Layout,
    ptrs: [*mut ffi::PyObject; PLAIN_STRS],
    n: usize,
}

impl Drop for HeldMany {
    #[inline(always)]
    fn drop(&mut self) {
        for &p in &self.ptrs[..self.n] {
            // SAFETY: the references taken by `PlainFields::next`, released with the GIL
            // `with_plain_fields` holds (its token outlives this guard).
            unsafe { self.lay.decref(p) }
        }
    }
}

/// The fields of one instance as [`PlainField`]s, in the order of its [`PlainSlots`].
pub(crate) struct PlainFields<'a> {
    obj: *mut ffi::PyObject,
    class: usize,
    unset: usize,
    slots: std::slice::Iter<'a, (usize, bool)>,
    held: &'a mut HeldMany,
}

impl<'a> Iterator for PlainFields<'a> {
    /// None inside: a field that cannot be read here (an unset slot, whose descriptor
    /// raises; a ninth `str`).
    type Item = Option<PlainField<'a>>;

    #[inline(always)]
    fn next(&mut self) -> Option<Option<PlainField<'a>>> {
        let &(offset, omit_if_none) = self.slots.next()?;
        // SAFETY: `obj` is alive (`with_plain_fields`'s caller holds it): its type is readable.
        if unsafe { ffi::Py_TYPE(self.obj) } as usize != self.class {
            return Some(None); // (changed by Python code run meanwhile)
        }
        // SAFETY: `obj` is a live instance of exactly the class whose plan's slot getters
        // gave the offset (compared just above); the GIL is held (the token
        // `with_plain_fields` was given).
        let v = unsafe { *((self.obj as *const u8).add(offset) as *const *mut ffi::PyObject) };
        if v.is_null() {
            return Some(None);
        }
        let lay = self.held.lay;
        // SAFETY: `v` is a live object borrowed from `obj` (read just above; nothing between
        // runs Python code); the GIL is held. A `str`'s text is read with a reference held
        // (released after `with_plain_fields`'s `f`), so it lives through `f` whatever runs.
        Some(Some(unsafe {
            let tp = ffi::Py_TYPE(v);
            if v as usize == self.unset || (omit_if_none && v == ffi::Py_None()) {
                PlainField::Omitted
            } else if tp == &raw mut ffi::PyUnicode_Type {
                let held = &mut *self.held;
                match plain_text(lay, v) {
                    Some(s) if held.n < PLAIN_STRS => {
                        lay.incref(v);
                        held.ptrs[held.n] = v;
                        held.n += 1;
                        PlainField::Str(s, lay.str_within_bmp(v))
                    }
                    Some(_) => return Some(None),
                    None => PlainField::Other,
                }
            } else if tp == &raw mut ffi::PyLong_Type {
                match lay.small_int(v) {
                    Some(i) => PlainField::Int(i),
                    None => {
                        let mut overflow: c_int = 0;
                        let i = ffi::PyLong_AsLongLongAndOverflow(v, &mut overflow);
                        if overflow != 0 || (i == -1 && !ffi::PyErr_Occurred().is_null()) {
                            ffi::PyErr_Clear();
                            PlainField::Other
                        } else {
                            PlainField::Int(i)
                        }
                    }
                }
            } else {
                PlainField::Other
            }
        }))
    }
}

/// Run `f` on the fields of `obj` ([`PlainFields`]), read in place from `slots` as `f`
/// takes them (no call, no reference count through the API), a reference held to each
/// `str` until `f` returns. None (`f` not run) when `obj` is not exactly the class
/// `slots` were made for.
#[inline(always)]
pub(crate) fn with_plain_fields<R>(obj: &Bound<'_, PyAny>, slots: &PlainSlots, f: impl for<'a> FnOnce(PlainFields<'a>) -> R) -> Option<R> {
    if obj.get_type_ptr() as usize != slots.class {
        return None;
    }
    let mut held = HeldMany { lay: crate::ffi::layout::get(obj.py()), ptrs: [std::ptr::null_mut(); PLAIN_STRS], n: 0 };
    let fields = PlainFields { obj: obj.as_ptr(), class: slots.class, unset: slots.unset, slots: slots.slots.iter(), held: &mut held };
    Some(f(fields))
}

/// The UTF-8 text of a live exact `str`, None when it has none (a lone surrogate: the
/// error is cleared).
///
/// # Safety
/// `s` must be a live `str`; the GIL must be held. The text lives as long as `s`.
#[inline(always)]
unsafe fn plain_text<'a>(lay: Layout, s: *mut ffi::PyObject) -> Option<&'a str> {
    // SAFETY: the contract: a live str; its compact data or cached UTF-8 lives as long as it.
    let bytes = match unsafe { lay.str_utf8(s) } {
        Some(b) => b,
        None => {
            let mut size: ffi::Py_ssize_t = 0;
            // SAFETY: the contract: a live str, the GIL held.
            let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(s, &mut size) };
            if data.is_null() {
                // SAFETY: the GIL is held.
                unsafe { ffi::PyErr_Clear() };
                return None;
            }
            // SAFETY: the str's cached UTF-8 buffer (non-NULL), `size` bytes, alive as long as it.
            unsafe { std::slice::from_raw_parts(data as *const u8, size as usize) }
        }
    };
    // SAFETY: CPython's UTF-8 of a str is valid UTF-8 (surrogates are refused above).
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}
