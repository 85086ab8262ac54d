//! The OpenAI Responses API provider over HTTP: against the in-process
//! fixture server (recorded request bodies, errors, cut streams) and
//! against `@copilotkit/aimock`'s `/v1/responses`.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use looopy_core::{
    FinishReason, History, LlmError, LlmProvider, LlmRequest, Message, ToolDefinition, ToolResult,
};
use looopy_llm_litellm::{LiteLlmConfig, OpenAiResponsesProvider};
use looopy_testkit::aimock::{Aimock, weather_fixtures};
use looopy_testkit::{FixtureReply, OpenAiFixture, SseEnd, SseEvent, SseReply};
use serde_json::{Value, json};
use support::{KEY, assemble, config, cx, drain};

fn provider(f: &OpenAiFixture) -> OpenAiResponsesProvider {
    OpenAiResponsesProvider::new(config(f)).unwrap()
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "get_weather",
        "Current weather of a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

/// `event: <type>` then `data: <json>`, as OpenAI frames Responses events.
fn event(data: Value) -> SseEvent {
    let kind = data["type"].as_str().unwrap_or("").to_owned();
    SseEvent::Verbatim(format!("event: {kind}\ndata: {data}\n\n"))
}

#[tokio::test]
async fn a_streamed_tool_turn_is_sent_and_read_in_responses_form() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(
        SseReply::from_events(vec![
            event(json!({"type":"response.created","response":{"id":"resp_1","model":"gpt-4.1","status":"in_progress","output":[]}})),
            event(json!({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}})),
            event(json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"city\":"})),
            event(json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"\"Paris\"}"})),
            event(json!({"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}})),
            event(json!({"type":"response.completed","response":{"id":"resp_1","model":"gpt-4.1-2025-04-14","status":"completed","output":[],
                "usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":16},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":26}}})),
        ])
        .end(SseEnd::Close)
        .into(),
    );
    f.push(FixtureReply::json(json!({
        "id":"resp_2","model":"gpt-4.1","status":"completed",
        "output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"18 and sunny.","annotations":[]}]}],
        "usage":{"input_tokens":30,"output_tokens":4,"total_tokens":34}
    })));
    let p = provider(&f);
    let mut history = History::from(vec![Message::user("Weather in Paris?")]);
    let request = |history: &History| LlmRequest {
        system_prompt: Some("You report the weather.".into()),
        messages: history.clone(),
        tools: vec![weather_tool()].into(),
        max_completion_tokens: Some(300),
        ..Default::default()
    };
    let (chunks, err) = drain(p.stream(request(&history), &cx())).await;
    assert_eq!(err, None);
    let first = assemble(&chunks);
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    let call = first.message.tool_calls[0].clone();
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_1", "get_weather")
    );
    assert_eq!(call.arguments, r#"{"city":"Paris"}"#);
    let usage = first.usage.unwrap();
    assert_eq!((usage.cached_input_tokens, usage.reasoning_tokens), (16, 2));

    let sent = f.last_request().unwrap();
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(
        sent.body,
        json!({
            "model": "test-model",
            "input": [
                {"role": "developer", "content": "You report the weather."},
                {"role": "user", "content": "Weather in Paris?"}
            ],
            "tools": [{"type": "function", "name": "get_weather", "description": "Current weather of a city",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}],
            "max_output_tokens": 300,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "stream": true
        })
    );

    history.push(first.message.clone());
    history.push(ToolResult::json(&call.id, &json!({"temp_c": 18})).into_message());
    let answer = p.call(request(&history), &cx()).await.unwrap();
    assert_eq!(answer.message.text(), "18 and sunny.");
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    let input = &f.last_request().unwrap().body["input"];
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"temp_c\":18}"})
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
    f.push(FixtureReply::error(429, "slow down").with_header("retry-after", "2"));
    let e = p.call(ask(), &cx()).await.unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_secs(2)), "{e:?}");

    f.push(FixtureReply::error(401, "bad key"));
    let (_, e) = drain(p.stream(ask(), &cx())).await;
    assert!(matches!(e, Some(LlmError::Authentication { .. })), "{e:?}");

    // An error event in the middle of the stream.
    f.push(
        SseReply::from_events(vec![
            event(json!({"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"Hel"})),
            event(json!({"type":"error","code":"server_error","message":"boom","param":null})),
        ])
        .end(SseEnd::Close)
        .into(),
    );
    let (chunks, e) = drain(p.stream(ask(), &cx())).await;
    assert_eq!(chunks.len(), 1);
    assert!(
        matches!(e, Some(LlmError::Server { status: 500, .. })),
        "{e:?}"
    );

    // A stream that ends before response.completed was cut.
    f.push(
        SseReply::from_events(vec![event(
            json!({"type":"response.output_text.delta","item_id":"m","output_index":0,"delta":"Hel"}),
        )])
        .end(SseEnd::Close)
        .into(),
    );
    let (_, e) = drain(p.stream(ask(), &cx())).await;
    assert!(
        matches!(&e, Some(LlmError::MalformedResponse { message }) if message.contains("response.completed")),
        "{e:?}"
    );
}

#[tokio::test]
async fn tool_call_round_trip_against_aimock() {
    let Some(server) = Aimock::start(&weather_fixtures()).await else {
        return;
    };
    let config =
        LiteLlmConfig::new(format!("{}/v1", server.url()), "gpt-4.1").with_api_key("sk-aimock");
    let p = OpenAiResponsesProvider::new(config).unwrap();
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

#[tokio::test]
async fn encrypted_reasoning_goes_back_on_the_next_call_of_the_turn() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(
        SseReply::from_events(vec![
            event(json!({"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_7","summary":[]}})),
            event(json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_7","output_index":0,"delta":"Need the weather."})),
            event(json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_7",
                "summary":[{"type":"summary_text","text":"Need the weather."}],"encrypted_content":"gAAAAB-opaque+/=="}})),
            event(json!({"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}})),
            event(json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{}"})),
            event(json!({"type":"response.completed","response":{"status":"completed","output":[]}})),
        ])
        .end(SseEnd::Close)
        .into(),
    );
    f.push(FixtureReply::json(json!({"status":"completed","output":[
        {"type":"message","content":[{"type":"output_text","text":"Sunny."}]}]})));
    let p = provider(&f);
    let mut history = History::from(vec![Message::user("Weather?")]);
    let request = |history: &History| LlmRequest {
        messages: history.clone(),
        tools: vec![weather_tool()].into(),
        ..Default::default()
    };
    let (chunks, err) = drain(p.stream(request(&history), &cx())).await;
    assert_eq!(err, None);
    let first = assemble(&chunks);
    assert_eq!(first.reasoning.as_deref(), Some("Need the weather."));
    let call = first.message.tool_calls[0].clone();
    history.push(first.message.clone());
    history.push(ToolResult::text(&call.id, "sunny").into_message());
    p.call(request(&history), &cx()).await.unwrap();
    let input = &f.last_request().unwrap().body["input"];
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "id": "rs_7",
               "summary": [{"type": "summary_text", "text": "Need the weather."}],
               "encrypted_content": "gAAAAB-opaque+/=="}),
        "{input}"
    );
    assert_eq!(input[2]["type"], "function_call");
}
