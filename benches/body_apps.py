"""The FastAPI app of ``bench_server.py``'s request-body groups: the same endpoint written the
documented way (``input_data: RunAgentInput``), once with ``agui_fast.core``'s class and once
with ``ag_ui.core``'s, answering with the number of messages (so the body is validated and
read, and the response is the same small one for both)."""

import ag_ui.core as ref
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

import agui_fast.core as ours

app = FastAPI()


@app.post("/ours")
async def run_ours(input_data: ours.RunAgentInput):
    return PlainTextResponse(str(len(input_data.messages)))


@app.post("/reference")
async def run_reference(input_data: ref.RunAgentInput):
    return PlainTextResponse(str(len(input_data.messages)))
