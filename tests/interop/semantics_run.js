// The official @ag-ui/client 1.0.0 stream stages on sequences of events, for the
// differential test (test_semantics_diff.py). Reads JSONL on stdin, one case a line:
//   {"events": [...], "messages": [...], "state": ...}
// and writes JSONL on stdout, one outcome a line, in the same order:
//   chunks:   transformChunks over the events: output (up to an error), error, index, warnings
//   verify:   verifyEvents over the events as given: how many passed, error
//   apply:    defaultApplyEvents over the expanded events (as AbstractAgent calls it, no
//             subscribers, one event at a time): final messages, state, pending interrupts,
//             per-event mutation flags (- m s b), error and its index, warnings
//   compact:  compactEvents over the events: output, error, warnings
//   boundary: CompatibilityBoundary (0.x events converted) over the events: output, error, warnings
//   pipeline: AbstractAgent.runAgent over the events (compatibility boundary, schema
//             enforcement, chunks, verification, reducer): final messages, state, error,
//             warnings
// Usage: node semantics_run.js < cases.jsonl > outcomes.jsonl
"use strict";
const fs = require("fs");
const { from, Subject, EMPTY } = require("rxjs");
const { map } = require("rxjs/operators");
const client = require("@ag-ui/client");

const { transformChunks, verifyEvents, defaultApplyEvents, compactEvents, AbstractAgent, CompatibilityBoundary } = client;

// Warnings are captured with the index of the event being processed (console.warn).
let warnings = null;
let current = -1;
console.warn = (...args) => {
  if (warnings) warnings.push([current, String(args[0]).split("\n")[0].slice(0, 300)]);
};
console.error = () => {};

// A value the reference built that JSON cannot hold (fast-json-patch copies a document
// into itself by reference: a cyclic state) is recorded as {"__unserializable__": why}.
const clone = (v) => {
  if (v === undefined) return undefined;
  try {
    return JSON.parse(JSON.stringify(v));
  } catch (e) {
    return { __unserializable__: errText(e).split("\n")[0] };
  }
};
const errText = (e) => (e && e.message !== undefined ? String(e.message) : String(e));
const errName = (e) => (e && e.name ? String(e.name) : typeof e);

class ScriptAgent extends AbstractAgent {
  constructor(config, events) {
    super(config);
    this.script = events;
  }
  run() {
    return from(clone(this.script));
  }
}

function runSync(events, operator) {
  // transformChunks and verifyEvents are synchronous operators: the last event tapped
  // before an error is the failing one.
  const out = [];
  let error = null;
  let index = null;
  warnings = [];
  current = -1;
  from(clone(events))
    .pipe(map((e, i) => { current = i; return e; }), operator)
    .subscribe({ next: (e) => out.push(e), error: (e) => { error = e; index = current; } });
  const w = warnings;
  warnings = null;
  return { out, error: error && { message: errText(error), name: errName(error), index }, warnings: w };
}

async function runApply(events, messages, state) {
  const agent = new ScriptAgent({ initialMessages: clone(messages), initialState: clone(state) }, []);
  const input = { threadId: "t", runId: "r", state: clone(state), messages: clone(messages), tools: [], context: [], forwardedProps: {} };
  const subject = new Subject();
  const flags = [];
  let error = null;
  let done = false;
  warnings = [];
  defaultApplyEvents(input, subject, agent, []).subscribe({
    next: (m) => {
      const f = flags[current];
      const hasM = m.messages !== undefined;
      const hasS = m.state !== undefined;
      const c = hasM && hasS ? "b" : hasM ? "m" : hasS ? "s" : "-";
      flags[current] = f === undefined || f === "-" ? c : f === c ? f : "b";
      if (hasM) agent.messages = m.messages;
      if (hasS) agent.state = m.state;
    },
    error: (e) => { error = { message: errText(e), name: errName(e), index: current }; },
    complete: () => { done = true; },
  });
  for (let i = 0; i < events.length && error === null; i++) {
    current = i;
    flags[i] = "-";
    subject.next(clone(events[i]));
    // the reducer is a concatMap of async functions: let it settle before the next event
    await new Promise((r) => setImmediate(r));
  }
  if (error === null) subject.complete();
  await new Promise((r) => setImmediate(r));
  const w = warnings;
  warnings = null;
  return {
    messages: clone(agent.messages), state: clone(agent.state), pendingInterrupts: clone(agent.pendingInterrupts),
    flags: flags.join(""), error, warnings: w, done,
  };
}

function runBoundary(events) {
  // The always-installed inbound middleware, alone: 0.x events and legacy nulls converted.
  const input = { threadId: "t", runId: "r", state: {}, messages: [], tools: [], context: [], forwardedProps: {} };
  const out = [];
  let error = null;
  warnings = [];
  current = -1;
  new CompatibilityBoundary()
    .run(input, { run: () => from(clone(events)).pipe(map((e, i) => { current = i; return e; })) })
    .subscribe({ next: (e) => out.push(clone(e)), error: (e) => { error = { message: errText(e), name: errName(e), index: current }; } });
  const w = warnings;
  warnings = null;
  return { output: out, error, warnings: w };
}

async function runPipeline(events, messages, state) {
  const agent = new ScriptAgent({ initialMessages: clone(messages), initialState: clone(state) }, events);
  let error = null;
  warnings = [];
  current = -1;
  try {
    await agent.runAgent({ runId: "r" });
  } catch (e) {
    error = { message: errText(e), name: errName(e) };
  }
  const w = warnings;
  warnings = null;
  return { messages: clone(agent.messages), state: clone(agent.state), error, warnings: w };
}

async function main() {
  const lines = fs.readFileSync(0, "utf8").split("\n").filter((l) => l.trim());
  const outLines = [];
  for (const line of lines) {
    const c = JSON.parse(line);
    const events = c.events;
    const chunks = runSync(events, transformChunks());
    const verify = runSync(events, verifyEvents());
    // AbstractAgent's constructor: initialState ?? {} (a null state is no state)
    const state = c.state ?? {};
    const apply = await runApply(chunks.out, c.messages ?? [], state);
    let compact;
    warnings = [];
    try {
      compact = { out: compactEvents(clone(events)).map(clone), error: null };
    } catch (e) {
      compact = { out: null, error: { message: errText(e), name: errName(e) } };
    }
    compact.warnings = warnings;
    warnings = null;
    const pipeline = c.pipeline === false ? null : await runPipeline(events, c.messages ?? [], state);
    outLines.push(JSON.stringify({
      chunks: { output: chunks.out, error: chunks.error, warnings: chunks.warnings },
      verify: { passed: verify.out.length, error: verify.error },
      apply,
      compact,
      boundary: runBoundary(events),
      pipeline,
    }));
  }
  fs.writeFileSync(1, outLines.join("\n") + "\n");
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
