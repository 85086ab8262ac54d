//! Non-streaming calls against the in-process fixture server.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use looopy_core::{
    FileContent, FinishReason, History, LlmError, LlmProvider, LlmRequest, Message, Part, Role,
    ToolCall, ToolChoice, ToolDefinition, ToolResult,
};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::json;
use support::{KEY, ask, cx, provider};

#[tokio::test]
async fn text_completion_with_usage_and_reasoning() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion_with(
        json!({"role": "assistant", "content": "Paris.", "reasoning_content": "It is the capital."}),
        "stop",
    )));
    let llm = provider(&f);
    let r = llm.call(ask("Capital of France?"), &cx()).await.unwrap();
    assert_eq!(r.message.text(), "Paris.");
    assert_eq!(r.message.role, Role::Assistant);
    assert_eq!(r.reasoning.as_deref(), Some("It is the capital."));
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(r.usage.unwrap().input_tokens, 10);
    assert_eq!(r.model.as_deref(), Some("fixture-model"));

    let req = f.last_request().unwrap();
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(req.body["model"], "test-model");
    assert_eq!(req.body["stream"], false);
    assert!(req.body.get("stream_options").is_none());
    assert_eq!(llm.provider_name(), "openai");
    assert_eq!(llm.model_name(), "test-model");
}

#[tokio::test]
async fn the_reasoning_field_is_read_too() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion_with(
        json!({"role": "assistant", "content": "4", "reasoning": "2+2"}),
        "stop",
    )));
    let r = provider(&f).call(ask("2+2?"), &cx()).await.unwrap();
    assert_eq!(r.reasoning.as_deref(), Some("2+2"));
}

#[tokio::test]
async fn request_maps_history_tools_and_defaults() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::tool_calls_completion(&[
        ("c2", "lookup", r#"{"q":"x"}"#),
        ("c3", "add", r#"{"a":1,"b":2}"#),
    ])));
    let config = support::config(&f)
        .with_temperature(0.25)
        .with_max_tokens(64)
        .with_tool_choice(ToolChoice::Required)
        .with_header("x-litellm-tags", "looopy");
    let llm = LiteLlmProvider::new(config).unwrap();

    let mut assistant = Message::with_parts(Role::Assistant, vec![]);
    assistant.tool_calls = vec![ToolCall::new("c1", "add", r#"{"a":1}"#)];
    let image = Part::file(FileContent {
        blob: None,
        name: Some("cat.png".into()),
        mime_type: Some("image/png".into()),
        uri: Some("https://example.com/cat.png".into()),
        bytes: None,
    });
    let history = History::from(vec![
        Message::with_parts(Role::User, vec![Part::text("what is this?"), image]),
        assistant,
        ToolResult::json("c1", &json!({"sum": 1})).into_message(),
        Message::with_parts(Role::User, vec![Part::data(json!({"more": true}))]),
    ]);
    let mut metadata = serde_json::Map::new();
    metadata.insert("extra_body".into(), json!({"top_p": 0.5}));
    let request = LlmRequest {
        system_prompt: Some(Arc::from("You are terse.")),
        messages: history,
        tools: Arc::from(vec![
            ToolDefinition::new(
                "add",
                "Adds",
                json!({"type":"object","properties":{"a":{"type":"number"}}}),
            ),
            ToolDefinition::without_parameters("lookup", ""),
        ]),
        max_tokens: Some(32),
        metadata,
        ..Default::default()
    };
    let r = llm.call(request, &cx()).await.unwrap();
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        r.message.tool_calls,
        vec![
            ToolCall::new("c2", "lookup", r#"{"q":"x"}"#),
            ToolCall::new("c3", "add", r#"{"a":1,"b":2}"#)
        ]
    );

    let req = f.last_request().unwrap();
    assert_eq!(req.header("x-litellm-tags"), Some("looopy"));
    let b = &req.body;
    assert_eq!(
        b["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}}]},
            {"role": "tool", "content": "{\"sum\":1}", "tool_call_id": "c1"},
            {"role": "user", "content": "{\"more\":true}"}
        ])
    );
    assert_eq!(
        b["tools"],
        json!([
            {"type": "function", "function": {"name": "add", "description": "Adds",
                "parameters": {"type":"object","properties":{"a":{"type":"number"}}}}},
            {"type": "function", "function": {"name": "lookup",
                "parameters": {"type":"object","properties":{}}}}
        ])
    );
    assert_eq!(b["tool_choice"], "required");
    assert_eq!(b["temperature"], 0.25);
    assert_eq!(
        b["max_tokens"], 32,
        "the request overrides the configured default"
    );
    assert_eq!(b["top_p"], 0.5);
}

#[tokio::test]
async fn named_tool_choice_and_model_override() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion("ok")));
    let request = LlmRequest {
        tools: Arc::from(vec![ToolDefinition::without_parameters("done", "Ends")]),
        tool_choice: Some(ToolChoice::Tool("done".into())),
        model: Some("other-model".into()),
        ..ask("hi")
    };
    provider(&f).call(request, &cx()).await.unwrap();
    let b = f.last_request().unwrap().body;
    assert_eq!(
        b["tool_choice"],
        json!({"type": "function", "function": {"name": "done"}})
    );
    assert_eq!(b["model"], "other-model");
}

