// client_run.js for many runs in one process: the official @ag-ui/client HttpAgent runs the
// agent once per [URL, sse|protobuf] pair and prints, as one JSON array, what client_run.js
// prints for each (its error's message instead where the run fails).
// Usage: node client_runs.js < {"input": RunAgentInput, "runs": [[URL, format], ...]}
"use strict";
const fs = require("fs");
const { HttpAgent } = require("@ag-ui/client");

const { input, runs } = JSON.parse(fs.readFileSync(0, "utf8"));

async function runOne(url, format) {
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
  try {
    await agent.runAgent({ runId: input.runId }, { onEvent: ({ event }) => { events.push(event); } });
  } catch (err) {
    return { contentType, events, error: String(err && err.message ? err.message : err) };
  }
  return { contentType, events, messages: agent.messages, state: agent.state };
}

(async () => {
  const out = [];
  for (const [url, format] of runs) out.push(await runOne(url, format));
  process.stdout.write(JSON.stringify(out));
})().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
