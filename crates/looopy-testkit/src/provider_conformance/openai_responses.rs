//! The OpenAI Responses API wire form (`POST /responses`).

use std::time::Duration;

use looopy_core::Usage;
use serde_json::{Value, json};

use super::{ErrorCase, Fault, ScriptCall, VendorWire};
use crate::{FixtureReply, SseEnd, SseEvent, SseReply};

/// OpenAI's Responses API: typed events, reasoning items with their
/// encrypted content, cache reads but not writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiResponsesWire;

fn usage_json(u: Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_input_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.total_tokens
    })
}

fn completed(output: Vec<Value>, usage: Usage) -> Value {
    json!({"type": "response.completed", "response": {
        "id": "resp_1", "model": "gpt-4.1", "status": "completed",
        "output": output, "usage": usage_json(usage)}})
}

fn delta(text: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
           "content_index": 0, "delta": text})
}

fn call_item(c: &ScriptCall<'_>, index: usize) -> Value {
    json!({"type": "function_call", "id": format!("fc_{index}"), "call_id": c.id,
           "name": c.name, "arguments": c.arguments})
}

fn stream(events: Vec<Value>) -> FixtureReply {
    SseReply::new(events).end(SseEnd::Close).into()
}

fn call_events(c: &ScriptCall<'_>, index: usize, out: &mut Vec<Value>) {
    let mut added = call_item(c, index);
    added["arguments"] = json!("");
    out.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
    let mut mid = c.arguments.len() / 2;
    while !c.arguments.is_char_boundary(mid) {
        mid -= 1;
    }
    let (a, b) = c.arguments.split_at(mid);
    for piece in [a, b] {
        out.push(json!({"type": "response.function_call_arguments.delta",
                        "item_id": format!("fc_{index}"), "output_index": index, "delta": piece}));
    }
    out.push(
        json!({"type": "response.output_item.done", "output_index": index,
                    "item": call_item(c, index)}),
    );
}

fn calls_usage() -> Usage {
    Usage {
        input_tokens: 10,
        output_tokens: 10,
        total_tokens: 20,
        ..Usage::default()
    }
}

fn error_with_code(status: u16, message: &str, code: &str) -> FixtureReply {
    FixtureReply::Json {
        status,
        headers: Vec::new(),
        body: json!({"error": {"message": message, "type": "invalid_request_error", "code": code}}),
    }
}

impl VendorWire for OpenAiResponsesWire {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn text(&self, text: &str, usage: Usage) -> FixtureReply {
        FixtureReply::json(json!({
            "id": "resp_1", "model": "gpt-4.1", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": usage_json(usage)
        }))
    }

    fn text_stream(&self, pieces: &[&str], usage: Usage) -> FixtureReply {
        let mut events: Vec<Value> = pieces.iter().map(|p| delta(p)).collect();
        events.push(completed(Vec::new(), usage));
        stream(events)
    }

    fn tool_calls(&self, calls: &[ScriptCall<'_>], streamed: bool) -> FixtureReply {
        if !streamed {
            let output: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, c)| call_item(c, i))
                .collect();
            return FixtureReply::json(json!({"id": "resp_1", "status": "completed",
                "output": output, "usage": usage_json(calls_usage())}));
        }
        let mut events = Vec::new();
        for (i, c) in calls.iter().enumerate() {
            call_events(c, i, &mut events);
        }
        events.push(completed(Vec::new(), calls_usage()));
        stream(events)
    }

    fn reasoning_then_call(
        &self,
        thinking: &str,
        signature: &str,
        call: ScriptCall<'_>,
    ) -> Option<FixtureReply> {
        let mut events = vec![
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1",
                   "output_index": 0, "delta": thinking}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "reasoning", "id": "rs_1",
                            "summary": [{"type": "summary_text", "text": thinking}],
                            "encrypted_content": signature}}),
        ];
        call_events(&call, 1, &mut events);
        events.push(completed(Vec::new(), calls_usage()));
        Some(stream(events))
    }

    fn error(&self, case: ErrorCase) -> FixtureReply {
        match case {
            ErrorCase::Authentication => FixtureReply::error(401, "Incorrect API key provided"),
            ErrorCase::RateLimited(secs) => FixtureReply::error(429, "Rate limit reached")
                .with_header("retry-after", secs.to_string()),
            ErrorCase::Overloaded => FixtureReply::error(529, "Overloaded"),
            ErrorCase::ContextLength => error_with_code(
                400,
                "Your input exceeds the context window of this model.",
                "context_length_exceeded",
            ),
            // A filtered answer: incomplete for its content.
            ErrorCase::ContentFilter => FixtureReply::json(json!({
                "id": "resp_1", "status": "incomplete",
                "incomplete_details": {"reason": "content_filter"}, "output": []
            })),
            ErrorCase::BadRequest => FixtureReply::error(400, "Invalid 'input': empty array"),
        }
    }

    fn faulty_stream(&self, fault: Fault) -> FixtureReply {
        let start = SseReply::new(vec![delta("Hel")]);
        match fault {
            Fault::MalformedEvent => start
                .then(SseEvent::Data("{\"type\": ".into()))
                .end(SseEnd::Close),
            Fault::EndsEarly => start.end(SseEnd::Close),
            Fault::Cut => start.end(SseEnd::Abort),
        }
        .into()
    }

    fn slow_stream(&self) -> FixtureReply {
        let events = (0..300).map(|i| delta(&format!("{i} "))).collect();
        SseReply::new(events)
            .interval(Duration::from_millis(200))
            .end(SseEnd::Close)
            .into()
    }

    fn reports_cache_creation(&self) -> bool {
        false
    }

    fn reports_reasoning_tokens(&self) -> bool {
        true
    }

    fn sent_tool_calls(&self, body: &Value) -> Vec<(String, String, Value)> {
        items(body)
            .filter(|i| i["type"] == "function_call")
            .map(|c| {
                let args = c["arguments"]
                    .as_str()
                    .and_then(|a| serde_json::from_str(a).ok())
                    .unwrap_or(Value::Null);
                (
                    c["call_id"].as_str().unwrap_or("").to_owned(),
                    c["name"].as_str().unwrap_or("").to_owned(),
                    args,
                )
            })
            .collect()
    }

    fn sent_tool_result(&self, body: &Value, call_id: &str) -> Option<String> {
        items(body)
            .find(|i| i["type"] == "function_call_output" && i["call_id"] == call_id)
            .map(|i| match &i["output"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
    }

    fn sent_response_schema(&self, body: &Value) -> Option<Value> {
        let format = body.get("text")?.get("format")?;
        (format["type"] == "json_schema").then(|| format["schema"].clone())
    }

    fn sent_signatures(&self, body: &Value) -> Vec<String> {
        items(body)
            .filter(|i| i["type"] == "reasoning")
            .filter_map(|i| i["encrypted_content"].as_str())
            .map(str::to_owned)
            .collect()
    }
}

fn items(body: &Value) -> impl Iterator<Item = &Value> {
    body["input"].as_array().into_iter().flatten()
}
