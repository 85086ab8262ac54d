//! Talking to a model: [`LlmRequest`], [`LlmResponse`], the streamed
//! [`LlmChunk`], the [`LlmProvider`] trait and [`LlmError`].

mod chat_span;
mod provider;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::history::History;
use crate::message::{Message, Part, Reasoning, Role};
use crate::tool::{ToolCall, ToolDefinition};

pub use chat_span::ChatSpan;
pub use provider::{LlmProvider, LlmStream};

/// Which tools the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides (the default when tools are offered).
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool.
    Tool(String),
}

/// One request to a model.
///
/// Cloning is cheap: the history is a persistent vector and the tools are shared.
#[derive(Debug, Clone, Default)]
pub struct LlmRequest {
    /// Instructions, sent as the first (system) message at call time.
    pub system_prompt: Option<Arc<str>>,
    /// The conversation so far.
    pub messages: History,
    /// Where the current turn's own messages begin in
    /// [`messages`](Self::messages): a window that cuts requests to fit
    /// (`looopy-agent`'s `WindowedLlm`) may drop older messages, never
    /// these. The loop sets it on every request of a turn (it keeps a
    /// turn's requests within the model's context itself); `None` for a
    /// request made outside a turn. Not sent to the model.
    pub keep_from: Option<usize>,
    /// Tools the model may call.
    pub tools: Arc<[ToolDefinition]>,
    /// Tool choice; `None` lets the provider's default apply.
    pub tool_choice: Option<ToolChoice>,
    /// Model override; `None` uses the provider's configured model.
    pub model: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Upper bound on generated tokens.
    pub max_tokens: Option<u32>,
    /// Upper bound on generated tokens, reasoning included (OpenAI's
    /// `max_completion_tokens`, which reasoning models require in place of
    /// `max_tokens`).
    pub max_completion_tokens: Option<u32>,
    /// Whether the model may ask for several tool calls in one answer;
    /// `None` leaves the provider's default.
    pub parallel_tool_calls: Option<bool>,
    /// The shape the answer must have; `None` for free text.
    pub response_format: Option<ResponseFormat>,
    /// Provider-specific extras.
    pub metadata: Map<String, Value>,
}

/// A JSON schema the model's answer text must follow (structured output).
///
/// A provider whose endpoint enforces schemas sends it natively (OpenAI's
/// `response_format: {type: json_schema}`); one that cannot should put
/// [`instruction`](Self::instruction) into the prompt instead, so that the
/// model still learns the shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// A name for the schema (letters, digits, `_` and `-`).
    pub name: String,
    /// The JSON schema of the answer.
    pub schema: Value,
    /// Whether the endpoint should enforce the schema exactly (OpenAI's
    /// strict mode, which needs every property required and no extra ones).
    pub strict: bool,
}

impl ResponseFormat {
    /// A strict format named `name` with `schema`.
    pub fn new(name: impl Into<String>, schema: Value) -> Self {
        ResponseFormat {
            name: name.into(),
            schema,
            strict: true,
        }
    }

    /// Sets strict mode.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The request in words, for models reached without native support.
    pub fn instruction(&self) -> String {
        format!(
            "Answer with a single JSON value and nothing else (no prose, no code fence). \
             It must match this JSON schema:\n{}",
            self.schema
        )
    }
}

/// Token counts of one call or of a whole turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Their sum, as the provider reported it.
    pub total_tokens: u64,
    /// Reasoning tokens, when reported (included in `output_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Prompt tokens served from a cache, when reported (included in
    /// `input_tokens`; Anthropic's `cache_read_input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to a cache by this call, when reported
    /// (included in `input_tokens`; Anthropic's
    /// `cache_creation_input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.total_tokens += rhs.total_tokens;
        self.reasoning_tokens += rhs.reasoning_tokens;
        self.cached_input_tokens += rhs.cached_input_tokens;
        self.cache_creation_input_tokens += rhs.cache_creation_input_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FinishReason {
    /// Natural end.
    #[default]
    Stop,
    /// Token limit.
    Length,
    /// It wants tools to run.
    ToolCalls,
    /// Filtered.
    ContentFilter,
    /// Anything else the provider said.
    Other(String),
}

impl FinishReason {
    /// The OpenAI-style name (`stop`, `length`, `tool_calls`, `content_filter`).
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(s) => s,
        }
    }
}

