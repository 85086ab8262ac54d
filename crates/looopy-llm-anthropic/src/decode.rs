//! Answers of the Messages API, whole or streamed, into
//! [`LlmResponse`]s and [`LlmChunk`]s.

use std::collections::VecDeque;

use looopy_core::{
    FinishReason, LlmChunk, LlmError, LlmResponse, Message, Part, Reasoning, Role, ToolCall, Usage,
};
use serde::Deserialize;
use serde_json::Value;

use crate::error::from_stream_error;

/// A whole `message` answer.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// A content block of an answer.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        // A `Value`: a raw value cannot sit in an internally tagged enum.
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Other,
}

/// The `usage` object (whole, or in `message_start` / `message_delta`).
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Later counts (a `message_delta`'s) replace earlier ones.
    fn merge(&mut self, later: WireUsage) {
        let keep = |a: &mut Option<u64>, b: Option<u64>| {
            if b.is_some() {
                *a = b;
            }
        };
        keep(&mut self.input_tokens, later.input_tokens);
        keep(&mut self.output_tokens, later.output_tokens);
        keep(
            &mut self.cache_creation_input_tokens,
            later.cache_creation_input_tokens,
        );
        keep(
            &mut self.cache_read_input_tokens,
            later.cache_read_input_tokens,
        );
    }

    /// As core counts them: the prompt's tokens include those read from and
    /// written to the cache (the API counts them apart).
    pub(crate) fn to_usage(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let created = self.cache_creation_input_tokens.unwrap_or(0);
        let input = self.input_tokens.unwrap_or(0) + read + created;
        let output = self.output_tokens.unwrap_or(0);
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input + output,
            reasoning_tokens: 0,
            cached_input_tokens: read,
            cache_creation_input_tokens: created,
        }
    }
}

