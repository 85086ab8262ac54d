//! Execution records: what one turn did, step by step, kept after the turn.
//!
//! An [`ExecutionRecord`] is written while a turn runs (a [`Recorder`] on
//! the turn's [`TurnContext`](crate::TurnContext), filled by the loop's
//! record layers around the model and the tools and by the Agent at the
//! turn's boundaries) into a [`RecordStore`](crate::store::RecordStore).
//! It holds, in order and with timestamps and durations:
//!
//! - every model request as sent (messages, tools offered, settings, model
//!   and provider) and its answer (text, tool calls, reasoning, finish
//!   reason, usage) or its typed error ([`StepKind::ModelCall`]);
//! - the retries and fallbacks between attempts ([`StepKind::Retry`],
//!   [`StepKind::Fallback`]);
//! - every tool call with its arguments, result, typed failure and duration
//!   ([`StepKind::ToolCall`]);
//! - compaction ([`StepKind::Compaction`]) and recovery after a crash
//!   ([`StepKind::Recovered`]: the steps before it were written by the
//!   process that died);
//! - hook and approval decisions ([`StepKind::Decision`]) and checkpoint
//!   saves ([`StepKind::Checkpoint`]).
//!
//! The record keeps each model call's model name and [`Usage`]; it stores no
//! cost. A cost is derived from the usage with a price table
//! ([`ExecutionRecord::usage_by_model`] is what one reads; a
//! [`RecordView`] is a record with the costs of its steps beside it).
//!
//! Payloads (messages, arguments, results) pass through a [`RecordPolicy`]
//! before they are kept: [`Redaction`] rules replace secrets with
//! [`REDACTED`], and a payload larger than
//! [`RecordPolicy::max_payload_bytes`] is kept as a
//! [`Payload::Truncated`] preview (or, for a tool output the loop stored as
//! an artifact, by reference to it: [`Payload::Artifact`]).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::llm::{LlmError, Usage};
use crate::task::TaskState;
use crate::tool::{ToolCall, ToolFailure, ToolResult};

mod recorder;
mod view;
pub use recorder::{Attempt, ModelCall, RecordHeader, Recorder};
pub use view::{RecordCosts, RecordView};

/// What replaces a redacted secret.
pub const REDACTED: &str = "[redacted]";

/// Everything one turn did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionRecord {
    /// The turn's task.
    pub task_id: String,
    /// The conversation.
    pub context_id: String,
    /// The agent that ran it.
    pub agent_id: String,
    /// Who asked for the turn, when known; only they may read the record
    /// through a server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The turn's number in its conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_number: Option<u64>,
    /// When the turn started.
    pub started_at: DateTime<Utc>,
    /// When the turn ended; `None` while it runs (or when its process died
    /// and nobody resumed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<DateTime<Utc>>,
    /// How it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<RecordOutcome>,
    /// The steps, in the order they ended.
    #[serde(default)]
    pub steps: Vec<RecordStep>,
}

impl ExecutionRecord {
    /// An empty record of a turn that starts now.
    pub fn new(
        task_id: impl Into<String>,
        context_id: impl Into<String>,
        agent_id: impl Into<String>,
    ) -> Self {
        ExecutionRecord {
            task_id: task_id.into(),
            context_id: context_id.into(),
            agent_id: agent_id.into(),
            principal: None,
            turn_number: None,
            started_at: Utc::now(),
            ended_at: None,
            outcome: None,
            steps: Vec::new(),
        }
    }

    /// Tokens used per model, summed over the model calls (the input of a
    /// price table: cost is derived, never stored). A call whose model is
    /// unknown counts under its provider's name.
    pub fn usage_by_model(&self) -> BTreeMap<String, Usage> {
        let mut out: BTreeMap<String, Usage> = BTreeMap::new();
        for step in &self.steps {
            if let StepKind::ModelCall(call) = &step.kind
                && let Some(usage) = call.response.as_ref().and_then(|r| r.usage)
            {
                *out.entry(call.model.clone()).or_default() += usage;
            }
        }
        out
    }

