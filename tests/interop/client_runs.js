// The official @ag-ui/client HttpAgent runs the agent once per [URL, sse|protobuf] pair and
// prints, as one JSON array, what client_run.js prints for each (the error's message instead
// where a run fails). Usage: node client_runs.js < {"input": RunAgentInput, "runs": [[URL, format], ...]}
// runOne is client_run.js's run too.
"use strict";
const fs = require("fs");
const { HttpAgent } = require("@ag-ui/client");

// One run: every event the agent saw, its final messages and state, the run result and the
// response's content type. HttpAgent always sends "Accept: text/event-stream"; for protobuf
// a custom fetch rewrites it.
async function runOne(url, format, input) {
  let contentType = null;
  const agent = new HttpAgent({
    url,
    threadId: input.threadId,
    initialMessages: input.messages,
    initialState: input.state ?? {},
    fetch: async (u, init) => {
      if (format === "protobuf") {
        init = { ...init, headers: { ...init.headers, Accept: "application/vnd.ag-ui.event+proto" } };
      }
      const response = await fetch(u, init);
      contentType = response.headers.get("content-type");
      return response;
    },
  });
  const events = [];
  const result = await agent.runAgent({ runId: input.runId }, { onEvent: ({ event }) => { events.push(event); } });
  return {
    contentType, events, messages: agent.messages, state: agent.state,
    result: result.result ?? null, newMessages: result.newMessages,
  };
}

module.exports = { runOne };

if (require.main === module) {
  const { input, runs } = JSON.parse(fs.readFileSync(0, "utf8"));
  (async () => {
    const out = [];
    for (const [url, format] of runs) {
      out.push(await runOne(url, format, input).catch((err) => ({ error: String(err && err.message ? err.message : err) })));
    }
    process.stdout.write(JSON.stringify(out));
  })().catch((err) => {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  });
}