/// `stop_reason` as a [`FinishReason`]: `end_turn` and `stop_sequence`
/// stop, `tool_use` asks for tools, `max_tokens` is the length limit,
/// `refusal` a content filter; anything else (`pause_turn`) is kept by
/// name.
pub(crate) fn finish_reason(stop_reason: Option<&str>) -> FinishReason {
    match stop_reason {
        None | Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

fn reasoning_of(provider: &str, thinking: String, signature: String) -> Reasoning {
    Reasoning {
        provider: provider.to_owned(),
        text: thinking,
        signature: (!signature.is_empty()).then_some(signature),
        ..Default::default()
    }
}

fn redacted_of(provider: &str, data: String) -> Reasoning {
    Reasoning {
        provider: provider.to_owned(),
        redacted: Some(data),
        ..Default::default()
    }
}

/// A whole answer as a response.
pub(crate) fn message_to_response(m: MessageResponse, provider: &str) -> LlmResponse {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut reasoning_text = String::new();
    let mut calls = Vec::new();
    for block in m.content {
        match block {
            ContentBlock::Text { text: t } => text.push_str(&t),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => {
                reasoning_text.push_str(&thinking);
                parts.push(Part::reasoning(reasoning_of(provider, thinking, signature)));
            }
            ContentBlock::RedactedThinking { data } => {
                parts.push(Part::reasoning(redacted_of(provider, data)));
            }
            ContentBlock::ToolUse { id, name, input } => {
                let arguments = input.map_or_else(|| "{}".to_owned(), |v| v.to_string());
                calls.push(ToolCall::new(id, name, arguments));
            }
            ContentBlock::Other => {}
        }
    }
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
    let mut message = Message::with_parts(Role::Assistant, parts);
    message.tool_calls = calls;
    LlmResponse {
        message,
        finish_reason: finish_reason(m.stop_reason.as_deref()),
        usage: m.usage.map(WireUsage::to_usage),
        reasoning: (!reasoning_text.is_empty()).then_some(reasoning_text),
        model: m.model,
    }
}

/// One event of a stream, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StartMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(other)]
    Other,
}

/// What an open content block of the stream is.
#[derive(Debug)]
enum Open {
    Text,
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    /// A tool call, by its position among the answer's calls, and whether
    /// any argument text came.
    Tool {
        call: usize,
        any_arguments: bool,
    },
    Other,
}

/// Turns stream events into chunks, keeping what a block needs until it
/// stops (thinking text and its signature come as separate deltas).
#[derive(Debug)]
pub(crate) struct StreamDecoder {
    provider: String,
    blocks: Vec<(usize, Open)>,
    calls: usize,
    usage: WireUsage,
    saw_usage: bool,
    stop_reason: Option<String>,
    model: Option<String>,
    finished: bool,
}

impl StreamDecoder {
    pub(crate) fn new(provider: &str) -> Self {
        StreamDecoder {
            provider: provider.to_owned(),
            blocks: Vec::new(),
            calls: 0,
            usage: WireUsage::default(),
            saw_usage: false,
            stop_reason: None,
            model: None,
            finished: false,
        }
    }

    /// Whether `message_stop` came.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    pub(crate) fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    pub(crate) fn usage(&self) -> Option<Usage> {
        self.saw_usage.then(|| self.usage.to_usage())
    }

    pub(crate) fn finish_reason(&self) -> FinishReason {
        finish_reason(self.stop_reason.as_deref())
    }

    fn open(&mut self, index: usize) -> Option<&mut Open> {
        self.blocks
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, open)| open)
    }

    /// Decodes one event into `out`.
    pub(crate) fn decode(
        &mut self,
        event: StreamEvent,
        out: &mut VecDeque<LlmChunk>,
    ) -> Result<(), LlmError> {
        match event {
            StreamEvent::MessageStart { message } => {
                self.model = message.model;
                if let Some(u) = message.usage {
                    self.usage.merge(u);
                    self.saw_usage = true;
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let open = match content_block {
                    ContentBlock::Text { text } => {
                        if !text.is_empty() {
                            out.push_back(LlmChunk::TextDelta(text));
                        }
                        Open::Text
                    }
                    ContentBlock::Thinking {
                        thinking,
                        signature,
                    } => {
                        if !thinking.is_empty() {
                            out.push_back(LlmChunk::ReasoningDelta(thinking.clone()));
                        }
                        Open::Thinking {
                            text: thinking,
                            signature,
                        }
                    }
                    ContentBlock::RedactedThinking { data } => Open::Redacted(data),
                    ContentBlock::ToolUse { id, name, input } => {
                        let call = self.calls;
                        self.calls += 1;
                        out.push_back(LlmChunk::ToolCallStart {
                            index: call,
                            id,
                            name,
                        });
                        // Arguments come as deltas; a start that carries
                        // them whole (not `{}`) is taken as they are.
                        let given = input.filter(|v| v.as_object().is_none_or(|o| !o.is_empty()));
                        let any_arguments = given.is_some();
                        if let Some(v) = given {
                            out.push_back(LlmChunk::ToolCallDelta {
                                index: call,
                                arguments: v.to_string(),
                            });
                        }
                        Open::Tool {
                            call,
                            any_arguments,
                        }
                    }
                    ContentBlock::Other => Open::Other,
                };
                self.blocks.push((index, open));
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let Some(open) = self.open(index) else {
                    return Err(LlmError::MalformedResponse {
                        message: format!("a delta for content block {index}, which never started"),
                    });
                };
                match (open, delta) {
                    (Open::Text, Delta::Text { text }) => out.push_back(LlmChunk::TextDelta(text)),
                    (Open::Thinking { text, .. }, Delta::Thinking { thinking }) => {
                        text.push_str(&thinking);
                        out.push_back(LlmChunk::ReasoningDelta(thinking));
                    }
                    (Open::Thinking { signature, .. }, Delta::Signature { signature: s }) => {
                        signature.push_str(&s)
                    }
                    (
                        Open::Tool {
                            call,
                            any_arguments,
                        },
                        Delta::InputJson { partial_json },
                    ) if !partial_json.is_empty() => {
                        *any_arguments = true;
                        out.push_back(LlmChunk::ToolCallDelta {
                            index: *call,
                            arguments: partial_json,
                        });
                    }
                    // Deltas of kinds this code does not know.
                    _ => {}
                }
            }
            StreamEvent::ContentBlockStop { index } => {
                let Some(at) = self.blocks.iter().position(|(i, _)| *i == index) else {
                    return Ok(());
                };
                let (_, open) = self.blocks.swap_remove(at);
                match open {
                    Open::Thinking { text, signature } => {
                        out.push_back(LlmChunk::ReasoningBlock(Box::new(reasoning_of(
                            &self.provider,
                            text,
                            signature,
                        ))));
                    }
                    Open::Redacted(data) => {
                        out.push_back(LlmChunk::ReasoningBlock(Box::new(redacted_of(
                            &self.provider,
                            data,
                        ))));
                    }
                    Open::Tool {
                        call,
                        any_arguments: false,
                    } => out.push_back(LlmChunk::ToolCallDelta {
                        index: call,
                        arguments: "{}".to_owned(),
                    }),
                    _ => {}
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(u) = usage {
                    self.usage.merge(u);
                    self.saw_usage = true;
                }
            }
            StreamEvent::MessageStop => {
                self.finished = true;
                if let Some(u) = self.usage() {
                    out.push_back(LlmChunk::Usage(u));
                }
                out.push_back(LlmChunk::Finish(self.finish_reason()));
            }
            StreamEvent::Error { error } => {
                return Err(from_stream_error(&serde_json::json!({ "error": error })));
            }
            StreamEvent::Ping | StreamEvent::Unknown => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::ResponseAssembler;
    use serde_json::json;

    fn decode_all(events: Vec<Value>) -> Result<LlmResponse, LlmError> {
        let mut d = StreamDecoder::new("anthropic");
        let mut out = VecDeque::new();
        let mut a = ResponseAssembler::new();
        for e in events {
            d.decode(serde_json::from_value(e).unwrap(), &mut out)?;
            for c in out.drain(..) {
                a.push(&c);
            }
        }
        assert!(d.is_finished());
        Ok(a.finish())
    }

    #[test]
    fn a_stream_with_thinking_and_parallel_tools_assembles() {
        let r = decode_all(vec![
            json!({"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Two "}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"calls."}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"a","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"q\":"}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"1}"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t2","name":"b","input":{}}}),
            json!({"type":"content_block_stop","index":2}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}),
            json!({"type":"message_stop"}),
        ])
        .unwrap();
        assert_eq!(r.reasoning.as_deref(), Some("Two calls."));
        let thought = r.message.reasoning().next().unwrap();
        assert_eq!(thought.signature.as_deref(), Some("EqQB"));
        assert_eq!(thought.text, "Two calls.");
        assert_eq!(
            r.message.tool_calls[0],
            ToolCall::new("t1", "a", "{\"q\":1}")
        );
        assert_eq!(r.message.tool_calls[1], ToolCall::new("t2", "b", "{}"));
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        let u = r.usage.unwrap();
        assert_eq!(
            (u.input_tokens, u.cached_input_tokens, u.output_tokens),
            (100, 90, 30)
        );
    }

    #[test]
    fn stop_reasons_map() {
        assert_eq!(finish_reason(Some("end_turn")), FinishReason::Stop);
        assert_eq!(finish_reason(Some("stop_sequence")), FinishReason::Stop);
        assert_eq!(finish_reason(Some("max_tokens")), FinishReason::Length);
        assert_eq!(finish_reason(Some("refusal")), FinishReason::ContentFilter);
        assert_eq!(
            finish_reason(Some("pause_turn")),
            FinishReason::Other("pause_turn".into())
        );
    }

    #[test]
    fn a_whole_answer_keeps_redacted_thinking() {
        let m: MessageResponse = serde_json::from_value(json!({
            "model": "claude-x",
            "content": [
                {"type":"redacted_thinking","data":"ENC"},
                {"type":"text","text":"Hi"},
                {"type":"server_tool_use","id":"s","name":"web_search","input":{}}
            ],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 2, "cache_creation_input_tokens": 5}
        }))
        .unwrap();
        let r = message_to_response(m, "anthropic");
        let thought = r.message.reasoning().next().unwrap();
        assert!(thought.is_redacted() && thought.is_from("anthropic"));
        assert_eq!(r.message.text(), "Hi");
        let u = r.usage.unwrap();
        assert_eq!((u.input_tokens, u.cache_creation_input_tokens), (6, 5));
    }
}
