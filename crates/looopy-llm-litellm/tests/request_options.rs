//! Request options that shape the answer: `max_completion_tokens`,
//! `parallel_tool_calls` and `response_format`, as the endpoint receives them.

use crate::support;

use std::sync::Arc;

use looopy_core::{LlmProvider, LlmRequest, ResponseFormat, ToolDefinition};
use looopy_llm_litellm::LiteLlmProvider;
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::json;
use support::{ask, config, cx, provider};

fn city_format() -> ResponseFormat {
    ResponseFormat::new(
        "city",
        json!({"type": "object", "properties": {"name": {"type": "string"}},
               "required": ["name"], "additionalProperties": false}),
    )
}

#[tokio::test]
async fn options_from_the_request_are_sent() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion(
        r#"{"name":"Paris"}"#,
    )));
    let request = LlmRequest {
        tools: Arc::from(vec![ToolDefinition::without_parameters(
            "lookup", "Looks up",
        )]),
        max_completion_tokens: Some(77),
        parallel_tool_calls: Some(false),
        response_format: Some(city_format()),
        ..ask("Capital of France?")
    };
    let r = provider(&f).call(request, &cx()).await.unwrap();
    assert_eq!(r.message.text(), r#"{"name":"Paris"}"#);
    let b = f.last_request().unwrap().body;
    assert_eq!(b["max_completion_tokens"], 77);
    assert_eq!(b["parallel_tool_calls"], false);
    assert_eq!(
        b["response_format"],
        json!({"type": "json_schema", "json_schema": {
            "name": "city", "strict": true, "schema": city_format().schema}})
    );
    assert!(b.get("max_tokens").is_none(), "{b}");
}

#[tokio::test]
async fn config_defaults_apply_and_parallel_needs_tools() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion("ok")));
    f.push(FixtureReply::json(openai::completion("ok")));
    let llm = LiteLlmProvider::new(
        config(&f)
            .with_max_completion_tokens(500)
            .with_parallel_tool_calls(false),
    )
    .unwrap();
    // No tools: OpenAI refuses parallel_tool_calls alone, so it is left out.
    llm.call(ask("hi"), &cx()).await.unwrap();
    let b = f.last_request().unwrap().body;
    assert_eq!(b["max_completion_tokens"], 500);
    assert!(b.get("parallel_tool_calls").is_none(), "{b}");
    assert!(b.get("response_format").is_none(), "{b}");
    // With tools it is sent; the request's own value wins over the default.
    let request = LlmRequest {
        tools: Arc::from(vec![ToolDefinition::without_parameters("lookup", "")]),
        max_completion_tokens: Some(9),
        ..ask("hi")
    };
    llm.call(request, &cx()).await.unwrap();
    let b = f.last_request().unwrap().body;
    assert_eq!(b["parallel_tool_calls"], false);
    assert_eq!(b["max_completion_tokens"], 9);
}

#[tokio::test]
async fn without_native_support_the_schema_goes_into_the_system_prompt() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::json(openai::completion("{}")));
    f.push(FixtureReply::json(openai::completion("{}")));
    let llm = LiteLlmProvider::new(config(&f).with_native_structured_output(false)).unwrap();
    let request = LlmRequest {
        system_prompt: Some("You know geography.".into()),
        response_format: Some(city_format()),
        ..ask("Capital of France?")
    };
    llm.call(request, &cx()).await.unwrap();
    let b = f.last_request().unwrap().body;
    assert!(b.get("response_format").is_none(), "{b}");
    let system = b["messages"][0]["content"].as_str().unwrap();
    assert_eq!(b["messages"][0]["role"], "system");
    assert!(system.starts_with("You know geography.\n\n"), "{system}");
    assert!(system.contains(r#""required":["name"]"#), "{system}");
    // Without a system prompt of its own the instruction becomes one.
    let request = LlmRequest {
        response_format: Some(city_format()),
        ..ask("Capital of France?")
    };
    llm.call(request, &cx()).await.unwrap();
    let b = f.last_request().unwrap().body;
    assert_eq!(b["messages"][0]["role"], "system");
    assert!(
        b["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("Answer with a single JSON value")
    );
}
