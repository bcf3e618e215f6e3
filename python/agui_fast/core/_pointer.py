"""JSON Pointer fields of the Structs (the patch operations' ``path`` and ``from``)."""

from __future__ import annotations

__all__ = ["JSON_POINTER_PATTERN", "PointerSyntax", "POINTER"]

# The reference schema's pattern for JSON Pointers (patch operation paths): exactly the
# pointers agui_core::patch::parse_pointer accepts (tests/test_construct.py checks it).
JSON_POINTER_PATTERN = "^(/([^/~]|~[01])*)*$"


class PointerSyntax:
    """``Annotated`` metadata of a ``str`` field holding an RFC 6901 JSON Pointer
    (``core._base.JsonPointer``). msgspec ignores it: the pointer is checked natively, by
    construction's plan (``("json_pointer",)``) and by the class's ``__post_init__``
    (``_native.check_pointers``) after decoding and conversion, instead of a regex per
    pointer. The JSON schema shows it as the reference's pattern."""

    pattern = JSON_POINTER_PATTERN

    def __repr__(self) -> str:
        return "PointerSyntax()"


POINTER = PointerSyntax()
