//! One conformance suite for every [`LlmProvider`]: each runs it against
//! an in-process [`OpenAiFixture`] that plays its vendor's wire form
//! exactly, described by a [`VendorWire`] ([`OpenAiChatWire`],
//! [`AnthropicWire`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use looopy_core::LlmProvider;
//! use looopy_testkit::provider_conformance::{OpenAiChatWire, run_all};
//!
//! # async fn check(make: fn(&str) -> Arc<dyn LlmProvider>) {
//! // `make` builds the provider for the fixture's base URL, without retries.
//! run_all(&OpenAiChatWire, &|url: &str| make(url)).await;
//! # }
//! ```
//!
//! It holds a provider to what the agent loop relies on:
//!
//! - Plain and streamed text (streamed in more than one delta); one tool
//!   call, parallel tool calls, arguments streamed in pieces; the tool-result
//!   round trip (the second request carries the call and its result).
//! - The reasoning round trip, where the vendor takes reasoning back: the
//!   answer keeps the reasoning with its signature, and the next request
//!   sends the signature byte for byte; reasoning another provider made is
//!   never sent.
//! - Usage, cache and reasoning tokens included, whole and streamed.
//! - Structured output: the request carries the response format's schema
//!   where the vendor takes it, and the answer's text is the JSON value,
//!   whole and streamed.
//! - Every error kind: authentication, rate limit with its retry-after,
//!   overloaded, context length exceeded, content filter (as an error or
//!   as the finish reason), bad request.
//! - Cancellation mid-stream ends the stream with
//!   [`LlmError::Cancelled`] and drops the connection; a malformed event,
//!   a malformed whole body, a stream that ends early and a cut connection
//!   are errors, never a silently short answer.
//!
//! With the feature `otel`, [`chat_spans`] checks the `chat` span of a
//! provider's calls (its name and token counts, as exported); it installs
//! a span subscriber, so it runs apart from [`run_all`].
//!
//! Failures panic with a message naming the vendor and the broken rule.

mod anthropic;
mod gemini;
mod openai_chat;
mod openai_responses;
#[cfg(feature = "otel")]
mod otel;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use looopy_core::{
    FinishReason, History, LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, Message, Part,
    Reasoning, ResponseAssembler, ResponseFormat, Role, ToolCall, ToolDefinition, ToolResult,
    TurnContext, Usage,
};
use serde_json::{Value, json};

use crate::{FixtureReply, OpenAiFixture};

pub use anthropic::AnthropicWire;
pub use gemini::GeminiWire;
pub use openai_chat::OpenAiChatWire;
pub use openai_responses::OpenAiResponsesWire;
#[cfg(feature = "otel")]
pub use otel::chat_spans;

/// Builds the provider under test for a fixture's base URL
/// (`http://127.0.0.1:PORT/v1`), with retries off.
pub type MakeProvider<'a> = &'a (dyn Fn(&str) -> Arc<dyn LlmProvider> + Send + Sync);

/// A tool call in a script: id, name and its arguments' JSON text.
#[derive(Debug, Clone, Copy)]
pub struct ScriptCall<'a> {
    /// The call id.
    pub id: &'a str,
    /// The tool name.
    pub name: &'a str,
    /// The arguments, JSON text of an object.
    pub arguments: &'a str,
}

/// An error a vendor can answer with, as the suite asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCase {
    /// The key was refused.
    Authentication,
    /// Rate limited, with a `retry-after` of this many seconds.
    RateLimited(u64),
    /// No capacity for now.
    Overloaded,
    /// The prompt is over the context window.
    ContextLength,
    /// Refused for its content (an error, or an answer whose finish reason
    /// says so).
    ContentFilter,
    /// Any other refused request.
    BadRequest,
}

/// How a stream goes wrong, as the suite asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Some text, then an event whose data is not JSON.
    MalformedEvent,
    /// Some text, then a clean end of the body without the vendor's end
    /// marker.
    EndsEarly,
    /// Some text, then the connection is cut.
    Cut,
}

