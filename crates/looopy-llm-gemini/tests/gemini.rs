//! The Gemini provider over HTTP: against the in-process fixture server
//! (exact scripting: recorded request bodies, errors, cut streams) and
//! against `@copilotkit/aimock`'s Gemini endpoints.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures::StreamExt;
use looopy_core::{
    FinishReason, History, LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse, LlmStream,
    Message, ResponseAssembler, ResponseFormat, ToolDefinition, ToolResult, TurnContext,
};
use looopy_llm_gemini::{GeminiConfig, GeminiProvider};
use looopy_testkit::aimock::{Aimock, weather_fixtures};
use looopy_testkit::{FixtureReply, OpenAiFixture, SseEnd, SseReply};
use serde_json::json;

fn provider(f: &OpenAiFixture) -> GeminiProvider {
    let config = GeminiConfig::new("gemini-2.5-flash")
        .with_base_url(format!("{}/v1beta", f.url()))
        .with_api_key("g-test-key")
        .with_request_timeout(Duration::from_secs(20))
        .with_stream_idle_timeout(Duration::from_secs(10));
    GeminiProvider::new(config).unwrap()
}

fn cx() -> TurnContext {
    TurnContext::new("task", "ctx")
}

async fn drain(mut stream: LlmStream<'_>) -> (Vec<LlmChunk>, Option<LlmError>) {
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(c) => chunks.push(c),
            Err(e) => {
                assert!(stream.next().await.is_none(), "an error ends the stream");
                return (chunks, Some(e));
            }
        }
    }
    (chunks, None)
}

fn assemble(chunks: &[LlmChunk]) -> LlmResponse {
    let mut a = ResponseAssembler::new();
    chunks.iter().for_each(|c| a.push(c));
    a.finish()
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "get_weather",
        "Current weather of a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

#[tokio::test]
async fn a_streamed_tool_turn_is_sent_and_read_in_gemini_form() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(
        SseReply::new(vec![
            json!({"candidates":[{"content":{"role":"model","parts":[{"text":"Checking","thought":true}]}}],
                   "modelVersion":"gemini-2.5-flash-001"}),
            json!({"candidates":[{"content":{"role":"model","parts":[
                {"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"}]},
                "finishReason":"STOP"}],
                "usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":20}}),
        ])
        .end(SseEnd::Close)
        .into(),
    );
    f.push(FixtureReply::json(json!({
        "candidates":[{"content":{"role":"model","parts":[{"text":"18 and sunny."}]},"finishReason":"STOP"}],
        "usageMetadata":{"promptTokenCount":30,"candidatesTokenCount":4,"cachedContentTokenCount":8,"totalTokenCount":34}
    })));
    let p = provider(&f);
    let mut history = History::from(vec![Message::user("Weather in Paris?")]);
    let request = |history: &History| LlmRequest {
        system_prompt: Some("You report the weather.".into()),
        messages: history.clone(),
        tools: vec![weather_tool()].into(),
        tool_choice: Some(looopy_core::ToolChoice::Required),
        max_tokens: Some(256),
        ..Default::default()
    };
    let (chunks, err) = drain(p.stream(request(&history), &cx())).await;
    assert_eq!(err, None);
    let first = assemble(&chunks);
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.reasoning.as_deref(), Some("Checking"));
    let call = first.message.tool_calls[0].clone();
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.parsed_arguments(), json!({"city": "Paris"}));
    let usage = first.usage.unwrap();
    assert_eq!((usage.output_tokens, usage.reasoning_tokens), (8, 3));

    let sent = f.last_request().unwrap();
    assert_eq!(
        sent.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(sent.header("x-goog-api-key"), Some("g-test-key"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "systemInstruction": {"parts": [{"text": "You report the weather."}]},
            "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
            "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Current weather of a city",
                "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "generationConfig": {"maxOutputTokens": 256, "thinkingConfig": {"includeThoughts": true}}
        })
    );

    // The result goes back as a functionResponse named after the call.
    history.push(first.message.clone());
    history.push(ToolResult::text(&call.id, "18 degrees, sunny").into_message());
    let answer = p.call(request(&history), &cx()).await.unwrap();
    assert_eq!(answer.message.text(), "18 and sunny.");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage.unwrap().cached_input_tokens, 8);
    let sent = f.last_request().unwrap();
    assert_eq!(sent.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    // The thought signature goes back on the call it came with, unchanged.
    assert_eq!(
        sent.body["contents"][1],
        json!({"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": "c2ln"}]})
    );
    assert_eq!(
        sent.body["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "get_weather",
            "response": {"output": "18 degrees, sunny"}}}]})
    );
}