impl From<&str> for FinishReason {
    fn from(s: &str) -> Self {
        match s {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        }
    }
}

impl Serialize for FinishReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(FinishReason::from(s.as_str()))
    }
}

/// A complete model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmResponse {
    /// The assistant message, with any tool calls in `tool_calls`.
    pub message: Message,
    /// Why it stopped.
    #[serde(default)]
    pub finish_reason: FinishReason,
    /// Token counts, when the provider reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Reasoning text to report as the turn's `internal:reasoning` event,
    /// when the provider exposes it. What is kept of the reasoning (with
    /// its signature, to send back) is a [`Part::Reasoning`] of the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The model that answered, as the provider named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl LlmResponse {
    /// A plain text answer that stopped naturally.
    pub fn text(text: impl Into<String>) -> Self {
        LlmResponse {
            message: Message::assistant(text),
            finish_reason: FinishReason::Stop,
            usage: None,
            reasoning: None,
            model: None,
        }
    }

    /// An answer that asks for tool calls (with optional text before them).
    pub fn tool_calls(text: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        let text = text.into();
        let parts = if text.is_empty() {
            Vec::new()
        } else {
            vec![Part::text(text)]
        };
        let mut message = Message::with_parts(Role::Assistant, parts);
        message.tool_calls = calls;
        LlmResponse {
            message,
            finish_reason: FinishReason::ToolCalls,
            usage: None,
            reasoning: None,
            model: None,
        }
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// The chunks a streaming provider would have sent for this response.
    pub fn into_chunks(self) -> Vec<LlmChunk> {
        let mut chunks = Vec::new();
        if let Some(r) = self.reasoning {
            chunks.push(LlmChunk::ReasoningDelta(r));
        }
        for part in &self.message.parts {
            if let Part::Reasoning { reasoning } = part {
                chunks.push(LlmChunk::ReasoningBlock(reasoning.clone()));
            }
        }
        let text = self.message.text();
        if !text.is_empty() {
            chunks.push(LlmChunk::TextDelta(text));
        }
        for (index, call) in self.message.tool_calls.into_iter().enumerate() {
            chunks.push(LlmChunk::ToolCallStart {
                index,
                id: call.id,
                name: call.name,
            });
            chunks.push(LlmChunk::ToolCallDelta {
                index,
                arguments: call.arguments,
            });
        }
        if let Some(u) = self.usage {
            chunks.push(LlmChunk::Usage(u));
        }
        chunks.push(LlmChunk::Finish(self.finish_reason));
        chunks
    }
}

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum LlmChunk {
    /// More answer text.
    TextDelta(String),
    /// More reasoning text (reported as the `internal:reasoning` event).
    ReasoningDelta(String),
    /// A whole reasoning block, with its signature, once the provider has
    /// sent all of it: kept as a [`Part::Reasoning`] of the answer, before
    /// its text. Its text came already as [`ReasoningDelta`](Self::ReasoningDelta)s.
    ReasoningBlock(Box<Reasoning>),
    /// A tool call begins at `index`.
    ToolCallStart {
        /// Position of the call in the response.
        index: usize,
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// More argument text for the call at `index`.
    ToolCallDelta {
        /// Position of the call in the response.
        index: usize,
        /// The next piece of the raw JSON arguments.
        arguments: String,
    },
    /// Token counts (usually the last chunk before the end).
    Usage(Usage),
    /// The model stopped.
    Finish(FinishReason),
}

/// Folds [`LlmChunk`]s into an [`LlmResponse`].
///
/// Argument deltas are reassembled per call index; a delta for an index that
/// had no start creates the call, so providers that send the id late still work.
#[derive(Debug, Default)]
pub struct ResponseAssembler {
    text: String,
    reasoning: String,
    blocks: Vec<Part>,
    calls: Vec<Option<ToolCall>>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
}

impl ResponseAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&mut self, index: usize) -> &mut ToolCall {
        if self.calls.len() <= index {
            self.calls.resize(index + 1, None);
        }
        self.calls[index].get_or_insert_with(|| ToolCall::new("", "", ""))
    }

    /// Adds one chunk.
    pub fn push(&mut self, chunk: &LlmChunk) {
        match chunk {
            LlmChunk::TextDelta(t) => self.text.push_str(t),
            LlmChunk::ReasoningDelta(t) => self.reasoning.push_str(t),
            LlmChunk::ReasoningBlock(r) => self.blocks.push(Part::Reasoning {
                reasoning: r.clone(),
            }),
            LlmChunk::ToolCallStart { index, id, name } => {
                let call = self.slot(*index);
                if !id.is_empty() {
                    call.id.clone_from(id);
                }
                if !name.is_empty() {
                    call.name.push_str(name);
                }
            }
            LlmChunk::ToolCallDelta { index, arguments } => {
                self.slot(*index).arguments.push_str(arguments)
            }
            LlmChunk::Usage(u) => self.usage = Some(*u),
            LlmChunk::Finish(f) => self.finish = Some(f.clone()),
        }
    }

    /// Whether a `Finish` chunk has been seen.
    pub fn is_finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The response. Without a finish chunk the reason is `tool_calls` when
    /// there are calls, `stop` otherwise.
    pub fn finish(self) -> LlmResponse {
        // Exactly as many as there are: the message is kept in the history
        // (collected in place, the indexed buffer's spare room would stay).
        let mut calls = Vec::with_capacity(self.calls.iter().flatten().count());
        calls.extend(self.calls.into_iter().flatten());
        let finish_reason = self.finish.unwrap_or(if calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        let mut parts = self.blocks;
        if !self.text.is_empty() {
            parts.push(Part::text(self.text));
        }
        let mut message = Message::with_parts(Role::Assistant, parts);
        message.tool_calls = calls;
        LlmResponse {
            message,
            finish_reason,
            usage: self.usage,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            model: None,
        }
    }
}