    /// The model calls, in order.
    pub fn model_calls(&self) -> impl Iterator<Item = &ModelCallStep> {
        self.steps.iter().filter_map(|s| match &s.kind {
            StepKind::ModelCall(c) => Some(&**c),
            _ => None,
        })
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallStep> {
        self.steps.iter().filter_map(|s| match &s.kind {
            StepKind::ToolCall(c) => Some(c),
            _ => None,
        })
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordOutcome {
    /// The task state it ended in.
    pub state: TaskState,
    /// Why the loop stopped (`stop`, `error`, `input-required`...: the
    /// loop's turn end, in its wire form).
    pub end: String,
}

/// One step of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordStep {
    /// When the step started.
    pub started_at: DateTime<Utc>,
    /// How long it took (zero for a decision or a marker).
    #[serde(with = "duration_ms", rename = "durationMs")]
    pub duration: Duration,
    /// What it was.
    #[serde(flatten)]
    pub kind: StepKind,
}

/// What a step was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum StepKind {
    /// One attempt at a model request.
    ModelCall(Box<ModelCallStep>),
    /// A failed model attempt will be tried again after `delay`.
    Retry {
        /// The retry's number, from 1.
        retry: u32,
        /// The wait before it.
        #[serde(with = "duration_ms", rename = "delayMs")]
        delay: Duration,
        /// The error that caused it.
        error: RecordedError,
    },
    /// A model failed and the next one of a fallback chain takes over.
    Fallback {
        /// The model that failed.
        from: String,
        /// The model tried next.
        to: String,
        /// Why.
        error: RecordedError,
    },
    /// One tool call.
    ToolCall(ToolCallStep),
    /// The history was compacted before the turn.
    Compaction {
        /// Messages replaced by the summary.
        summarized_messages: usize,
        /// Messages kept as they were.
        kept_messages: usize,
    },
    /// The turn was carried on from its last checkpoint after its process
    /// died: the steps before this one were written by that process.
    Recovered {
        /// How many steps the record had when it resumed.
        previous_steps: usize,
        /// The checkpoint it resumed from; `None` when none was read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<CheckpointStep>,
    },
    /// A hook or a person decided about a tool call.
    Decision(DecisionStep),
    /// A checkpoint of the turn was saved (the step lasts the save).
    Checkpoint(CheckpointStep),
}

/// A decision about a tool call: a hook's (approval or `before_tool`) or a
/// person's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionStep {
    /// Who decided: the hook's name, or `user` for a person's answer.
    pub by: String,
    /// Where it was decided.
    pub point: DecisionPoint,
    /// The tool call it was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The tool called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What was decided.
    pub decision: Decided,
    /// Why, when given (a denial's reason, the question asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Where a [`DecisionStep`] was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DecisionPoint {
    /// An approval hook (`approve_tool`).
    ApproveTool,
    /// A `before_tool` hook.
    BeforeTool,
    /// A person answering an approval request.
    UserApproval,
}

/// What a [`DecisionStep`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Decided {
    /// An approval hook let the call run.
    Allowed,
    /// The call does not run: a hook or a person denied it.
    Denied,
    /// An approval hook asked a person; the call waits for the answer.
    Asked,
    /// A person approved the call.
    Approved,
    /// A person approved the call with other arguments.
    Edited,
    /// A `before_tool` hook changed the call before it ran.
    Modified,
    /// A `before_tool` hook gave a result in the tool's place.
    Skipped,
}

