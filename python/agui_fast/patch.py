"""RFC 6902 JSON Patch (and RFC 6901 JSON Pointer rules), implemented in Rust.

``apply_patch(doc, patch, *, in_place=False)`` applies a patch to a JSON-like Python
document (dicts, lists, str, int, float, bool, None):

- copy mode (default) never mutates ``doc``; the result shares every untouched subtree
  with ``doc`` and only the containers along each changed path are (shallowly) copied,
  so the cost follows path depth and patch size, not document size;
- ``in_place=True`` mutates ``doc`` and returns it (a patch that replaces the whole
  document, path ``""``, returns the new value instead);
- atomic in both modes: if any operation fails the document is left exactly as it was
  and :class:`JsonPatchError` (a ``ValueError``) says which operation failed
  (``index``, ``op``, ``path``). A failing ``test`` raises :class:`JsonPatchTestFailed`,
  a malformed or unresolvable pointer :class:`JsonPointerError`.

``patch`` is a list of operation dicts (``{"op", "path", "value", "from"}``; extra
members are ignored) or of objects with ``op``/``path``/``value``/``from_`` attributes
(the ``agui_fast.core`` operation Structs), e.g. a STATE_DELTA event's ``delta``.

``StateDocument`` holds a document for replaying long logs of patches (given as
operation lists or as JSON text, parsed with the GIL released): Python values it owns,
patched in place, every value checked by the JSON value rules on entry; ``to_python()``
returns the document itself without copying, and later patches copy what they change
(copy-on-write), so what it returned is never written again; see ``docs/patch.md``.

Both apply the one engine of the Rust core (``agui_core::patch``) and bound nesting by
``max_depth=`` (default 512, ``agui_core::limits::DEFAULT_MAX_DEPTH``): values deeper
than that raise :class:`JsonPatchError`. What one patch builds (the values it adds and
copies, about their bytes in memory) is bounded by ``max_patch_bytes=`` (default
``DEFAULT_MAX_PATCH_BYTES``, 128 MiB): past it the patch raises
:class:`JsonPatchLimitError` (also a ``MemoryError``) and the document is unchanged.
"""

from __future__ import annotations

from ._native import DEFAULT_MAX_PATCH_BYTES, StateDocument, apply_patch
from .errors import JsonPatchError, JsonPatchLimitError, JsonPatchTestFailed, JsonPointerError

__all__ = [
    "apply_patch",
    "StateDocument",
    "JsonPatchError",
    "JsonPatchTestFailed",
    "JsonPointerError",
    "JsonPatchLimitError",
    "DEFAULT_MAX_PATCH_BYTES",
]
