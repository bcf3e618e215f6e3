"""agui_fast.client: HttpAgent / SyncHttpAgent against a real server (the example server,
uvicorn in a thread) and against scripted responses (httpx.MockTransport)."""

import asyncio
import gzip
import json
import sys
import time
import warnings
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

from agui_fast import core  # noqa: E402
from agui_fast.client import HttpAgent, RunAgentResult, SyncHttpAgent  # noqa: E402
from agui_fast.encoder import AGUI_MEDIA_TYPE, EventEncoder  # noqa: E402
from agui_fast.errors import (  # noqa: E402
    AgentRunError,
    ContentTypeError,
    DecodeError,
    EventValidationError,
    HttpStatusError,
    IncompleteRunError,
    RunTimeoutError,
    TruncatedStreamError,
    VerificationError,
)
from agui_fast.proto import encode_protobuf_many  # noqa: E402

from servers import serve  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import server as example  # noqa: E402

RUN = core.RunAgentInput(thread_id="t1", run_id="r1", messages=[core.UserMessage(id="u1", content="hi")],
                         state={"ignored": True})
SSE = EventEncoder().encode_many


@pytest.fixture(scope="module")
def example_url():
    with serve(example.app) as url:
        yield url + "/agent"


async def collect(agen):
    return [e async for e in agen]


@pytest.mark.parametrize("accept", ["sse", "protobuf"])
def test_run_against_the_example_server(example_url, accept):
    agent = HttpAgent(example_url, accept=accept)
    assert asyncio.run(collect(agent.run(RUN))) == example.script(RUN)
    result = asyncio.run(agent.run_agent(RUN))
    assert isinstance(result, RunAgentResult)
    assert result.messages == example.meant_messages(RUN)
    assert result.state == example.meant_state
    assert [m.id for m in result.new_messages] == ["think1", "a1", "tool1"]


@pytest.mark.parametrize("accept", ["sse", "protobuf"])
def test_sync_twin(example_url, accept):
    agent = SyncHttpAgent(example_url, accept=accept)
    assert list(agent.run(RUN)) == example.script(RUN)
    result = agent.run_agent(RUN)
    assert result.messages == example.meant_messages(RUN) and result.state == example.meant_state


def test_input_as_dict_and_as_reference_model(example_url):
    agent = SyncHttpAgent(example_url)
    as_dict = {"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
    assert list(agent.run(as_dict)) == example.script(RUN)
    ref = pytest.importorskip("ag_ui.core")
    ref_input = ref.RunAgentInput(thread_id="t1", run_id="r1", state=None, tools=[], context=[],
                                  forwarded_props=None, messages=[ref.UserMessage(id="u1", role="user", content="hi")])
    assert list(agent.run(ref_input)) == example.script(RUN)


def test_bad_arguments():
    with pytest.raises(ValueError, match="accept"):
        HttpAgent("http://x", accept="json")
    with pytest.raises(TypeError):
        HttpAgent(42)
    with pytest.raises(TypeError):
        HttpAgent("http://x", client=httpx.Client())
    with pytest.raises(TypeError, match="RunAgentInput"):
        list(SyncHttpAgent("http://x").run(42))
    with pytest.raises(EventValidationError):
        list(SyncHttpAgent("http://x").run({"threadId": "t"}))


def test_http_error_in_the_server_validation(example_url):
    with pytest.raises(HttpStatusError) as info:
        list(SyncHttpAgent(example_url + "/missing").run(RUN))
    assert info.value.status_code == 404


# -- scripted responses ----------------------------------------------------------------------


def mock(body, content_type="text/event-stream", status=200, seen=None, chunks=None):
    """An agent whose server answers ``body`` (bytes; or ``chunks``: a list of byte chunks)."""

    def handler(request):
        if seen is not None:
            seen.append(request)
        stream = chunks if chunks is not None else [body]
        return httpx.Response(status, headers={"content-type": content_type}, content=iter(stream))

    return SyncHttpAgent("http://agent.test/run", client=httpx.Client(transport=httpx.MockTransport(handler)))


START = core.RunStartedEvent(thread_id="t1", run_id="r1")
TEXT = [core.TextMessageStartEvent(message_id="m", role="assistant"),
        core.TextMessageContentEvent(message_id="m", delta="hi"),
        core.TextMessageEndEvent(message_id="m")]
END = core.RunFinishedEvent(thread_id="t1", run_id="r1", result={"ok": 1})


def drain(agent, run_input=RUN):
    got = []
    try:
        for event in agent.run(run_input):
            got.append(event)
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        return got, exc
    return got, None


def test_request_body_and_headers():
    seen = []
    agent = mock(SSE([START, END]), seen=seen)
    agent = SyncHttpAgent("http://agent.test/run", headers={"Authorization": "Bearer x", "Accept": "text/plain"},
                          accept="protobuf", client=agent.client)
    assert list(agent.run(RUN)) == [START, END]
    request = seen[0]
    assert request.method == "POST"
    assert request.headers["authorization"] == "Bearer x"
    assert request.headers["accept"].startswith(AGUI_MEDIA_TYPE)  # the agent's Accept wins
    assert request.headers["content-type"] == "application/json"
    # As the reference client sends it: tools and context always (empty when none).
    assert core.RunAgentInput.model_validate_json(request.content) == core.RunAgentInput(
        thread_id="t1", run_id="r1", messages=RUN.messages, state=RUN.state, tools=[], context=[])


def test_timeout_is_the_given_clients_unless_set():
    seen = []

    def handler(request):
        seen.append(request.extensions["timeout"]["read"])
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=SSE([START, END]))

    client = httpx.Client(transport=httpx.MockTransport(handler), timeout=3.0)
    list(SyncHttpAgent("http://agent.test/run", client=client).run(RUN))
    list(SyncHttpAgent("http://agent.test/run", client=client, timeout=7.0).run(RUN))
    assert seen == [3.0, 7.0]


