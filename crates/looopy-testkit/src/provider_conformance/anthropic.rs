//! The Anthropic Messages API wire form.

use std::time::Duration;

use looopy_core::Usage;
use serde_json::{Value, json};

use super::{ErrorCase, Fault, ScriptCall, VendorWire};
use crate::anthropic_fixture::anthropic;
use crate::{FixtureReply, SseEnd, SseEvent, SseReply};

/// Anthropic's `POST /v1/messages`: named events, thinking blocks with
/// signatures, cache reads and writes counted apart from the input.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnthropicWire;

/// Core's usage in the API's counts: `input_tokens` without the cache's.
fn usage_json(u: Usage) -> Value {
    let uncached = u.input_tokens - u.cached_input_tokens - u.cache_creation_input_tokens;
    anthropic::usage(
        uncached,
        u.output_tokens,
        u.cached_input_tokens,
        u.cache_creation_input_tokens,
    )
}

fn halves(arguments: &str) -> (&str, &str) {
    let mut mid = arguments.len() / 2;
    while !arguments.is_char_boundary(mid) {
        mid -= 1;
    }
    arguments.split_at(mid)
}

fn sse(events: Vec<SseEvent>) -> FixtureReply {
    SseReply::from_events(events).end(SseEnd::Close).into()
}

fn error(status: u16, kind: &str, message: &str) -> FixtureReply {
    FixtureReply::Json {
        status,
        headers: Vec::new(),
        body: anthropic::error(kind, message),
    }
}

/// The streamed blocks of these calls, from block `first` on.
fn call_events(calls: &[ScriptCall<'_>], first: usize) -> Vec<SseEvent> {
    let mut events = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let index = first + i;
        events.push(anthropic::block_start(
            index,
            json!({"type": "tool_use", "id": c.id, "name": c.name, "input": {}}),
        ));
        let (a, b) = halves(c.arguments);
        for piece in ["", a, b] {
            events.push(anthropic::block_delta(
                index,
                json!({"type": "input_json_delta", "partial_json": piece}),
            ));
        }
        events.push(anthropic::block_stop(index));
    }
    events
}

impl VendorWire for AnthropicWire {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn text(&self, text: &str, usage: Usage) -> FixtureReply {
        FixtureReply::json(anthropic::message_with_usage(
            vec![anthropic::text_block(text)],
            "end_turn",
            usage_json(usage),
        ))
    }

    fn text_stream(&self, pieces: &[&str], usage: Usage) -> FixtureReply {
        let mut start = usage_json(usage);
        // The output count comes at the end, in `message_delta`.
        start["output_tokens"] = json!(1);
        let mut events = vec![
            anthropic::message_start(start),
            anthropic::block_start(0, json!({"type": "text", "text": ""})),
            anthropic::event(json!({"type": "ping"})),
        ];
        for piece in pieces {
            events.push(anthropic::block_delta(
                0,
                json!({"type": "text_delta", "text": piece}),
            ));
        }
        events.push(anthropic::block_stop(0));
        events.extend(anthropic::message_end("end_turn", usage.output_tokens));
        sse(events)
    }

