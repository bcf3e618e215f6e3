"""Our stream stages against the official client's outcome on one case (what
semantics_run.js recorded): the list of divergences, empty when we agree.

Each stage is compared on the reference's own input for it, so a divergence points at one
stage: ``expand_chunks`` / ``ChunkExpander`` on the events, ``verify_events`` on the events
as given, the reducer alone (``EventApplier`` with ``expand=False, compat=False,
schema=False``) on the
reference's expanded events, ``compact_events`` on the events, the compatibility boundary
(the decoders' 0.x conversion, ``decode_sse(raw="dict")``) on the events, and the whole pipeline
(``replay(verify=True)``) on the events.
"""

from __future__ import annotations

import gzip
import json
import re
from typing import Any, Dict, List

from agui_fast import _native, stream
from agui_fast.decoder import decode_sse
from agui_fast.errors import AguiError, StreamError, VerificationError

# What the reference's schema stage (enforceEvents, zod) throws. Ours throws
# EventValidationError where it does, except for an unknown member of a closed string set
# (zod's "Invalid option"), which ours strips as the specification says (docs/stream.md,
# "Deliberate differences"): such cases are not compared through the whole pipeline.
SCHEMA_ERROR = "ZodError"
ENUM_MEMBER = "Invalid option"


def _text(events: List[Any]) -> List[bytes]:
    return [json.dumps(e).encode() for e in events]


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _renamed(value: Any) -> Any:
    """``value`` with the ids the compatibility boundary generates (random UUIDs, ours and
    the reference's) numbered by first appearance, so two runs compare equal up to a
    consistent renaming."""
    names: Dict[str, str] = {}

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return UUID.sub(lambda m: names.setdefault(m.group(), f"<generated-{len(names) + 1}>"), v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(value)


def _cyclic(value: Any) -> bool:
    """The reference built a value JSON cannot hold (semantics_run.js marks it): a state
    fast-json-patch put inside itself (docs/stream.md, "Deliberate differences")."""
    return "__unserializable__" in json.dumps(value)


def _state(case: Dict[str, Any]) -> bytes:
    """The initial state as JSON text (a ``str`` would be taken as JSON text; None is no
    state, ``{}``, as the reference's ``initialState ?? {}``)."""
    return json.dumps(case["state"] if case["state"] is not None else {}).encode()


def _warn_key(warnings) -> List[Any]:
    """Warnings by event index and their words up to the first colon (after it the
    reference quotes values or fast-json-patch's wording)."""
    return [(i, str(m).split(":")[0].split("'")[0].strip()) for i, m in warnings]


def chunks(case: Dict[str, Any], ref: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    want = ref["output"]
    err = ref["error"]
    try:
        got = stream.expand_chunks(_text(case["events"]), raw=True)
    except StreamError as exc:
        if err is None:
            return [f"chunks: we raise at {exc.index} ({exc}), the reference passes"]
        if exc.index != err["index"]:
            out.append(f"chunks: we raise at {exc.index} ({exc}), the reference at {err['index']} ({err['message']})")
        got = exc.events
    else:
        if err is not None:
            return [f"chunks: the reference raises at {err['index']} ({err['message']}), we pass"]
    if got != want:
        out.append(f"chunks: output differs\n  ours {got}\n  ref  {want}")
    x = stream.ChunkExpander(raw=True)
    inc: List[Any] = []
    try:
        for e in _text(case["events"]):
            inc.extend(x.push(e))
    except StreamError:
        pass
    if inc != want:
        out.append("chunks: ChunkExpander's output differs from the reference's")
    if _warn_key(x.warnings) != _warn_key(ref["warnings"]):
        out.append(f"chunks: warnings differ\n  ours {x.warnings}\n  ref  {ref['warnings']}")
    return out


def verify(case: Dict[str, Any], ref: Dict[str, Any]) -> List[str]:
    err = ref["error"]
    try:
        stream.verify_events(_text(case["events"]))
    except VerificationError as exc:
        if err is None:
            return [f"verify: we raise at {exc.index} ({exc}), the reference passes"]
        if exc.index != ref["passed"] or err["message"] not in str(exc):
            return [f"verify: we raise at {exc.index} ({exc}), the reference at {ref['passed']} ({err['message']})"]
        return []
    if err is not None:
        return [f"verify: the reference raises at {ref['passed']} ({err['message']}), we pass"]
    return []


def _undefined_state(state: Any, patch: Any) -> bool:
    """A ``move`` / ``copy`` to the root from a location that does not exist: fast-json-patch
    checks nothing there and makes the document ``undefined``, which JSON cannot hold
    (docs/stream.md, "Deliberate differences")."""
    if not isinstance(patch, list):
        return False
    for op in patch:
        if isinstance(op, dict) and op.get("op") in ("move", "copy") and op.get("path") == "":
            src = op.get("from")
            if isinstance(src, str) and src and not _resolves(state, src):
                return True
    return False


def _primitive_root(patch: Any) -> bool:
    """The patch may make the reference's document a primitive before its next operation
    (a root ``add`` / ``replace`` of a non-container, a root ``remove``: null, a root
    ``copy`` / ``move``) or cyclic (``copy`` / ``move`` of the root into itself)."""
    if not isinstance(patch, list):
        return False
    for op in patch:
        if isinstance(op, dict) and op.get("op") in ("copy", "move") and op.get("from") == "" and op.get("path") != "":
            return True  # the document inside itself: cyclic (see _cyclic)
        if isinstance(op, dict) and op.get("path") == "":
            if op.get("op") in ("remove", "copy", "move"):
                return True
            if op.get("op") in ("add", "replace") and not isinstance(op.get("value"), (dict, list)):
                return True
    return False


def _state_apart(case: Dict[str, Any]) -> bool:
    """Coarsely, for the stages that are compared only at their end (compaction, the whole
    pipeline): a state may have gone apart for a deliberate difference (a primitive
    state, a move / copy to or from the root)."""
    states = [case["state"] if case["state"] is not None else {}]
    patches = []
    for e in case["events"]:
        if isinstance(e, dict) and e.get("type") == "STATE_SNAPSHOT":
            states.append(e.get("snapshot"))
        elif isinstance(e, dict) and e.get("type") == "STATE_DELTA":
            patches.append(e.get("delta"))
    to_root = any(isinstance(op, dict) and op.get("op") in ("move", "copy") and op.get("path") == "" and op.get("from")
                  for p in patches if isinstance(p, list) for op in p)
    return to_root or any(_primitive_root(p) for p in patches) or not all(isinstance(x, (dict, list)) for x in states)


def _resolves(doc: Any, pointer: str) -> bool:
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list) and token.isdigit() and (token == "0" or not token.startswith("0")) and int(token) < len(doc):
            doc = doc[int(token)]
        else:
            return False
    return True


def _aliased(events: List[Any], messages: List[Any]) -> bool:
    """A ``MESSAGES_SNAPSHOT`` may have made two local messages one object in the
    reference (docs/stream.md, "Deliberate differences"): their ids repeat."""
    ids = [m.get("id") for m in messages if isinstance(m, dict)]
    return len(ids) != len(set(ids)) and any(e.get("type") == "MESSAGES_SNAPSHOT" for e in events)


def apply(case: Dict[str, Any], chunks_ref: Dict[str, Any], ref: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    if _cyclic(ref["state"]):
        return []
    events = chunks_ref["output"]
    # the initial state as JSON text: a ``str`` state would be read as JSON text
    ap = stream.EventApplier(case["messages"], _state(case), expand=False, compat=False, schema=False, raw=True)
    flags = []
    error = None
    # A patch on a primitive state: fast-json-patch's outcome is the same state, but it may
    # call it a change and not warn (docs/stream.md, "Deliberate differences").
    masked = set()
    undefined_from = None  # the reference's state became undefined here (see _undefined_state)
    apart = False  # the states may differ since a masked patch, until a snapshot
    for i, e in enumerate(_text(events)):
        kind = events[i].get("type")
        if kind == "STATE_SNAPSHOT":
            apart = False
        if kind == "STATE_DELTA":
            if undefined_from is None and _undefined_state(ap.state, events[i].get("delta")):
                undefined_from = i
            if (undefined_from is not None or apart or not isinstance(ap.state, (dict, list))
                    or _primitive_root(events[i].get("delta"))):
                masked.add(i)
                apart = True
        try:
            ch = ap.apply(e)
        except StreamError as exc:
            error = (i, str(exc))
            flags.append("-")
            break
        flags.append("b" if ch.messages and ch.state else "m" if ch.messages else "s" if ch.state else "-")
    want_err = ref["error"]
    if (error is None) != (want_err is None) or (error and error[0] != want_err["index"]):
        out.append(f"apply: error ours {error}, ref {want_err}")
    ours_flags = "".join("?" if i in masked else f for i, f in enumerate(flags))
    ref_flags = "".join("?" if i in masked else f for i, f in enumerate(ref["flags"]))
    if _aliased(events, ref["messages"]):
        ours_flags, ref_flags = ours_flags.replace("b", "s").replace("m", "-"), ref_flags.replace("b", "s").replace("m", "-")
    elif ap.messages != ref["messages"]:
        out.append(f"apply: messages differ\n  ours {ap.messages}\n  ref  {ref['messages']}")
    if ours_flags != ref_flags:
        out.append(f"apply: mutation flags ours {ours_flags} ref {ref_flags}")
    # after a patch on a primitive state the reference's state may differ (a no-op that
    # succeeded lets the rest of its patch apply) until a snapshot sets it again
    primitive = masked and not any(e.get("type") == "STATE_SNAPSHOT" for e in events[max(masked):])
    if undefined_from is None and not primitive and ap.state != ref["state"]:
        out.append(f"apply: state differs\n  ours {ap.state}\n  ref  {ref['state']}")
    if ap.pending_interrupts != ref["pendingInterrupts"]:
        out.append(f"apply: pending interrupts ours {ap.pending_interrupts} ref {ref['pendingInterrupts']}")
    ours_w = [w for w in _warn_key(ap.warnings) if w[0] not in masked]
    ref_w = [w for w in _warn_key(ref["warnings"]) if w[0] not in masked]
    if ours_w != ref_w:
        out.append(f"apply: warnings differ\n  ours {ap.warnings}\n  ref  {ref['warnings']}")
    return out


def compact(case: Dict[str, Any], ref: Dict[str, Any]) -> List[str]:
    if ref["error"] is not None:
        if "circular" in ref["error"]["message"]:
            return []  # it words a warning with a cyclic state (see _cyclic)
        return [f"compact: the reference throws ({ref['error']['message']})"]
    if _cyclic(ref["out"]) or _state_apart(case):
        return []
    got = stream.compact_events(_text(case["events"]), raw=True)
    if got != ref["out"]:
        return [f"compact: output differs\n  ours {got}\n  ref  {ref['out']}"]
    return []


def boundary(case: Dict[str, Any], ref: Dict[str, Any]) -> List[str]:
    """The compatibility boundary (0.x events, legacy nulls) as the decoders run it: an SSE
    stream of the events read as dicts, ids the reference generates renamed."""
    if ref is None:
        return []
    if ref["error"] is not None:
        return [f"boundary: the reference throws ({ref['error']['message']})"]
    sse = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in case["events"])
    got = decode_sse(sse, raw="dict")
    if _renamed(got) != _renamed(ref["output"]):
        return [f"boundary: output differs\n  ours {got}\n  ref  {ref['output']}"]
    return []


def _replays(case: Dict[str, Any]):
    """The whole pipeline by each of our routes: ``replay`` of the events, and the log route
    (``replay_log``'s native call on the SSE text, with the initial messages and state),
    the text held in memory and gzipped (read in chunks)."""
    yield "replay", lambda: stream.replay(_text(case["events"]), messages=case["messages"], state=_state(case),
                                          verify=True, raw=True)
    sse = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in case["events"])
    for name, log in (("replay_log", sse), ("replay_log gzip", gzip.compress(sse, 1))):
        yield name, lambda log=log: stream._replay(
            _native.replay_log(log, case["messages"], _state(case), verify=True, typed=False), True)


