"""Type stubs for the Rust extension module ``agui_fast._native``."""

import os
import types
from typing import Any, Callable, Dict, Iterable, List, Literal, Optional, Sequence, Tuple, TypeVar, Union

from agui_fast.errors import AguiError, StreamError

__version__: str
DEFAULT_MAX_DEPTH: int  # agui_core::limits::DEFAULT_MAX_DEPTH
DEFAULT_MAX_ERRORS: int  # agui_arrow::DEFAULT_MAX_ERRORS
DEFAULT_MAX_PATCH_BYTES: int  # agui_core::limits::DEFAULT_MAX_PATCH_BYTES

# Numeric arguments (rust/agui-py/src/args.rs): TypeError for a non-int (bool included),
# ValueError naming the argument for an int out of its range, never OverflowError; a size
# limit past MAX_SIZE means no limit.
MAX_SIZE: int  # largest size limit (bytes): 2**63 - 1
MAX_CHUNK_SIZE: int  # largest chunk_size (bytes read at a time): 1 GiB
MAX_THREADS: int  # most threads= a call takes
MAX_DEPTH_CAP: int  # largest max_depth (agui_core::limits::MAX_DEPTH_CAP)

def check_int(name: str, value: Any, lo: int, hi: int, /) -> int:
    """``value`` if it is an int in ``lo..=hi``; else TypeError / ValueError naming ``name``."""

def check_limit(name: str, value: Any, lo: int = 0, /) -> int:
    """A size limit: an int of at least ``lo``; past ``MAX_SIZE`` it is ``MAX_SIZE`` (no limit)."""

def json_exceeds_depth(data: Union[bytes, bytearray, memoryview, str], max_depth: int) -> bool:
    """Whether JSON text nests arrays/objects deeper than ``max_depth``."""
_R = TypeVar("_R")

def call_nested(f: Callable[[Any], _R], data: Union[bytes, bytearray, memoryview, str], /) -> _R:
    """``f(data)`` for JSON text ``data``, on a stack with room for as many levels as it nests."""

# Test-only helpers (sse_event, proto_schema), off the public surface.
_testing: types.ModuleType

# --- encode ---
# The object walk (rust/agui-py/src/walk.rs, plans in plan.rs) writing JSON text (encode.rs).
# Output is byte for byte what ag_ui's pydantic models give with
# model_dump_json(by_alias=True) / EventEncoder().encode(). Accepts: str, int (any size),
# float (NaN/inf -> null), bool, None, dict, list, tuple, enum.Enum members (their value),
# subclasses of those builtins, msgspec Structs (fields from msgspec's own metadata;
# __agui_fields__, a tuple of (attr_name, wire_key, omit_if_none), overrides order and
# omission; extras from the instance __dict__), and pydantic models (fields from
# __pydantic_fields__, extras from __pydantic_extra__, computed fields, RootModel).
# pydantic_fallback=True (default): pydantic's JSON mode for everything else (datetime, UUID,
# Decimal, bytes, set, dataclass, SecretStr, customised pydantic models, non-str dict keys):
# written by pydantic_core.to_json itself, byte for byte the reference's; False: strict,
# those raise. Raises agui_fast.errors.EncodeError (a ValueError) for unpaired surrogates,
# what pydantic refuses too, and nesting deeper than max_depth (default ENCODE_MAX_DEPTH,
# agui_core::limits::DEFAULT_MAX_DEPTH).

ENCODE_MAX_DEPTH: int

def dumps(obj: Any, /, *, pydantic_fallback: bool = True, max_depth: int = 512) -> bytes:
    """Compact JSON text of ``obj`` (UTF-8 bytes), as pydantic writes it."""

def encode_sse(obj: Any, /, *, pydantic_fallback: bool = True, max_depth: int = 512) -> str:
    """``"data: " + dumps(obj).decode() + "\n\n"`` (like ``ag_ui.encoder.EventEncoder().encode``)."""

def encode_sse_event(event: Any, /) -> str:
    """``encode_sse(event)`` as a one-argument C function (``EventEncoder.encode``)."""

def encode_sse_bytes(obj: Any, /, *, pydantic_fallback: bool = True, max_depth: int = 512) -> bytes:
    """``encode_sse(obj)`` as UTF-8 bytes."""

