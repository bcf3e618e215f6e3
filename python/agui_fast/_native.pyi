"""Type stubs for the Rust extension module ``agui_fast._native``."""

__version__: str

# --- encode ---
# JSON writer for Python objects (rust/agui-py/src/encode.rs). Output is byte for byte
# what ag_ui's pydantic models give with model_dump_json(by_alias=True) /
# EventEncoder().encode(). Accepts: str, int (any size), float (NaN/inf -> null), bool,
# None, dict (str / str-Enum keys), list, tuple, enum.Enum members (their value),
# subclasses of those builtins, objects whose class has __agui_fields__
# (tuple of (attr_name, wire_key, omit_if_none); extras from the instance __dict__),
# and pydantic models (fields from __pydantic_fields__, extras from __pydantic_extra__).
# Raises agui_fast.errors.EncodeError (a ValueError) for unpaired surrogates, non-str
# dict keys, unknown object types and nesting deeper than ENCODE_MAX_DEPTH.
from typing import Any as _Any, Iterable as _Iterable

ENCODE_MAX_DEPTH: int

def dumps(obj: _Any, /) -> bytes:
    """Compact JSON text of ``obj`` (UTF-8 bytes), as pydantic writes it."""

def encode_sse(obj: _Any, /) -> str:
    """``"data: " + dumps(obj).decode() + "\\n\\n"`` (like ``ag_ui.encoder.EventEncoder().encode``)."""

def encode_sse_bytes(obj: _Any, /) -> bytes:
    """``encode_sse(obj)`` as UTF-8 bytes."""

def encode_sse_many(events: _Iterable[_Any], /) -> bytes:
    """Every event framed as by ``encode_sse``, concatenated into one bytes object."""

def clear_encode_cache() -> None:
    """Forget the cached per-class field plans."""
# --- end encode ---