/// Why a model call failed. Every variant carries the server's own words.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum LlmError {
    /// 401/403: the key was refused.
    #[error("authentication failed: {message}")]
    Authentication {
        /// The server's message.
        message: String,
    },
    /// 404: unknown model or endpoint.
    #[error("not found: {message}")]
    NotFound {
        /// The server's message.
        message: String,
    },
    /// 400/422: the request was refused.
    #[error("bad request: {message}")]
    BadRequest {
        /// The server's message.
        message: String,
    },
    /// 429.
    #[error("rate limited: {message}")]
    RateLimited {
        /// The server's message.
        message: String,
        /// How long the server asked us to wait.
        retry_after: Option<Duration>,
    },
    /// The prompt does not fit the model's context window (a 400 that says
    /// so): shorten the history or pick a model with a larger window.
    #[error("context length exceeded: {message}")]
    ContextLengthExceeded {
        /// The server's message.
        message: String,
    },
    /// The provider refused the request or the answer for its content
    /// policy (a 400 that says so).
    #[error("content filtered: {message}")]
    ContentFilter {
        /// The server's message.
        message: String,
    },
    /// The provider has no capacity for now (Anthropic's 529
    /// `overloaded_error`): worth another try later.
    #[error("overloaded: {message}")]
    Overloaded {
        /// The server's message.
        message: String,
        /// How long the server asked us to wait, when it said.
        retry_after: Option<Duration>,
    },
    /// 5xx.
    #[error("server error {status}: {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The server's message.
        message: String,
        /// How long the server asked us to wait (`Retry-After`, which a
        /// 503 may carry as well as a 429).
        retry_after: Option<Duration>,
    },
    /// No answer in time (connect, whole request or stream idle gap).
    #[error("timed out: {message}")]
    Timeout {
        /// Which timeout, and after how long.
        message: String,
    },
    /// Could not reach the server.
    #[error("connection failed: {message}")]
    Connection {
        /// The underlying error.
        message: String,
    },
    /// The answer was not what the protocol promises (bad JSON, a cut stream).
    #[error("malformed response: {message}")]
    MalformedResponse {
        /// What was wrong.
        message: String,
    },
    /// Not configured (for instance no model or base URL).
    #[error("not configured: {message}")]
    NotConfigured {
        /// What is missing and how to set it.
        message: String,
    },
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// Anything else.
    #[error("{message}")]
    Other {
        /// Description.
        message: String,
    },
}

