//! Sequence verification: the rules of the reference `verifyEvents` (R01-R31, see
//! `tests/vectors/client/README.md`). A violation names the rule, the event index and
//! the ids involved.

use super::event::{type_str, EventType};
use super::js::{self, strict_eq};
use super::{Stage, StreamError};
use serde_json::Value;
use std::collections::HashMap;

/// Who opened an entity: `None` is the parent agent (the opener had no tag).
type Owner = Option<Value>;

/// Insertion-ordered set of ids (error messages list them in opening order), each add
/// and remove in constant time (a removal that shifted the rest made a log of many open
/// ids quadratic): the order is each id's number, sorted only for an error message.
#[derive(Debug, Default)]
struct IdSet {
    ids: HashMap<String, u64>,
    next: u64,
}

impl IdSet {
    fn has(&self, k: &str) -> bool {
        self.ids.contains_key(k)
    }
    fn add(&mut self, k: String) {
        let next = &mut self.next;
        self.ids.entry(k).or_insert_with(|| {
            *next += 1;
            *next
        });
    }
    fn remove(&mut self, k: &str) {
        self.ids.remove(k);
    }
    /// The ids in the order they were added.
    fn ordered(&self) -> Vec<&String> {
        let mut ids: Vec<(&String, &u64)> = self.ids.iter().collect();
        ids.sort_unstable_by_key(|&(_, n)| *n);
        ids.into_iter().map(|(k, _)| k).collect()
    }
    fn list(&self) -> String {
        self.ordered().iter().map(|k| k.trim_start_matches('\u{0}')).collect::<Vec<_>>().join(", ")
    }
    fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[derive(Debug, Default)]
struct Owners {
    message: HashMap<String, Owner>,
    tool_call: HashMap<String, Owner>,
    activity: HashMap<String, Owner>,
    reasoning: HashMap<String, Owner>,
}

/// Incremental verifier: `push` each event in order.
#[derive(Debug, Default)]
pub struct EventVerifier {
    messages: IdSet,
    tool_calls: IdSet,
    reasoning_spans: IdSet,
    reasoning_messages: IdSet,
    owners: Owners,
    /// Active steps per owner, owners in first-use order (indexed by owner).
    steps: Vec<(Owner, IdSet)>,
    step_owners: js::Ids<usize>,
    subagents: IdSet,
    closed_subagents: IdSet,
    run_finished: bool,
    run_error: bool,
    run_started: bool,
    first_seen: bool,
    index: usize,
}

fn tag_of(event: &Value) -> Option<&Value> {
    event.get("subagentRunId")
}

fn owner_name(owner: Option<&Value>) -> String {
    owner.map_or("(the parent agent)".to_string(), |o| js::show(Some(o)))
}

fn fail(rule: &'static str, msg: String) -> StreamError {
    StreamError::new(Stage::Verify, msg).rule(rule)
}

/// `subagentTagError`: a present tag that differs from a known owner.
fn tag_error(
    rule: &'static str,
    ty: &str,
    tag: Option<&Value>,
    owner: Option<&Owner>,
    kind: &str,
    id: &dyn Fn() -> String,
) -> Result<(), StreamError> {
    let (Some(tag), Some(owner)) = (tag, owner) else { return Ok(()) };
    if !strict_eq(owner.as_ref(), Some(tag)) {
        let id = id();
        return Err(fail(
            rule,
            format!(
                "Cannot send '{ty}': subagentRunId '{}' does not match the {kind} '{id}' opener's subagent '{}'.",
                js::show(Some(tag)),
                owner_name(owner.as_ref())
            ),
        )
        .ids([id, js::show(Some(tag))]));
    }
    Ok(())
}

/// A CONTENT / ARGS / END event: its entity must be open (`open_rule`) and a tag must
/// not disagree with the entity's owner (`tag_rule`); an END closes the entity.
struct Continuation {
    open_rule: &'static str,
    tag_rule: &'static str,
    entity: &'static str,
    owner: &'static str,
    start: &'static str,
    /// The END's hint is the CONTENT's ("Start a … first."), as the reference words a
    /// reasoning message's, not "A '…' event must be sent first."
    end_as_content: bool,
}

const TEXT: Continuation =
    Continuation { open_rule: "R12", tag_rule: "R13", entity: "text message", owner: "message", start: "TEXT_MESSAGE_START", end_as_content: false };
const TOOL: Continuation =
    Continuation { open_rule: "R17", tag_rule: "R17", entity: "tool call", owner: "tool call", start: "TOOL_CALL_START", end_as_content: false };
const REASONING: Continuation = Continuation {
    open_rule: "R23",
    tag_rule: "R23",
    entity: "reasoning message",
    owner: "reasoning message",
    start: "REASONING_MESSAGE_START",
    end_as_content: true,
};
const REASONING_SPAN: Continuation =
    Continuation { open_rule: "R23", tag_rule: "R23", entity: "reasoning span", owner: "reasoning message", start: "REASONING_START", end_as_content: false };

impl Continuation {
    fn check(
        &self,
        open: &mut IdSet,
        owners: &HashMap<String, Owner>,
        content: bool,
        name: &str,
        tag: Option<&Value>,
        (id, show): (&str, &dyn Fn() -> String),
    ) -> Result<(), StreamError> {
        if !open.has(id) {
            let hint = if content || self.end_as_content {
                format!("Start a {} with '{}' first.", self.entity, self.start)
            } else {
                format!("A '{}' event must be sent first.", self.start)
            };
            let msg = format!("Cannot send '{name}' event: No active {} found with ID '{}'. {hint}", self.entity, show());
            return Err(fail(self.open_rule, msg).ids([show()]));
        }
        tag_error(self.tag_rule, name, tag, owners.get(id), self.owner, show)?;
        if !content {
            open.remove(id);
        }
        Ok(())
    }
}

impl EventVerifier {
    pub fn new() -> Self {
        Self::default()
    }

