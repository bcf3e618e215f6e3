"""Type stubs for the Rust extension module ``agui_fast._native``."""

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
from typing import Any as _Any, Iterable as _Iterable

ENCODE_MAX_DEPTH: int

def dumps(obj: _Any, /, *, pydantic_fallback: bool = False) -> bytes:
    """Compact JSON text of ``obj`` (UTF-8 bytes), as pydantic writes it."""

def encode_sse(obj: _Any, /, *, pydantic_fallback: bool = False) -> str:
    """``"data: " + dumps(obj).decode() + "\n\n"`` (like ``ag_ui.encoder.EventEncoder().encode``)."""

def encode_sse_bytes(obj: _Any, /, *, pydantic_fallback: bool = False) -> bytes:
    """``encode_sse(obj)`` as UTF-8 bytes."""

def encode_sse_many(events: _Iterable[_Any], /, *, pydantic_fallback: bool = False) -> bytes:
    """Every event framed as by ``encode_sse``, concatenated into one bytes object."""

def clear_encode_cache() -> None:
    """Forget the cached per-class field plans (e.g. after redefining classes)."""
# --- end encode ---
# --- proto ---
# Protobuf codec (rust/agui-py/src/proto.rs, docs/protobuf.md). Events cross as JSON text
# (camelCase, the SSE payload). Errors are agui_fast.errors classes: EncodeError,
# ProtobufDecodeError, FrameTooLargeError, TruncatedStreamError, InvalidJsonError, with
# frame_index / offset (byte offset of the frame's prefix) / events (JSON texts decoded
# before the error). Frames from a later protocol version are skipped with a UserWarning.

PROTO_DEFAULT_MAX_FRAME_SIZE: int  # 10 MiB, applies to 4-byte prefix + message

def proto_encode_json(json: bytes, framed: bool = True) -> bytes:
    """One JSON event -> ``ag_ui.Event`` message (with the 4-byte length prefix if framed)."""

def proto_encode_many_json(items: _Iterable[bytes]) -> bytes:
    """JSON events -> one framed stream."""

def proto_encode_event(event: _Any, framed: bool = True) -> bytes:
    """Event object (Struct / pydantic / dict) -> message, via ``dumps`` in one call."""

def proto_encode_events(events: _Iterable[_Any]) -> bytes:
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

def proto_schema() -> str:
    """The compiled schema as JSON: {"ag_ui.Msg": [[field, number, label, type], ...]}."""

class ProtoFrameParser:
    """Incremental frame decoder: feed(chunk) -> JSON texts; close() raises if cut mid-frame."""

    def __init__(self, max_frame_size: int = ...) -> None: ...
    def feed(self, chunk: bytes) -> list[bytes]: ...
    def feed_array(self, chunk: bytes, msgpack: bool = False) -> bytes:
        """Like feed, as one array: JSON text (b"[]" when none) or MessagePack."""
    def close(self) -> list[bytes]: ...
    @property
    def pending(self) -> int: ...
    @property
    def frame_index(self) -> int: ...
# --- end proto ---