impl LlmError {
    /// How long the server asked us to wait before trying again, when it
    /// said (`Retry-After` on a 429 or a 5xx).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. }
            | LlmError::Server { retry_after, .. }
            | LlmError::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The HTTP status this error stands for, when it has one (529 for
    /// [`Overloaded`](Self::Overloaded), whatever the vendor sent).
    pub fn status(&self) -> Option<u16> {
        match self {
            LlmError::Authentication { .. } => Some(401),
            LlmError::NotFound { .. } => Some(404),
            LlmError::BadRequest { .. }
            | LlmError::ContextLengthExceeded { .. }
            | LlmError::ContentFilter { .. } => Some(400),
            LlmError::Overloaded { .. } => Some(529),
            LlmError::RateLimited { .. } => Some(429),
            LlmError::Server { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// A short stable name for metrics and spans (`error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::Authentication { .. } => "authentication",
            LlmError::NotFound { .. } => "not_found",
            LlmError::BadRequest { .. } => "bad_request",
            LlmError::ContextLengthExceeded { .. } => "context_length_exceeded",
            LlmError::ContentFilter { .. } => "content_filter",
            LlmError::Overloaded { .. } => "overloaded",
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::Server { .. } => "server_error",
            LlmError::Timeout { .. } => "timeout",
            LlmError::Connection { .. } => "connection",
            LlmError::MalformedResponse { .. } => "malformed_response",
            LlmError::NotConfigured { .. } => "not_configured",
            LlmError::Cancelled => "cancelled",
            LlmError::Other { .. } => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembler_reassembles_interleaved_tool_calls() {
        let mut a = ResponseAssembler::new();
        for c in [
            LlmChunk::TextDelta("Let me ".into()),
            LlmChunk::TextDelta("check.".into()),
            LlmChunk::ToolCallStart {
                index: 0,
                id: "a".into(),
                name: "x".into(),
            },
            LlmChunk::ToolCallStart {
                index: 1,
                id: "b".into(),
                name: "y".into(),
            },
            LlmChunk::ToolCallDelta {
                index: 1,
                arguments: "{\"q\":".into(),
            },
            LlmChunk::ToolCallDelta {
                index: 0,
                arguments: "{}".into(),
            },
            LlmChunk::ToolCallDelta {
                index: 1,
                arguments: "2}".into(),
            },
            LlmChunk::Usage(Usage {
                input_tokens: 3,
                output_tokens: 4,
                total_tokens: 7,
                ..Default::default()
            }),
        ] {
            a.push(&c);
        }
        let r = a.finish();
        assert_eq!(r.message.text(), "Let me check.");
        assert_eq!(
            r.message.tool_calls[1],
            ToolCall::new("b", "y", "{\"q\":2}")
        );
        assert_eq!(r.message.tool_calls[0].arguments, "{}");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(r.usage.unwrap().total_tokens, 7);
    }

    #[test]
    fn chunks_round_trip_through_the_assembler() {
        let original = LlmResponse::tool_calls("hi", vec![ToolCall::new("1", "t", "{\"a\":1}")])
            .with_usage(Usage {
                input_tokens: 1,
                output_tokens: 2,
                total_tokens: 3,
                ..Default::default()
            });
        let mut a = ResponseAssembler::new();
        for c in original.clone().into_chunks() {
            a.push(&c);
        }
        let back = a.finish();
        assert_eq!(back.message.tool_calls, original.message.tool_calls);
        assert_eq!(back.message.text(), "hi");
        assert_eq!(back.usage, original.usage);
    }

    #[test]
    fn reasoning_blocks_are_kept_before_the_text() {
        let block = Reasoning::new("anthropic", "Let me think.").with_signature("c2ln");
        let mut a = ResponseAssembler::new();
        for c in [
            LlmChunk::ReasoningDelta("Let me ".into()),
            LlmChunk::ReasoningDelta("think.".into()),
            LlmChunk::ReasoningBlock(Box::new(block.clone())),
            LlmChunk::TextDelta("42".into()),
        ] {
            a.push(&c);
        }
        let r = a.finish();
        assert_eq!(r.reasoning.as_deref(), Some("Let me think."));
        assert_eq!(
            r.message.parts,
            vec![Part::reasoning(block.clone()), Part::text("42")]
        );
        // And back through the chunks of a whole response.
        let mut again = ResponseAssembler::new();
        for c in r.clone().into_chunks() {
            again.push(&c);
        }
        let back = again.finish();
        assert_eq!(back.message.parts, r.message.parts);
        assert_eq!(back.reasoning, r.reasoning);
    }

    #[test]
    fn finish_reason_keeps_unknown_values() {
        let f: FinishReason = serde_json::from_str("\"weird\"").unwrap();
        assert_eq!(f, FinishReason::Other("weird".into()));
        assert_eq!(
            serde_json::to_string(&FinishReason::ToolCalls).unwrap(),
            "\"tool_calls\""
        );
    }
}