impl Decided {
    /// The wire name (`allowed`, `denied`...).
    pub fn as_str(self) -> &'static str {
        match self {
            Decided::Allowed => "allowed",
            Decided::Denied => "denied",
            Decided::Asked => "asked",
            Decided::Approved => "approved",
            Decided::Edited => "edited",
            Decided::Modified => "modified",
            Decided::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for Decided {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A saved checkpoint: what a resume starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointStep {
    /// The loop's iteration when it was taken.
    pub iteration: u32,
    /// The messages it holds.
    pub messages: usize,
}

/// A model attempt: the request as sent and its answer or error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCallStep {
    /// The provider (`openai`, `anthropic`...).
    pub provider: String,
    /// The model that answered, or was asked.
    pub model: String,
    /// Whether the answer was streamed.
    pub streamed: bool,
    /// The request.
    pub request: RecordedRequest,
    /// The answer; `None` when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<RecordedResponse>,
    /// Why the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
}

/// A model request as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<Payload>,
    /// The messages (a JSON array of messages).
    pub messages: Payload,
    /// The names of the tools offered.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Sampling and other settings (temperature, max tokens, tool choice,
    /// response format...), only those set.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub settings: Map<String, Value>,
}

/// A model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedResponse {
    /// The answer text.
    pub text: Payload,
    /// The tool calls asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<RecordedToolCall>,
    /// Reasoning text, when the provider exposed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Payload>,
    /// Why it stopped.
    pub finish_reason: String,
    /// Tokens, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedToolCall {
    /// The call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Payload,
}

/// A typed error, kept by kind and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedError {
    /// The error's kind (`rate_limited`, `timeout`...).
    pub kind: String,
    /// Its message.
    pub message: String,
}

impl From<&LlmError> for RecordedError {
    fn from(e: &LlmError) -> Self {
        RecordedError {
            kind: e.kind().to_owned(),
            message: e.to_string(),
        }
    }
}

/// One tool call and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallStep {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Payload,
    /// What the model read back (the result's content).
    pub result: Payload,
    /// How it failed; `None` for a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ToolFailure>,
}

/// A kept payload: whole, cut to a preview, or by reference to the
/// artifact that holds it whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Payload {
    /// The whole value.
    Inline {
        /// The value.
        value: Value,
    },
    /// A value larger than the cap: its first bytes, as text.
    Truncated {
        /// The beginning of the value's JSON text.
        preview: String,
        /// The size of the whole JSON text, in bytes.
        bytes: usize,
    },
    /// A value kept whole in an artifact of the conversation.
    Artifact {
        /// The artifact.
        artifact_id: String,
        /// The beginning of the value.
        preview: String,
    },
}

impl Payload {
    /// The whole value, when it was kept.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Payload::Inline { value } => Some(value),
            _ => None,
        }
    }

    /// A short one-line view, for listings.
    pub fn summary(&self, max_chars: usize) -> String {
        let text = match self {
            Payload::Inline {
                value: Value::String(s),
            } => s.clone(),
            Payload::Inline { value } => value.to_string(),
            Payload::Truncated { preview, bytes } => format!("{preview}… ({bytes} bytes)"),
            Payload::Artifact {
                artifact_id,
                preview,
            } => format!("{preview}… (artifact {artifact_id})"),
        };
        let one_line = text.replace('\n', " ");
        match one_line.char_indices().nth(max_chars) {
            Some((at, _)) => format!("{}…", &one_line[..at]),
            None => one_line,
        }
    }
}

/// What is kept of payloads: redaction, then a size cap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RecordPolicy {
    /// The largest payload kept whole, in bytes of JSON text (64 KiB by
    /// default); a larger one is kept as a preview of this many bytes.
    pub max_payload_bytes: usize,
    /// The secrets taken out.
    pub redaction: Redaction,
}

impl Default for RecordPolicy {
    fn default() -> Self {
        RecordPolicy {
            max_payload_bytes: 64 * 1024,
            redaction: Redaction::default(),
        }
    }
}

impl RecordPolicy {
    /// `value` redacted and capped.
    pub fn payload(&self, mut value: Value) -> Payload {
        self.redaction.apply(&mut value);
        let text_len = match &value {
            Value::String(s) => s.len(),
            v => json_len(v),
        };
        if text_len <= self.max_payload_bytes {
            return Payload::Inline { value };
        }
        let text = match value {
            Value::String(s) => s,
            v => v.to_string(),
        };
        Payload::Truncated {
            preview: prefix(&text, self.max_payload_bytes).to_owned(),
            bytes: text.len(),
        }
    }
}