    fn reset_run(&mut self) {
        let index = self.index;
        let first_seen = self.first_seen;
        *self = EventVerifier { run_started: true, first_seen, index, ..Default::default() };
    }

    fn steps_for(&mut self, owner: Option<&Value>) -> &mut IdSet {
        // (an object or array owner equals no other: never found again)
        let key = js::id_ref(owner);
        let pos = match key.as_ref().and_then(|k| self.step_owners.get(k)) {
            Some(&p) => p,
            None => {
                self.steps.push((owner.cloned(), IdSet::default()));
                if let Some(k) = key {
                    *self.step_owners.entry(&k) = self.steps.len() - 1;
                }
                self.steps.len() - 1
            }
        };
        &mut self.steps[pos].1
    }

    fn seed_owners(&mut self, messages: Option<&Value>, authoritative: bool, rule: &'static str) -> Result<(), StreamError> {
        let Some(Value::Array(messages)) = messages else { return Ok(()) };
        for msg in messages {
            let Some(Value::String(id)) = msg.get("id") else { continue };
            let tag = msg.get("subagentRunId");
            if matches!(tag, Some(Value::Null)) {
                return Err(fail(
                    rule,
                    format!("Cannot send a message (id '{id}') with 'subagentRunId: null'. The field is optional — omit it entirely."),
                )
                .ids([id.clone()]));
            }
            let bucket = match msg.get("role").and_then(Value::as_str) {
                Some("reasoning") => &mut self.owners.reasoning,
                Some("activity") => &mut self.owners.activity,
                _ => &mut self.owners.message,
            };
            if authoritative || !bucket.contains_key(id) {
                bucket.insert(id.clone(), tag.cloned());
            }
            match msg.get("toolCalls") {
                Some(Value::Array(calls)) => {
                    for tc in calls {
                        if let Some(Value::String(tcid)) = tc.get("id") {
                            if authoritative || !self.owners.tool_call.contains_key(tcid) {
                                self.owners.tool_call.insert(tcid.clone(), js::defined(tag).cloned());
                            }
                        }
                    }
                }
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(_) => {
                    return Err(fail(rule, format!("message '{id}': toolCalls is not iterable")).ids([id.clone()]));
                }
            }
        }
        Ok(())
    }

    /// Check one event. On error the verifier's state is unspecified: the stream is over.
    pub fn push(&mut self, event: &Value) -> Result<(), StreamError> {
        let index = self.index;
        self.index += 1;
        self.check(event).map_err(|e| e.at(index, event))
    }

