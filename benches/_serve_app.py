"""The servers of the serving benches (``bench_server.py``): one Starlette
app, one route per variant, each streaming ``n`` small events built per request, the way an
agent server builds them.

- ``/ours``: ``agui_fast.core`` events through ``EventStreamResponse`` (coalesced sends);
- ``/ours-single``: the same with ``coalesce=False`` (one send per event);
- ``/reference``: ``ag_ui.core`` events, ``ag_ui.encoder.EventEncoder`` and a per-event
  ``StreamingResponse`` (the reference's documented server pattern).
"""

from ag_ui import core as ref_core
from ag_ui.encoder import EventEncoder as RefEncoder
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

from agui_fast import core
from agui_fast.asgi import EventStreamResponse


def _n(request) -> int:
    return int(request.query_params.get("n", "20000"))


async def ours_events(n):
    yield core.RunStartedEvent(thread_id="t1", run_id="r1")
    yield core.TextMessageStartEvent(message_id="m1", role="assistant")
    for i in range(n - 4):
        yield core.TextMessageContentEvent(message_id="m1", delta=f"token {i} ")
    yield core.TextMessageEndEvent(message_id="m1")
    yield core.RunFinishedEvent(thread_id="t1", run_id="r1")


async def ours(request):
    return EventStreamResponse(ours_events(_n(request)), accept=request.headers.get("accept"))


async def ours_single(request):
    return EventStreamResponse(ours_events(_n(request)), accept=request.headers.get("accept"), coalesce=False)


async def reference(request):
    encoder = RefEncoder(accept=request.headers.get("accept"))
    n = _n(request)
    E = ref_core.EventType

    async def gen():
        yield encoder.encode(ref_core.RunStartedEvent(type=E.RUN_STARTED, thread_id="t1", run_id="r1"))
        yield encoder.encode(ref_core.TextMessageStartEvent(type=E.TEXT_MESSAGE_START, message_id="m1",
                                                            role="assistant"))
        for i in range(n - 4):
            yield encoder.encode(ref_core.TextMessageContentEvent(type=E.TEXT_MESSAGE_CONTENT, message_id="m1",
                                                                  delta=f"token {i} "))
        yield encoder.encode(ref_core.TextMessageEndEvent(type=E.TEXT_MESSAGE_END, message_id="m1"))
        yield encoder.encode(ref_core.RunFinishedEvent(type=E.RUN_FINISHED, thread_id="t1", run_id="r1"))

    return StreamingResponse(gen(), media_type=encoder.get_content_type())


app = Starlette(routes=[
    Route("/ours", ours, methods=["GET", "POST"]),
    Route("/ours-single", ours_single, methods=["GET", "POST"]),
    Route("/reference", reference, methods=["GET", "POST"]),
])