#[tokio::test]
async fn structured_output_is_a_response_json_schema() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(json!({
        "candidates":[{"content":{"parts":[{"text":"{\"ok\":true}"}]},"finishReason":"STOP"}]})));
    let p = provider(&f);
    let request = LlmRequest {
        messages: History::from(vec![Message::user("answer in JSON")]),
        response_format: Some(ResponseFormat::new(
            "verdict",
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        )),
        ..Default::default()
    };
    let r = p.call(request, &cx()).await.unwrap();
    assert_eq!(r.message.text(), "{\"ok\":true}");
    let body = f.last_request().unwrap().body;
    assert_eq!(
        body["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(
        body["generationConfig"]["responseJsonSchema"]["properties"]["ok"]["type"],
        "boolean"
    );
}

#[tokio::test]
async fn errors_are_typed_and_bad_streams_fail_cleanly() {
    let f = OpenAiFixture::start().await.unwrap();
    let p = provider(&f);
    let ask = || LlmRequest {
        messages: History::from(vec![Message::user("hi")]),
        ..Default::default()
    };
    f.push(FixtureReply::Json {
        status: 429,
        headers: Vec::new(),
        body: json!({"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED",
            "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}),
    });
    let e = p.call(ask(), &cx()).await.unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_secs(3)), "{e:?}");
    assert!(matches!(e, LlmError::RateLimited { .. }));

    f.push(FixtureReply::error(403, "denied"));
    let (_, e) = drain(p.stream(ask(), &cx())).await;
    assert!(matches!(e, Some(LlmError::Authentication { .. })), "{e:?}");

    f.push(FixtureReply::error(503, "The model is overloaded."));
    let e = p.call(ask(), &cx()).await.unwrap_err();
    assert!(matches!(e, LlmError::Overloaded { .. }), "{e:?}");

    // A stream that ends before any finishReason was cut.
    f.push(
        SseReply::new(vec![
            json!({"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}),
        ])
        .end(SseEnd::Close)
        .into(),
    );
    let (chunks, e) = drain(p.stream(ask(), &cx())).await;
    assert_eq!(chunks, vec![LlmChunk::TextDelta("Hel".into())]);
    assert!(
        matches!(e, Some(LlmError::MalformedResponse { .. })),
        "{e:?}"
    );

    f.push(FixtureReply::raw(200, "<html>proxy</html>"));
    let e = p.call(ask(), &cx()).await.unwrap_err();
    assert!(matches!(e, LlmError::MalformedResponse { .. }), "{e:?}");

    // A safety block is an answer, not an error.
    f.push(FixtureReply::json(
        json!({"promptFeedback":{"blockReason":"SAFETY"}}),
    ));
    let r = p.call(ask(), &cx()).await.unwrap();
    assert_eq!(r.finish_reason, FinishReason::ContentFilter);
}

#[tokio::test]
async fn cancelling_the_turn_ends_the_stream() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(
        SseReply::new(vec![
            json!({"candidates":[{"content":{"parts":[{"text":"a"}]}}]}),
            json!({"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"STOP"}]}),
        ])
        .interval(Duration::from_secs(5))
        .end(SseEnd::Close)
        .into(),
    );
    let p = provider(&f);
    let cx = cx();
    let request = LlmRequest {
        messages: History::from(vec![Message::user("hi")]),
        ..Default::default()
    };
    let mut stream = p.stream(request, &cx);
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        LlmChunk::TextDelta("a".into())
    );
    cx.cancel.cancel();
    assert_eq!(stream.next().await, Some(Err(LlmError::Cancelled)));
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn tool_call_round_trip_against_aimock() {
    let Some(server) = Aimock::start(&weather_fixtures()).await else {
        return;
    };
    let config = GeminiConfig::new("gemini-2.5-flash")
        .with_base_url(format!("{}/v1beta", server.url()))
        .with_api_key("g-aimock");
    let p = GeminiProvider::new(config).unwrap();
    let mut history = History::from(vec![Message::user("What is the weather in Paris?")]);
    let request = |history: &History| LlmRequest {
        system_prompt: Some("You report the weather.".into()),
        messages: history.clone(),
        tools: vec![weather_tool()].into(),
        ..Default::default()
    };
    let (chunks, err) = drain(p.stream(request(&history), &cx())).await;
    assert_eq!(err, None);
    let first = assemble(&chunks);
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    let call = first.message.tool_calls[0].clone();
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_weather_1", "get_weather")
    );
    assert_eq!(
        call.parsed_arguments(),
        json!({"city": "Paris", "unit": "celsius"})
    );
    let plain = p.call(request(&history), &cx()).await.unwrap();
    assert_eq!(plain.message.tool_calls, first.message.tool_calls);

    history.push(first.message.clone());
    history.push(ToolResult::json(&call.id, &json!({"temp_c": 18})).into_message());
    let (chunks, err) = drain(p.stream(request(&history), &cx())).await;
    assert_eq!(err, None);
    let answer = assemble(&chunks);
    assert_eq!(
        answer.message.text(),
        "It is 18 degrees and sunny in Paris."
    );
    assert_eq!(answer.finish_reason, FinishReason::Stop);
}