    /// R04, R03, R01, R02 and the reset of R05: what every event is checked against first.
    fn lifecycle(&mut self, ty: EventType, name: &str) -> Result<(), StreamError> {
        use EventType as E;
        if self.run_error && ty != E::RunStarted {
            return Err(fail(
                "R04",
                format!("Cannot send event type '{name}': The run has already errored with 'RUN_ERROR'. No further events can be sent."),
            ));
        }
        if self.run_finished && ty != E::RunError && ty != E::RunStarted {
            return Err(fail(
                "R03",
                format!("Cannot send event type '{name}': The run has already finished with 'RUN_FINISHED'. Start a new run with 'RUN_STARTED'."),
            ));
        }
        if !self.first_seen {
            self.first_seen = true;
            if ty != E::RunStarted && ty != E::RunError {
                return Err(fail("R01", "First event must be 'RUN_STARTED'".into()));
            }
        } else if ty == E::RunStarted {
            if self.run_started && !self.run_finished && !self.run_error {
                return Err(fail(
                    "R02",
                    "Cannot send 'RUN_STARTED' while a run is still active. The previous run must be finished with 'RUN_FINISHED' before starting a new run.".into(),
                ));
            }
            if self.run_finished || self.run_error {
                self.reset_run();
            }
        }
        Ok(())
    }

    /// A plain delta event (`TEXT_MESSAGE_CONTENT`, `REASONING_MESSAGE_CONTENT` or
    /// `TOOL_CALL_ARGS` with a string id and delta, untagged): the same checks as
    /// [`push`](Self::push) on its event object, without one.
    pub fn push_delta(&mut self, kind: EventType, id: &str) -> Result<(), StreamError> {
        let index = self.index;
        self.index += 1;
        let name = kind.name();
        let show = || id.to_string();
        let r = self.lifecycle(kind, name).and_then(|()| match kind {
            EventType::TextMessageContent => TEXT.check(&mut self.messages, &self.owners.message, true, name, None, (id, &show)),
            EventType::ToolCallArgs => TOOL.check(&mut self.tool_calls, &self.owners.tool_call, true, name, None, (id, &show)),
            EventType::ReasoningMessageContent => {
                REASONING.check(&mut self.reasoning_messages, &self.owners.reasoning, true, name, None, (id, &show))
            }
            other => Err(fail("R31", format!("push_delta does not take {}", other.name()))),
        });
        r.map_err(|mut e| {
            e.index = index;
            e.event_type = name.to_string();
            e
        })
    }

