"""``ag_ui.core.version`` for the one-import swap: the protocol version these Structs speak (1.0.0's module)."""

from . import PROTOCOL_VERSION  # noqa: F401

__all__ = ["PROTOCOL_VERSION"]