def test_protobuf_response_is_read_by_content_type():
    agent = mock(encode_protobuf_many([START, *TEXT, END]), content_type=AGUI_MEDIA_TYPE)
    assert list(agent.run(RUN)) == [START, *TEXT, END]


def test_http_status_error_carries_status_and_first_bytes():
    agent = mock(b"upstream exploded: " + b"x" * 5000, content_type="text/plain", status=502)
    got, exc = drain(agent)
    assert got == [] and isinstance(exc, HttpStatusError)
    assert exc.status_code == 502 and exc.body.startswith(b"upstream exploded") and len(exc.body) == 1024
    assert "502" in str(exc)


def test_wrong_content_type():
    got, exc = drain(mock(b'{"error": "nope"}', content_type="application/json"))
    assert isinstance(exc, ContentTypeError) and exc.content_type == "application/json"


def test_stream_cut_mid_frame_sse():
    body = SSE([START, *TEXT]) + b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","del'
    got, exc = drain(mock(body))
    assert got == [START, *TEXT] and isinstance(exc, DecodeError)


def test_stream_cut_mid_frame_protobuf():
    body = encode_protobuf_many([START, *TEXT, END])[:-3]
    got, exc = drain(mock(body, content_type=AGUI_MEDIA_TYPE))
    assert got == [START, *TEXT] and isinstance(exc, TruncatedStreamError)


def test_stream_without_run_finished_is_an_error():
    got, exc = drain(mock(SSE([START, *TEXT])))
    assert got == [START, *TEXT] and isinstance(exc, IncompleteRunError)
    got, exc = drain(mock(b""))
    assert got == [] and isinstance(exc, IncompleteRunError)


def test_bad_frame_raises_after_the_events_before_it():
    body = SSE([START, TEXT[0]]) + b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}\n\n' + SSE([END])
    got, exc = drain(mock(body))
    # The events before the bad frame, then the error: nothing after it, though the same
    # network chunk held it.
    assert got == [START, TEXT[0]] and isinstance(exc, EventValidationError) and exc.field == "$.delta"
    assert exc.events == [START, TEXT[0]]


def test_run_error_is_an_event_from_run_and_an_exception_from_run_agent():
    failed = core.RunErrorEvent(message="model overloaded", code="overloaded")
    body = SSE([START, *TEXT, failed])
    assert list(mock(body).run(RUN)) == [START, *TEXT, failed]
    with pytest.raises(AgentRunError) as info:
        mock(body).run_agent(RUN)
    assert info.value.code == "overloaded" and info.value.event == failed
    assert "model overloaded" in str(info.value)
    assert [m.content for m in info.value.messages] == ["hi", "hi"]  # applied up to the error