    fn check(&mut self, event: &Value) -> Result<(), StreamError> {
        let ty = EventType::of(event);
        let name = type_str(event);
        use EventType as E;
        self.lifecycle(ty, name)?;
        let tag = tag_of(event);
        if matches!(tag, Some(Value::Null)) {
            return Err(fail(
                "R06",
                format!("Cannot send '{name}' with 'subagentRunId: null'. The field is optional — omit it entirely."),
            ));
        }
        if matches!(ty, E::SubagentStarted | E::SubagentFinished | E::SubagentError) {
            let optionals: &[&str] = match ty {
                E::SubagentStarted => &["description", "parentSubagentRunId", "parentToolCallId", "parentMessageId"],
                E::SubagentFinished => &["outcome"],
                _ => &["code"],
            };
            for field in optionals {
                if matches!(event.get(*field), Some(Value::Null)) {
                    return Err(fail(
                        "R07",
                        format!("Cannot send '{name}' with '{field}: null'. The field is optional — omit it entirely."),
                    ));
                }
            }
            if let Some(outcome) = js::defined(event.get("outcome")) {
                let t = outcome.get("type");
                let ok = matches!(t, Some(Value::String(s)) if s == "success" || s == "suspended");
                if !ok {
                    return Err(fail(
                        "R08",
                        format!(
                            "Cannot send '{name}' with outcome type '{}'. The outcome is either {{ type: \"success\" }} or {{ type: \"suspended\" }}.",
                            js::show(t)
                        ),
                    ));
                }
                match outcome.get("interruptIds") {
                    Some(Value::Null) => {
                        return Err(fail(
                            "R08",
                            format!("Cannot send '{name}' with 'outcome.interruptIds: null'. The field is optional — omit it entirely."),
                        ))
                    }
                    Some(Value::Array(ids)) if ids.iter().any(|i| !i.is_string()) => {
                        return Err(fail(
                            "R08",
                            format!("Cannot send '{name}' with a non-string entry in 'outcome.interruptIds'. Interrupt ids are strings."),
                        ))
                    }
                    _ => {}
                }
            }
        }
        if ty == E::RunFinished {
            if let Some(outcome) = event.get("outcome") {
                if outcome.get("type").and_then(Value::as_str) == Some("interrupt") {
                    if let Some(Value::Array(interrupts)) = outcome.get("interrupts") {
                        for i in interrupts {
                            if matches!(i.get("subagentRunId"), Some(Value::Null)) {
                                let id = js::show(i.get("id"));
                                return Err(fail(
                                    "R09",
                                    format!("Cannot send 'RUN_FINISHED' with an interrupt (id '{id}') carrying 'subagentRunId: null'. The field is optional — omit it entirely."),
                                )
                                .ids([id]));
                            }
                        }
                    }
                }
            }
        }

        match ty {
            E::TextMessageStart => {
                let idv = event.get("messageId");
                let id = js::key(idv);
                if self.messages.has(&id) {
                    return Err(fail(
                        "R10",
                        format!("Cannot send 'TEXT_MESSAGE_START' event: A text message with ID '{}' is already in progress. Complete it with 'TEXT_MESSAGE_END' first.", js::show(idv)),
                    )
                    .ids([js::show(idv)]));
                }
                let existing = self.owners.message.get(&id);
                tag_error("R11", name, tag, existing, "message", &|| js::show(idv))?;
                let known = existing.is_some();
                self.messages.add(id.clone());
                if !known {
                    self.owners.message.insert(id, tag.cloned());
                }
            }
            E::TextMessageContent | E::TextMessageEnd => {
                let c = TEXT;
                let idv = event.get("messageId");
                c.check(&mut self.messages, &self.owners.message, ty == E::TextMessageContent, name, tag, (&js::key(idv), &|| js::show(idv)))?;
            }
            E::ToolCallStart => {
                let idv = event.get("toolCallId");
                let id = js::key(idv);
                if self.tool_calls.has(&id) {
                    return Err(fail(
                        "R14",
                        format!("Cannot send 'TOOL_CALL_START' event: A tool call with ID '{}' is already in progress. Complete it with 'TOOL_CALL_END' first.", js::show(idv)),
                    )
                    .ids([js::show(idv)]));
                }
                let parent = event.get("parentMessageId");
                let mut inherited: Option<Owner> = None;
                if parent.is_some() {
                    if let Some(parent_owner) = self.owners.message.get(&js::key(parent)) {
                        if let Some(t) = tag {
                            if !strict_eq(Some(t), parent_owner.as_ref()) {
                                return Err(fail(
                                    "R15",
                                    format!(
                                        "Cannot send 'TOOL_CALL_START': subagentRunId '{}' does not match its parent message '{}' owner '{}'. A tool call belongs to the message that carries it.",
                                        js::show(Some(t)),
                                        js::show(parent),
                                        owner_name(parent_owner.as_ref())
                                    ),
                                )
                                .ids([js::show(idv), js::show(parent)]));
                            }
                        }
                        inherited = Some(parent_owner.clone());
                    }
                }
                let existing = self.owners.tool_call.get(&id);
                if let Some(existing) = existing {
                    tag_error("R16", name, tag, Some(existing), "tool call", &|| js::show(idv))?;
                    if let (None, Some(inh)) = (tag, &inherited) {
                        if !strict_eq(inh.as_ref(), existing.as_ref()) {
                            return Err(fail(
                                "R16",
                                format!(
                                    "Cannot send 'TOOL_CALL_START': tool call '{}' is owned by '{}' but its parent message '{}' is owned by '{}'. A tool call belongs to the message that carries it.",
                                    js::show(idv),
                                    owner_name(existing.as_ref()),
                                    js::show(parent),
                                    owner_name(inh.as_ref())
                                ),
                            )
                            .ids([js::show(idv), js::show(parent)]));
                        }
                    }
                }
                let known = existing.is_some();
                self.tool_calls.add(id.clone());
                if !known {
                    let owner = match tag {
                        Some(t) => Some(t.clone()),
                        None => inherited.unwrap_or(None),
                    };
                    self.owners.tool_call.insert(id, owner);
                }
            }
            E::ToolCallArgs | E::ToolCallEnd => {
                let c = TOOL;
                let idv = event.get("toolCallId");
                c.check(&mut self.tool_calls, &self.owners.tool_call, ty == E::ToolCallArgs, name, tag, (&js::key(idv), &|| js::show(idv)))?;
            }
            E::StepStarted => {
                let step = js::key(event.get("stepName"));
                let shown = js::show(event.get("stepName"));
                let steps = self.steps_for(tag);
                if steps.has(&step) {
                    let whose = tag.map_or(String::new(), |t| format!(" in subagent '{}'", js::show(Some(t))));
                    return Err(fail("R18", format!("Step \"{shown}\" is already active for 'STEP_STARTED'{whose}")).ids([shown]));
                }
                steps.add(step);
            }
            E::StepFinished => {
                let step = js::key(event.get("stepName"));
                let shown = js::show(event.get("stepName"));
                let steps = self.steps_for(tag);
                if steps.has(&step) {
                    steps.remove(&step);
                } else {
                    let other = self
                        .steps
                        .iter()
                        .find(|(o, names)| !strict_eq(o.as_ref(), tag) && names.has(&step))
                        .map(|(o, _)| o.clone());
                    let who = |o: Option<&Value>| o.map_or("the parent agent".to_string(), |o| format!("subagent '{}'", js::show(Some(o))));
                    return Err(match other {
                        Some(o) => fail(
                            "R19",
                            format!(
                                "Cannot send 'STEP_FINISHED' for step \"{shown}\" attributed to {}: that step is open under {}. A step must be finished by whoever started it.",
                                who(tag),
                                who(o.as_ref())
                            ),
                        ),
                        None => fail("R19", format!("Cannot send 'STEP_FINISHED' for step \"{shown}\" that was not started")),
                    }
                    .ids([shown]));
                }
            }
            E::ActivitySnapshot => {
                let id = js::key(event.get("messageId"));
                let is_new = !self.owners.activity.contains_key(&id);
                if is_new || !matches!(event.get("replace"), Some(Value::Bool(false))) {
                    self.owners.activity.insert(id, tag.cloned());
                }
            }
            E::ToolCallResult => {
                if let Some(Value::String(id)) = event.get("messageId") {
                    self.owners.message.insert(id.clone(), tag.cloned());
                }
            }
            E::ReasoningStart | E::ReasoningMessageStart => {
                let idv = event.get("messageId");
                let id = js::key(idv);
                let span = ty == E::ReasoningStart;
                let open = if span { &self.reasoning_spans } else { &self.reasoning_messages };
                if open.has(&id) {
                    let msg = if span {
                        format!("Cannot send 'REASONING_START' event: A reasoning span with ID '{}' is already in progress. Complete it with 'REASONING_END' first.", js::show(idv))
                    } else {
                        format!("Cannot send 'REASONING_MESSAGE_START' event: A reasoning message with ID '{}' is already in progress. Complete it with 'REASONING_MESSAGE_END' first.", js::show(idv))
                    };
                    return Err(fail("R22", msg).ids([js::show(idv)]));
                }
                let existing = self.owners.reasoning.get(&id);
                tag_error("R22", name, tag, existing, "reasoning message", &|| js::show(idv))?;
                let known = existing.is_some();
                if span {
                    self.reasoning_spans.add(id.clone());
                } else {
                    self.reasoning_messages.add(id.clone());
                }
                if !known {
                    self.owners.reasoning.insert(id, tag.cloned());
                }
            }
            E::ReasoningMessageContent | E::ReasoningMessageEnd | E::ReasoningEnd => {
                let (open, c) = if ty == E::ReasoningEnd {
                    (&mut self.reasoning_spans, REASONING_SPAN)
                } else {
                    (&mut self.reasoning_messages, REASONING)
                };
                let idv = event.get("messageId");
                c.check(open, &self.owners.reasoning, ty == E::ReasoningMessageContent, name, tag, (&js::key(idv), &|| js::show(idv)))?;
            }
            E::ReasoningEncryptedValue => {
                let idv = event.get("entityId");
                let id = js::key(idv);
                let subtype = event.get("subtype").and_then(Value::as_str);
                let (owner, kind) = match subtype {
                    Some("tool-call") => (self.owners.tool_call.get(&id), "tool call"),
                    Some("message") => (self.owners.message.get(&id).or_else(|| self.owners.reasoning.get(&id)), "message"),
                    _ => (self.owners.reasoning.get(&id), "reasoning message"),
                };
                tag_error("R24", name, tag, owner, kind, &|| js::show(idv))?;
            }
            E::ActivityDelta => {
                let idv = event.get("messageId");
                tag_error("R20", name, tag, self.owners.activity.get(&js::key(idv)), "activity", &|| js::show(idv))?;
            }
            E::SubagentStarted => {
                let Some(Value::String(run_id)) = tag else {
                    return Err(fail("R25", "Cannot send 'SUBAGENT_STARTED' without a 'subagentRunId'.".into()));
                };
                if !matches!(event.get("name"), Some(Value::String(_))) {
                    return Err(fail("R25", "Cannot send 'SUBAGENT_STARTED' without a 'name'.".into()).ids([run_id.clone()]));
                }
                if self.subagents.has(run_id) {
                    return Err(fail(
                        "R25",
                        format!("Cannot send 'SUBAGENT_STARTED': subagent '{run_id}' is already active. Finish it with 'SUBAGENT_FINISHED' first."),
                    )
                    .ids([run_id.clone()]));
                }
                if self.closed_subagents.has(run_id) {
                    return Err(fail(
                        "R25",
                        format!("Cannot send 'SUBAGENT_STARTED': subagent '{run_id}' has already finished in this run. Subagent IDs are per-invocation and cannot be reused."),
                    )
                    .ids([run_id.clone()]));
                }
                if let Some(parent) = event.get("parentSubagentRunId") {
                    let pk = js::key(Some(parent));
                    if !self.subagents.has(&pk) && !self.closed_subagents.has(&pk) {
                        return Err(fail(
                            "R25",
                            format!("Cannot send 'SUBAGENT_STARTED': parentSubagentRunId '{}' has not been started in this run.", js::show(Some(parent))),
                        )
                        .ids([run_id.clone(), js::show(Some(parent))]));
                    }
                }
                self.subagents.add(run_id.clone());
            }
            E::SubagentFinished | E::SubagentError => {
                let Some(Value::String(run_id)) = tag else {
                    return Err(fail("R26", format!("Cannot send '{name}' without a 'subagentRunId'.")));
                };
                if ty == E::SubagentError && !matches!(event.get("message"), Some(Value::String(_))) {
                    return Err(fail("R26", "Cannot send 'SUBAGENT_ERROR' without a 'message'.".into()).ids([run_id.clone()]));
                }
                if !self.subagents.has(run_id) {
                    return Err(fail(
                        "R26",
                        format!("Cannot send '{name}': no active subagent found with ID '{run_id}'. A 'SUBAGENT_STARTED' event must be sent first."),
                    )
                    .ids([run_id.clone()]));
                }
                let run_id = run_id.clone();
                self.subagents.remove(&run_id);
                self.closed_subagents.add(run_id);
            }
            E::MessagesSnapshot => self.seed_owners(event.get("messages"), true, "R27")?,
            E::RunStarted => {
                self.run_started = true;
                let messages = event.get("input").and_then(|i| i.get("messages"));
                self.seed_owners(messages, false, "R28")?;
            }
            E::RunFinished => {
                if self.steps.iter().any(|(_, names)| !names.is_empty()) {
                    let parts: Vec<String> = self
                        .steps
                        .iter()
                        .flat_map(|(o, names)| {
                            names.ordered().into_iter().map(move |n| {
                                let n = n.trim_start_matches('\u{0}');
                                match o {
                                    Some(o) => format!("{n} (subagent '{}')", js::show(Some(o))),
                                    None => n.to_string(),
                                }
                            })
                        })
                        .collect();
                    return Err(fail("R29", format!("Cannot send 'RUN_FINISHED' while steps are still active: {}", parts.join(", "))));
                }
                let open: [(&IdSet, &str); 5] = [
                    (&self.messages, "text messages"),
                    (&self.reasoning_messages, "reasoning messages"),
                    (&self.reasoning_spans, "reasoning spans"),
                    (&self.tool_calls, "tool calls"),
                    (&self.subagents, "subagents"),
                ];
                for (set, what) in open {
                    if !set.is_empty() {
                        let ids: Vec<String> = set.ordered().into_iter().cloned().collect();
                        return Err(fail("R29", format!("Cannot send 'RUN_FINISHED' while {what} are still active: {}", set.list())).ids(ids));
                    }
                }
                self.run_finished = true;
            }
            E::RunError => self.run_error = true,
            _ => {}
        }
        Ok(())
    }
}

/// Verify a whole sequence: `Ok(())` or the first violation.
pub fn verify_events<'a>(events: impl IntoIterator<Item = &'a Value>) -> Result<(), StreamError> {
    let mut v = EventVerifier::new();
    events.into_iter().try_for_each(|e| v.push(e))
}
