"""Type stubs for the Rust extension module ``agui_fast._native``."""

import os
from typing import Any, Callable, Iterable, List, Optional, Tuple, Union

__version__: str

# --- encode ---
# JSON writer for Python objects (rust/agui-py/src/encode.rs). Output is byte for byte
# what ag_ui's pydantic models give with model_dump_json(by_alias=True) /
# EventEncoder().encode(). Accepts: str, int (any size), float (NaN/inf -> null), bool,
# None, dict (str / str-Enum keys), list, tuple, enum.Enum members (their value),
# subclasses of those builtins, objects whose class has __agui_fields__
# (tuple of (attr_name, wire_key, omit_if_none); extras from the instance __dict__),
# and pydantic models (fields from __pydantic_fields__, extras from __pydantic_extra__,
# computed fields, RootModel).
# Raises agui_fast.errors.EncodeError (a ValueError) for unpaired surrogates, non-str
# dict keys, unknown object types and nesting deeper than ENCODE_MAX_DEPTH.
# pydantic_fallback=True: unknown values (datetime, UUID, Decimal, bytes, set, dataclass,
# ...) and dicts with non-str keys are written by pydantic_core.to_json(x, by_alias=True,
# inf_nan_mode="null") instead of raising -- exactly what the reference writes.

ENCODE_MAX_DEPTH: int

def dumps(obj: Any, /, *, pydantic_fallback: bool = False) -> bytes:
    """Compact JSON text of ``obj`` (UTF-8 bytes), as pydantic writes it."""

def encode_sse(obj: Any, /, *, pydantic_fallback: bool = False) -> str:
    """``"data: " + dumps(obj).decode() + "\n\n"`` (like ``ag_ui.encoder.EventEncoder().encode``)."""

def encode_sse_event(event: Any, /) -> str:
    """``encode_sse(event)`` as a one-argument C function (``EventEncoder.encode``)."""

def encode_sse_bytes(obj: Any, /, *, pydantic_fallback: bool = False) -> bytes:
    """``encode_sse(obj)`` as UTF-8 bytes."""

def encode_sse_many(events: Iterable[Any], /, *, pydantic_fallback: bool = False) -> bytes:
    """Every event framed as by ``encode_sse``, concatenated into one bytes object."""

def clear_encode_cache() -> None:
    """Forget the cached per-class field plans (e.g. after redefining classes)."""
# --- end encode ---
# --- patch ---

def apply_patch(doc: Any, patch: Iterable[Any], *, in_place: bool = False) -> Any:
    """Apply an RFC 6902 patch (atomic). Copy mode shares untouched subtrees with ``doc``."""

class StateDocument:
    """A JSON document held in Rust; patches are applied without converting to Python."""

    def __init__(self, doc: Optional[Any] = None) -> None: ...
    def apply(self, patch: Union[Iterable[Any], str, bytes]) -> None: ...
    def apply_many(
        self, patches: Iterable[Union[Iterable[Any], str, bytes]], *, skip_errors: bool = False
    ) -> int: ...
    def to_python(self, path: str = "") -> Any: ...
    def replace(self, doc: Any) -> None: ...

# --- end patch ---

# --- sse ---
# WHATWG event-stream framing (rust/agui-py/src/sse.rs over agui_core::sse). Typing the
# payloads is done in agui_fast/sse.py; these only frame. Payloads are valid UTF-8
# (invalid sequences replaced by U+FFFD, like the reference's TextDecoder).

SSE_DEFAULT_MAX_BUFFER: int  # 10 MiB

_BytesLike = Union[bytes, bytearray, memoryview]