/// A vendor's wire form: how the fixture answers, and how to read what
/// the provider sent.
pub trait VendorWire: Send + Sync {
    /// The vendor, for failure messages.
    fn name(&self) -> &'static str;
    /// A whole answer with this text and usage.
    fn text(&self, text: &str, usage: Usage) -> FixtureReply;
    /// A streamed answer, its text in these pieces, with this usage.
    fn text_stream(&self, pieces: &[&str], usage: Usage) -> FixtureReply;
    /// An answer calling these tools, whole or streamed (then each call's
    /// arguments in at least two pieces).
    fn tool_calls(&self, calls: &[ScriptCall<'_>], stream: bool) -> FixtureReply;
    /// A streamed answer that reasons (`thinking`, with `signature`), then
    /// makes `call`; `None` when the vendor's API takes no reasoning back.
    fn reasoning_then_call(
        &self,
        thinking: &str,
        signature: &str,
        call: ScriptCall<'_>,
    ) -> Option<FixtureReply>;
    /// An error answer.
    fn error(&self, case: ErrorCase) -> FixtureReply;
    /// A stream that goes wrong this way.
    fn faulty_stream(&self, fault: Fault) -> FixtureReply;
    /// A stream that sends one text piece, then one more every 200 ms,
    /// for a minute (for cancellation).
    fn slow_stream(&self) -> FixtureReply;
    /// Whether the vendor reports tokens written to its cache.
    fn reports_cache_creation(&self) -> bool;
    /// Whether the vendor counts the output's reasoning tokens apart
    /// (Anthropic counts thinking in the output tokens only).
    fn reports_reasoning_tokens(&self) -> bool;
    /// The calls (id, name, arguments) the assistant turns of a request
    /// body carry.
    fn sent_tool_calls(&self, body: &Value) -> Vec<(String, String, Value)>;
    /// The text of the tool result answering `call_id` in a request body.
    fn sent_tool_result(&self, body: &Value, call_id: &str) -> Option<String>;
    /// The reasoning signatures (or encrypted payloads) a request body
    /// sends back, in order.
    fn sent_signatures(&self, body: &Value) -> Vec<String>;
    /// The JSON schema a request body asks the answer to follow, from the
    /// vendor's structured-output parameter (`None` when there is none).
    fn sent_response_schema(&self, body: &Value) -> Option<Value>;
    /// Whether the vendor streams a call's arguments in pieces (Gemini
    /// sends each call whole, in one event).
    fn streams_arguments(&self) -> bool {
        true
    }
}

/// Runs every check; panics at the first broken rule.
pub async fn run_all(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    plain_text(wire, make).await;
    streamed_text(wire, make).await;
    one_tool_call(wire, make).await;
    parallel_tool_calls(wire, make).await;
    tool_result_round_trip(wire, make).await;
    reasoning_round_trip(wire, make).await;
    usage(wire, make).await;
    structured_output(wire, make).await;
    errors(wire, make).await;
    cancellation(wire, make).await;
    faults(wire, make).await;
}

async fn fixture() -> OpenAiFixture {
    match OpenAiFixture::start().await {
        Ok(f) => f,
        Err(e) => panic!("provider conformance: cannot start the fixture: {e}"),
    }
}

fn cx() -> TurnContext {
    TurnContext::new("conformance-task", "conformance-context")
}

fn ask(text: &str) -> LlmRequest {
    LlmRequest {
        system_prompt: Some("Be brief.".into()),
        messages: History::from(vec![Message::user(text)]),
        ..Default::default()
    }
}

fn with_tools(mut request: LlmRequest) -> LlmRequest {
    request.tools = Arc::from(vec![
        ToolDefinition::new(
            "weather",
            "The weather in a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        ToolDefinition::new(
            "time",
            "The time in a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        ),
    ]);
    request
}

/// The items of a stream within 30 s: chunks, and the error that ended it.
async fn drain(
    wire: &dyn VendorWire,
    provider: &dyn LlmProvider,
    request: LlmRequest,
    cx: &TurnContext,
) -> (Vec<LlmChunk>, Option<LlmError>) {
    let work = async {
        let mut stream = provider.stream(request, cx);
        let mut chunks = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(c) => chunks.push(c),
                Err(e) => {
                    assert!(
                        stream.next().await.is_none(),
                        "{}: an error must end the stream",
                        wire.name()
                    );
                    return (chunks, Some(e));
                }
            }
        }
        (chunks, None)
    };
    match tokio::time::timeout(Duration::from_secs(30), work).await {
        Ok(out) => out,
        Err(_) => panic!("{}: the stream did not end within 30 s", wire.name()),
    }
}

fn assemble(chunks: &[LlmChunk]) -> LlmResponse {
    let mut a = ResponseAssembler::new();
    chunks.iter().for_each(|c| a.push(c));
    a.finish()
}

async fn stream_ok(
    wire: &dyn VendorWire,
    provider: &dyn LlmProvider,
    request: LlmRequest,
) -> (Vec<LlmChunk>, LlmResponse) {
    let (chunks, error) = drain(wire, provider, request, &cx()).await;
    if let Some(e) = error {
        panic!("{}: the stream failed: {e}", wire.name());
    }
    let response = assemble(&chunks);
    (chunks, response)
}

async fn call_ok(
    wire: &dyn VendorWire,
    provider: &dyn LlmProvider,
    request: LlmRequest,
) -> LlmResponse {
    match provider.call(request, &cx()).await {
        Ok(r) => r,
        Err(e) => panic!("{}: the call failed: {e}", wire.name()),
    }
}

fn parsed(wire: &dyn VendorWire, call: &ToolCall) -> Value {
    match serde_json::from_str(&call.arguments) {
        Ok(v) => v,
        Err(e) => panic!(
            "{}: the arguments of call {} are not JSON ({e}): {:?}",
            wire.name(),
            call.id,
            call.arguments
        ),
    }
}

fn some_usage() -> Usage {
    Usage {
        input_tokens: 120,
        output_tokens: 30,
        total_tokens: 150,
        ..Default::default()
    }
}

/// A whole text answer: its text, `stop`, and a request that did not ask
/// for a stream.
pub async fn plain_text(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let f = fixture().await;
    f.push(wire.text("Paris is the capital.", some_usage()));
    let provider = make(&f.base_url());
    let r = call_ok(wire, provider.as_ref(), ask("Capital of France?")).await;
    let name = wire.name();
    assert_eq!(
        r.message.text(),
        "Paris is the capital.",
        "{name}: plain text"
    );
    assert_eq!(r.message.role, Role::Assistant, "{name}: the answer's role");
    assert_eq!(r.finish_reason, FinishReason::Stop, "{name}: finish reason");
    assert!(r.message.tool_calls.is_empty(), "{name}: no tool calls");
    let sent = f
        .last_request()
        .unwrap_or_else(|| panic!("{name}: nothing was sent"));
    assert!(
        !sent.is_stream(),
        "{name}: a call must not ask for a stream"
    );
    assert!(
        sent.body_text.contains("Capital of France?"),
        "{name}: the question must be sent: {}",
        sent.body_text
    );
}

/// A streamed text answer: several text deltas that join to the text, and
/// a `stop` finish.
pub async fn streamed_text(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let f = fixture().await;
    f.push(wire.text_stream(&["Par", "is is ", "the capital."], some_usage()));
    let provider = make(&f.base_url());
    let (chunks, r) = stream_ok(wire, provider.as_ref(), ask("Capital of France?")).await;
    let name = wire.name();
    let deltas = chunks
        .iter()
        .filter(|c| matches!(c, LlmChunk::TextDelta(_)))
        .count();
    assert!(
        deltas >= 2,
        "{name}: text must stream in pieces, got {chunks:?}"
    );
    assert_eq!(
        r.message.text(),
        "Paris is the capital.",
        "{name}: streamed text"
    );
    assert_eq!(r.finish_reason, FinishReason::Stop, "{name}: finish reason");
    assert!(
        matches!(chunks.last(), Some(LlmChunk::Finish(_))),
        "{name}: the last chunk is the finish: {chunks:?}"
    );
    let sent = f
        .last_request()
        .unwrap_or_else(|| panic!("{name}: nothing was sent"));
    assert!(sent.is_stream(), "{name}: a stream must ask for one");
}

/// One tool call, whole: its id, name and arguments, and `tool_calls`.
pub async fn one_tool_call(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let f = fixture().await;
    let call = ScriptCall {
        id: "call_w1",
        name: "weather",
        arguments: r#"{"city":"Paris"}"#,
    };
    f.push(wire.tool_calls(&[call], false));
    let provider = make(&f.base_url());
    let r = call_ok(
        wire,
        provider.as_ref(),
        with_tools(ask("Weather in Paris?")),
    )
    .await;
    let name = wire.name();
    assert_eq!(
        r.finish_reason,
        FinishReason::ToolCalls,
        "{name}: finish reason"
    );
    assert_eq!(r.message.tool_calls.len(), 1, "{name}: one call");
    let got = &r.message.tool_calls[0];
    assert_eq!(
        (got.id.as_str(), got.name.as_str()),
        ("call_w1", "weather"),
        "{name}"
    );
    assert_eq!(
        parsed(wire, got),
        json!({"city": "Paris"}),
        "{name}: arguments"
    );
    let sent = f
        .last_request()
        .unwrap_or_else(|| panic!("{name}: nothing was sent"));
    assert!(
        sent.body_text.contains("The weather in a city"),
        "{name}: the tools must be offered: {}",
        sent.body_text
    );
}

/// Two calls in one streamed answer, each with arguments in pieces.
pub async fn parallel_tool_calls(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let f = fixture().await;
    let calls = [
        ScriptCall {
            id: "call_a",
            name: "weather",
            arguments: r#"{"city":"Paris"}"#,
        },
        ScriptCall {
            id: "call_b",
            name: "time",
            arguments: r#"{"city":"Tokyo"}"#,
        },
    ];
    f.push(wire.tool_calls(&calls, true));
    let provider = make(&f.base_url());
    let (chunks, r) = stream_ok(wire, provider.as_ref(), with_tools(ask("Both?"))).await;
    let name = wire.name();
    assert_eq!(
        r.finish_reason,
        FinishReason::ToolCalls,
        "{name}: finish reason"
    );
    assert_eq!(
        r.message.tool_calls.len(),
        2,
        "{name}: two calls: {chunks:?}"
    );
    for (got, want) in r.message.tool_calls.iter().zip(&calls) {
        assert_eq!(
            (got.id.as_str(), got.name.as_str()),
            (want.id, want.name),
            "{name}"
        );
        let want_args: Value = serde_json::from_str(want.arguments).unwrap_or(Value::Null);
        assert_eq!(
            parsed(wire, got),
            want_args,
            "{name}: arguments of {}",
            want.id
        );
    }
    for index in 0..2 {
        let pieces = chunks
            .iter()
            .filter(|c| matches!(c, LlmChunk::ToolCallDelta { index: i, arguments } if *i == index && !arguments.is_empty()))
            .count();
        let want = if wire.streams_arguments() { 2 } else { 1 };
        assert!(
            pieces >= want,
            "{name}: the arguments of call {index} must stream in pieces: {chunks:?}"
        );
    }
}

/// The answer's call and the tool's result go back in the next request,
/// and the model's second answer comes through.
pub async fn tool_result_round_trip(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let f = fixture().await;
    let call = ScriptCall {
        id: "call_rt",
        name: "weather",
        arguments: r#"{"city":"Paris"}"#,
    };
    f.push(wire.tool_calls(&[call], true));
    f.push(wire.text_stream(&["It is ", "sunny."], some_usage()));
    let provider = make(&f.base_url());
    let first = with_tools(ask("Weather in Paris?"));
    let (_, answer) = stream_ok(wire, provider.as_ref(), first.clone()).await;
    let mut history: Vec<Message> = first.messages.iter().cloned().collect();
    history.push(answer.message);
    history.push(ToolResult::text("call_rt", "sunny, 24 °C").into_message());
    let second = LlmRequest {
        messages: History::from(history),
        ..first
    };
    let (_, r) = stream_ok(wire, provider.as_ref(), second).await;
    let name = wire.name();
    assert_eq!(
        r.message.text(),
        "It is sunny.",
        "{name}: the second answer"
    );
    let requests = f.requests();
    assert_eq!(requests.len(), 2, "{name}: two requests");
    let body = &requests[1].body;
    let calls = wire.sent_tool_calls(body);
    assert_eq!(
        calls,
        vec![(
            "call_rt".to_owned(),
            "weather".to_owned(),
            json!({"city": "Paris"})
        )],
        "{name}: the second request carries the call: {}",
        requests[1].body_text
    );
    let result = wire.sent_tool_result(body, "call_rt");
    assert!(
        result
            .as_deref()
            .is_some_and(|t| t.contains("sunny, 24 °C")),
        "{name}: the second request carries the result: {}",
        requests[1].body_text
    );
}

/// The signature of the answer's reasoning goes back byte for byte in the
/// next request of the turn; reasoning of another provider never does.
pub async fn reasoning_round_trip(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let name = wire.name();
    // Bytes a careless round trip would change: padding, `+`, `/`, escapes.
    let signature = "EqQBCkgIARABGAIiQL+/5x/0sFf==\\u00e9\"quoted\"";
    let foreign = Reasoning::new("some-other-provider", "not yours")
        .with_signature("FOREIGN-SIGNATURE-MUST-NOT-BE-SENT");
    let f = fixture().await;
    let call = ScriptCall {
        id: "call_th",
        name: "weather",
        arguments: r#"{"city":"Oslo"}"#,
    };
    let provider = make(&f.base_url());
    let mut history = vec![
        Message::user("Earlier question"),
        Message::with_parts(
            Role::Assistant,
            vec![Part::reasoning(foreign), Part::text("Earlier answer")],
        ),
        Message::user("Weather in Oslo?"),
    ];
    let first = with_tools(LlmRequest {
        messages: History::from(history.clone()),
        ..ask("")
    });
    let Some(reply) = wire.reasoning_then_call("Oslo, so the weather tool.", signature, call)
    else {
        // The vendor takes no reasoning back: only the foreign part's rule holds.
        f.push(wire.text("ok", some_usage()));
        let _ = call_ok(wire, provider.as_ref(), first).await;
        let sent = f
            .last_request()
            .unwrap_or_else(|| panic!("{name}: nothing was sent"));
        assert!(
            !sent.body_text.contains("FOREIGN-SIGNATURE") && !sent.body_text.contains("not yours"),
            "{name}: reasoning of another provider must not be sent: {}",
            sent.body_text
        );
        return;
    };
    f.push(reply);
    f.push(wire.text_stream(&["Cold."], some_usage()));
    let (chunks, answer) = stream_ok(wire, provider.as_ref(), first.clone()).await;
    assert!(
        chunks
            .iter()
            .any(|c| matches!(c, LlmChunk::ReasoningDelta(t) if !t.is_empty())),
        "{name}: the reasoning must stream as reasoning deltas: {chunks:?}"
    );
    let kept: Vec<&Reasoning> = answer.message.reasoning().collect();
    assert_eq!(
        kept.len(),
        1,
        "{name}: the answer keeps its reasoning: {chunks:?}"
    );
    assert_eq!(
        kept[0].signature.as_deref(),
        Some(signature),
        "{name}: the signature is kept exactly"
    );
    assert!(
        kept[0].is_from(provider.provider_name()),
        "{name}: the reasoning names its provider ({:?})",
        kept[0].provider
    );
    assert_eq!(answer.message.tool_calls.len(), 1, "{name}: the call");
    history.push(answer.message);
    history.push(ToolResult::text("call_th", "-3 °C").into_message());
    let second = LlmRequest {
        messages: History::from(history),
        ..first
    };
    let (_, r) = stream_ok(wire, provider.as_ref(), second).await;
    assert_eq!(r.message.text(), "Cold.", "{name}: the second answer");
    let requests = f.requests();
    let sent = &requests[1];
    assert_eq!(
        wire.sent_signatures(&sent.body),
        vec![signature.to_owned()],
        "{name}: the second request sends the signature back byte for byte: {}",
        sent.body_text
    );
    for request in &requests {
        assert!(
            !request.body_text.contains("FOREIGN-SIGNATURE")
                && !request.body_text.contains("not yours"),
            "{name}: reasoning of another provider must not be sent: {}",
            request.body_text
        );
    }
}

/// Every count the vendor reports: cache reads, and cache writes and
/// reasoning tokens where it counts them.
fn full_usage(wire: &dyn VendorWire) -> Usage {
    Usage {
        input_tokens: 1200,
        output_tokens: 34,
        total_tokens: 1234,
        reasoning_tokens: if wire.reports_reasoning_tokens() {
            12
        } else {
            0
        },
        cached_input_tokens: 1000,
        cache_creation_input_tokens: if wire.reports_cache_creation() {
            150
        } else {
            0
        },
    }
}

/// Token counts, cache reads and writes and reasoning tokens included,
/// whole and streamed.
pub async fn usage(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let name = wire.name();
    let want = full_usage(wire);
    let f = fixture().await;
    f.push(wire.text("ok", want));
    f.push(wire.text_stream(&["o", "k"], want));
    let provider = make(&f.base_url());
    let whole = call_ok(wire, provider.as_ref(), ask("count")).await;
    assert_eq!(whole.usage, Some(want), "{name}: usage of a whole answer");
    let (chunks, streamed) = stream_ok(wire, provider.as_ref(), ask("count")).await;
    assert_eq!(
        streamed.usage,
        Some(want),
        "{name}: usage of a stream: {chunks:?}"
    );
}

/// A response format goes out as the vendor's structured-output parameter,
/// its schema unchanged, and the answer's text is the JSON value the model
/// wrote, whole and streamed.
pub async fn structured_output(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let name = wire.name();
    let schema = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "population": {"type": "integer"},
            "districts": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["city", "population", "districts"],
        "additionalProperties": false
    });
    let want =
        json!({"city": "Paris", "population": 2_102_650, "districts": ["Le Marais", "Montmartre"]});
    let answer = want.to_string();
    let request = LlmRequest {
        response_format: Some(ResponseFormat::new("city_facts", schema.clone())),
        ..ask("Facts about Paris?")
    };
    let f = fixture().await;
    f.push(wire.text(&answer, some_usage()));
    let (a, b) = answer.split_at(answer.len() / 2);
    f.push(wire.text_stream(&[a, b], some_usage()));
    let provider = make(&f.base_url());
    let whole = call_ok(wire, provider.as_ref(), request.clone()).await;
    let (_, streamed) = stream_ok(wire, provider.as_ref(), request).await;
    for (how, r) in [("whole", &whole), ("streamed", &streamed)] {
        let text = r.message.text();
        let got: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("{name}: the {how} structured answer is not JSON ({e}): {text:?}")
        });
        assert_eq!(got, want, "{name}: the {how} structured answer");
        assert_eq!(
            r.finish_reason,
            FinishReason::Stop,
            "{name}: the {how} structured answer's finish reason"
        );
    }
    let requests = f.requests();
    assert_eq!(requests.len(), 2, "{name}: two requests");
    for sent in &requests {
        assert_eq!(
            wire.sent_response_schema(&sent.body),
            Some(schema.clone()),
            "{name}: the request carries the schema as structured output: {}",
            sent.body_text
        );
    }
    // Without a format, no structured output is asked for.
    f.push(wire.text("plain", some_usage()));
    let _ = call_ok(wire, provider.as_ref(), ask("Facts about Paris?")).await;
    let sent = f
        .last_request()
        .unwrap_or_else(|| panic!("{name}: nothing was sent"));
    assert_eq!(
        wire.sent_response_schema(&sent.body),
        None,
        "{name}: a request without a format asks for no structured output: {}",
        sent.body_text
    );
}

