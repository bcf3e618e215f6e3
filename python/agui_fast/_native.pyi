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
# --- patch ---
from typing import Any, Iterable, Optional, Union

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