class SseBatch:
    """The frames completed by one feed()/close()/split_sse() call."""

    def __len__(self) -> int: ...
    @property
    def first_index(self) -> int:
        """Stream index of the batch's first frame."""
    @property
    def balanced(self) -> bool:
        """Every payload is structurally one JSON value: a successful decode of
        ``array()`` has exactly one element per frame."""
    def array(self) -> bytes:
        """``b"[p0,p1,...]"``: all payloads as one JSON array (one msgspec call)."""
    def payloads(self) -> List[bytes]: ...
    def payload(self, i: int, /) -> bytes: ...
    @property
    def spans(self) -> List[Tuple[int, int]]:
        """``(start, end)`` of each payload inside ``array()``; the byte before each start
        is ``[`` or ``,`` and the byte at each end is ``,`` or ``]``."""
    @property
    def offsets(self) -> List[int]:
        """Byte offset in the stream of each frame's first ``data`` line."""
    @property
    def float_hook(self) -> bool:
        """Decode this batch with ``float_hook=float``: it holds enough numbers with
        huge exponents (slow for msgspec's own parser) to outweigh the hook's cost."""
    @property
    def candidates(self) -> List[int]:
        """Batch-relative indices of frames whose bytes mention ``THINKING_``,
        ``"binary"`` or ``null`` (only filled when the parser was made with
        ``candidates=True``)."""
    @property
    def error(self) -> Optional[Tuple[str, str, int, int]]:
        """``None`` or ``(kind, message, frame_index, offset)``; kind is
        ``"buffer_limit"``. The frames before the error are in the batch."""

class SseParser:
    """Incremental event-stream parser: CR/LF/CRLF, BOM, comments, event/id/retry,
    multi-line data, final event without its blank line (dispatched by close())."""

    def __init__(
        self, max_buffer_size: int = ..., check: bool = True, candidates: bool = False
    ) -> None: ...
    def feed(self, chunk: _BytesLike, /) -> SseBatch:
        """Frames completed by ``chunk`` (GIL released for chunks >= 64 KiB). After a
        buffer-limit error every call returns a batch with the same error."""
    def feed_decode(
        self, chunk: _BytesLike, decode: Callable[[bytes], List[Any]], max_frames: int, /
    ) -> Union[List[Any], SseBatch]:
        """Feed ``chunk``; a plain batch (balanced, no error, no legacy candidates, no
        float hook wanted) of fewer than ``max_frames`` frames comes back decoded by
        ``decode(array)``, anything else as its ``SseBatch``."""
    def close(self) -> SseBatch: ...
    @property
    def last_event_id(self) -> str: ...
    @property
    def retry(self) -> Optional[int]: ...
    @property
    def frame_count(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def buffered(self) -> int: ...
    @property
    def max_buffer_size(self) -> int: ...

class ProtoFileFrames:
    """Reads and decodes a framed protobuf file on a Rust thread: one MessagePack array
    (``bytes``) of the events completed by each chunk read."""

    def __init__(
        self, path: Union[str, "os.PathLike[str]"], chunk_size: int, max_frame_size: int = ...
    ) -> None: ...
    def __iter__(self) -> "ProtoFileFrames": ...
    def __next__(self) -> bytes: ...

class SseFileFrames:
    """Reads and frames an SSE file on a Rust thread: one ``SseBatch`` per chunk read."""

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        chunk_size: int,
        max_buffer_size: int = ...,
        check: bool = True,
        candidates: bool = False,
    ) -> None: ...
    def __iter__(self) -> "SseFileFrames": ...
    def __next__(self) -> SseBatch: ...

def split_sse_parts(
    data: bytes,
    consume: Callable[[SseBatch], Any],
    part_size: int,
    max_part_size: int = ...,
    max_buffer_size: int = ...,
    check: bool = True,
    candidates: bool = False,
) -> None:
    """Frame ``data`` on a Rust thread in growing parts; ``consume(batch)`` each in order."""

def split_sse(
    data: _BytesLike, max_buffer_size: int = ..., check: bool = True, candidates: bool = False
) -> SseBatch:
    """Frame a whole recorded stream (feed + close) with the GIL released."""