@pytest.mark.parametrize("split", ["one_chunk", "per_frame"])
def test_unknown_event_types_are_skipped_with_a_warning(split):
    future = b'data: {"type":"HOLOGRAM_START","hologramId":"h1"}\n\n'
    frames = [SSE([START]), future, SSE([TEXT[0]]), future, SSE(TEXT[1:] + [END])]
    agent = mock(None, chunks=[b"".join(frames)] if split == "one_chunk" else frames)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = list(agent.run(RUN))
    assert got == [START, *TEXT, END]
    assert len(caught) == 2 and "HOLOGRAM_START" in str(caught[0].message)


def test_unknown_event_type_in_the_unterminated_last_frame():
    body = SSE([START, END]) + b'data: {"type":"HOLOGRAM_END"}'  # decoded by close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(mock(body).run(RUN)) == [START, END]
    assert len(caught) == 1


def test_unknown_protobuf_variants_are_skipped_with_a_warning():
    unknown = bytes([0x9A, 0x06, 0x00])  # field 99 of the Event oneof: a newer protocol's event
    frame = len(unknown).to_bytes(4, "big") + unknown
    body = encode_protobuf_many([START, TEXT[0]]) + frame + encode_protobuf_many(TEXT[1:] + [END])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = list(mock(body, content_type=AGUI_MEDIA_TYPE).run(RUN))
    assert got == [START, *TEXT, END]
    assert len(caught) == 1


def test_run_agent_applies_chunks_snapshots_and_deltas():
    body = SSE([
        START,
        core.StateSnapshotEvent(snapshot={"a": [1]}),
        core.TextMessageChunkEvent(message_id="c1", role="assistant", delta="par"),
        core.TextMessageChunkEvent(message_id="c1", delta="tial"),
        core.ToolCallChunkEvent(tool_call_id="k1", tool_call_name="f", parent_message_id="c1", delta="{"),
        core.ToolCallChunkEvent(tool_call_id="k1", delta="}"),
        core.StateDeltaEvent(delta=[{"op": "add", "path": "/a/-", "value": 2}]),
        END,
    ])
    result = mock(body).run_agent(RUN)
    assert result.state == {"a": [1, 2]}
    assert result.result == {"ok": 1}
    assert result.messages == [
        RUN.messages[0],
        core.AssistantMessage(id="c1", content="partial", tool_calls=[
            core.ToolCall(id="k1", function=core.FunctionCall(name="f", arguments="{}"))]),
    ]
    assert RUN.messages == [core.UserMessage(id="u1", content="hi")]  # the input is not changed


def test_async_run_with_scripted_chunks_and_early_exit_closes_the_response():
    closed = []

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self):
            yield SSE([START])
            while True:
                yield SSE([TEXT[1]])
                await asyncio.sleep(0)

        async def aclose(self):
            closed.append(True)

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body())

    async def main():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            agent = HttpAgent("http://agent.test/run", client=client)
            events = agent.run(RUN)
            got = [await events.__anext__() for _ in range(3)]
            await events.aclose()
            return got

    assert asyncio.run(main()) == [START, TEXT[1], TEXT[1]]
    assert closed == [True]


def test_cancelling_a_run_closes_the_connection_and_the_server_generator():
    from agui_fast.asgi import EventStreamResponse
    from starlette.applications import Starlette
    from starlette.routing import Route

    finished = []

    async def endless():
        try:
            yield START
            while True:
                yield TEXT[1]
                await asyncio.sleep(0.01)
        finally:
            finished.append(True)

    async def endpoint(request):
        return EventStreamResponse(endless())

    app = Starlette(routes=[Route("/run", endpoint, methods=["POST"])])

    async def consume(url):
        async for event in HttpAgent(url).run(RUN):
            if event.type is core.EventType.TEXT_MESSAGE_CONTENT:
                raise asyncio.CancelledError  # as a cancelled task would see it

    with serve(app) as url:
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(consume(url + "/run"))
        for _ in range(200):
            if finished:
                break
            asyncio.run(asyncio.sleep(0.01))
    assert finished == [True]