def encode_sse_many(events: Iterable[Any], /, *, pydantic_fallback: bool = True, max_depth: int = 512) -> bytes:
    """Every event framed as by ``encode_sse``, concatenated into one bytes object."""

def clear_encode_cache() -> None:
    """Forget the cached per-class field plans (e.g. after redefining classes)."""
# --- end encode ---
# --- dump ---
# model_dump over the same walker (rust/agui-py/src/dump.rs).

def dump_python(
    obj: Any, by_alias: Any, enums: Any, exclude_none: Any, fallback: Callable[[Any, bool, bool, bool], Any], /
) -> Any:
    """``obj`` as plain Python data by ``model_dump``'s Python-mode rules
    (``agui_fast.core._dump.to_builtins_loop``, plus ``exclude_none``): values kept as the
    same objects, Structs as dicts, dicts and lists copied, tuples as lists, Enum members
    kept when ``enums`` (else their value). What the walk leaves to the Python loop (a dict
    key that is not an exact ``str``, a foreign msgspec Struct, nesting past 512 levels) is
    ``fallback(obj, by_alias, enums, exclude_none)``."""

def dump_json(obj: Any, by_alias: Any, exclude_none: Any, /) -> bytes:
    """``dumps(obj)`` with ``model_dump``'s options: without ``by_alias`` the members of the
    package's Structs keyed by attribute name (``model_dump_json()``; ``EncodeError`` for a
    msgspec Struct that is not one of the package's), with ``exclude_none`` the members of
    msgspec Structs written as null left out (pydantic's filter of JSON-mode data)."""
# --- end dump ---
# --- patch ---

def apply_patch(
    doc: Any,
    patch: Iterable[Any],
    *,
    in_place: bool = False,
    max_depth: int = 512,
    max_patch_bytes: Optional[int] = None,
) -> Any:
    """Apply an RFC 6902 patch (atomic). Copy mode shares untouched subtrees with ``doc``."""

class StateDocument:
    """A JSON document of Python values it owns, patched in place; ``to_python`` shares it (copy-on-write)."""

    def __init__(self, doc: Optional[Any] = None, *, max_depth: int = 512, max_patch_bytes: Optional[int] = None) -> None: ...
    def apply(self, patch: Union[Iterable[Any], str, bytes]) -> None: ...
    def apply_many(
        self, patches: Iterable[Union[Iterable[Any], str, bytes]], *, skip_errors: bool = False
    ) -> int: ...
    def to_python(self, path: str = "") -> Any: ...
    def replace(self, doc: Any) -> None: ...

# --- end patch ---

# --- sse ---
# The native stream decoders (rust/agui-py/src/{sse,proto,stream}.rs). agui_fast.sse /
# agui_fast.proto subclass them with the public constructors; ``backend`` is
# ``(many, many_fh, one, one_fh, exact, keep_items)``: the msgspec decode callables, the
# exact-path function ``exact(item, legacy)`` and whether ``many`` only validates. Byte
# input is buffer-protocol only (TypeError otherwise). Errors: one per call, carrying
# ``events`` (every event of the call) and ``errors`` (all of them); see docs/sse.md.

SSE_DEFAULT_MAX_BUFFER: int  # 10 MiB

_BytesLike = Union[bytes, bytearray, memoryview]
_Backend = Tuple[Any, ...]  # (many, many_fh, one, one_fh, exact, keep_items)

class SseDecoder:
    """WHATWG event-stream framing (CR/LF/CRLF, BOM, comments, event/id/retry, multi-line
    data, a final event without its blank line), then decoding with ``backend``.
    ``legacy``: convert 0.x frames (agui_core::stream::legacy, one converter per
    stream); ``mode``: ``backend``'s raw mode, 0 typed, 1 dict, 2 bytes; ``lines``: JSON
    Lines (every non-blank line is a frame) instead of an event stream."""

    def __new__(
        cls,
        backend: _Backend,
        max_frame_size: int,
        max_depth: int,
        legacy: bool,
        mode: int,
        lines: bool = False,
        /,
    ) -> "SseDecoder": ...
    def feed(self, chunk: _BytesLike, /) -> List[Any]: ...
    def close(self) -> List[Any]: ...
    @property
    def last_event_id(self) -> str: ...
    @property
    def retry(self) -> Optional[int]: ...
    @property
    def frame_count(self) -> int: ...
    @property
    def position(self) -> int: ...

