"""The report page in a real browser: headless Chromium (the system's package) driven by
Playwright. One browser for the module, one page reused by every test.

Checks: the page loads with no console error and no request but its own file; the
timeline shows a known run's messages, tool calls and state changes; clicking shows raw
events; filtering and search; a hostile log runs no script and stays text; 100k events
render and load within generous bounds.

Skipped, saying why, where no browser can be had (``tools/install_browser.sh`` installs
one); ``AGUI_REQUIRE_BROWSER=1`` makes that a failure (CI). Skipped in a light run (the
page is the same on every interpreter)."""

import os
import re
import shutil
import time

import pytest

try:
    from playwright.sync_api import expect, sync_playwright  # optional: the dev extra has it
except ImportError:
    expect = sync_playwright = None

from agui_fast import report, stream
from agui_fast._bench import run_events, sse_log
from agui_fast.cli import _demo_events

from conftest import LIGHT
from report_cases import PAYLOADS, demo_log, hostile_events, sse

REQUIRED = os.environ.get("AGUI_REQUIRE_BROWSER", "") not in ("", "0")


def _unavailable(reason):
    if REQUIRED:
        pytest.fail(f"AGUI_REQUIRE_BROWSER is set but {reason}")
    pytest.skip(reason)


def _chromium():
    for name in (os.environ.get("AGUI_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = name and shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    if LIGHT:  # CI's full run opens it, with AGUI_REQUIRE_BROWSER
        pytest.skip("a light run: the page is the same on every interpreter (the full run opens it)")
    if sync_playwright is None:
        _unavailable("Playwright is not installed (the dev extra; tools/install_browser.sh)")
    executable = _chromium()
    if executable is None:
        _unavailable("no Chromium found (tools/install_browser.sh installs the system's package; or set AGUI_CHROMIUM)")
    manager = sync_playwright().start()
    try:
        args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        try:
            chromium = manager.chromium.launch(executable_path=executable, args=args)
        except Exception as exc:  # noqa: BLE001 - any launch failure means no browser here
            _unavailable(f"Chromium at {executable} did not start: {str(exc).splitlines()[0]}")
        yield chromium
        chromium.close()
    finally:
        manager.stop()


class Viewer:
    """One page, reused: ``open(html)`` loads a report from a file and records the console
    errors, failed scripts, dialogs and requests of that load."""

    def __init__(self, page, where):
        self.page = page
        self.where = where
        self.errors, self.requests, self.dialogs = [], [], []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

        def dialog(d):
            self.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        self.n = 0

    def open(self, html, name="run", ready=".count"):
        self.n += 1
        path = self.where / f"{name}-{self.n}.html"
        path.write_text(html, encoding="utf-8")
        self.errors.clear(), self.requests.clear(), self.dialogs.clear()
        url = path.as_uri()
        self.page.goto(url)
        self.page.wait_for_selector(ready)
        assert self.requests == [url], "the page asked for something besides itself"
        return url

    def visible_items(self):
        return self.page.locator(".list > .item")

    def titles(self):
        return self.page.locator(".list > .item .title").all_text_contents()

    def text(self):
        return self.page.locator("#app").inner_text()


@pytest.fixture(scope="module")
def view(browser, tmp_path_factory):
    """The page as it ships: its Content-Security-Policy allows its own script only."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    viewer = Viewer(context.new_page(), tmp_path_factory.mktemp("pages"))
    yield viewer
    context.close()


@pytest.fixture(scope="module")
def bare_view(browser, tmp_path_factory):
    """The page with its Content-Security-Policy ignored: what keeps it safe is then the
    escaping and the script's text insertion alone (and tests may evaluate script)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    viewer = Viewer(context.new_page(), tmp_path_factory.mktemp("bare"))
    yield viewer
    context.close()


def count_is(view, text):
    expect(view.page.locator(".count")).to_have_text(text, timeout=30_000)


def test_the_demo_run_reads_as_it_streamed(view):
    view.open(report.render(demo_log()))
    assert view.errors == [] and view.dialogs == []
    assert view.page.locator(".count").inner_text() == "8 of 8 items"
    assert view.titles() == [
        "Run r1  \u00b7  thread t1", "state snapshot", "assistant message  m1", "search  c1", "result of search  c1",
        "state delta (2 ops)", "custom note", "Run finished: success",
    ]
    text = view.text()
    for shown in ("Hello from agui-fast", '{"q":"ag-ui"}', "\u2192 3 results", "openai/gpt-4o: 812 in, 46 out tokens",
                  "\u22ef 1.21 s later", "858 tokens"):
        assert shown in text
    delta = view.visible_items().nth(5)
    assert delta.locator(".d").all_inner_texts() == ['~\n/status\n"thinking"\n\u2192\n"done"', '+\n/steps/0\n{"tool":"search"}']


def test_clicking_an_item_shows_its_raw_events(view):
    view.open(report.render(demo_log()))
    call = view.visible_items().nth(3)
    call.click()
    raw = call.locator(".details pre").all_inner_texts()
    assert [r.split('"type": "')[1].split('"')[0] for r in raw] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert '"toolCallName": "search"' in raw[0]
    call.locator(".head").click()
    assert call.locator(".details").count() == 0


def _two_runs():
    events = []
    for run in (1, 2):
        events += [
            {"type": "RUN_STARTED", "threadId": "t", "runId": f"r{run}"},
            {"type": "TEXT_MESSAGE_START", "messageId": f"m{run}", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{run}", "delta": f"answer {run}"},
            {"type": "TEXT_MESSAGE_END", "messageId": f"m{run}"},
            {"type": "TOOL_CALL_START", "toolCallId": f"c{run}", "toolCallName": f"tool{run}"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": f"c{run}", "delta": "{}"},
            {"type": "TOOL_CALL_END", "toolCallId": f"c{run}"},
            {"type": "SUBAGENT_STARTED", "subagentRunId": f"s{run}", "name": f"helper{run}"},
            {"type": "TEXT_MESSAGE_START", "messageId": f"sm{run}", "role": "assistant", "subagentRunId": f"s{run}"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"sm{run}", "delta": f"sub work {run}", "subagentRunId": f"s{run}"},
            {"type": "TEXT_MESSAGE_END", "messageId": f"sm{run}", "subagentRunId": f"s{run}"},
            {"type": "SUBAGENT_FINISHED", "subagentRunId": f"s{run}"},
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": f"/run{run}", "value": run}]},
            {"type": "RUN_FINISHED", "threadId": "t", "runId": f"r{run}"},
        ]
    events.insert(3, {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/nothing"}]})  # a warning
    return events


def test_filters_and_search(view):
    view.open(report.render(sse(_two_runs())))
    page = view.page
    assert page.locator(".count").inner_text() == "17 of 17 items"
    page.select_option("select[aria-label='all event types']", "TOOL_CALL_ARGS")
    assert view.titles() == ["tool1  c1", "tool2  c2"]
    page.select_option("select[aria-label='all runs']", "1")
    assert view.titles() == ["tool2  c2"]
    page.select_option("select[aria-label='all event types']", "")
    assert len(view.titles()) == 8 and view.titles()[0] == "Run r2  \u00b7  thread t"
    page.select_option("select[aria-label='all lanes']", "2")
    assert view.titles() == ["subagent helper2 started", "assistant message  sm2", "subagent helper2 finished: success"]
    page.select_option("select[aria-label='all runs']", "")
    page.select_option("select[aria-label='all lanes']", "")
    page.fill("input[type=search]", "SUB WORK 1")
    count_is(view, "1 of 17 items")
    assert view.titles() == ["assistant message  sm1"]
    page.fill("input[type=search]", "")
    count_is(view, "17 of 17 items")
    page.check("text=with findings")
    assert view.titles() == ["state delta (1 op)"]
    page.uncheck("text=with findings")
    page.locator(".side tr.pick", has_text="TOOL_CALL_START").click()  # the counts pick a type
    assert view.titles() == ["tool1  c1", "tool2  c2"]


def test_a_finding_leads_to_its_event(view):
    events = _two_runs() + [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "boo"}]
    view.open(report.render(sse(events)))
    findings = view.page.locator(".findings .finding")
    assert findings.count() == 2 and "R03" in findings.nth(1).inner_text()
    view.page.select_option("select[aria-label='all event types']", "RUN_STARTED")
    findings.nth(1).click()  # clears the filter that hides its item, opens it
    selected = view.page.locator(".item.sel")
    assert selected.count() == 1 and selected.locator(".title").text_content() == "assistant message  ghost"
    assert '"delta": "boo"' in selected.locator(".details").inner_text()
    assert "The reference client stops the run at this event" in selected.inner_text()


@pytest.mark.parametrize("which", ["view", "bare_view"])
def test_a_hostile_log_is_shown_as_text_and_runs_nothing(which, request):
    view = request.getfixturevalue(which)
    events = hostile_events(big=10_000_000)
    started = time.perf_counter()
    html = report.render(sse(events), title=PAYLOADS[1])
    built = time.perf_counter() - started
    assert built < 60, "the hostile log's report should take seconds (generous bound)"
    view.open(html, "hostile")
    page = view.page

    def ran_nothing():
        assert view.errors == [] and view.dialogs == []
        assert page.locator("html[data-pwned]").count() == 0
        assert page.locator("script").count() == 2  # the data and the page's own script
        assert page.locator("img, svg, iframe").count() == 0 and page.locator("b", has_text=re.compile(r"^bold\?$")).count() == 0
        if which == "bare_view":
            assert page.evaluate("typeof window.__pwned") == "undefined"

    ran_nothing()
    assert page.title() == f"{PAYLOADS[1]} \u2014 agui-fast report"
    # open every item (raw events, state, findings) and the final state, then look again
    for k in range(view.visible_items().count()):
        view.visible_items().nth(k).locator(".head").click()
    page.locator(".final summary").click()
    ran_nothing()
    text = view.text()
    for payload in PAYLOADS[:4] + PAYLOADS[5:]:
        assert payload in text  # shown, as text
    assert "more characters]" in text and "reading stopped" not in text  # the 10 MB delta, read and cut
    page.fill("input[type=search]", PAYLOADS[0].lower())
    expect(page.locator(".count")).not_to_have_text(view.page.locator(".count").inner_text(), timeout=30_000)
    assert view.titles()
    ran_nothing()


def test_100k_events_render_and_stay_usable(view):
    events = run_events(100_000)
    log = sse_log(events) + sse(hostile_events())
    started = time.perf_counter()
    html = report.render(log)
    built = time.perf_counter() - started
    assert built < 30, f"100k events took {built:.1f} s (generous bound: a few seconds expected)"
    assert len(html.encode()) < 8_000_000
    started = time.perf_counter()
    view.open(html, "big")
    loaded = time.perf_counter() - started
    assert loaded < 30, f"the page took {loaded:.1f} s to load"
    page = view.page
    assert view.errors == [] and page.locator("html[data-pwned]").count() == 0
    count = page.locator(".count").inner_text()
    assert count.endswith("items") and int(count.split(" of ")[1].split()[0].replace(",", "")) > 11_000
    assert view.visible_items().count() == 200  # a page of the list
    page.click("text=next \u203a")
    assert "page 2 of" in page.locator(".pager").inner_text()
    page.fill("input[type=search]", "run-1234")
    expect(page.locator(".count")).to_have_text(re.compile(r"^2 of "), timeout=30_000)
    assert view.titles()[0] == "Run run-1234  \u00b7  thread thread-2"


def test_notebook_views_render(view):
    # as a notebook shows _repr_html_: inside a page of its own
    frame_html = report.build(demo_log())._repr_html_()
    view.open(f"<!doctype html><html><body>{frame_html}</body></html>", "notebook", ready="iframe")
    expect(view.page.frame_locator("iframe").locator(".count")).to_have_text("8 of 8 items")
    replay = stream.replay(_demo_events())._repr_html_()
    view.open(f"<!doctype html><html><body>{replay}</body></html>", "replay", ready="iframe")
    inner = view.page.frame_locator("iframe").locator("#app")
    expect(inner).to_contain_text("Hello from agui-fast")
    expect(inner).to_contain_text('"status": "done"')
    assert view.errors == []