def pipeline(case: Dict[str, Any], ref: Dict[str, Any]) -> List[str]:
    """The whole client (``runAgent``) against ``replay(verify=True)`` and the log route:
    the same final messages and state when the reference succeeds, an error when it fails
    (what it applied before failing depends on the timing of its asynchronous reducer: not
    compared)."""
    if ref is None:
        return []
    err = ref["error"]
    if err is not None and err["name"] == SCHEMA_ERROR and ENUM_MEMBER in err["message"]:
        return []
    if _cyclic(ref["state"]):
        return []
    out: List[str] = []
    for name, run in _replays(case):
        try:
            r = run()
        except AguiError as exc:
            if err is None:
                out.append(f"pipeline ({name}): we raise ({exc}), the reference passes")
            continue
        if err is not None:
            out.append(f"pipeline ({name}): the reference raises ({err['message']}), we pass")
            continue
        if not _aliased(case["events"], ref["messages"]) and _renamed(r.messages) != _renamed(ref["messages"]):
            out.append(f"pipeline ({name}): messages differ\n  ours {r.messages}\n  ref  {ref['messages']}")
        if not _state_apart(case) and r.state != ref["state"]:
            out.append(f"pipeline ({name}): state differs\n  ours {r.state}\n  ref  {ref['state']}")
    return out


def compare(case: Dict[str, Any], ref: Dict[str, Any]) -> List[str]:
    return (chunks(case, ref["chunks"]) + verify(case, ref["verify"]) + apply(case, ref["chunks"], ref["apply"])
            + compact(case, ref["compact"]) + boundary(case, ref.get("boundary")) + pipeline(case, ref["pipeline"]))