/// Every error kind, whole and streamed.
pub async fn errors(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let name = wire.name();
    let cases = [
        ErrorCase::Authentication,
        ErrorCase::RateLimited(7),
        ErrorCase::Overloaded,
        ErrorCase::ContextLength,
        ErrorCase::ContentFilter,
        ErrorCase::BadRequest,
    ];
    for case in cases {
        for stream in [false, true] {
            let f = fixture().await;
            f.push(wire.error(case));
            let provider = make(&f.base_url());
            let outcome = if stream {
                let (chunks, error) = drain(wire, provider.as_ref(), ask("x"), &cx()).await;
                match error {
                    Some(e) => Err(e),
                    None => Ok(assemble(&chunks)),
                }
            } else {
                provider.call(ask("x"), &cx()).await
            };
            let ok = match (case, &outcome) {
                (ErrorCase::Authentication, Err(LlmError::Authentication { message })) => {
                    !message.is_empty()
                }
                (ErrorCase::RateLimited(secs), Err(e @ LlmError::RateLimited { .. })) => {
                    e.retry_after() == Some(Duration::from_secs(secs))
                }
                (ErrorCase::Overloaded, Err(LlmError::Overloaded { .. })) => true,
                (ErrorCase::ContextLength, Err(LlmError::ContextLengthExceeded { .. })) => true,
                (ErrorCase::ContentFilter, Err(LlmError::ContentFilter { .. })) => true,
                (ErrorCase::ContentFilter, Ok(r)) => r.finish_reason == FinishReason::ContentFilter,
                (ErrorCase::BadRequest, Err(LlmError::BadRequest { message })) => {
                    !message.is_empty()
                }
                _ => false,
            };
            assert!(
                ok,
                "{name}: {case:?} (streamed: {stream}) came out as {outcome:?}"
            );
        }
    }
}

