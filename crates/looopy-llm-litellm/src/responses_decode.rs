//! From Responses API answers to core types: [`ResponsesDecoder`] reads the
//! streamed events (`response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.completed`, …), and
//! [`ResponsesDecoder::whole`] a whole response object.

use std::collections::VecDeque;

use looopy_core::provider::snippet;
use looopy_core::{
    FinishReason, LlmChunk, LlmError, LlmResponse, Message, Part, Reasoning, Role, ToolCall, Usage,
};
use serde::Deserialize;
use serde_json::Value;

use crate::error::from_stream_error;
use crate::stream::EventDecoder;

/// One streamed event. Only the fields this crate reads.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    item: Option<OutputItem>,
    #[serde(default)]
    response: Option<WireResponse>,
    /// An `error` event's fields (or its nested `error` object).
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

/// A response object (the non-streamed answer, and the one
/// `response.completed` carries).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    output: Vec<OutputItem>,
    #[serde(default)]
    usage: Option<ResponsesUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

/// One output item: a `message`, a `function_call` or a `reasoning` item.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct OutputItem {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    content: Vec<ContentItem>,
    #[serde(default)]
    summary: Vec<SummaryItem>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ContentItem {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct SummaryItem {
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ResponsesUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl ResponsesUsage {
    fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            total_tokens: self
                .total_tokens
                .unwrap_or(self.input_tokens + self.output_tokens),
            reasoning_tokens: self
                .output_tokens_details
                .as_ref()
                .map_or(0, |d| d.reasoning_tokens),
            cached_input_tokens: self
                .input_tokens_details
                .as_ref()
                .map_or(0, |d| d.cached_tokens),
            cache_creation_input_tokens: 0,
        }
    }
}

/// A reasoning item of the answer: what must be sent back on the next call
/// of the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReasoningItem {
    /// The item's id (`rs_…`).
    pub(crate) id: String,
    /// The summary text, joined.
    pub(crate) summary: String,
    /// The encrypted reasoning, opaque.
    pub(crate) encrypted_content: Option<String>,
}

impl ReasoningItem {
    fn of(item: &OutputItem) -> Self {
        ReasoningItem {
            id: item.id.clone().unwrap_or_default(),
            summary: item
                .summary
                .iter()
                .filter_map(|s| s.text.as_deref())
                .collect(),
            encrypted_content: item.encrypted_content.clone(),
        }
    }

    /// As the core reasoning part of `provider`: the summary as its text,
    /// the encrypted content as its signature, the item id as its id.
    fn to_core(&self, provider: &str) -> Reasoning {
        let mut r = Reasoning::new(provider, self.summary.clone());
        r.summary = true;
        r.signature.clone_from(&self.encrypted_content);
        r.id = Some(self.id.clone()).filter(|id| !id.is_empty());
        r
    }
}

/// One function call being streamed.
#[derive(Debug)]
struct CallState {
    output_index: Option<usize>,
    item_id: Option<String>,
    /// Argument deltas were streamed for it (so its `done` item adds none).
    streamed: bool,
}

/// Turns Responses API events into [`LlmChunk`]s.
///
/// Function calls get dense indexes in order of appearance, found again by
/// their output index or item id. Usage and the finish reason come with
/// `response.completed` (or `response.incomplete`), the end of the stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    /// The provider name reasoning parts are marked with.
    provider: String,
    calls: Vec<CallState>,
    reasoning: Vec<ReasoningItem>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    model: Option<String>,
}

impl ResponsesDecoder {
    /// A decoder marking reasoning as made by `provider`.
    pub(crate) fn new(provider: &str) -> Self {
        ResponsesDecoder {
            provider: provider.to_owned(),
            ..Default::default()
        }
    }

    fn call_index(&mut self, output_index: Option<usize>, item_id: Option<&str>) -> usize {
        let found = self.calls.iter().position(|c| {
            (output_index.is_some() && c.output_index == output_index)
                || (item_id.is_some() && c.item_id.as_deref() == item_id)
        });
        found.unwrap_or_else(|| {
            self.calls.push(CallState {
                output_index,
                item_id: item_id.map(str::to_owned),
                streamed: false,
            });
            self.calls.len() - 1
        })
    }

    /// The reasoning items of the answer so far.
    #[allow(dead_code)]
    pub(crate) fn reasoning_items(&self) -> &[ReasoningItem] {
        &self.reasoning
    }

