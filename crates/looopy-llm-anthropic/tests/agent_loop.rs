//! A real `AgentLoop` turn over this provider with thinking on: the model
//! (the fixture) thinks and streams a tool call, the loop runs the tool,
//! and the next request sends the thinking block back, signature and all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use async_trait::async_trait;
use looopy_core::{
    EventPayload, History, Message, TaskState, ToolCall, ToolDefinition, ToolError, ToolProvider,
    ToolResult, TurnContext,
};
use looopy_llm_anthropic::{AnthropicConfig, AnthropicProvider};
use looopy_loop::AgentLoop;
use looopy_loop::layers::{RetryPolicy, RetryingLlm};
use looopy_testkit::anthropic_fixture::anthropic;
use looopy_testkit::{FixtureReply, OpenAiFixture, SseEnd, SseReply};
use serde_json::json;

/// `add(a, b)`.
struct Adder;

#[async_trait]
impl ToolProvider for Adder {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::new(
            "add",
            "Adds two numbers",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        )])
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        let args = call.parsed_arguments();
        let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
        ToolResult::text(&call.id, format!("{sum}"))
    }
}

const SIGNATURE: &str = "ErUBCkYIBRgCIkD+/signature==";

#[tokio::test]
async fn the_thinking_block_goes_back_on_the_next_call_of_the_turn() {
    let f = OpenAiFixture::start().await.unwrap();
    let mut thinking = vec![
        anthropic::message_start(anthropic::usage(20, 1, 0, 100)),
        anthropic::block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        anthropic::block_delta(
            0,
            json!({"type": "thinking_delta", "thinking": "Use the add tool."}),
        ),
        anthropic::block_delta(
            0,
            json!({"type": "signature_delta", "signature": SIGNATURE}),
        ),
        anthropic::block_stop(0),
        anthropic::block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}),
        ),
        anthropic::block_delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"a\": 2,"}),
        ),
        anthropic::block_delta(
            1,
            json!({"type": "input_json_delta", "partial_json": " \"b\": 3}"}),
        ),
        anthropic::block_stop(1),
    ];
    thinking.extend(anthropic::message_end("tool_use", 30));
    f.push(FixtureReply::Json {
        status: 529,
        headers: Vec::new(),
        body: anthropic::error("overloaded_error", "Overloaded"),
    })
    .push(SseReply::from_events(thinking).end(SseEnd::Close).into())
    .push(
        SseReply::from_events(anthropic::text_stream(&["2 + 3 = ", "5"]))
            .end(SseEnd::Close)
            .into(),
    );
    let provider = AnthropicProvider::new(
        AnthropicConfig::new("claude-sonnet-4-5")
            .with_api_key("sk-ant-test")
            .with_base_url(f.url())
            .with_max_tokens(4096)
            .with_thinking(2048),
    )
    .unwrap();
    let llm = RetryingLlm::new(
        provider,
        RetryPolicy::default().with_delays(Duration::from_millis(10), Duration::from_millis(50)),
    );
    let agent = AgentLoop::builder(llm)
        .system_prompt("You add numbers.")
        .tools(Adder)
        .build();
    let (events, outcome) = agent
        .start_turn(
            History::from(vec![Message::user("What is 2 + 3?")]),
            TurnContext::new("task", "ctx"),
        )
        .collect_all()
        .await;
    let outcome = outcome.expect("the turn ended");
    assert_eq!(outcome.state, TaskState::Completed);
    assert_eq!(
        outcome.message.as_ref().map(|m| m.text()).as_deref(),
        Some("2 + 3 = 5")
    );
    assert!(
        events.iter().any(|e| matches!(e.payload.as_ref(), EventPayload::Reasoning { text } if text == "Use the add tool.")),
        "the reasoning is reported as an internal:reasoning event"
    );
    // The history keeps the reasoning with its signature.
    let kept = outcome
        .new_messages()
        .iter()
        .flat_map(|m| m.reasoning())
        .map(|r| r.signature.clone())
        .collect::<Vec<_>>();
    assert_eq!(kept, vec![Some(SIGNATURE.to_owned())]);

    let requests = f.requests();
    assert_eq!(requests.len(), 3, "one retried 529, then two model calls");
    let second = &requests[2].body["messages"];
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Use the add tool.", "signature": SIGNATURE},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}
        ]})
    );
    assert_eq!(second[2]["content"][0]["type"], "tool_result");
    assert_eq!(second[2]["content"][0]["content"][0]["text"], "5");
    assert_eq!(outcome.usage.cache_creation_input_tokens, 100);
}