/// The length of `value`'s JSON text, counted without writing it out.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The longest prefix of `s` of at most `max` bytes on a char boundary.
fn prefix(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Redaction rules. Each rule replaces what it matches with [`REDACTED`]:
///
/// - [`json_keys`](Self::json_keys): the value of an object member whose
///   key equals one of these, ignoring ASCII case, at any depth (the
///   default list names the usual credential keys: `authorization`,
///   `api_key`, `apiKey`, `password`, `secret`, `token`, `access_token`,
///   `refresh_token`, `client_secret`, `x-api-key`);
/// - [`header_names`](Self::header_names): the same for header maps
///   (`authorization`, `proxy-authorization`, `cookie`, `set-cookie`,
///   `x-api-key` by default), and a `Name: value` line of text;
/// - [`bearer_tokens`](Self::bearer_tokens): the credential after
///   `Bearer ` or `Basic ` in any string;
/// - [`api_keys`](Self::api_keys): strings that look like provider API
///   keys (`sk-…`, `sk-ant-…`, `AKIA…`, `ghp_…`, `xox?-…`, `AIza…`) in
///   any string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Redaction {
    /// Object keys whose values are secrets.
    pub json_keys: Vec<String>,
    /// Header names whose values are secrets.
    pub header_names: Vec<String>,
    /// Whether bearer and basic credentials are taken out of text.
    pub bearer_tokens: bool,
    /// Whether strings shaped like API keys are taken out of text.
    pub api_keys: bool,
}

impl Default for Redaction {
    fn default() -> Self {
        let s = |v: &[&str]| v.iter().map(|k| (*k).to_owned()).collect();
        Redaction {
            json_keys: s(&[
                "authorization",
                "api_key",
                "apikey",
                "password",
                "secret",
                "token",
                "access_token",
                "refresh_token",
                "client_secret",
                "x-api-key",
            ]),
            header_names: s(&[
                "authorization",
                "proxy-authorization",
                "cookie",
                "set-cookie",
                "x-api-key",
            ]),
            bearer_tokens: true,
            api_keys: true,
        }
    }
}

/// Prefixes of API keys, and the shortest tail that makes one.
const KEY_PREFIXES: &[(&str, usize)] = &[
    ("sk-", 16),
    ("AKIA", 16),
    ("ghp_", 20),
    ("gho_", 20),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("AIza", 30),
];

impl Redaction {
    /// No redaction at all.
    pub fn none() -> Self {
        Redaction {
            json_keys: Vec::new(),
            header_names: Vec::new(),
            bearer_tokens: false,
            api_keys: false,
        }
    }

    fn secret_key(&self, key: &str) -> bool {
        self.json_keys
            .iter()
            .chain(&self.header_names)
            .any(|k| k.eq_ignore_ascii_case(key))
    }

    /// Redacts `value` in place.
    pub fn apply(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if self.secret_key(key) && !v.is_null() {
                        *v = Value::String(REDACTED.to_owned());
                    } else {
                        self.apply(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.apply(v)),
            Value::String(s) => {
                if let Some(clean) = self.redact_text(s) {
                    *s = clean;
                }
            }
            _ => {}
        }
    }

    /// `text` with its secrets replaced, or `None` when it has none.
    pub fn redact_text(&self, text: &str) -> Option<String> {
        let mut out = String::with_capacity(text.len());
        let mut changed = false;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let _ = i;
            let line = self.redact_header_line(line, &mut changed);
            let mut words = String::with_capacity(line.len());
            let mut prev_scheme = false;
            for piece in split_keep(&line) {
                let word = piece.trim_matches(|c: char| !is_token_char(c));
                if word.is_empty() {
                    words.push_str(piece);
                    continue;
                }
                let secret =
                    (self.bearer_tokens && prev_scheme) || (self.api_keys && looks_like_key(word));
                prev_scheme = self.bearer_tokens
                    && (word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("basic"));
                if secret {
                    changed = true;
                    words.push_str(&piece.replace(word, REDACTED));
                } else {
                    words.push_str(piece);
                }
            }
            out.push_str(&words);
        }
        changed.then_some(out)
    }

    /// A `Name: value` line whose name is a secret header, redacted.
    fn redact_header_line(&self, line: &str, changed: &mut bool) -> String {
        if let Some((name, rest)) = line.split_once(':') {
            let name_t = name.trim();
            if !name_t.is_empty()
                && !name_t.contains(' ')
                && self
                    .header_names
                    .iter()
                    .any(|h| h.eq_ignore_ascii_case(name_t))
            {
                *changed = true;
                let newline = if rest.ends_with('\n') { "\n" } else { "" };
                return format!("{name}: {REDACTED}{newline}");
            }
        }
        line.to_owned()
    }
}

