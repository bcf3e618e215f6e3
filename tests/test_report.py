"""agui_fast.report: the page's data is what the stream engine computed, grouped into items;
the page is self-contained and its data cannot be read as markup; the CLI's `report`.
(The page in a real browser: tests/test_report_browser.py.)"""

import gzip
import html
import json
import re

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from agui_fast import report, stream
from agui_fast._bench import run_events, sse_log
from agui_fast.cli import _demo_events, main
from agui_fast.patch import apply_patch

from conftest import examples
from report_cases import PAYLOADS, demo_log, hostile_events, sse

DATA = re.compile(r'<script type="application/json" id="agui-data">(.*?)</script>', re.S)


def page_data(page):
    """The JSON embedded in a page, read back."""
    (text,) = DATA.findall(page)
    return json.loads(text)


def plain(data):
    """Page data (holding raw JSON text) as plain values."""
    return json.loads(msgspec.json.encode(data))


def items(r, kind=None):
    return [it for it in r.data["items"] if kind is None or it["k"] == kind]


def test_demo_run_items_are_the_engines():
    r = report.build(demo_log())
    assert r.events == 14 and r.data["format"] == "sse"
    (msg,) = items(r, "text")
    assert (msg["text"], msg["role"], msg["id"], msg["i"], msg["j"], msg["n"]) == ("Hello from agui-fast", "assistant", "m1", 2, 6, 5)
    (call,) = items(r, "tool")
    assert (call["name"], call["args"], call["parent"]) == ("search", '{"q":"ag-ui"}', "m1")
    (result,) = items(r, "result")
    assert result["content"] == "3 results" and r.data["items"][result["call"]] is call
    assert r.data["items"][call["res"]] is result
    snapshot, delta = items(r, "state")
    assert snapshot["diff"] == [["+", "/status", None, "thinking"], ["+", "/steps", None, []]]
    assert snapshot["after"] == {"status": "thinking", "steps": []}
    assert delta["diff"] == [["~", "/status", "thinking", "done"], ["+", "/steps/0", None, {"tool": "search"}]]
    # the final messages and state are the replay's
    final = stream.replay(_demo_events(), raw=True)
    assert r.data["final"] == {"messages": final.messages, "state": final.state, "interrupts": final.pending_interrupts}
    # runs, token usage, counts, time
    (run,) = r.data["runs"]
    assert (run["id"], run["i"], run["j"], run["outcome"]) == ("r1", 0, 13, {"type": "success"})
    assert run["usage"] == r.data["usage"] == [{"provider": "openai", "model": "gpt-4o", "inputTokens": 812, "outputTokens": 46}]
    assert dict(r.data["types"])["TEXT_MESSAGE_CONTENT"] == 3 and sum(n for _, n in r.data["types"]) == 14
    assert r.data["span"] == [1_767_225_600_000, 1_767_225_601_700]
    assert result["gap"] == 1210 and "gap" not in call
    # The demo's one extra member: the client pipeline strips it with a warning, as the spec says.
    (extra,) = r.findings
    assert extra["level"] == "warning" and "'/trace_id' on CUSTOM" in extra["msg"], extra


def test_events_and_their_log_make_the_same_page():
    a = page_data(report.render(_demo_events()))
    b = page_data(report.render(demo_log()))
    assert (a.pop("title"), a.pop("format"), b.pop("title"), b.pop("format")) == ("events", None, "log", "sse")
    assert a == b


def test_findings_are_at_their_event():
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/missing", "value": 1}]},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "x"},
        {"type": "NOT_A_TYPE"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "late"},
    ]
    r = report.build(sse(events) + b"data: {broken\n\n")
    found = [(f["i"], f["level"], f.get("rule"), f.get("stop", False)) for f in r.findings]
    assert found == [(1, "warning", None, False), (2, "error", "R12", True), (3, "warning", None, False),
                     (5, "error", "R03", False), (6, "error", None, False)]
    assert r.findings[1]["ids"] == ["ghost"] and r.findings[1]["msg"].startswith("Cannot send 'TEXT_MESSAGE_CONTENT'")
    assert r.findings[-1]["msg"].startswith("reading stopped:") and r.findings[-1]["item"] is None
    for f in r.findings[:-1]:  # each on the item of its event
        it = r.data["items"][f["item"]]
        assert it["i"] <= f["i"] <= it["j"]
    # the warnings are the applier's, the errors the verifier's: without verification the
    # events apply (R12's content to an unknown message is then the reducer's error)
    plain = stream.EventApplier(raw=True)
    for e in events:
        try:
            plain.apply(json.dumps(e))
        except stream.StreamError:
            pass
    unverified = report.build(events, verify=False)
    assert [(f["i"], f["msg"]) for f in unverified.findings if f["level"] == "warning"] == plain.warnings