class SseCodec:
    """The one-shot ``decode_sse`` over the ``(typed, dict, bytes)`` backends;
    ``options`` is ``agui_fast._plumbing.options`` (old spellings, bad values); with ``lines``
    it decodes JSON Lines (``agui_fast.jsonl.decode_jsonl``)."""

    def __init__(
        self, backends: Tuple[_Backend, _Backend, _Backend], options: Callable[..., Any], lines: bool = False, /
    ) -> None: ...
    def decode_sse(
        self,
        data: _BytesLike,
        /,
        *,
        raw: Optional[Literal["dict", "bytes"]] = None,
        legacy: bool = True,
        max_frame_size: int = ...,
        max_depth: int = ...,
        max_buffer_size: Optional[int] = None,
    ) -> List[Any]:
        """A whole recorded stream (framed on a Rust thread from 2 MiB on)."""
# --- end sse ---
# --- proto ---
# Protobuf codec (rust/agui-py/src/proto.rs, docs/protobuf.md). Events cross as JSON text
# (camelCase, the SSE payload). Errors are agui_fast.errors classes: EncodeError,
# ProtobufDecodeError, FrameTooLargeError, TruncatedStreamError, InvalidJsonError, with
# frame_index / offset (byte offset of the frame's prefix).

PROTO_DEFAULT_MAX_FRAME_SIZE: int  # 10 MiB, applies to 4-byte prefix + message

def proto_encode_json(json: bytes, framed: bool = True) -> bytes:
    """One JSON event -> ``ag_ui.Event`` message (with the 4-byte length prefix if framed)."""

def proto_encode_many_json(items: Iterable[bytes]) -> bytes:
    """JSON events -> one framed stream."""

def proto_encode_event(event: Any, framed: bool = True, *, max_depth: int = 512) -> bytes:
    """Event object (Struct / pydantic / dict) -> message, walked straight into the encoder's
    tree (the values ``dumps`` accepts; unpaired surrogates -> U+FFFD, inf -> number_value
    inf, as @ag-ui/proto writes). Raises ``EncodeError`` only."""

def proto_encode_events(events: Iterable[Any], *, max_depth: int = 512) -> bytes:
    """Event objects -> one framed stream (as ``proto_encode_event``)."""

def proto_decode_message(msg: bytes, msgpack: bool = False) -> bytes:
    """One unframed message -> JSON text of the event (MessagePack with msgpack=True)."""

class ProtoDecoder:
    """Length-prefixed frames decoded by the Rust core (events as MessagePack with
    ``msgpack=True``, else JSON text), then decoded with ``backend``. A bad message is an
    error of its call and the stream goes on; a frame over the limit or a cut stream
    ends it. Frames from a later protocol version: one UserWarning per decoder."""

    def __new__(cls, backend: _Backend, msgpack: bool, max_frame_size: int, max_depth: int, /) -> "ProtoDecoder": ...
    def feed(self, chunk: _BytesLike, /) -> List[Any]: ...
    def close(self) -> List[Any]: ...
    @property
    def pending(self) -> int: ...
    @property
    def frame_index(self) -> int: ...
    @property
    def skipped_frames(self) -> int: ...

class ProtoCodec:
    """The one-shot ``decode_protobuf`` over the ``(typed, dict, bytes)`` backends."""

    def __init__(self, backends: Tuple[_Backend, _Backend, _Backend], options: Callable[..., Any], /) -> None: ...
    def decode_protobuf(
        self,
        data: _BytesLike,
        /,
        *,
        raw: Optional[Literal["dict", "bytes"]] = None,
        legacy: bool = True,
        max_frame_size: int = ...,
        max_depth: int = ...,
        max_buffer_size: Optional[int] = None,
    ) -> List[Any]:
        """A whole framed stream (decoded in parts on a Rust thread from 256 KiB on)."""
# --- end proto ---

# --- construct ---
# Validating construction of the agui_fast.core Structs (rust/agui-py/src/construct.rs).