    fn decode(&mut self, event: Event, out: &mut VecDeque<LlmChunk>) -> Result<bool, LlmError> {
        match event.kind.as_str() {
            "response.created" | "response.in_progress" => {
                if let Some(m) = event.response.and_then(|r| r.model) {
                    self.model = Some(m);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(d) = event.delta.filter(|d| !d.is_empty()) {
                    out.push_back(LlmChunk::TextDelta(d));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(d) = event.delta.filter(|d| !d.is_empty()) {
                    out.push_back(LlmChunk::ReasoningDelta(d));
                }
            }
            "response.output_item.added" => {
                if let Some(item) = event.item.filter(|i| i.kind == "function_call") {
                    let index = self.call_index(event.output_index, item.id.as_deref());
                    out.push_back(LlmChunk::ToolCallStart {
                        index,
                        id: item.call_id.unwrap_or_default(),
                        name: item.name.unwrap_or_default(),
                    });
                    if let Some(args) = item.arguments.filter(|a| !a.is_empty()) {
                        self.calls[index].streamed = true;
                        out.push_back(LlmChunk::ToolCallDelta {
                            index,
                            arguments: args,
                        });
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(d) = event.delta.filter(|d| !d.is_empty()) {
                    let index = self.call_index(event.output_index, event.item_id.as_deref());
                    self.calls[index].streamed = true;
                    out.push_back(LlmChunk::ToolCallDelta {
                        index,
                        arguments: d,
                    });
                }
            }
            "response.output_item.done" => match event.item {
                Some(item) if item.kind == "reasoning" => {
                    let r = ReasoningItem::of(&item);
                    out.push_back(LlmChunk::ReasoningBlock(Box::new(
                        r.to_core(&self.provider),
                    )));
                    self.reasoning.push(r);
                }
                Some(item) if item.kind == "function_call" => {
                    let known = self.calls.iter().any(|c| {
                        c.output_index == event.output_index
                            || (item.id.is_some() && c.item_id == item.id)
                    });
                    let index = self.call_index(event.output_index, item.id.as_deref());
                    if !known {
                        out.push_back(LlmChunk::ToolCallStart {
                            index,
                            id: item.call_id.clone().unwrap_or_default(),
                            name: item.name.clone().unwrap_or_default(),
                        });
                    }
                    if !self.calls[index].streamed {
                        self.calls[index].streamed = true;
                        if let Some(args) = item.arguments.filter(|a| !a.is_empty()) {
                            out.push_back(LlmChunk::ToolCallDelta {
                                index,
                                arguments: args,
                            });
                        }
                    }
                }
                _ => {}
            },
            "response.completed" | "response.incomplete" => {
                let response = event.response.unwrap_or_default();
                if let Some(m) = response.model.clone() {
                    self.model = Some(m);
                }
                self.usage = response.usage.as_ref().map(ResponsesUsage::to_usage);
                self.finish = Some(finish_of(&response, !self.calls.is_empty()));
                if let Some(u) = self.usage {
                    out.push_back(LlmChunk::Usage(u));
                }
                out.push_back(LlmChunk::Finish(self.finish_reason()));
                return Ok(true);
            }
            "response.failed" => {
                let error = event.response.and_then(|r| r.error).unwrap_or(Value::Null);
                return Err(from_api_error(&error));
            }
            "error" => {
                let error = match event.error {
                    Some(e) => e,
                    None => serde_json::json!({"code": event.code, "message": event.message}),
                };
                return Err(from_api_error(&error));
            }
            // Text and argument `done` events repeat what the deltas said;
            // other events (content parts, searches) carry nothing for us.
            _ => {}
        }
        Ok(false)
    }
}

/// Why the response ended: `incomplete` names its reason; a completed one
/// with function calls wants them run.
fn finish_of(r: &WireResponse, has_calls: bool) -> FinishReason {
    match r.status.as_deref() {
        Some("incomplete") => {
            match r
                .incomplete_details
                .as_ref()
                .and_then(|d| d.reason.as_deref())
            {
                Some("max_output_tokens") => FinishReason::Length,
                Some("content_filter") => FinishReason::ContentFilter,
                Some(other) => FinishReason::Other(other.to_owned()),
                None => FinishReason::Length,
            }
        }
        _ if has_calls => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

/// The error of an `error` event or a failed response (`{code, message}`).
pub(crate) fn from_api_error(error: &Value) -> LlmError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str))
        .unwrap_or("");
    match code {
        "rate_limit_exceeded" | "rate_limit_error" | "insufficient_quota" => {
            LlmError::RateLimited {
                message,
                retry_after: None,
            }
        }
        "server_error" | "internal_error" | "api_error" => LlmError::Server {
            status: 500,
            message,
            retry_after: None,
        },
        "server_is_overloaded" | "overloaded_error" | "service_unavailable" => {
            LlmError::Overloaded {
                message,
                retry_after: None,
            }
        }
        "invalid_api_key" | "authentication_error" => LlmError::Authentication { message },
        "context_length_exceeded" => LlmError::ContextLengthExceeded { message },
        "content_filter" | "content_policy_violation" => LlmError::ContentFilter { message },
        "invalid_prompt" | "invalid_request_error" => LlmError::BadRequest {
            message: format!("{code}: {message}"),
        },
        c if c.starts_with("invalid_") => LlmError::BadRequest {
            message: format!("{c}: {message}"),
        },
        _ => from_stream_error(error),
    }
}

/// A whole response object as a response.
fn response_to_llm(r: WireResponse, provider: &str) -> Result<LlmResponse, LlmError> {
    if let Some(error) = r.error.as_ref().filter(|e| !e.is_null()) {
        return Err(from_api_error(error));
    }
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for item in &r.output {
        match item.kind.as_str() {
            "message" => {
                for c in &item.content {
                    match c.kind.as_str() {
                        "output_text" => text.push_str(c.text.as_deref().unwrap_or("")),
                        "refusal" => text.push_str(c.refusal.as_deref().unwrap_or("")),
                        _ => {}
                    }
                }
            }
            "function_call" => calls.push(ToolCall::new(
                item.call_id.clone().unwrap_or_default(),
                item.name.clone().unwrap_or_default(),
                item.arguments.clone().unwrap_or_default(),
            )),
            "reasoning" => {
                let item = ReasoningItem::of(item);
                reasoning.push_str(&item.summary);
                parts.push(Part::reasoning(item.to_core(provider)));
            }
            _ => {}
        }
    }
    let finish_reason = finish_of(&r, !calls.is_empty());
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
    let mut message = Message::with_parts(Role::Assistant, parts);
    message.tool_calls = calls;
    Ok(LlmResponse {
        message,
        finish_reason,
        usage: r.usage.as_ref().map(ResponsesUsage::to_usage),
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        model: r.model,
    })
}

impl EventDecoder for ResponsesDecoder {
    fn event(&mut self, data: &str, out: &mut VecDeque<LlmChunk>) -> Result<bool, LlmError> {
        let event: Event = serde_json::from_str(data).map_err(|e| LlmError::MalformedResponse {
            message: format!("invalid event JSON ({e}): {}", snippet(data.as_bytes())),
        })?;
        self.decode(event, out)
    }

    const END: &'static str = "response.completed";

    fn whole(&self, bytes: &[u8]) -> Result<LlmResponse, LlmError> {
        let r: WireResponse =
            serde_json::from_slice(bytes).map_err(|e| LlmError::MalformedResponse {
                message: format!("invalid response JSON ({e}): {}", snippet(bytes)),
            })?;
        response_to_llm(r, &self.provider)
    }

    fn finish_reason(&self) -> FinishReason {
        self.finish.clone().unwrap_or(if self.calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        })
    }

    fn usage(&self) -> Option<Usage> {
        self.usage
    }

    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::ResponseAssembler;
    use serde_json::json;

    fn run(
        events: &[Value],
    ) -> (
        Vec<LlmChunk>,
        Result<LlmResponse, LlmError>,
        ResponsesDecoder,
    ) {
        let mut d = ResponsesDecoder::new("openai");
        let mut out = VecDeque::new();
        for (i, e) in events.iter().enumerate() {
            match d.event(&e.to_string(), &mut out) {
                Ok(done) => assert_eq!(done, i + 1 == events.len(), "event {i} ends: {done}"),
                Err(err) => return (out.into(), Err(err), d),
            }
        }
        let out: Vec<LlmChunk> = out.into();
        let mut a = ResponseAssembler::new();
        out.iter().for_each(|c| a.push(c));
        (out, Ok(a.finish()), d)
    }

    #[test]
    fn text_reasoning_calls_and_usage_are_decoded() {
        let (chunks, r, d) = run(&[
            json!({"type":"response.created","response":{"id":"resp_1","model":"gpt-4.1","status":"in_progress","output":[]}}),
            json!({"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}),
            json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"delta":"thinking"}),
            json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1",
                "summary":[{"type":"summary_text","text":"thinking"}],"encrypted_content":"gAAAA-opaque"}}),
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hel"}),
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"lo"}),
            json!({"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"add","arguments":""}}),
            json!({"type":"response.output_item.added","output_index":3,"item":{"type":"function_call","id":"fc_2","call_id":"call_b","name":"mul","arguments":""}}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":3,"delta":"{\"x\":2}"}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"{\"a\":"}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"1}"}),
            json!({"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":2,"arguments":"{\"a\":1}"}),
            json!({"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"add","arguments":"{\"a\":1}"}}),
            json!({"type":"response.completed","response":{"id":"resp_1","model":"gpt-4.1-2025","status":"completed","output":[],
                "usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":12},
                         "output_tokens":9,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":39}}}),
        ]);
        let r = r.unwrap();
        assert_eq!(r.message.text(), "Hello");
        assert_eq!(r.reasoning.as_deref(), Some("thinking"));
        assert_eq!(
            r.message.tool_calls,
            vec![
                ToolCall::new("call_a", "add", "{\"a\":1}"),
                ToolCall::new("call_b", "mul", "{\"x\":2}")
            ]
        );
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 30,
                output_tokens: 9,
                total_tokens: 39,
                reasoning_tokens: 4,
                cached_input_tokens: 12,
                cache_creation_input_tokens: 0,
            })
        );
        assert_eq!(
            chunks.last(),
            Some(&LlmChunk::Finish(FinishReason::ToolCalls))
        );
        assert_eq!(d.model(), Some("gpt-4.1-2025"));
        assert_eq!(
            d.reasoning_items(),
            [ReasoningItem {
                id: "rs_1".into(),
                summary: "thinking".into(),
                encrypted_content: Some("gAAAA-opaque".into())
            }]
        );
    }

    #[test]
    fn a_call_seen_only_when_done_is_still_reported() {
        let (_, r, _) = run(&[
            json!({"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{}"}}),
            json!({"type":"response.completed","response":{"status":"completed"}}),
        ]);
        assert_eq!(
            r.unwrap().message.tool_calls,
            vec![ToolCall::new("c", "f", "{}")]
        );
    }

    #[test]
    fn incomplete_responses_say_why() {
        let (_, r, _) = run(&[
            json!({"type":"response.output_text.delta","delta":"cut"}),
            json!({"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}),
        ]);
        assert_eq!(r.unwrap().finish_reason, FinishReason::Length);
        let (_, r, _) = run(&[
            json!({"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}),
        ]);
        assert_eq!(r.unwrap().finish_reason, FinishReason::ContentFilter);
    }

    #[test]
    fn error_events_and_failed_responses_are_typed() {
        let (_, r, _) = run(&[
            json!({"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}),
        ]);
        assert!(matches!(r, Err(LlmError::RateLimited { message, .. }) if message == "slow down"));
        let (_, r, _) = run(&[
            json!({"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}),
        ]);
        assert!(matches!(r, Err(LlmError::Server { status: 500, .. })));
        let (_, r, _) = run(&[
            json!({"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"too long"}}),
        ]);
        assert!(
            matches!(&r, Err(LlmError::ContextLengthExceeded { message }) if message == "too long"),
            "{r:?}"
        );
        let mut d = ResponsesDecoder::default();
        let e = d.event("{not json", &mut VecDeque::new()).unwrap_err();
        assert!(matches!(e, LlmError::MalformedResponse { .. }));
    }

    #[test]
    fn a_whole_response_is_read() {
        let body = json!({
            "id":"resp_1","model":"gpt-4.1","status":"completed",
            "output":[
                {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"hmm"}],"encrypted_content":"enc"},
                {"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"{\"ok\":true}","annotations":[]}]},
                {"type":"function_call","id":"fc_1","call_id":"call_1","name":"add","arguments":"{}"}
            ],
            "usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}
        });
        let d = ResponsesDecoder::new("openai");
        let r = d.whole(body.to_string().as_bytes()).unwrap();
        assert!(matches!(&r.message.parts[0], Part::Reasoning { reasoning }
            if reasoning.signature.as_deref() == Some("enc") && reasoning.id.as_deref() == Some("rs_1")));
        assert_eq!(r.message.text(), "{\"ok\":true}");
        assert_eq!(r.reasoning.as_deref(), Some("hmm"));
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(r.model.as_deref(), Some("gpt-4.1"));
        assert_eq!(r.usage.unwrap().total_tokens, 7);
        let failed =
            json!({"status":"failed","error":{"code":"invalid_prompt","message":"no"},"output":[]});
        assert!(matches!(
            d.whole(failed.to_string().as_bytes()),
            Err(LlmError::BadRequest { .. })
        ));
    }
}
