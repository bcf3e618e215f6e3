"""``ag_ui.core.deprecated`` for the one-import swap: the 0.x shapes 1.0.0 keeps importable."""

from . import BinaryInputContent  # noqa: F401

__all__ = ["BinaryInputContent"]
