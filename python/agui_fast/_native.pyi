"""Type stubs for the Rust extension module ``agui_fast._native``."""

__version__: str

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