# -- the client pipeline (run_agent), the request, the run's end -------------------------------


def frames(*events):
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


RS = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
RF = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}


def test_run_agent_verifies_the_sequence_and_hands_over_the_warnings():
    body = frames(RS, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "futureProp": 1}, RF)
    with pytest.raises(VerificationError) as info:
        mock(body).run_agent(RUN)
    assert info.value.rule == "R12" and info.value.index == 1
    # the warnings before the error ride on it
    assert [(w.kind, w.path) for w in info.value.warnings] == [("schema", "/futureProp")]
    # verify=False: the reducer warns instead (no message to append to)
    agent = SyncHttpAgent("http://agent.test/run", client=mock(body).client, verify=False)
    result = agent.run_agent(RUN)
    assert [w.kind for w in result.warnings] == ["schema", "apply"]
    index, message = result.warnings[0]  # still an (index, message) pair
    assert (index, result.warnings[0].path) == (1, "/futureProp") and "futureProp" in message


def test_run_agent_applies_nothing_after_a_bad_frame_of_the_same_chunk():
    body = frames(RS, {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}},
                  {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42},
                  {"type": "STATE_SNAPSHOT", "snapshot": {"n": 2}}, RF)
    for agent in (mock(body), mock(None, chunks=[body[:40], body[40:]])):
        seen = []
        with pytest.raises(EventValidationError) as info:
            agent.run_agent(RUN, on_event=seen.append)
        assert info.value.field == "$.delta" and info.value.frame_index == 2
        assert "expected string, received number" in str(info.value)
        assert [e.type for e in seen] == [core.EventType.RUN_STARTED, core.EventType.STATE_SNAPSHOT]
        assert seen[-1].snapshot == {"n": 1}


def test_a_run_restarted_and_cut_is_incomplete():
    body = frames(RS, RF, RS)
    got, exc = drain(mock(body))
    assert len(got) == 3 and isinstance(exc, IncompleteRunError)
    with pytest.raises(IncompleteRunError, match="after the last RUN_STARTED"):
        mock(body).run_agent(RUN)
    mock(frames(RS, RF, RS, RF)).run_agent(RUN)  # two whole runs


def _failing_body(exc):
    class Body(httpx.SyncByteStream):
        def __iter__(self):
            yield frames(RS)
            raise exc

    return Body()


@pytest.mark.parametrize("exc", [httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
                                 httpx.ReadError("reset")])
def test_a_cut_connection_is_an_incomplete_run(exc):
    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_failing_body(exc))

    agent = SyncHttpAgent("http://agent.test/run", client=httpx.Client(transport=httpx.MockTransport(handler)))
    got, err = drain(agent)
    assert [e.type for e in got] == [core.EventType.RUN_STARTED]
    assert isinstance(err, IncompleteRunError) and err.__cause__ is exc
    with pytest.raises(IncompleteRunError):
        agent.run_agent(RUN)


def test_a_badly_compressed_body_is_an_incomplete_run():
    class Body(httpx.SyncByteStream):
        def __iter__(self):
            yield gzip.compress(frames(RS, RF))[:-12] + b"garbage!"

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream", "content-encoding": "gzip"}, stream=Body())

    agent = SyncHttpAgent("http://agent.test/run", client=httpx.Client(transport=httpx.MockTransport(handler)))
    with pytest.raises(IncompleteRunError, match="could not be decoded") as info:
        agent.run_agent(RUN)
    assert isinstance(info.value.__cause__, httpx.DecodingError)