    fn tool_calls(&self, calls: &[ScriptCall<'_>], stream: bool) -> FixtureReply {
        if !stream {
            let content = calls
                .iter()
                .map(|c| {
                    let input: Value = serde_json::from_str(c.arguments).unwrap_or(json!({}));
                    anthropic::tool_use_block(c.id, c.name, input)
                })
                .collect();
            return FixtureReply::json(anthropic::message(content, "tool_use"));
        }
        let mut events = vec![anthropic::message_start(anthropic::usage(10, 1, 0, 0))];
        events.extend(call_events(calls, 0));
        events.extend(anthropic::message_end("tool_use", 20));
        sse(events)
    }

    fn reasoning_then_call(
        &self,
        thinking: &str,
        signature: &str,
        call: ScriptCall<'_>,
    ) -> Option<FixtureReply> {
        let (a, b) = halves(thinking);
        let mut events = vec![
            anthropic::message_start(anthropic::usage(10, 1, 0, 0)),
            anthropic::block_start(
                0,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
            ),
            anthropic::block_delta(0, json!({"type": "thinking_delta", "thinking": a})),
            anthropic::block_delta(0, json!({"type": "thinking_delta", "thinking": b})),
            anthropic::block_delta(
                0,
                json!({"type": "signature_delta", "signature": signature}),
            ),
            anthropic::block_stop(0),
        ];
        events.extend(call_events(&[call], 1));
        events.extend(anthropic::message_end("tool_use", 40));
        Some(sse(events))
    }

    fn error(&self, case: ErrorCase) -> FixtureReply {
        match case {
            ErrorCase::Authentication => error(401, "authentication_error", "invalid x-api-key"),
            ErrorCase::RateLimited(secs) => error(
                429,
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            )
            .with_header("retry-after", secs.to_string()),
            ErrorCase::Overloaded => error(529, "overloaded_error", "Overloaded"),
            ErrorCase::ContextLength => error(
                400,
                "invalid_request_error",
                "prompt is too long: 210000 tokens > 200000 maximum",
            ),
            // Claude declines in an answer, not with an error.
            ErrorCase::ContentFilter => FixtureReply::json(anthropic::message(
                vec![anthropic::text_block("I can't help with that.")],
                "refusal",
            )),
            ErrorCase::BadRequest => error(
                400,
                "invalid_request_error",
                "messages: at least one message is required",
            ),
        }
    }

    fn faulty_stream(&self, fault: Fault) -> FixtureReply {
        let start = vec![
            anthropic::message_start(anthropic::usage(10, 1, 0, 0)),
            anthropic::block_start(0, json!({"type": "text", "text": ""})),
            anthropic::block_delta(0, json!({"type": "text_delta", "text": "Hel"})),
        ];
        let reply = SseReply::from_events(start);
        match fault {
            Fault::MalformedEvent => reply
                .then(SseEvent::Verbatim(
                    "event: content_block_delta\ndata: {\"type\": \"content_blo\n\n".into(),
                ))
                .end(SseEnd::Close),
            Fault::EndsEarly => reply.end(SseEnd::Close),
            Fault::Cut => reply.end(SseEnd::Abort),
        }
        .into()
    }

    fn slow_stream(&self) -> FixtureReply {
        let mut events = vec![
            anthropic::message_start(anthropic::usage(10, 1, 0, 0)),
            anthropic::block_start(0, json!({"type": "text", "text": ""})),
        ];
        for i in 0..300 {
            events.push(anthropic::block_delta(
                0,
                json!({"type": "text_delta", "text": format!("{i} ")}),
            ));
        }
        SseReply::from_events(events)
            .interval(Duration::from_millis(200))
            .end(SseEnd::Close)
            .into()
    }

    fn reports_cache_creation(&self) -> bool {
        true
    }

    fn reports_reasoning_tokens(&self) -> bool {
        false
    }

    fn sent_tool_calls(&self, body: &Value) -> Vec<(String, String, Value)> {
        blocks(body, "assistant")
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                (
                    b["id"].as_str().unwrap_or("").to_owned(),
                    b["name"].as_str().unwrap_or("").to_owned(),
                    b["input"].clone(),
                )
            })
            .collect()
    }

    fn sent_tool_result(&self, body: &Value, call_id: &str) -> Option<String> {
        let result = blocks(body, "user")
            .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == call_id)?;
        Some(match &result["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .concat(),
            other => other.to_string(),
        })
    }

    fn sent_response_schema(&self, body: &Value) -> Option<Value> {
        let format = body.get("output_config")?.get("format")?;
        (format["type"] == "json_schema").then(|| format["schema"].clone())
    }

    fn sent_signatures(&self, body: &Value) -> Vec<String> {
        blocks(body, "assistant")
            .filter_map(|b| match b["type"].as_str() {
                Some("thinking") => b["signature"].as_str().map(str::to_owned),
                Some("redacted_thinking") => b["data"].as_str().map(str::to_owned),
                _ => None,
            })
            .collect()
    }
}

/// The content blocks of the messages of `role`.
fn blocks<'a>(body: &'a Value, role: &'a str) -> impl Iterator<Item = &'a Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |m| m["role"] == role)
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
}
