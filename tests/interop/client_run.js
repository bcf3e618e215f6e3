// The official @ag-ui/client HttpAgent runs one agent run against URL and prints, as JSON,
// every event it saw, its final messages and state, the run result and the response's
// content type.  Usage: node client_run.js URL sse|protobuf < RunAgentInput.json
// HttpAgent always sends "Accept: text/event-stream"; for protobuf a custom fetch rewrites it.
"use strict";
const fs = require("fs");
const { HttpAgent } = require("@ag-ui/client");

const [url, format] = process.argv.slice(2);
const input = JSON.parse(fs.readFileSync(0, "utf8"));
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
agent
  .runAgent({ runId: input.runId }, { onEvent: ({ event }) => { events.push(event); } })
  .then((result) => {
    process.stdout.write(JSON.stringify({
      contentType, events, messages: agent.messages, state: agent.state,
      result: result.result ?? null, newMessages: result.newMessages,
    }));
  })
  .catch((err) => {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  });
