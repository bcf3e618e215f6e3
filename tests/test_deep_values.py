"""Values nested past every limit (10,000 and 20,000 levels, lists and dicts, with a lone
surrogate at the bottom, as our Structs, dicts and ag_ui models) give the project's depth
error on every stream entry point, never a RecursionError; model_dump takes them as
pydantic's python mode does; model_dump_json refuses them with EncodeError."""

from __future__ import annotations

import pytest

from agui_fast import stream
from agui_fast.core import StateSnapshotEvent
from agui_fast.errors import EncodeError, InvalidJsonError

try:
    import ag_ui.core as ref
except ImportError:  # pragma: no cover - the reference is a dev dependency
    ref = None


def nested(depth, leaf=0, kind=list):
    v = leaf
    for _ in range(depth):
        v = [v] if kind is list else {"a": v}
    return v


VALUES = {
    f"{kind.__name__}{depth}{'-surrogate' if leaf else ''}": nested(depth, leaf, kind)
    for depth in (10_000, 20_000)
    for kind in (list, dict)
    for leaf in (0, "\ud800")
}

RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


def forms(value):
    yield {"type": "STATE_SNAPSHOT", "snapshot": value}
    yield StateSnapshotEvent(snapshot=value)
    if ref is not None:
        yield ref.StateSnapshotEvent(snapshot=value)


CALLS = {
    "replay": lambda e: stream.replay([e]),
    "replay_verify": lambda e: stream.replay([RUN, e], verify=True),
    "applier": lambda e: stream.EventApplier().apply(e),
    "verify_events": lambda e: stream.verify_events([RUN, e]),
    "event_verifier": lambda e: stream.EventVerifier().push(e),
    "expand_chunks": lambda e: stream.expand_chunks([e]),
    "chunk_expander": lambda e: stream.ChunkExpander().push(e),
    "compact_events": lambda e: stream.compact_events([e]),
}


@pytest.mark.parametrize("value", list(VALUES))
@pytest.mark.parametrize("call", list(CALLS))
def test_every_entry_point_gives_the_depth_error(call, value):
    for event in forms(VALUES[value]):
        with pytest.raises(InvalidJsonError, match="nested deeper than 512 levels"):
            CALLS[call](event)


@pytest.mark.parametrize("value", list(VALUES))
def test_initial_values_give_the_depth_error(value):
    with pytest.raises(InvalidJsonError, match="nested deeper than 512 levels"):
        stream.replay([], state=VALUES[value])
    with pytest.raises(InvalidJsonError, match="nested deeper than 512 levels"):
        stream.replay([], messages=[{"id": "m", "role": "user", "content": "x", "x": VALUES[value]}])


def same(a, b) -> bool:
    """``a == b`` without recursion (Python's own compare recurses)."""
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, list):
            if len(x) != len(y):
                return False
            todo.extend(zip(x, y))
        elif isinstance(x, dict):
            if list(x) != list(y):
                return False
            todo.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


@pytest.mark.parametrize("value", list(VALUES))
def test_model_dump_takes_any_depth_and_dump_json_refuses(value):
    event = StateSnapshotEvent(snapshot=VALUES[value])
    assert same(event.model_dump()["snapshot"], VALUES[value])
    assert same(event.model_dump(exclude_none=True, by_alias=True)["snapshot"], VALUES[value])
    with pytest.raises(EncodeError):
        event.model_dump_json()


def test_a_cycle_is_an_encode_error():
    cyclic: list = []
    cyclic.append(cyclic)
    cyclic.append(cyclic)
    with pytest.raises(EncodeError, match="circular reference: a list contains itself"):
        StateSnapshotEvent(snapshot=cyclic).model_dump()
    with pytest.raises(InvalidJsonError):
        stream.replay([StateSnapshotEvent(snapshot=cyclic)])