def sse_event(payload: _BytesLike, /) -> bytes:
    """``data: <line>\\n`` for every line of ``payload`` (LF, CR or CRLF), then ``\\n``."""
# --- end sse ---
# --- proto ---
# Protobuf codec (rust/agui-py/src/proto.rs, docs/protobuf.md). Events cross as JSON text
# (camelCase, the SSE payload). Errors are agui_fast.errors classes: EncodeError,
# ProtobufDecodeError, FrameTooLargeError, TruncatedStreamError, InvalidJsonError, with
# frame_index / offset (byte offset of the frame's prefix) / events (JSON texts decoded
# before the error). Frames from a later protocol version are skipped with a UserWarning.

PROTO_DEFAULT_MAX_FRAME_SIZE: int  # 10 MiB, applies to 4-byte prefix + message

def proto_encode_json(json: bytes, framed: bool = True) -> bytes:
    """One JSON event -> ``ag_ui.Event`` message (with the 4-byte length prefix if framed)."""

def proto_encode_many_json(items: Iterable[bytes]) -> bytes:
    """JSON events -> one framed stream."""

def proto_encode_event(event: Any, framed: bool = True) -> bytes:
    """Event object (Struct / pydantic / dict) -> message, read straight into the encoder
    (objects that read cannot reproduce exactly go through ``dumps``)."""

def proto_encode_event_via_json(event: Any, framed: bool = True) -> bytes:
    """``proto_encode_event`` through the JSON text of ``dumps`` (the reference route)."""

def proto_encode_events(events: Iterable[Any]) -> bytes:
    """Event objects -> one framed stream."""

def proto_decode_message(msg: bytes, msgpack: bool = False) -> bytes:
    """One unframed message -> JSON text of the event (MessagePack with msgpack=True)."""

def proto_decode_frames(data: bytes, max_frame_size: int = ...) -> list[bytes]:
    """Whole framed stream -> JSON texts (GIL released)."""

def proto_decode_frames_array(data: bytes, max_frame_size: int = ...) -> bytes:
    """Whole framed stream -> one JSON array text ``[e1,e2,...]`` (GIL released)."""

def proto_decode_part(
    data: bytes,
    offset: int,
    frame_index: int,
    budget: int,
    max_frame_size: int = ...,
    msgpack: bool = False,
) -> tuple[bytes, int, int]:
    """Frames from ``offset`` to the first boundary at/after ``offset + budget`` -> (array as
    JSON text or MessagePack, next offset, next frame index); the part reaching the end
    checks for a cut frame. GIL released."""

def proto_decode_parts(
    data: bytes,
    consume: Callable[[bytes], object],
    part_size: int,
    max_part_size: int = ...,
    max_frame_size: int = ...,
) -> None:
    """Whole stream -> ``consume(array)`` per part (MessagePack arrays, in order; the first
    part has about ``part_size`` input bytes, each next one 1.5x more up to
    ``max_part_size``), decoded on a Rust thread without the GIL so the caller's work on
    one part overlaps the decoding of the next. Raises like ``proto_decode_part``;
    ``events`` holds the failing part's items."""

def proto_schema() -> str:
    """The compiled schema as JSON: {"ag_ui.Msg": [[field, number, label, type], ...]}."""

class ProtoFrameParser:
    """Incremental frame decoder: feed(chunk) -> JSON texts; close() raises if cut mid-frame."""

    def __init__(self, max_frame_size: int = ...) -> None: ...
    def feed(self, chunk: bytes) -> list[bytes]: ...
    def feed_array(self, chunk: bytes, msgpack: bool = False) -> bytes:
        """Like feed, as one array: JSON text (b"[]" when none) or MessagePack."""
    def feed_decode(
        self, chunk: bytes, decode: Callable[[bytes], List[Any]], max_bytes: int, /
    ) -> Union[List[Any], bytes]:
        """``feed_array(chunk, True)``, a small array decoded by ``decode`` in the same
        call: the list, ``[]``, or the array when it is large or ``decode`` raised."""
    def close(self) -> list[bytes]: ...
    @property
    def pending(self) -> int: ...
    @property
    def frame_index(self) -> int: ...
