// The official @ag-ui/client HttpAgent runs one agent run against URL and prints, as JSON,
// every event it saw, its final messages and state, the run result and the response's
// content type.  Usage: node client_run.js URL sse|protobuf < RunAgentInput.json
"use strict";
const fs = require("fs");
const { runOne } = require("./client_runs.js");

const [url, format] = process.argv.slice(2);
runOne(url, format, JSON.parse(fs.readFileSync(0, "utf8")))
  .then((out) => process.stdout.write(JSON.stringify(out)))
  .catch((err) => {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  });
