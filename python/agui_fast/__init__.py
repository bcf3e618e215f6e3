"""agui-fast: a fast toolkit for the AG-UI protocol (1.0).

- ``agui_fast.core``: every ``ag_ui.core`` type as a msgspec Struct (drop-in);
- ``agui_fast.encoder``: ``EventEncoder`` (drop-in for ``ag_ui.encoder``), SSE and protobuf;
- ``agui_fast.decoder``: decoding single events, SSE and protobuf streams;
- ``agui_fast.patch``: RFC 6902 JSON Patch in Rust;
- ``agui_fast.asgi``: ``EventStreamResponse``, a streaming ASGI/Starlette response (extra ``server``);
- ``agui_fast.client``: ``HttpAgent``, an httpx client for AG-UI agents (extra ``client``).
"""

from . import _alias
from ._native import __version__

_alias.install()

__all__ = ["__version__"]
