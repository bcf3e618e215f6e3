// Encodes a JSON array of events (file argv[2]) with the official @ag-ui/encoder's protobuf
// path and writes the length-prefixed frames to stdout (tests/interop/test_interop_props.py).
const fs = require("fs");
const { EventEncoder } = require("@ag-ui/encoder");

const encoder = new EventEncoder({ accept: "application/vnd.ag-ui.event+proto" });
const events = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
process.stdout.write(Buffer.concat(events.map((e) => Buffer.from(encoder.encodeBinary(e)))));
