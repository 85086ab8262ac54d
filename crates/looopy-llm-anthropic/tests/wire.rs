//! The request as the Messages API receives it: headers and the whole
//! body, recorded by the fixture and compared with the API's documented
//! form.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use looopy_core::{
    FileContent, History, LlmProvider, LlmRequest, Message, Part, Reasoning, ResponseFormat, Role,
    ToolCall, ToolChoice, ToolDefinition, ToolFailure, ToolResult, TurnContext,
};
use looopy_llm_anthropic::{AnthropicConfig, AnthropicProvider};
use looopy_testkit::anthropic_fixture::anthropic;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::json;

fn provider(f: &OpenAiFixture, config: AnthropicConfig) -> AnthropicProvider {
    AnthropicProvider::new(config.with_api_key("sk-ant-wire").with_base_url(f.url())).unwrap()
}

fn ok() -> FixtureReply {
    FixtureReply::json(anthropic::message(
        vec![anthropic::text_block("ok")],
        "end_turn",
    ))
}

/// A turn after one round of parallel tool calls with thinking.
fn request() -> LlmRequest {
    let image = Part::file(FileContent {
        blob: None,
        name: Some("chart.png".into()),
        mime_type: Some("image/png".into()),
        uri: None,
        bytes: Some("iVBORw0K".into()),
    });
    let pdf = Part::file(FileContent {
        blob: None,
        name: Some("report.pdf".into()),
        mime_type: Some("application/pdf".into()),
        uri: None,
        bytes: Some("JVBERi0x".into()),
    });
    let mut calling = Message::with_parts(
        Role::Assistant,
        vec![
            Part::reasoning(
                Reasoning::new("anthropic", "Two lookups.").with_signature("c2lnbmF0dXJl+/="),
            ),
            Part::reasoning(Reasoning {
                provider: "anthropic".into(),
                redacted: Some("RU5DUllQVEVE".into()),
                ..Default::default()
            }),
            Part::reasoning(Reasoning::new("openai", "not for Claude").with_signature("OTHER")),
            Part::text("Looking."),
        ],
    );
    calling.tool_calls = vec![
        ToolCall::new("toolu_1", "weather", r#"{"city":"Paris"}"#),
        ToolCall::new("toolu_2", "weather", "not json"),
    ];
    let mut failed = ToolResult::text("toolu_2", "bad arguments").into_message();
    failed.failure = Some(ToolFailure::Failed);
    LlmRequest {
        system_prompt: Some("You are terse.".into()),
        messages: History::from(vec![
            Message::with_parts(
                Role::User,
                vec![Part::text("Compare "), Part::text("these"), image, pdf],
            ),
            calling,
            ToolResult::text("toolu_1", "sunny").into_message(),
            failed,
        ]),
        tools: Arc::from(vec![
            ToolDefinition::new(
                "weather",
                "The weather",
                json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            ),
            ToolDefinition::new(
                "time",
                "The time",
                json!({"type": "object", "properties": {}}),
            ),
        ]),
        tool_choice: Some(ToolChoice::Required),
        parallel_tool_calls: Some(false),
        max_tokens: Some(16000),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_request_is_the_apis_documented_form() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(ok());
    let p = provider(
        &f,
        AnthropicConfig::new("claude-sonnet-4-5").with_thinking(4000),
    );
    p.call(request(), &TurnContext::new("t", "c"))
        .await
        .unwrap();
    let sent = f.last_request().unwrap();
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-wire"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    let cache = json!({"type": "ephemeral"});
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 16000,
            "system": [{"type": "text", "text": "You are terse.", "cache_control": cache}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "Compare these"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
                    {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}, "title": "report.pdf"}
                ]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Two lookups.", "signature": "c2lnbmF0dXJl+/="},
                    {"type": "redacted_thinking", "data": "RU5DUllQVEVE"},
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "bad arguments"}],
                     "is_error": true, "cache_control": cache}
                ]}
            ],
            "tools": [
                {"name": "weather", "description": "The weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
                {"name": "time", "description": "The time", "input_schema": {"type": "object", "properties": {}}, "cache_control": cache}
            ],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
            "thinking": {"type": "enabled", "budget_tokens": 4000}
        })
    );
}

#[tokio::test]
async fn without_the_cache_there_are_no_breakpoints_and_a_stream_says_so() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(ok());
    let p = provider(
        &f,
        AnthropicConfig::new("claude-haiku-4-5")
            .with_prompt_cache(false)
            .with_temperature(0.2),
    );
    let request = LlmRequest {
        system_prompt: Some("Short.".into()),
        messages: History::from(vec![Message::user("hi")]),
        ..Default::default()
    };
    let cx = TurnContext::new("t", "c");
    let stream = p.stream(request, &cx);
    let _ = futures::StreamExt::collect::<Vec<_>>(stream).await;
    let sent = f.last_request().unwrap();
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-haiku-4-5",
            "max_tokens": 8192,
            "system": "Short.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "temperature": 0.2,
            "stream": true
        })
    );
}

#[tokio::test]
async fn a_response_format_is_output_config_or_with_native_output_off_an_instruction() {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let request = LlmRequest {
        system_prompt: Some("Short.".into()),
        messages: History::from(vec![Message::user("hi")]),
        response_format: Some(ResponseFormat::new("city", schema.clone())),
        ..Default::default()
    };
    let cx = TurnContext::new("t", "c");
    let f = OpenAiFixture::start().await.unwrap();
    f.push(ok()).push(ok());
    let config = AnthropicConfig::new("claude-sonnet-4-5").with_prompt_cache(false);
    provider(&f, config.clone())
        .call(request.clone(), &cx)
        .await
        .unwrap();
    let native = f.last_request().unwrap().body;
    assert_eq!(
        native["output_config"],
        json!({"format": {"type": "json_schema", "schema": schema}})
    );
    assert_eq!(native["system"], "Short.");
    provider(&f, config.with_native_structured_output(false))
        .call(request.clone(), &cx)
        .await
        .unwrap();
    let prompted = f.last_request().unwrap().body;
    assert_eq!(prompted.get("output_config"), None);
    let format = request.response_format.as_ref().unwrap();
    assert_eq!(
        prompted["system"],
        format!("Short.\n\n{}", format.instruction())
    );
}

#[test]
fn a_bad_thinking_budget_is_refused_when_the_provider_is_made() {
    let e = AnthropicProvider::new(AnthropicConfig::new("m").with_thinking(10)).unwrap_err();
    assert_eq!(e.kind(), "not_configured");
}
