"""The reference's module path ``ag_ui.encoder.encoder``, for code that imports from it:
the same names, bound to :mod:`agui_fast.encoder`'s objects."""

from ..core import BaseEvent
from . import AGUI_MEDIA_TYPE, EventEncoder

__all__ = ["AGUI_MEDIA_TYPE", "BaseEvent", "EventEncoder"]
