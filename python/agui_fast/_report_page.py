"""The HTML page of :mod:`agui_fast.report` (and of a replay's notebook view): one
self-contained file, its data embedded as JSON and drawn by a small inline script.

Safety: the data is JSON inside ``<script type="application/json">`` with ``<``, ``>``,
``&``, U+2028 and U+2029 escaped (no string can close the element or open a comment), and
the script inserts every string as text (``textContent``), never as markup. The page's
Content-Security-Policy allows only its own style and script (by hash) and no network.
"""

from __future__ import annotations

import base64
import hashlib
import html
from importlib import resources
from typing import Any, Dict, List, Optional

import msgspec

from . import _native
from .errors import AguiError

__all__ = ["Clip", "page", "frame", "replay_page"]

_MORE = "\u2026"  # where the page left something out
_encode = msgspec.json.Encoder().encode

_ASSETS = resources.files(__package__) / "report_assets"
_CSS = (_ASSETS / "page.css").read_text(encoding="utf-8")
_JS = (_ASSETS / "page.js").read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


_CSP = f"default-src 'none'; style-src '{_hash(_CSS)}'; script-src '{_hash(_JS)}'; img-src data:"

# JSON text with these escaped is still the same JSON (they only occur inside strings) and
# cannot end the <script> element (`</script`), open a comment (`<!--`) or end a line in
# older JavaScript parsers (U+2028, U+2029).
_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def _fix_surrogates(v: Any) -> Any:
    """``v`` with lone surrogates (kept by the JSON readers, refused by UTF-8) shown as
    U+FFFD: the page is UTF-8."""
    if type(v) is str:
        return v.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(v, dict):
        return {_fix_surrogates(k): _fix_surrogates(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_fix_surrogates(x) for x in v]
    return v


def embed(data: Any) -> str:
    """``data`` as JSON text safe inside ``<script type="application/json">``."""
    try:
        text = _encode(data)
    except UnicodeEncodeError:
        text = _encode(_fix_surrogates(data))
    for raw, escaped in _ESCAPES:
        text = text.replace(raw, escaped)
    return text.decode("utf-8")


def page(data: Dict[str, Any], title: str) -> str:
    """The self-contained page showing ``data``."""
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_CSP}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(title)} \u2014 agui-fast report</title>\n"
        f"<style>{_CSS}</style>\n</head><body>\n"
        "<div id=\"app\"><noscript>This page needs JavaScript to show the run.</noscript></div>\n"
        f"<script type=\"application/json\" id=\"agui-data\">{embed(data)}</script>\n"
        f"<script>{_JS}</script>\n</body></html>\n"
    )


def frame(page_html: str, height: int = 640) -> str:
    """A page for a notebook cell: in a sandboxed ``<iframe srcdoc>`` (scripts run, shut
    off from the notebook: no access to its page, cookies or kernel)."""
    return (
        f"<iframe sandbox=\"allow-scripts\" srcdoc=\"{html.escape(page_html, quote=True)}\" "
        f"style=\"width:100%;height:{height}px;border:1px solid #ccc;border-radius:4px\"></iframe>"
    )


class Clip:
    """Shortened copies of values for display: strings cut at ``max_string`` characters,
    a value cut after about ``max_value`` characters of JSON, nesting cut at ``depth``.
    ``used`` counts the characters handed out (the page's size)."""

    __slots__ = ("max_string", "max_value", "depth", "left", "used")

    def __init__(self, max_string: int, max_value: int, depth: int = 64) -> None:
        self.max_string = max_string
        self.max_value = max_value
        self.depth = depth
        self.left = 0
        self.used = 0

    def text(self, s: Any, limit: Optional[int] = None) -> Any:
        """A string cut at ``limit`` (default ``max_string``) characters; other values as they are."""
        if type(s) is not str:
            return s
        limit = self.max_string if limit is None else limit
        if len(s) > limit:
            self.used += limit + 40
            return f"{s[:limit]}{_MORE} [{len(s) - limit:,} more characters]"
        self.used += len(s) + 2
        return s

    def value(self, v: Any) -> Any:
        """A JSON value shortened to the limits."""
        if v is None or type(v) in (bool, int, float):
            self.used += 8
            return v
        if type(v) is str:
            return self.text(v)
        try:
            size = len(_encode(v))
        except (TypeError, UnicodeEncodeError, OverflowError, ValueError):
            size = None
        if size is not None and size <= min(self.max_string, self.max_value):
            self.used += size
            return v
        self.left = self.max_value
        before = self.left
        out = self._walk(v, 0)
        self.used += before - self.left
        return out

    def _walk(self, v: Any, depth: int) -> Any:
        t = type(v)
        if t is str:
            self.left -= min(len(v), self.max_string) + 2
            return self.text(v)
        if t is dict or t is list:
            if depth >= self.depth:
                self.left -= 20
                return f"{_MORE} [nested deeper]"
            n = len(v)
            if t is dict:
                d: Dict[Any, Any] = {}
                for k, (key, x) in enumerate(v.items()):
                    if self.left <= 0:
                        d[_MORE] = f"{n - k:,} more members"
                        break
                    key = self.text(key)
                    self.left -= len(key) + 4 if type(key) is str else 8
                    d[key] = self._walk(x, depth + 1)
                return d
            out: List[Any] = []
            for k, x in enumerate(v):
                if self.left <= 0:
                    out.append(f"{_MORE} {n - k:,} more items")
                    break
                out.append(self._walk(x, depth + 1))
            return out
        self.left -= 8
        return v


def _json_value(obj: Any) -> Any:
    """Typed messages (Structs) or plain values as plain JSON values."""
    try:
        return msgspec.json.decode(_native.dumps(obj))
    except (AguiError, msgspec.DecodeError):  # a value the writer refuses is shown as its repr
        return repr(obj)


def warning_parts(w: Any) -> tuple:
    """``(index, message, details)`` of a warning: an ``(index, message)`` pair or an
    object with ``index`` and ``message`` (and any of ``kind``, ``rule``, ``ids``)."""
    if isinstance(w, tuple) and len(w) == 2:
        return w[0], str(w[1]), {}
    details = {k: getattr(w, k) for k in ("kind", "rule", "ids") if getattr(w, k, None) is not None}
    return getattr(w, "index", None), str(getattr(w, "message", w)), details


def replay_page(messages: Any, state: Any, interrupts: Any, warnings: List[Any]) -> str:
    """The page of a replay's outcome: final messages, state, pending interrupts, warnings."""
    clip = Clip(2_000, 200_000)
    data = {
        "v": 1,
        "kind": "replay",
        "title": "replay",
        "final": {
            "messages": clip.value(_json_value(messages)),
            "state": clip.value(_json_value(state)),
            "interrupts": clip.value(_json_value(interrupts)),
        },
        "findings": [{"i": i, "level": "warning", "msg": clip.text(msg)} for i, msg, _ in map(warning_parts, warnings[:1000])],
    }
    return page(data, "replay")
