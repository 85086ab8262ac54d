//! The OpenAI chat completions wire form.

use std::time::Duration;

use looopy_core::Usage;
use serde_json::{Value, json};

use super::{ErrorCase, Fault, ScriptCall, VendorWire};
use crate::openai_fixture::openai;
use crate::{FixtureReply, SseEnd, SseEvent, SseReply};

/// OpenAI's `POST /chat/completions` (and every server that speaks it).
/// It takes no reasoning back, and reports cache reads but not writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiChatWire;

fn usage_json(u: Usage) -> Value {
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens}
    })
}

fn usage_chunk(u: Usage) -> Value {
    let mut chunk = openai::usage_chunk(u.input_tokens, u.output_tokens);
    chunk["usage"] = usage_json(u);
    chunk
}

/// A call's arguments in two pieces.
fn halves(arguments: &str) -> (&str, &str) {
    let mut mid = arguments.len() / 2;
    while !arguments.is_char_boundary(mid) {
        mid -= 1;
    }
    arguments.split_at(mid)
}

fn error_with_code(status: u16, message: &str, code: &str) -> FixtureReply {
    FixtureReply::Json {
        status,
        headers: Vec::new(),
        body: json!({"error": {"message": message, "type": "invalid_request_error", "code": code}}),
    }
}

impl VendorWire for OpenAiChatWire {
    fn name(&self) -> &'static str {
        "openai-chat"
    }

    fn text(&self, text: &str, usage: Usage) -> FixtureReply {
        let mut body = openai::completion(text);
        body["usage"] = usage_json(usage);
        FixtureReply::json(body)
    }

    fn text_stream(&self, pieces: &[&str], usage: Usage) -> FixtureReply {
        let mut chunks: Vec<Value> = pieces.iter().map(|p| openai::text_chunk(p)).collect();
        chunks.push(openai::finish_chunk("stop"));
        chunks.push(usage_chunk(usage));
        FixtureReply::sse(chunks)
    }

    fn tool_calls(&self, calls: &[ScriptCall<'_>], stream: bool) -> FixtureReply {
        if !stream {
            let calls: Vec<(&str, &str, &str)> =
                calls.iter().map(|c| (c.id, c.name, c.arguments)).collect();
            return FixtureReply::json(openai::tool_calls_completion(&calls));
        }
        let mut chunks = Vec::new();
        for (index, c) in calls.iter().enumerate() {
            chunks.push(openai::tool_call_start_chunk(index, c.id, c.name));
            let (a, b) = halves(c.arguments);
            chunks.push(openai::tool_args_chunk(index, a));
            chunks.push(openai::tool_args_chunk(index, b));
        }
        chunks.push(openai::finish_chunk("tool_calls"));
        chunks.push(openai::usage_chunk(10, 10));
        FixtureReply::sse(chunks)
    }

    fn reasoning_then_call(&self, _: &str, _: &str, _: ScriptCall<'_>) -> Option<FixtureReply> {
        None
    }

    fn error(&self, case: ErrorCase) -> FixtureReply {
        match case {
            ErrorCase::Authentication => FixtureReply::error(401, "Incorrect API key provided"),
            ErrorCase::RateLimited(secs) => FixtureReply::error(429, "Rate limit reached")
                .with_header("retry-after", secs.to_string()),
            ErrorCase::Overloaded => FixtureReply::error(529, "Overloaded"),
            ErrorCase::ContextLength => error_with_code(
                400,
                "This model's maximum context length is 8192 tokens.",
                "context_length_exceeded",
            ),
            ErrorCase::ContentFilter => error_with_code(
                400,
                "The response was filtered due to the prompt triggering content management policy.",
                "content_filter",
            ),
            ErrorCase::BadRequest => FixtureReply::error(400, "Invalid 'messages': empty array"),
        }
    }

    fn faulty_stream(&self, fault: Fault) -> FixtureReply {
        let start = SseReply::new(vec![openai::text_chunk("Hel")]);
        match fault {
            Fault::MalformedEvent => start.then(SseEvent::Data("{\"choices\": [".into())),
            Fault::EndsEarly => start.end(SseEnd::Close),
            Fault::Cut => start.end(SseEnd::Abort),
        }
        .into()
    }

    fn slow_stream(&self) -> FixtureReply {
        let pieces = (0..300)
            .map(|i| openai::text_chunk(&format!("{i} ")))
            .collect();
        SseReply::new(pieces)
            .interval(Duration::from_millis(200))
            .into()
    }

    fn reports_cache_creation(&self) -> bool {
        false
    }

    fn reports_reasoning_tokens(&self) -> bool {
        true
    }

    fn sent_tool_calls(&self, body: &Value) -> Vec<(String, String, Value)> {
        let mut out = Vec::new();
        for m in messages(body) {
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                let args = c["function"]["arguments"]
                    .as_str()
                    .and_then(|a| serde_json::from_str(a).ok())
                    .unwrap_or(Value::Null);
                out.push((
                    c["id"].as_str().unwrap_or("").to_owned(),
                    c["function"]["name"].as_str().unwrap_or("").to_owned(),
                    args,
                ));
            }
        }
        out
    }

    fn sent_tool_result(&self, body: &Value, call_id: &str) -> Option<String> {
        messages(body)
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
            .map(|m| match &m["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
    }

    fn sent_response_schema(&self, body: &Value) -> Option<Value> {
        let format = body.get("response_format")?;
        (format["type"] == "json_schema").then(|| format["json_schema"]["schema"].clone())
    }

    fn sent_signatures(&self, _: &Value) -> Vec<String> {
        Vec::new()
    }
}

fn messages(body: &Value) -> impl Iterator<Item = &Value> {
    body["messages"].as_array().into_iter().flatten()
}