def struct_meta(
    base: type,
    probe: type,
    plan_of: Callable[[type], Any],
    lenient: Callable[[type, dict], Any],
    extras: type,
    shared: type,
    /,
) -> type:
    """The Structs' metaclass (created once; later calls return it): a subclass of
    ``base`` (msgspec's StructMeta) whose classes construct natively. Keywords that are
    declared fields with plainly valid values (checked against ``plan_of(cls)``) go to
    msgspec's constructor; anything else to ``lenient(cls, kwargs)``. ``probe`` is a plain
    msgspec Struct class (where msgspec's vectorcall is found). A fast-path call that gave
    fields their default value, or the tag, records their names: an ``extras()`` instance (a
    dict subclass, ``core._given.Extras``) holding them in ``given`` becomes the new
    instance's ``__dict__``: one ``shared`` record (its subclass ``core._given.Shared``)
    per class and combination of names, which ``instance_dict`` replaces by a record of
    the instance's own before any code sees it."""

def struct_meta_vectorcall() -> bool:
    """Whether the Struct classes are called through vectorcall on this interpreter
    (else through tp_call: a tuple and a dict per call)."""

def check_pointers(obj: Any, /) -> None:
    """``__post_init__`` of the Structs with JSON Pointer fields (``core._base.JsonPointer``):
    each such field checked by the patch engine's RFC 6901 parser, natively; ``ValueError``
    naming the field (``- at `$.path```) for one that is no pointer."""

def instance_dict(obj: Any, /) -> Dict[str, Any]:
    """The Structs' ``__dict__``: the instance's own dict (made when it has none), a shared
    record first replaced by a record of its own."""

def set_instance_dict(obj: Any, value: Dict[str, Any], /) -> None:
    """``obj.__dict__ = value``."""

def record_given(obj: Any, input: Any, /) -> bool:
    """After msgspec converted plain data ``input`` into ``obj`` (one of the Structs): record,
    at every level, the tags the data gave and the members it gave at their default (what
    ``model_fields_set`` counts and the values cannot show). False: a record this walk does
    not make is needed (the exact path must convert)."""

def record_given_json(obj: Any, data: Union[bytes, str], /) -> bool:
    """``record_given`` for ``obj`` decoded by a typed msgspec decoder from the JSON text
    ``data``: the text is read beside the object, no Python values built for it. False:
    the text does not walk with the object, or a record this walk does not make is needed
    (the exact path must convert)."""
# --- end construct ---
# --- logs (rust/agui-py/src/arrow.rs over agui_core::log and the agui-arrow crate) ---
# Sources are paths (str) or bytes; every call reads them with the GIL released and
# raises the first problem as an agui_fast.errors class (OSError / FileNotFoundError
# for I/O) whose message names the source, frame index and byte offset. Tables are
# pyo3-arrow ``Table`` objects: they implement the Arrow PyCapsule interface
# (``__arrow_c_stream__``, ``__arrow_c_schema__``).

_LogSource = Union[str, bytes]


class LogProgress:
    """Input bytes and events read so far by the call it is passed to (polled from another
    thread); ``cancel()`` stops the call soon."""

    def __init__(self) -> None: ...
    @property
    def bytes(self) -> int: ...
    @property
    def events(self) -> int: ...
    def cancel(self) -> None: ...