/// Cancelling the turn mid-stream ends the stream with `Cancelled` at
/// once, and the connection is dropped.
pub async fn cancellation(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let name = wire.name();
    let f = fixture().await;
    f.push(wire.slow_stream());
    let provider = make(&f.base_url());
    let cx = cx();
    let mut stream = provider.stream(ask("long"), &cx);
    let first = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stream.next().await {
                Some(Ok(LlmChunk::TextDelta(_))) => return,
                Some(Ok(_)) => continue,
                other => panic!("{name}: expected text before cancelling, got {other:?}"),
            }
        }
    })
    .await;
    assert!(first.is_ok(), "{name}: no text within 10 s");
    cx.cancel.cancel();
    let next = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            match stream.next().await {
                // Chunks already read may still come out.
                Some(Ok(_)) => continue,
                other => return other,
            }
        }
    })
    .await;
    match next {
        Ok(Some(Err(LlmError::Cancelled))) => {}
        other => panic!("{name}: a cancelled stream must end with Cancelled, got {other:?}"),
    }
    drop(stream);
    assert!(
        f.wait_for_aborted(1, Duration::from_secs(5)).await,
        "{name}: the connection must be dropped when the stream is cancelled"
    );
}

/// Malformed and cut-off answers are errors, never short answers.
pub async fn faults(wire: &dyn VendorWire, make: MakeProvider<'_>) {
    let name = wire.name();
    for fault in [Fault::MalformedEvent, Fault::EndsEarly, Fault::Cut] {
        let f = fixture().await;
        f.push(wire.faulty_stream(fault));
        let provider = make(&f.base_url());
        let (chunks, error) = drain(wire, provider.as_ref(), ask("x"), &cx()).await;
        let ok = matches!(
            (fault, &error),
            (
                Fault::MalformedEvent | Fault::EndsEarly,
                Some(LlmError::MalformedResponse { .. }),
            ) | (
                Fault::Cut,
                Some(LlmError::MalformedResponse { .. } | LlmError::Connection { .. }),
            )
        );
        assert!(
            ok,
            "{name}: {fault:?} came out as {error:?} after {chunks:?}"
        );
    }
    let f = fixture().await;
    f.push(FixtureReply::raw(200, "{\"not\": \"an answer"));
    let provider = make(&f.base_url());
    let outcome = provider.call(ask("x"), &cx()).await;
    assert!(
        matches!(outcome, Err(LlmError::MalformedResponse { .. })),
        "{name}: a whole body that is not JSON came out as {outcome:?}"
    );
}
