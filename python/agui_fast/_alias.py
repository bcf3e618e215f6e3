"""Module aliases that resolve their submodules to ours.

A program that swaps the reference's modules for ours under their old names
(``sys.modules["ag_ui.core"] = agui_fast.core``, or ``sys.modules["ag_ui"] = agui_fast``) so
that code it does not own keeps working must see the same module objects under every name
below the alias: ``from ag_ui.core.types import RunAgentInput`` has to give
``agui_fast.core.types.RunAgentInput``, not a second copy of ``types.py`` loaded under the
alias's name (whose relative imports point into the real ``ag_ui`` package and fail, and whose
classes would be new ones). This finder, first on ``sys.meta_path``, answers an import whose
parent module is one of ours registered under another name with our own submodule; it looks
up one dict entry for any other import and declines.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

_PACKAGE = __name__.rpartition(".")[0]


class _Existing(importlib.abc.Loader):
    """A loader that gives an already imported module (its own ``__spec__`` kept)."""

    def __init__(self, module: ModuleType) -> None:
        self.module, self.spec = module, module.__spec__

    def create_module(self, spec: Any) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just set the alias's spec on the module: give it back its own.
        module.__spec__ = self.spec


class AliasFinder:
    """Resolve ``<alias>.<name>`` to ``<our module>.<name>`` when ``<alias>`` is one of our
    modules under another name."""

    @staticmethod
    def find_spec(fullname: str, path: Optional[Sequence[str]] = None, target: Any = None) -> Optional[Any]:
        parent, _, name = fullname.rpartition(".")
        module = sys.modules.get(parent) if parent else None
        if module is None:
            return None
        real = getattr(module, "__name__", None)
        if not isinstance(real, str) or real == parent or (real != _PACKAGE and not real.startswith(_PACKAGE + ".")):
            return None
        ours = f"{real}.{name}"
        try:
            sub = importlib.import_module(ours)
        except ModuleNotFoundError as e:
            if e.name == ours:
                return None  # no such submodule of ours: the import fails as it would
            raise
        return importlib.machinery.ModuleSpec(fullname, _Existing(sub), is_package=hasattr(sub, "__path__"))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