def test_chunks_reasoning_lanes_steps_activities_interrupts():
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"},
        {"type": "STEP_STARTED", "stepName": "plan", "timestamp": 10},
        {"type": "REASONING_START", "messageId": "rs"},
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "rm", "delta": "think "},
        {"type": "REASONING_MESSAGE_CHUNK", "delta": "hard"},
        {"type": "REASONING_END", "messageId": "rs"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "c1", "role": "assistant", "delta": "chunk "},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "two"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "tc", "toolCallName": "calc", "delta": '{"a":'},
        {"type": "TOOL_CALL_CHUNK", "delta": "1}"},
        {"type": "STEP_FINISHED", "stepName": "plan", "timestamp": 2510},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher", "parentToolCallId": "tc"},
        {"type": "TEXT_MESSAGE_START", "messageId": "sm", "role": "assistant", "subagentRunId": "s1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "sm", "delta": "sub says hi", "subagentRunId": "s1"},
        {"type": "TEXT_MESSAGE_END", "messageId": "sm", "subagentRunId": "s1"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1", "outcome": {"type": "suspended"}},
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "PLAN", "content": {"steps": ["a"]}},
        {"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "PLAN", "patch": [{"op": "add", "path": "/steps/-", "value": "b"}]},
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "hi"}]},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1", "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approve"}]},
         "usage": [{"provider": "p", "inputTokens": 5}, {"provider": "p", "inputTokens": 7, "outputTokens": 2}]},
    ]
    r = report.build(events)
    assert r.findings == []
    by = {(it["k"], it.get("id")): it for it in r.data["items"]}
    assert by["step", "plan"]["j"] == 10 and by["step", "plan"]["pause"] == 2500 and by["step", "plan"]["open"] is False
    assert (by["phase", "rs"]["i"], by["phase", "rs"]["j"]) == (2, 5)
    assert by["reasoning", "rm"]["text"] == "think hard" and by["reasoning", "rm"]["n"] == 2
    assert by["text", "c1"]["text"] == "chunk two" and not by["text", "c1"]["open"]
    assert by["tool", "tc"]["args"] == '{"a":1}' and by["tool", "tc"]["name"] == "calc"
    assert by["text", "sm"]["lane"] == 1 and by["text", "sm"]["text"] == "sub says hi"
    assert r.data["lanes"][1] == {"id": "s1", "name": "researcher", "parentToolCallId": "tc", "i": 11, "j": 15, "outcome": {"type": "suspended"}}
    snap, delta = [it for it in r.data["items"] if it["k"] == "activity"]
    assert snap["content"] == {"steps": ["a"]} and delta["diff"] == [["+", "/steps/1", None, "b"]]
    (msgs,) = items(r, "messages")
    assert [m["id"] for m in msgs["messages"]] == [m["id"] for m in stream.replay(events[:19], raw=True).messages]
    (finish,) = items(r, "finish")
    assert finish["interrupts"] == [{"id": "i1", "reason": "approve"}] and r.data["runs"][0]["interrupts"] == 1
    assert finish["usage"] == [{"provider": "p", "inputTokens": 12, "outputTokens": 2}]


def test_token_counts_summed_past_the_wire_limit_are_shown():
    # Each count is within the wire's 2**53 - 1; their sums (per run and over runs) are not.
    big = 2**53 - 1
    run = lambda r: [  # noqa: E731
        {"type": "RUN_STARTED", "threadId": "t", "runId": r},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": r,
         "usage": [{"provider": "p", "inputTokens": big}, {"provider": "p", "inputTokens": 5}, {"model": "m", "outputTokens": 1}]},
    ]
    r = report.build(run("r1") + run("r2"))
    assert r.findings == []
    assert [it["usage"] for it in items(r, "finish")] == [[{"provider": "p", "inputTokens": big + 5}, {"model": "m", "outputTokens": 1}]] * 2
    assert r.data["usage"] == [{"provider": "p", "inputTokens": 2 * (big + 5)}, {"model": "m", "outputTokens": 2}]