def test_a_deadline_ends_a_stream_of_keep_alives():
    class Forever(httpx.SyncByteStream):
        def __iter__(self):
            yield frames(RS)
            while True:
                time.sleep(0.01)
                yield b": keep-alive\n\n"

    class AsyncForever(httpx.AsyncByteStream):
        async def __aiter__(self):
            yield frames(RS)
            while True:
                await asyncio.sleep(0.01)
                yield b": keep-alive\n\n"

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Forever())

    def async_handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=AsyncForever())

    agent = SyncHttpAgent("http://agent.test/run", client=httpx.Client(transport=httpx.MockTransport(handler)), deadline=0.2)
    start = time.monotonic()
    with pytest.raises(RunTimeoutError):
        agent.run_agent(RUN)
    assert time.monotonic() - start < 5

    async def main():
        async with httpx.AsyncClient(transport=httpx.MockTransport(async_handler)) as client:
            agent = HttpAgent("http://agent.test/run", client=client, deadline=0.2)
            with pytest.raises(RunTimeoutError):
                await agent.run_agent(RUN)
            with pytest.raises(RunTimeoutError):
                async for _ in agent.run(RUN):
                    pass

    asyncio.run(main())
    assert issubclass(RunTimeoutError, IncompleteRunError)
    for bad in (0, -1):
        with pytest.raises(ValueError):
            HttpAgent("http://x", deadline=bad)
    with pytest.raises(TypeError):
        HttpAgent("http://x", deadline="1")


def _sent(agent_kwargs, run_input, body=None):
    seen = []
    client = mock(body or frames(RS, RF), seen=seen).client
    agent = SyncHttpAgent("http://agent.test/run", client=client, **agent_kwargs)
    result = agent.run_agent(run_input)
    return json.loads(seen[0].content), result


def test_the_request_legacy_parts_upgraded_protocol_version_and_eras():
    run_input = {"threadId": "t1", "runId": "r1", "messages": [
        {"id": "u1", "role": "user", "content": [{"type": "text", "text": "look"},
                                                 {"type": "binary", "mimeType": "image/png", "url": "https://x/y.png"}]},
        {"id": "a1", "role": "assistant", "content": "ok", "subagentRunId": "s1"},
        {"id": "act", "role": "activity", "activityType": "search", "content": {"q": 1}}]}
    sent, result = _sent({}, run_input)
    assert sent["messages"][0]["content"][1] == {"type": "image", "source": {"type": "url", "value": "https://x/y.png", "mimeType": "image/png"}}
    assert [m["id"] for m in sent["messages"]] == ["u1", "a1"]  # activity messages are this side's
    assert "protocolVersion" not in sent
    # the run starts from the input's messages, upgraded (typed results)
    assert result.messages[0].content[1].source.value == "https://x/y.png" and len(result.messages) == 3
    sent, _ = _sent({"protocol_version": "1.1"}, run_input)
    assert sent["protocolVersion"] == "1.1"
    sent, result = _sent({"protocol_version": "1.1", "max_protocol_version": "0.0.39"}, run_input)
    assert "protocolVersion" not in sent and sent["messages"][0]["content"] == "look"
    assert "subagentRunId" not in sent["messages"][1]
    assert any("DROPS non-text parts" in w.message and w.kind == "request" and w.index is None for w in result.warnings)
    with pytest.raises(ValueError, match="max_protocol_version"):
        SyncHttpAgent("http://x", max_protocol_version="old")
    with pytest.raises(ValueError, match="protocol_version"):
        SyncHttpAgent("http://x", protocol_version="1")


def test_an_old_peers_subagent_events_are_dropped_with_a_warning():
    body = frames(RS, {"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "n"},
                  {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "subagentRunId": "s"},
                  {"type": "TEXT_MESSAGE_END", "messageId": "m", "subagentRunId": "s"},
                  {"type": "SUBAGENT_FINISHED", "subagentRunId": "s"}, RF)
    seen = []
    agent = SyncHttpAgent("http://agent.test/run", client=mock(body).client, max_protocol_version="0.0.57")
    result = agent.run_agent(RUN, on_event=seen.append)
    assert [e.type.value for e in seen] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert result.messages[-1].subagent_run_id is None
    assert any("dropping SUBAGENT_STARTED" in w.message for w in result.warnings)


def test_a_producer_declaring_a_newer_protocol_warns_when_the_client_declares_one():
    body = frames({**RS, "protocolVersion": "1.2"}, RF)
    _, quiet = _sent({}, RUN, body)
    assert quiet.warnings == []
    _, result = _sent({"protocol_version": "1.1"}, RUN, body)
    assert [(w.kind, w.index) for w in result.warnings] == [("version", 0)]
    assert "this client speaks 1.1" in result.warnings[0].message
