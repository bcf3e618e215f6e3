"""Conversion between ``agui_fast.core`` Structs and ``ag_ui.core`` pydantic models.

Both directions keep extras (unknown members) and every field, so a value survives a
round trip unchanged. ``ag-ui-protocol`` is only needed when these functions are called.
"""

from __future__ import annotations

from typing import Any

import msgspec

from . import core
from .decoder import convert_value
from .encoder import to_builtins

__all__ = ["to_ag_ui", "from_ag_ui"]

_EVENT_ADAPTER = None


def to_ag_ui(obj: Any) -> Any:
    """The ``ag_ui.core`` model equal to ``obj`` (a Struct, or a list of Structs)."""
    if isinstance(obj, list):
        return [to_ag_ui(x) for x in obj]
    if not isinstance(obj, msgspec.Struct):
        raise TypeError(f"to_ag_ui expects an agui_fast.core Struct, got {type(obj).__name__}")
    import ag_ui.core as ref

    data = to_builtins(obj, by_alias=True)
    if isinstance(obj, core.BaseEvent):
        global _EVENT_ADAPTER
        if _EVENT_ADAPTER is None:
            from pydantic import TypeAdapter

            _EVENT_ADAPTER = TypeAdapter(ref.Event)
        return _EVENT_ADAPTER.validate_python(data)
    from ag_ui._generated import models as ref_models  # patch operations live only here

    name = type(obj).__name__
    ref_cls = getattr(ref, name, None) or getattr(ref_models, name)
    return ref_cls.model_validate(data)


def from_ag_ui(model: Any) -> Any:
    """The ``agui_fast.core`` Struct equal to an ``ag_ui.core`` model (or a list of them)."""
    if isinstance(model, list):
        return [from_ag_ui(x) for x in model]
    cls = getattr(core, type(model).__name__, None)
    if cls is None or not hasattr(model, "model_dump"):
        raise TypeError(f"from_ag_ui expects an ag_ui.core model, got {type(model).__name__}")
    # model_dump (not JSON) keeps every Python value as is, lone surrogates included.
    return convert_value(model.model_dump(by_alias=True), cls)
