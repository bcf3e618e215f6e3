// A tiny HTTP server on 127.0.0.1 that answers every POST with the events of EVENTS.json,
// written by the official @ag-ui/encoder: SSE, or protobuf when the Accept header asks for
// it (EventEncoder's own negotiation). Prints its port; exits when stdin closes.
// Usage: node encoder_server.js EVENTS.json
"use strict";
const fs = require("fs");
const http = require("http");
const { EventEncoder } = require("@ag-ui/encoder");

const events = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    const encoder = new EventEncoder({ accept: req.headers.accept });
    const contentType = encoder.getContentType();
    res.writeHead(200, { "Content-Type": contentType, "Cache-Control": "no-cache" });
    for (const event of events) {
      res.write(contentType === "text/event-stream" ? encoder.encodeSSE(event) : encoder.encodeBinary(event));
    }
    res.end();
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${server.address().port}\n`);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