# --- end proto ---

# --- construct ---
# Validating construction of the agui_fast.core Structs (rust/agui-py/src/construct.rs).

def struct_meta(
    base: type, probe: type, plan_of: Callable[[type], Any], lenient: Callable[[type, dict], Any], /
) -> type:
    """The Structs' metaclass (created once; later calls return it): a subclass of
    ``base`` (msgspec's StructMeta) whose classes construct natively. Keywords that are
    declared fields with plainly valid values (checked against ``plan_of(cls)``) go to
    msgspec's constructor; anything else to ``lenient(cls, kwargs)``. ``probe`` is a plain
    msgspec Struct class (where msgspec's vectorcall is found)."""

def struct_meta_vectorcall() -> bool:
    """Whether the Struct classes are called through vectorcall on this interpreter
    (else through tp_call: a tuple and a dict per call)."""
# --- end construct ---

# --- stream ---
# Stream semantics of the reference client (rust/agui-py/src/stream.rs over
# agui_core::stream). Events in: JSON text (bytes/str) or any object the native writer
# (dumps) takes. Results out: JSON text, typed by agui_fast/stream.py. Errors: decode ->
# InvalidJsonError(frame_index), verify -> VerificationError, others -> StreamError.

_ReplayParts = Tuple[bytes, bytes, bytes, List[Tuple[int, str]], Optional[BaseException]]
"""(messages, state, pending_interrupts) as JSON texts, warnings, the error or None."""

class ChunkExpander:
    """Incremental transformChunks: push(event) -> JSON array of the expanded events."""

    def __init__(self) -> None: ...
    def push(self, event: Any, /) -> bytes: ...
    def take_warnings(self) -> List[Tuple[int, str]]: ...

class EventVerifier:
    """Incremental verifyEvents: push(event) raises VerificationError on a violation."""

    def __init__(self) -> None: ...
    def push(self, event: Any, /) -> None: ...

class Replayer:
    """Compatibility boundary, chunk expansion, optional verification and the reducer."""

    def __init__(
        self,
        messages: Any = None,
        state: Any = None,
        *,
        verify: bool = False,
        expand: bool = True,
        compat: bool = True,
    ) -> None: ...
    def push(self, event: Any, /) -> Tuple[bool, bool, Optional[int], bool]:
        """(messages changed, state changed, index of the message touched, interrupts changed)."""
    def push_many(self, events: Iterable[Any], /) -> None: ...
    def messages(self) -> bytes: ...
    def message(self, index: int, /) -> Optional[bytes]: ...
    def message_count(self) -> int: ...
    def state(self) -> bytes: ...
    def pending_interrupts(self) -> bytes: ...
    def take_warnings(self) -> List[Tuple[int, str]]: ...

def expand_chunks(events: Iterable[Any], /) -> Tuple[bytes, List[Tuple[int, str]], Optional[BaseException]]:
    """The expanded events before the error (JSON array), warnings, the error or None."""

def verify_events(events: Iterable[Any], /) -> None: ...
def compact_events(events: Iterable[Any], /) -> Tuple[bytes, List[str]]: ...
def replay_sse(
    data: bytes, messages: Any = None, state: Any = None, *, verify: bool = False
) -> _ReplayParts:
    """Replay an SSE log with the GIL released."""

def replay_sse_files(
    paths: Iterable[Union[str, "os.PathLike[str]"]], *, verify: bool = False, threads: int = 0
) -> List[_ReplayParts]:
    """Read and replay SSE log files on Rust threads (0: all cores), GIL released."""

def set_surrogate_writer(writer: Callable[[Any], bytes], /) -> None:
    """``writer(obj) -> bytes``: JSON text of the events dumps refuses (lone surrogates). Set once."""
# --- end stream ---
