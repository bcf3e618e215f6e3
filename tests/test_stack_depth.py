"""Deep values on small thread stacks: every public path that takes a nested value gives
its result or the project's depth error on a thread of 128 KiB (musl's default), 256 KiB
and 1 MiB (Python threads on musl images), at the default ``max_depth`` and at the cap
(10,000), never a crash. Each case runs in a child process, so that a crash is a failed
test and not a dead test run; a case prints its name before it runs, so a crash names it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

STACKS = (128 * 1024, 256 * 1024, 1024 * 1024)

CHILD = textwrap.dedent(
    r'''
    import gc, sys, threading
    from agui_fast import decoder, encoder, patch, stream, _native
    from agui_fast.arrow import to_arrow
    from agui_fast.core import StateSnapshotEvent
    from agui_fast.errors import AguiError

    CAP = _native.MAX_DEPTH_CAP

    def nested(n, leaf=0):
        v = leaf
        for _ in range(n):
            v = [v]
        return v

    def nested_dicts(n, leaf=0):
        v = leaf
        for _ in range(n):
            v = {"a": v}
        return v

    def depth_of(v):
        d = 0
        while isinstance(v, (list, dict)):
            v = v[0] if isinstance(v, list) else v["a"]
            d += 1
        return d

    def snapshot_text(n):
        """A STATE_SNAPSHOT whose JSON nests n levels, the event object included."""
        return b'{"type":"STATE_SNAPSHOT","snapshot":' + b"[" * (n - 1) + b"1" + b"]" * (n - 1) + b"}"

    def sse(*events):
        return b"".join(b"data: " + e + b"\n\n" for e in events)

    def snap(n):  # the event as a dict, nesting n levels with it
        return {"type": "STATE_SNAPSHOT", "snapshot": nested(n - 1)}

    def delta(n):  # a STATE_DELTA whose value nests n levels with the event, its list and op
        return {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": nested(n - 3)}]}

    CASES = {
        "decode_sse_typed": lambda n, md: decoder.decode_sse(sse(snapshot_text(n)), max_depth=md),
        "decode_sse_dict": lambda n, md: decoder.decode_sse(sse(snapshot_text(n)), raw="dict", max_depth=md),
        "decode_sse_bytes": lambda n, md: decoder.decode_sse(sse(snapshot_text(n)), raw="bytes", max_depth=md),
        "decode_jsonl_dict": lambda n, md: decoder.decode_jsonl(snapshot_text(n) + b"\n", raw="dict", max_depth=md),
        "decode_event": lambda n, md: decoder.decode_event(snapshot_text(n)),
        "dumps": lambda n, md: _native.dumps(snap(n), max_depth=md),
        "dumps_struct": lambda n, md: _native.dumps(StateSnapshotEvent(snapshot=nested(n - 1)), max_depth=md),
        "dumps_dicts": lambda n, md: _native.dumps({"type": "STATE_SNAPSHOT", "snapshot": nested_dicts(n - 1)}, max_depth=md),
        "encode_sse": lambda n, md: _native.encode_sse(snap(n), max_depth=md),
        "encoder": lambda n, md: encoder.EventEncoder().encode(StateSnapshotEvent(snapshot=nested(n - 1))),
        "proto_encode": lambda n, md: _native.proto_encode_event(snap(n), max_depth=md),
        "replay_dicts": lambda n, md: stream.replay([snap(n)], max_depth=md),
        "replay_raw": lambda n, md: stream.replay([snap(n)], raw=True, max_depth=md),
        "replay_struct": lambda n, md: stream.replay([StateSnapshotEvent(snapshot=nested(n - 1))], max_depth=md),
        "replay_delta": lambda n, md: stream.replay([snap(2), delta(n)], raw=True, max_depth=md),
        "replay_initial_state": lambda n, md: stream.replay([], state=nested(n - 1), max_depth=md),
        "replay_log": lambda n, md: stream.replay_log(sse(snapshot_text(n)), max_depth=md),
        "replay_log_dicts": lambda n, md: stream.replay_log(sse(snapshot_text(n)), raw=True, max_depth=md),
        "replay_log_threads": lambda n, md: stream.replay_log(
            sse(snapshot_text(n)) + b": " + b"x" * (1 << 20) + b"\n\n", raw=True, max_depth=md
        ),
        "applier": lambda n, md: stream.EventApplier(raw=True, max_depth=md).apply(snap(n)),
        "applier_delta_deep_path": lambda n, md: stream.EventApplier(raw=True, max_depth=md).apply_many(
            [snap(n), {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/0" * (n - 3), "value": 2}]}]
        ),
        "compact_events": lambda n, md: stream.compact_events([snap(n), snap(2)], max_depth=md),
        "expand_chunks": lambda n, md: stream.expand_chunks([snap(n)], max_depth=md),
        "verify_events": lambda n, md: stream.verify_events(
            [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, snap(n)], max_depth=md
        ),
        "apply_patch": lambda n, md: patch.apply_patch({}, [{"op": "add", "path": "/x", "value": nested(n - 2)}], max_depth=md),
        "apply_patch_deep_doc": lambda n, md: patch.apply_patch(
            nested(n - 1), [{"op": "replace", "path": "/0" * (n - 2), "value": 2}], max_depth=md
        ),
        "apply_patch_copy": lambda n, md: patch.apply_patch(
            {"a": nested(n - 2)}, [{"op": "copy", "from": "/a", "path": "/b"}], max_depth=md
        ),
        "apply_patch_text": lambda n, md: patch.StateDocument({}, max_depth=md).apply(
            b'[{"op":"add","path":"/x","value":' + b"[" * (n - 2) + b"]" * (n - 2) + b"}]"
        ),
        "state_document": lambda n, md: patch.StateDocument(nested(n - 1), max_depth=md).to_python(),
        "to_arrow": lambda n, md: to_arrow(sse(snapshot_text(n)), threads=1, max_depth=md),
        "to_arrow_threads": lambda n, md: to_arrow([sse(snapshot_text(n))] * 2, threads=2, max_depth=md),
    }

    def run(name, n, md, stack):
        out = {}

        def body():
            try:
                r = CASES[name](n, md)
                out["r"] = "ok"
                out["keep"] = r
            except AguiError as e:
                out["r"] = "depth" if "deeper than" in str(e) or "nested" in str(e) else f"other {type(e).__name__}: {e}"
            except BaseException as e:  # noqa: BLE001 - any other exception is a failure
                out["r"] = f"stray {type(e).__name__}: {str(e)[:200]}"

        threading.stack_size(stack)
        t = threading.Thread(target=body)
        t.start()
        t.join()
        out.pop("keep", None)  # dropped here, on the main thread
        return out.get("r", "no result")

    name = sys.argv[1]
    stacks = [int(s) for s in sys.argv[2].split(",")]
    bad = []
    for stack in stacks:
        # (depth of the value, max_depth, what must come out)
        for n, md, want in ((510, 512, "ok"), (CAP, CAP, "ok"), (CAP + 1, CAP, "depth")):
            print(f"{name} stack={stack // 1024}KiB depth={n} max_depth={md}", flush=True)
            got = run(name, n, md, stack)
            if got not in (want, "depth"):
                bad.append(f"{name} stack={stack // 1024}KiB depth={n} max_depth={md}: {got}")
    print("\n".join(bad) if bad else "all ok", flush=True)
    sys.exit(1 if bad else 0)
    '''
)

CASES = [
    "decode_sse_typed", "decode_sse_dict", "decode_sse_bytes", "decode_jsonl_dict", "decode_event",
    "dumps", "dumps_struct", "dumps_dicts", "encode_sse", "encoder", "proto_encode",
    "replay_dicts", "replay_raw", "replay_struct", "replay_delta", "replay_initial_state",
    "replay_log", "replay_log_dicts", "replay_log_threads",
    "applier", "applier_delta_deep_path", "compact_events", "expand_chunks", "verify_events",
    "apply_patch", "apply_patch_deep_doc", "apply_patch_copy", "apply_patch_text", "state_document",
    "to_arrow", "to_arrow_threads",
]


@pytest.mark.parametrize("case", CASES)
def test_deep_values_never_crash_a_small_thread(case):
    r = subprocess.run(
        [sys.executable, "-c", CHILD, case, ",".join(str(s) for s in STACKS)],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, f"exit {r.returncode}; last case run: {r.stdout.strip().splitlines()[-1:]}\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}"