/// Splits `s` after each whitespace run, keeping every character.
fn split_keep(s: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            pieces.push(&s[start..i]);
            start = i;
            in_space = false;
        }
    }
    if start < s.len() {
        pieces.push(&s[start..]);
    }
    pieces
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/' | '=')
}

fn looks_like_key(word: &str) -> bool {
    KEY_PREFIXES.iter().any(|(p, min_tail)| {
        word.strip_prefix(p).is_some_and(|tail| {
            tail.len() >= *min_tail
                && tail
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
    })
}

/// `Duration` as whole milliseconds in JSON.
mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        // Microsecond precision kept as a fraction.
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Ok(Duration::from_secs_f64((ms.max(0.0)) / 1000.0))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn redaction_takes_out_keys_headers_bearer_and_api_keys() {
        let r = Redaction::default();
        let mut v = json!({
            "apiKey": "abc", "nested": [{"Authorization": "Bearer xyz"}],
            "text": "call with Bearer eyJhbGciOi.abc and key sk-abcdefghijklmnop1234 ok",
            "headers": "Content-Type: json\nX-Api-Key: hunter2\n",
            "plain": "nothing here",
        });
        r.apply(&mut v);
        assert_eq!(v["apiKey"], REDACTED);
        assert_eq!(v["nested"][0]["Authorization"], REDACTED);
        assert_eq!(
            v["text"],
            format!("call with Bearer {REDACTED} and key {REDACTED} ok")
        );
        assert_eq!(
            v["headers"],
            format!("Content-Type: json\nX-Api-Key: {REDACTED}\n")
        );
        assert_eq!(v["plain"], "nothing here");
    }

    #[test]
    fn configured_keys_and_none() {
        let r = Redaction {
            json_keys: vec!["ssn".into()],
            ..Redaction::none()
        };
        let mut v = json!({"SSN": "1", "token": "t", "s": "Bearer abc"});
        r.apply(&mut v);
        assert_eq!(v, json!({"SSN": REDACTED, "token": "t", "s": "Bearer abc"}));
    }

    #[test]
    fn a_large_payload_is_cut_with_its_size() {
        let p = RecordPolicy {
            max_payload_bytes: 10,
            ..RecordPolicy::default()
        };
        assert_eq!(
            p.payload(json!("short")),
            Payload::Inline {
                value: json!("short")
            }
        );
        let cut = p.payload(json!("ééééééééééé"));
        let Payload::Truncated { preview, bytes } = cut else {
            panic!("not cut: {cut:?}")
        };
        assert_eq!(bytes, 22);
        assert_eq!(preview, "ééééé");
    }

    #[test]
    fn a_step_round_trips_through_json() {
        let step = RecordStep {
            started_at: Utc::now(),
            duration: Duration::from_micros(1500),
            kind: StepKind::Retry {
                retry: 1,
                delay: Duration::from_millis(20),
                error: RecordedError {
                    kind: "server".into(),
                    message: "503".into(),
                },
            },
        };
        let v = serde_json::to_value(&step).unwrap();
        assert_eq!(v["type"], "retry");
        assert_eq!(v["durationMs"], 1.5);
        let back: RecordStep = serde_json::from_value(v).unwrap();
        assert_eq!(back, step);
    }
}