def test_state_views_stay_as_they_were_and_share_what_did_not_change():
    ap = stream.EventApplier(raw=True)
    ap.apply({"type": "STATE_SNAPSHOT", "snapshot": {"a": {"x": [1]}, "b": {"y": 2}}})
    first = ap.state_view()
    ap.apply({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a/x/-", "value": 3}]})
    second = ap.state_view()
    ap.apply({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/b"}]})
    assert first == {"a": {"x": [1]}, "b": {"y": 2}} and second == {"a": {"x": [1, 3]}, "b": {"y": 2}}
    assert second["b"] is first["b"] and second["a"] is not first["a"]
    assert ap.state_view() == {"a": {"x": [1, 3]}} and ap.state_view()["a"] is second["a"]


def _reconstruct(before, diff):
    """Apply a page's difference entries to the state before: removals from the last."""
    ops = [{"op": "remove", "path": p} for s, p, _, _ in reversed(diff) if s == "-"]
    ops += [{"op": "add" if s == "+" else "replace", "path": p, "value": after} for s, p, _, after in diff if s != "-"]
    return apply_patch(before, ops)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "b", ""]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "c/d", "e~f"]), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def state_runs(draw):
    """A snapshot and deltas (add / remove / replace / move / copy at existing and new
    places, some failing) over small states."""
    state = draw(st.dictionaries(st.sampled_from(["a", "b", "c/d", "e~f"]), json_values, max_size=4))
    events = [{"type": "STATE_SNAPSHOT", "snapshot": state}]
    for _ in range(draw(st.integers(1, 6))):
        ops = []
        for _ in range(draw(st.integers(1, 3))):
            op = draw(st.sampled_from(["add", "remove", "replace", "move", "copy"]))
            path = "/" + "/".join(draw(st.lists(st.sampled_from(["a", "b", "c~1d", "e~0f", "0", "1", "-"]), min_size=1, max_size=3)))
            o = {"op": op, "path": path}
            if op in ("add", "replace"):
                o["value"] = draw(json_values)
            if op in ("move", "copy"):
                o["from"] = "/" + draw(st.sampled_from(["a", "b", "a/0", "b/a"]))
            ops.append(o)
        events.append({"type": "STATE_DELTA", "delta": ops})
    return events


@settings(max_examples=examples(100), deadline=None)  # each example replays every prefix
@given(state_runs())
def test_each_state_difference_is_the_change_the_engine_made(events):
    r = report.build(events, verify=False, max_changes=10_000)
    states = [stream.replay(events[: k + 1], raw=True).state for k in range(len(events))]
    before = {}
    for it in items(r, "state"):
        after = states[it["i"]]
        if it["changed"]:
            assert _reconstruct(before, it["diff"]) == after
        else:
            assert "diff" not in it and after == before
        before = after


def test_strings_are_cut_and_big_logs_stay_small():
    long = "x" * 50_000
    events = [{"type": "STATE_SNAPSHOT", "snapshot": {"doc": long, "many": list(range(5000))}},
              {"type": "CUSTOM", "name": "n", "value": long}]
    r = report.build(events, verify=False, max_string=100, max_value=1_000)
    snap, custom = r.data["items"]
    assert snap["after"]["doc"] == "x" * 100 + "\u2026 [49,900 more characters]"
    assert snap["after"]["many"][-1].endswith("more items") and len(json.dumps(snap["after"])) < 2_000
    assert custom["value"].startswith("x" * 100 + "\u2026")
    assert len(report.render(events, verify=False, max_string=100, max_value=1_000)) < 60_000


def test_page_of_100k_events_is_within_its_stated_size():
    # docs/report.md: 5.4 MB for this 100k-event, 8 MB log (0.7x the log)
    log = sse_log(run_events(100_000))
    r = report.build(log)
    text = r.html()
    assert r.events == 100_000 and len(r.data["items"]) == 11_337
    assert len(text.encode()) < 6_500_000


def test_big_items_beyond_max_bytes_keep_only_their_titles():
    log = sse_log(run_events(5_000))
    r = report.build(log, max_bytes=50_000)
    cut = r.data["cut"]
    assert 0 < cut < 5_000
    assert all("raw" in it for it in r.data["items"] if it["i"] < cut - 60)
    later = [it for it in r.data["items"] if it["i"] > cut]
    assert later and all(it.get("stub") and "raw" not in it and "text" not in it for it in later)
    assert len(r.html()) < len(report.render(log)) * 0.6


def test_comparisons_stop_past_max_compare():
    events = [{"type": "STATE_SNAPSHOT", "snapshot": {"items": []}}]
    events += [{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/items/-", "value": i}]} for i in range(2_000)]
    r = report.build(events, verify=False, max_compare=1_000_000)
    stop = r.data["untracked"]
    assert 0 < stop < 2_000
    deltas = items(r, "state")[1:]
    assert all(it["diff"] == [["+", f"/items/{it['i'] - 1}", None, it["i"] - 1]] for it in deltas if it["i"] < stop)
    assert all("diff" not in it for it in deltas if it["i"] >= stop)
    assert r.data["final"]["state"]["items"][-1] == 1_999  # the engine applied every event


def test_embedded_data_cannot_be_read_as_markup():
    r = report.build(hostile_events(), title=PAYLOADS[0])
    page = r.html()
    (embedded,) = DATA.findall(page)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in embedded
    assert json.loads(embedded) == plain(r.data)  # the data, intact
    outside = DATA.sub("", page)
    for payload in PAYLOADS:
        assert payload not in outside
    assert f"<title>{html.escape(PAYLOADS[0])} \u2014 agui-fast report</title>" in page
    assert page.count("<script") == 2 and "innerHTML" not in page and "http" not in outside.replace("http-equiv", "")
    # the payloads reach the page as data: ids, text, state keys, findings
    text = json.dumps(plain(r.data), ensure_ascii=False)
    for payload in PAYLOADS:
        assert payload in text or json.dumps(payload)[1:-1] in text


def test_lone_surrogates_and_unreadable_events_are_shown():
    events = ['{"type":"TEXT_MESSAGE_START","messageId":"m"}', '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\\ud83d"}',
              '{"type":"TEXT_MESSAGE_END","messageId":"m"}', "[1]", "not json"]
    r = report.build(events, verify=False)
    data = page_data(r.html())
    assert data["items"][0]["text"] == "\ufffd"
    assert [f["i"] for f in r.findings] == [3, 4] and all(f["level"] == "error" for f in r.findings)
    assert data["items"][-1]["raw"] == [[4, "not json"]]


def test_arguments_are_checked():
    with pytest.raises(TypeError):
        report.build(42)
    with pytest.raises(TypeError):
        report.build([], max_string="10")
    with pytest.raises(ValueError):
        report.build([], max_bytes=0)


def test_notebook_views():
    r = report.build(demo_log())
    frame = r._repr_html_()
    assert frame.startswith('<iframe sandbox="allow-scripts" srcdoc="') and "<script" not in frame
    assert html.unescape(frame.split('srcdoc="', 1)[1].split('" style=', 1)[0]) == r.html()
    assert "Report 'log'" in repr(r) and "14 events" in repr(r)
    replay = stream.replay(_demo_events())
    inner = html.unescape(replay._repr_html_().split('srcdoc="', 1)[1].split('" style=', 1)[0])
    data = page_data(inner)
    assert data["kind"] == "replay" and data["final"]["state"] == {"status": "done", "steps": [{"tool": "search"}]}
    assert data["final"]["messages"][0]["content"] == "Hello from agui-fast"


# -- the command line ------------------------------------------------------------------------


def test_cli_writes_a_page_beside_each_log(tmp_path, capsys):
    a, b = tmp_path / "a.sse", tmp_path / "b.jsonl.gz"
    a.write_bytes(demo_log())
    b.write_bytes(gzip.compress(b"".join(json.dumps(e).encode() + b"\n" for e in hostile_events())))
    assert main(["report", str(a), str(b)]) == 0
    assert page_data((tmp_path / "a.html").read_text())["items"] == page_data(report.render(a))["items"]
    assert page_data((tmp_path / "b.html").read_text())["format"] == "jsonl"
    err = capsys.readouterr().err
    assert f"{a} -> {tmp_path / 'a.html'}: 14 events, 1 run, 0 errors, 1 warning" in err
    out = tmp_path / "pages"
    assert main(["report", str(a), str(b), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.html", "b.html"]
    assert main(["report", str(a), "-o", str(tmp_path / "one.html"), "--no-verify"]) == 0
    assert (tmp_path / "one.html").read_text().startswith("<!doctype html>")
    assert not list(tmp_path.glob(".*partial"))


def test_cli_stdin_stdout_and_mistakes(tmp_path, capsys):
    import subprocess
    import sys

    log = tmp_path / "run.sse"
    log.write_bytes(demo_log())
    out = subprocess.run([sys.executable, "-m", "agui_fast", "report", "-", "-o", "-"], input=demo_log(), capture_output=True)
    assert out.returncode == 0 and page_data(out.stdout.decode())["events"] == 14
    (tmp_path / "empty.sse").write_bytes(b"")
    assert main(["report", str(tmp_path / "empty.sse")]) == 2
    assert main(["report", "-"]) == 2  # stdin needs -o
    assert main(["report", str(log), str(log), "-o", "-"]) == 2
    (tmp_path / "run.pb").write_bytes(b"")
    assert main(["report", str(tmp_path / "missing.sse")]) == 2
    err = capsys.readouterr().err
    assert "empty file" in err and "give -o FILE" in err and "no such file" in err
    bad = tmp_path / "bad.sse"
    bad.write_bytes(demo_log() + b"data: {oops\n\n")
    assert main(["report", str(bad)]) == 1  # the page is written, reading stopped at the bad frame
    assert page_data((tmp_path / "bad.html").read_text())["findings"][-1]["stage"] == "decode"


# -- time: linear in the log ------------------------------------------------------------------


@pytest.mark.complexity
@pytest.mark.parametrize("shape", ["generated run", "deltas on a wide state", "tool calls and results", "unended messages",
                                   "tool calls on one message"])
def test_building_takes_linear_time(shape):
    from test_props_linear import check  # the suite's one measure of growth

    def make(n):
        if shape == "generated run":
            return sse_log(run_events(n))
        if shape == "deltas on a wide state":
            events = [{"type": "STATE_SNAPSHOT", "snapshot": {f"k{i}": {"v": i} for i in range(2_000)}}]
            return sse(events + [{"type": "STATE_DELTA", "delta": [{"op": "replace", "path": f"/k{i % 2_000}/v", "value": -i}]}
                                 for i in range(n)])
        events = []
        if shape == "unended messages":  # streams left open while runs start and end
            for i in range(n // 4):
                events += [{"type": "RUN_STARTED", "threadId": "t", "runId": f"r{i}"},
                           {"type": "TEXT_MESSAGE_START", "messageId": f"m{i}"},
                           {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{i}", "delta": "x"},
                           {"type": "RUN_FINISHED", "threadId": "t", "runId": f"r{i}"}]
            return sse(events)
        if shape == "tool calls on one message":  # each call's item reads its call alone
            return sse(_calls_on_one_message(n // 3))
        for i in range(n // 4):  # each call in a message of its own, its result later
            events += [{"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "f"},
                       {"type": "TOOL_CALL_ARGS", "toolCallId": f"c{i}", "delta": "{}"},
                       {"type": "TOOL_CALL_END", "toolCallId": f"c{i}"},
                       {"type": "TOOL_CALL_RESULT", "messageId": f"r{i}", "toolCallId": f"c{i}", "content": "ok"}]
        return sse(events)

    # (No comparison budget: it must not be what keeps the time linear.)
    check(lambda log: report.build(log, verify=False, max_compare=10**15), make, 200)


def _calls_on_one_message(n):
    events = [{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}]
    for i in range(n):
        events += [{"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": f"f{i}", "parentMessageId": "m"},
                   {"type": "TOOL_CALL_ARGS", "toolCallId": f"c{i}", "delta": f'{{"i":{i}}}'},
                   {"type": "TOOL_CALL_END", "toolCallId": f"c{i}"}]
    return events


def test_every_call_on_one_message_has_its_details_within_a_small_budget():
    r = report.build(sse(_calls_on_one_message(300)), verify=False, max_compare=100_000)
    calls = [it for it in r.data["items"] if it["k"] == "tool"]
    assert [(it["name"], it["args"], it["parent"]) for it in calls] == [(f"f{i}", f'{{"i":{i}}}', "m") for i in range(300)]
    assert r.data["untracked"] is None
