//! The Gemini API wire form (`generateContent`, `streamGenerateContent`).

use std::time::Duration;

use looopy_core::Usage;
use serde_json::{Value, json};

use super::{ErrorCase, Fault, ScriptCall, VendorWire};
use crate::{FixtureReply, SseEnd, SseEvent, SseReply};

/// Google's Gemini API. Function calls come whole (never in pieces), a
/// thought signature rides on the function-call part it belongs to, and
/// cache writes are not reported.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeminiWire;

fn usage_json(u: Usage) -> Value {
    json!({
        "promptTokenCount": u.input_tokens,
        "candidatesTokenCount": u.output_tokens - u.reasoning_tokens,
        "thoughtsTokenCount": u.reasoning_tokens,
        "cachedContentTokenCount": u.cached_input_tokens,
        "totalTokenCount": u.total_tokens
    })
}

fn event(parts: Value, finish: Option<&str>, usage: Option<Usage>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    let mut e = json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash"});
    if let Some(u) = usage {
        e["usageMetadata"] = usage_json(u);
    }
    e
}

fn call_part(c: &ScriptCall<'_>) -> Value {
    let args: Value = serde_json::from_str(c.arguments).unwrap_or(Value::Null);
    json!({"functionCall": {"id": c.id, "name": c.name, "args": args}})
}

fn stream(events: Vec<Value>) -> FixtureReply {
    SseReply::new(events).end(SseEnd::Close).into()
}

fn error(status: u16, grpc: &str, message: &str, details: Value) -> FixtureReply {
    FixtureReply::Json {
        status,
        headers: Vec::new(),
        body: json!({"error": {"code": status, "message": message, "status": grpc, "details": details}}),
    }
}

fn usage_of_calls() -> Usage {
    Usage {
        input_tokens: 10,
        output_tokens: 10,
        total_tokens: 20,
        ..Usage::default()
    }
}

impl VendorWire for GeminiWire {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn text(&self, text: &str, usage: Usage) -> FixtureReply {
        FixtureReply::json(event(json!([{"text": text}]), Some("STOP"), Some(usage)))
    }

    fn text_stream(&self, pieces: &[&str], usage: Usage) -> FixtureReply {
        let last = pieces.len().saturating_sub(1);
        let events = pieces
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let end = i == last;
                event(
                    json!([{"text": p}]),
                    end.then_some("STOP"),
                    end.then_some(usage),
                )
            })
            .collect();
        stream(events)
    }

    fn tool_calls(&self, calls: &[ScriptCall<'_>], streamed: bool) -> FixtureReply {
        let parts: Vec<Value> = calls.iter().map(call_part).collect();
        let whole = event(Value::Array(parts), Some("STOP"), Some(usage_of_calls()));
        if streamed {
            stream(vec![whole])
        } else {
            FixtureReply::json(whole)
        }
    }

    fn reasoning_then_call(
        &self,
        thinking: &str,
        signature: &str,
        call: ScriptCall<'_>,
    ) -> Option<FixtureReply> {
        let mut part = call_part(&call);
        part["thoughtSignature"] = json!(signature);
        Some(stream(vec![
            event(json!([{"text": thinking, "thought": true}]), None, None),
            event(json!([part]), Some("STOP"), Some(usage_of_calls())),
        ]))
    }

    fn error(&self, case: ErrorCase) -> FixtureReply {
        match case {
            ErrorCase::Authentication => error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]),
            ),
            ErrorCase::RateLimited(secs) => error(
                429,
                "RESOURCE_EXHAUSTED",
                "You exceeded your current quota.",
                json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{secs}s")}]),
            ),
            ErrorCase::Overloaded => error(
                503,
                "UNAVAILABLE",
                "The model is overloaded. Please try again later.",
                json!([]),
            ),
            ErrorCase::ContextLength => error(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                json!([]),
            ),
            // A blocked prompt is an answer, not an error.
            ErrorCase::ContentFilter => FixtureReply::json(json!({
                "promptFeedback": {"blockReason": "SAFETY"},
                "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3}
            })),
            ErrorCase::BadRequest => error(
                400,
                "INVALID_ARGUMENT",
                "* GenerateContentRequest.contents: contents is not specified",
                json!([]),
            ),
        }
    }

    fn faulty_stream(&self, fault: Fault) -> FixtureReply {
        let start = SseReply::new(vec![event(json!([{"text": "Hel"}]), None, None)]);
        match fault {
            Fault::MalformedEvent => start
                .then(SseEvent::Data("{\"candidates\": [".into()))
                .end(SseEnd::Close),
            Fault::EndsEarly => start.end(SseEnd::Close),
            Fault::Cut => start.end(SseEnd::Abort),
        }
        .into()
    }

    fn slow_stream(&self) -> FixtureReply {
        let events = (0..300)
            .map(|i| event(json!([{"text": format!("{i} ")}]), None, None))
            .collect();
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
        parts(body)
            .filter_map(|p| p.get("functionCall"))
            .map(|c| {
                (
                    c["id"].as_str().unwrap_or("").to_owned(),
                    c["name"].as_str().unwrap_or("").to_owned(),
                    c["args"].clone(),
                )
            })
            .collect()
    }

    fn sent_tool_result(&self, body: &Value, call_id: &str) -> Option<String> {
        parts(body)
            .filter_map(|p| p.get("functionResponse"))
            .find(|r| r["id"] == call_id)
            .map(|r| r["response"].to_string())
    }

    fn streams_arguments(&self) -> bool {
        false
    }

    fn sent_response_schema(&self, body: &Value) -> Option<Value> {
        let config = body.get("generationConfig")?;
        if config["responseMimeType"] != "application/json" {
            return None;
        }
        config
            .get("responseJsonSchema")
            .or_else(|| config.get("responseSchema"))
            .cloned()
    }

    fn sent_signatures(&self, body: &Value) -> Vec<String> {
        parts(body)
            .filter_map(|p| p["thoughtSignature"].as_str())
            .map(str::to_owned)
            .collect()
    }
}

fn parts(body: &Value) -> impl Iterator<Item = &Value> {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
}
