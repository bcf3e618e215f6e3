"""The README's server snippets, run as written: a good body streams the run, a bad body is
answered 422 with a message that names the request body and what is wrong (never a 500 and a
traceback). The runnable example server answers the same way."""

from __future__ import annotations

import asyncio
import re
import sys

import pytest

from conftest import repo_file

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from agui_fast.decoder import decode_sse  # noqa: E402

GOOD = b'{"threadId":"t1","runId":"r1","messages":[],"tools":[],"context":[],"state":{},"forwardedProps":{}}'
BAD = [
    (b"{", "not JSON"),
    (b"", "not JSON"),
    (b"{}", "threadId"),
    (b'{"threadId":1,"runId":"r1","messages":[],"tools":[],"context":[],"state":{},"forwardedProps":{}}', "$.threadId"),
    (b'{"threadId":"t","runId":"r","messages":[{"role":"user"}],"tools":[],"context":[],"state":{},'
     b'"forwardedProps":{}}', "$.messages[0]"),
    (b"[]", "Expected `object`"),
]


def server_snippets():
    text = repo_file("README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return [b for b in blocks if re.search(r"^app = (FastAPI|Starlette)\(", b, re.M)]


def post_all(app, path="/agent"):
    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [await client.post(path, content=body, headers={"accept": "text/event-stream"})
                    for body in [GOOD] + [b for b, _ in BAD]]

    return asyncio.run(main())


def check_answers(answers):
    good, *bad = answers
    assert good.status_code == 200, good.text
    events = decode_sse(good.content)
    assert events[0].type == "RUN_STARTED" and events[-1].type == "RUN_FINISHED"
    for (body, says), r in zip(BAD, bad):
        assert r.status_code == 422, (body, r.status_code, r.text)
        text = r.text
        assert "invalid request body" in text and says in text, (body, text)
        assert "Traceback" not in text


def test_readme_has_a_server_snippet():
    assert server_snippets()


@pytest.mark.parametrize("snippet", server_snippets())
def test_readme_server_snippet_as_written(snippet):
    namespace: dict = {"__name__": "readme_snippet"}
    exec(compile(snippet, "README.md", "exec"), namespace)
    check_answers(post_all(namespace["app"]))


def test_example_server_answers_bad_bodies_with_422():
    sys.path.insert(0, str(repo_file("examples")))
    try:
        import server as example
    finally:
        sys.path.pop(0)
    check_answers(post_all(example.app))