#[tokio::test]
async fn http_errors_are_typed_and_quote_the_server() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(401, "Incorrect API key provided"))
        .push(FixtureReply::error(404, "The model `nope` does not exist"))
        .push(FixtureReply::error(
            400,
            "context_length_exceeded: too many tokens",
        ))
        .push(FixtureReply::error(429, "Rate limit reached").with_header("retry-after", "7"))
        .push(FixtureReply::error(503, "upstream overloaded"))
        .push(
            FixtureReply::raw(502, "<html>Bad Gateway</html>")
                .with_header("content-type", "text/html"),
        );
    let llm = provider(&f);
    let cx = cx();
    let e = llm.call(ask("a"), &cx).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::Authentication {
            message: "Incorrect API key provided".into()
        }
    );
    let e = llm.call(ask("a"), &cx).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::NotFound {
            message: "The model `nope` does not exist".into()
        }
    );
    let e = llm.call(ask("a"), &cx).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::BadRequest {
            message: "context_length_exceeded: too many tokens".into()
        }
    );
    let e = llm.call(ask("a"), &cx).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::RateLimited {
            message: "Rate limit reached".into(),
            retry_after: Some(Duration::from_secs(7))
        }
    );
    let e = llm.call(ask("a"), &cx).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::Server {
            retry_after: None,
            status: 503,
            message: "upstream overloaded".into()
        }
    );
    let e = llm.call(ask("a"), &cx).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::Server {
            retry_after: None,
            status: 502,
            message: "<html>Bad Gateway</html>".into()
        }
    );
    assert_eq!(f.requests().len(), 6, "the bare provider never retries");
}

#[tokio::test]
async fn garbage_and_empty_answers_are_malformed() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::raw(200, "{\"choices\": [oops"))
        .push(FixtureReply::json(json!({"choices": []})))
        .push(FixtureReply::json(
            json!({"error": {"message": "proxy said no", "code": 400}}),
        ));
    let llm = provider(&f);
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert!(
        matches!(&e, LlmError::MalformedResponse { message } if message.contains("{\"choices\": [oops")),
        "{e:?}"
    );
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert!(
        matches!(&e, LlmError::MalformedResponse { message } if message.contains("no choices")),
        "{e:?}"
    );
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert_eq!(
        e,
        LlmError::BadRequest {
            message: "proxy said no".into()
        }
    );
}

#[tokio::test]
async fn request_timeout_and_connection_errors() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion("late")).after(Duration::from_secs(30)));
    let llm =
        LiteLlmProvider::new(support::config(&f).with_request_timeout(Duration::from_millis(200)))
            .unwrap();
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert!(
        matches!(&e, LlmError::Timeout { message } if message.contains("in time")),
        "{e:?}"
    );
    assert!(
        f.wait_for_aborted(1, Duration::from_secs(10)).await,
        "the timed-out request is abandoned"
    );

    // Nothing listens on the port of a dropped fixture.
    let url = f.base_url();
    drop(f);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let llm = LiteLlmProvider::new(LiteLlmConfig::new(url, "m")).unwrap();
    let e = llm.call(ask("a"), &cx()).await.unwrap_err();
    assert!(matches!(e, LlmError::Connection { .. }), "{e:?}");
}

#[tokio::test]
async fn cancellation_and_drop_abort_the_request() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion("late")).after(Duration::from_secs(30)))
        .push(FixtureReply::json(openai::completion("late")).after(Duration::from_secs(30)));
    let llm = provider(&f);
    let cx = cx();
    let cancel = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    assert_eq!(
        llm.call(ask("a"), &cx).await.unwrap_err(),
        LlmError::Cancelled
    );
    assert!(f.wait_for_aborted(1, Duration::from_secs(10)).await);

    // Dropping the call future (here: a timeout around it) aborts as well.
    let cx = support::cx();
    let r = tokio::time::timeout(Duration::from_millis(100), llm.call(ask("a"), &cx)).await;
    assert!(r.is_err());
    assert!(f.wait_for_aborted(2, Duration::from_secs(10)).await);
}

#[test]
fn invalid_configuration_is_reported() {
    let e = LiteLlmProvider::new(LiteLlmConfig::new("not a url", "m")).unwrap_err();
    assert!(matches!(e, LlmError::NotConfigured { .. }), "{e:?}");
    let e =
        LiteLlmProvider::new(LiteLlmConfig::new("http://h", "m").with_header("bad header", "v"))
            .unwrap_err();
    assert!(matches!(e, LlmError::NotConfigured { .. }), "{e:?}");
    let llm = LiteLlmProvider::new(LiteLlmConfig::new("http://h", "m").with_api_key("sk-abc123"))
        .unwrap();
    assert!(!format!("{llm:?}").contains("sk-abc123"));
}

#[tokio::test]
async fn fast_mock_answers_every_request_without_recording() {
    let f = OpenAiFixture::start_fast(
        Duration::from_millis(1),
        FixtureReply::Text("canned".into()),
    )
    .await
    .unwrap();
    let llm = provider(&f);
    let cx = cx();
    for _ in 0..3 {
        assert_eq!(
            llm.call(ask("a"), &cx).await.unwrap().message.text(),
            "canned"
        );
    }
    let (chunks, err) = support::drain(llm.stream(ask("b"), &cx)).await;
    assert_eq!(err, None);
    let r = support::assemble(&chunks);
    assert_eq!(r.message.text(), "canned");
    assert!(r.usage.is_some());
    assert_eq!(f.served(), 4);
    assert!(f.requests().is_empty());
}
