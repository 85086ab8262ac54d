//! Builders for Anthropic Messages API JSON (answers, stream events,
//! errors), played by an [`OpenAiFixture`](crate::OpenAiFixture), which
//! answers any path.
//!
//! ```
//! use looopy_testkit::anthropic_fixture::anthropic;
//! use looopy_testkit::{FixtureReply, SseEnd, SseReply};
//!
//! let whole = FixtureReply::json(anthropic::message(vec![anthropic::text_block("Hi")], "end_turn"));
//! let streamed: FixtureReply = SseReply::from_events(anthropic::text_stream(&["Hel", "lo"]))
//!     .end(SseEnd::Close)
//!     .into();
//! # let _ = (whole, streamed);
//! ```

/// The JSON shapes.
pub mod anthropic {
    use serde_json::{Value, json};

    use crate::SseEvent;

    /// A whole `message` with these content blocks and stop reason, and
    /// usage of 10 + 10 tokens.
    pub fn message(content: Vec<Value>, stop_reason: &str) -> Value {
        message_with_usage(content, stop_reason, usage(10, 10, 0, 0))
    }

    /// A whole `message` with this usage object.
    pub fn message_with_usage(content: Vec<Value>, stop_reason: &str, usage: Value) -> Value {
        json!({
            "id": "msg_fixture",
            "type": "message",
            "role": "assistant",
            "model": "claude-fixture",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": null,
            "usage": usage
        })
    }

    /// A `usage` object.
    pub fn usage(input: u64, output: u64, cache_read: u64, cache_creation: u64) -> Value {
        json!({
            "input_tokens": input,
            "output_tokens": output,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_creation
        })
    }

    /// A `text` block.
    pub fn text_block(text: &str) -> Value {
        json!({"type": "text", "text": text})
    }

    /// A `tool_use` block.
    pub fn tool_use_block(id: &str, name: &str, input: Value) -> Value {
        json!({"type": "tool_use", "id": id, "name": name, "input": input})
    }

    /// A `thinking` block.
    pub fn thinking_block(thinking: &str, signature: &str) -> Value {
        json!({"type": "thinking", "thinking": thinking, "signature": signature})
    }

    /// A named stream event: `event: <type>` with its JSON.
    pub fn event(data: Value) -> SseEvent {
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message")
            .to_owned();
        SseEvent::Named(name, data)
    }

    /// `message_start` with this usage.
    pub fn message_start(usage: Value) -> SseEvent {
        event(json!({"type": "message_start", "message": {
            "id": "msg_fixture", "type": "message", "role": "assistant",
            "model": "claude-fixture", "content": [], "stop_reason": null, "usage": usage}}))
    }

    /// `content_block_start` of block `index`.
    pub fn block_start(index: usize, block: Value) -> SseEvent {
        event(json!({"type": "content_block_start", "index": index, "content_block": block}))
    }

    /// `content_block_delta` of block `index`.
    pub fn block_delta(index: usize, delta: Value) -> SseEvent {
        event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
    }

    /// `content_block_stop` of block `index`.
    pub fn block_stop(index: usize) -> SseEvent {
        event(json!({"type": "content_block_stop", "index": index}))
    }

    /// `message_delta` with this stop reason and output token count, then
    /// `message_stop`.
    pub fn message_end(stop_reason: &str, output_tokens: u64) -> Vec<SseEvent> {
        vec![
            event(json!({"type": "message_delta",
                         "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                         "usage": {"output_tokens": output_tokens}})),
            event(json!({"type": "message_stop"})),
        ]
    }

    /// A whole streamed text answer, in these pieces.
    pub fn text_stream(pieces: &[&str]) -> Vec<SseEvent> {
        let mut events = vec![
            message_start(usage(10, 1, 0, 0)),
            block_start(0, json!({"type": "text", "text": ""})),
            event(json!({"type": "ping"})),
        ];
        for piece in pieces {
            events.push(block_delta(0, json!({"type": "text_delta", "text": piece})));
        }
        events.push(block_stop(0));
        events.extend(message_end("end_turn", 10));
        events
    }

    /// An error body: `{"type": "error", "error": {"type", "message"}}`.
    pub fn error(kind: &str, message: &str) -> Value {
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }
}