class ArrowTable:
    """An Arrow table handed over by the Arrow PyCapsule interface (``pa.table(t)``,
    ``polars.DataFrame(t)``, a DuckDB query over ``t``; no copy). It can be read any number
    of times."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """An ``arrow_array_stream`` capsule (``requested_schema`` is not applied: the
        stream carries the table's own schema)."""
    def __arrow_c_schema__(self) -> object:
        """An ``arrow_schema`` capsule."""
    @property
    def num_rows(self) -> int: ...
    @property
    def num_columns(self) -> int: ...
    @property
    def column_names(self) -> List[str]: ...
    def __len__(self) -> int: ...

def logs_to_arrow(
    sources: Sequence[_LogSource],
    names: Sequence[Optional[str]],
    format: str = "auto",
    threads: Optional[int] = None,
    collect: bool = False,
    max_buffer_size: int = ...,
    max_frame_size: int = ...,
    max_depth: int = ...,
    max_errors: int = ...,
    progress: Optional[LogProgress] = None,
) -> Union[ArrowTable, Tuple[ArrowTable, ArrowTable]]:
    """The events table, or ``(events, errors)`` with ``collect``."""

def log_schema() -> ArrowTable:
    """An empty events table (its schema)."""

def convert_logs(
    sources: Sequence[_LogSource],
    names: Sequence[Optional[str]],
    output: str,
    to: str,
    format: str = "auto",
    collect: bool = False,
    progress: Optional[LogProgress] = None,
    max_errors: int = ...,
    gzip: bool = False,
    max_frame_size: int = 10485760,
) -> Tuple[int, int, List[str]]:
    """Write the logs' events into ``output`` (a path, ``-`` for stdout) as "sse",
    "protobuf", "jsonl" or "parquet": (events, input bytes, problems skipped)."""

def inspect_log(
    source: _LogSource,
    name: Optional[str],
    format: str = "auto",
    collect: bool = False,
    progress: Optional[LogProgress] = None,
    max_frame_size: int = 10485760,
) -> dict:
    """format, gzip, bytes, events, types, runs, threads, messages, tool_calls, usage,
    first_timestamp, last_timestamp, errors."""

class LogChunks:
    """A log's decompressed bytes in chunks; format and gzip decided on opening (raises
    ``DecodeError`` for data of neither format)."""

    def __init__(
        self, source: _LogSource, format: str = "auto", chunk_size: int = ..., progress: Optional[LogProgress] = None
    ) -> None: ...
    @property
    def format(self) -> Optional[str]: ...
    @property
    def gzip(self) -> bool: ...
    def __iter__(self) -> "LogChunks": ...
    def __next__(self) -> bytes: ...

# --- stream ---
# Stream semantics of the reference client (rust/agui-py/src/stream.rs over
# agui_core::stream). Events in: JSON text (bytes/str) or any object the native writer
# (dumps) takes. Results out: JSON text, typed by agui_fast/stream.py. Errors: decode ->
# InvalidJsonError(frame_index), a malformed field -> EventValidationError(frame_index,
# field), verify -> VerificationError, others -> StreamError.

_Warning = Tuple[Optional[int], str, str, Tuple[str, ...], Optional[str]]
"""(index, message, kind, ids, path): agui_fast.stream.StreamWarning's fields."""
_ReplayParts = Tuple[List[Any], Any, List[Any], List[_Warning], Optional[AguiError]]
"""(messages, state, pending_interrupts) as plain Python values, warnings, the error or None."""

class ChunkExpander:
    """Incremental transformChunks: push(event) -> JSON array of the expanded events."""

    def __init__(self, *, max_depth: int = 512) -> None: ...
    def push(self, event: Any, /) -> bytes: ...
    def take_warnings(self) -> List[_Warning]: ...

class EventVerifier:
    """Incremental verifyEvents: push(event) raises VerificationError on a violation."""

    def __init__(self, *, max_depth: int = 512) -> None: ...
    def push(self, event: Any, /) -> None: ...

class Replayer:
    """Compatibility boundary (and an era's shims), schema stage, chunk expansion, optional verification and the reducer."""

    def __init__(
        self,
        messages: Any = None,
        state: Any = None,
        *,
        verify: bool = False,
        expand: bool = True,
        compat: bool = True,
        schema: bool = True,
        max_protocol_version: Optional[str] = None,
        protocol_version: Optional[str] = None,
        record: bool = False,
        max_depth: int = 512,
        max_patch_bytes: Optional[int] = None,
        reduce: bool = True,
    ) -> None: ...
    def take_delivered(self) -> bytes:
        """The events handed to the reducer since the last call (record=True), as a JSON array."""
    def push(self, event: Any, /) -> Tuple[bool, bool, Optional[int], bool]:
        """(messages changed, state changed, index of the message touched, interrupts changed)."""
    def push_many(self, events: Iterable[Any], /) -> None: ...
    def messages(self) -> List[Any]: ...
    def message(self, index: int, /) -> Any: ...
    def message_count(self) -> int: ...
    def tool_call(self, id: str, /) -> Optional[Tuple[int, Any, Any]]: ...
    def state(self, *, shared: bool = False) -> Any:
        """The state (Python values): a copy, or with ``shared=True`` the document itself (never written into again)."""
    def pending_interrupts(self) -> List[Any]: ...
    def take_warnings(self) -> List[_Warning]: ...

class RunReader:
    """One HTTP response of a run read chunk by chunk: through the client pipeline (pipeline=True) or as frames."""

    def __init__(
        self,
        wire: str,
        messages: Any = None,
        state: Any = None,
        *,
        pipeline: bool = True,
        verify: bool = True,
        schema: bool = True,
        max_protocol_version: Optional[str] = None,
        protocol_version: Optional[str] = None,
        record: bool = False,
        max_frame_size: int = 10485760,
        max_depth: int = 512,
    ) -> None: ...
    def feed(self, chunk: bytes, /) -> Tuple[Optional[bytes], Optional[AguiError]]:
        """(events handed to the reducer as a JSON array with record=True, else None; the error that ended the stream or None)."""
    def finish(self) -> Tuple[Optional[bytes], Optional[AguiError]]:
        """As feed, at the end of the response (IncompleteRunError when the last run is not over)."""
    def take_frames(self) -> List[bytes]:
        """The frames read since the last call (pipeline=False): each event's JSON text."""
    def take_warnings(self) -> List[_Warning]: ...
    def messages(self) -> bytes: ...
    def state(self, *, shared: bool = False) -> Any: ...
    def pending_interrupts(self) -> bytes: ...
    def run_outcome(self) -> Tuple[Optional[bytes], Optional[bytes]]:
        """(the last successful RUN_FINISHED's result, the last RUN_ERROR event) as JSON text, or None."""

def prepare_run_input(
    input: Any, /, *, max_protocol_version: Optional[str] = None, protocol_version: Optional[str] = None, max_depth: int = 512
) -> Tuple[bytes, bytes, List[_Warning]]:
    """(the JSON text to post, the messages the run starts from as a JSON array, warnings about the input)."""

def expand_chunks(
    events: Iterable[Any], /, *, max_depth: int = 512
) -> Tuple[bytes, List[_Warning], Optional[StreamError]]:
    """The expanded events before the error (JSON array), warnings, the error or None."""

def verify_events(events: Iterable[Any], /, *, max_depth: int = 512) -> None: ...
def compact_events(
    events: Iterable[Any], /, *, max_depth: int = 512, max_patch_bytes: Optional[int] = None
) -> Tuple[bytes, List[str]]: ...
def replay_log(
    data: bytes,
    messages: Any = None,
    state: Any = None,
    *,
    format: str = "auto",
    verify: bool = False,
    schema: bool = True,
    max_protocol_version: Optional[str] = None,
    protocol_version: Optional[str] = None,
    max_depth: int = 512,
    max_patch_bytes: Optional[int] = None,
    typed: bool = True,
) -> _ReplayParts:
    """Replay a log (SSE, protobuf or JSON Lines, gzip or not) with the GIL released.
    ``typed``: the messages as Structs when they can all be built so, else plain values."""

def replay_log_files(
    paths: Iterable[Union[str, "os.PathLike[str]"]],
    *,
    format: str = "auto",
    verify: bool = False,
    schema: bool = True,
    max_protocol_version: Optional[str] = None,
    protocol_version: Optional[str] = None,
    threads: int = 0,
    max_depth: int = 512,
    max_patch_bytes: Optional[int] = None,
    typed: bool = True,
) -> List[_ReplayParts]:
    """Read and replay log files on Rust threads (0: all cores; a log a thread), constant memory each, GIL released."""

def set_surrogate_writer(writer: Callable[[Any], bytes], /) -> None:
    """``writer(obj) -> bytes``: JSON text of the events dumps refuses (lone surrogates). Set once."""
def set_state_delta_types(event_class: Any, operation_classes: List[Any], /) -> None:
    """``StateDeltaEvent`` and the operation classes: such deltas reach the state without JSON. Set once."""
def set_message_types(classes: List[Any], /) -> None:
    """The members of ``Message``: a whole-log replay builds them itself when it can. Set once."""
# --- end stream ---
