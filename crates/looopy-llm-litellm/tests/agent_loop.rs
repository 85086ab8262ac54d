//! A real `AgentLoop` turn over this provider: the model (the fixture
//! server) streams a tool call, the loop runs the tool, the model answers.

use crate::support;

use async_trait::async_trait;
use looopy_core::{
    Role, TaskState, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_loop::layers::{RetryPolicy, RetryingLlm};
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::json;

/// `add(a, b)`.
struct Adder;

#[async_trait]
impl ToolProvider for Adder {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::new(
            "add",
            "Adds two numbers",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                   "required": ["a", "b"]}),
        )])
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        let args = call.parsed_arguments();
        match (args["a"].as_f64(), args["b"].as_f64()) {
            (Some(a), Some(b)) => ToolResult::text(&call.id, format!("{}", a + b)),
            _ => ToolResult::error(&call.id, "a and b must be numbers"),
        }
    }
}

#[tokio::test]
async fn a_turn_with_a_tool_over_the_provider() {
    let f = OpenAiFixture::start().await.unwrap();
    f.push(FixtureReply::error(503, "warming up"))
        .push(FixtureReply::sse(vec![
            openai::tool_call_start_chunk(0, "call_1", "add"),
            openai::tool_args_chunk(0, "{\"a\": 2,"),
            openai::tool_args_chunk(0, " \"b\": 3}"),
            openai::finish_chunk("tool_calls"),
            openai::usage_chunk(20, 5),
        ]))
        .push(FixtureReply::sse(vec![
            openai::text_chunk("2 + 3 = "),
            openai::text_chunk("5"),
            openai::finish_chunk("stop"),
            openai::usage_chunk(30, 4),
        ]));
    let llm = RetryingLlm::new(
        support::provider(&f),
        RetryPolicy::default().with_delays(
            std::time::Duration::from_millis(10),
            std::time::Duration::from_millis(50),
        ),
    );
    let agent = AgentLoop::builder(llm)
        .system_prompt("You add numbers.")
        .tools(Adder)
        .build();
    let (_events, outcome) = agent
        .start_turn(support::ask("What is 2 + 3?").messages, support::cx())
        .collect_all()
        .await;
    let outcome = outcome.expect("the turn ended");
    assert_eq!(outcome.state, TaskState::Completed);
    assert_eq!(
        outcome.message.as_ref().map(|m| m.text()).as_deref(),
        Some("2 + 3 = 5")
    );
    assert_eq!(outcome.usage.input_tokens, 50);

    let requests = f.requests();
    assert_eq!(requests.len(), 3, "one retried 503, then two model calls");
    let first = &requests[1].body;
    assert_eq!(
        first["messages"][0],
        json!({"role": "system", "content": "You add numbers."})
    );
    assert_eq!(first["tools"][0]["function"]["name"], "add");
    assert_eq!(first["stream"], true);
    let second = &requests[2].body["messages"];
    let n = second.as_array().unwrap().len();
    assert_eq!(second[n - 2]["role"], "assistant");
    assert_eq!(second[n - 2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        second[n - 2]["tool_calls"][0]["function"]["arguments"],
        "{\"a\": 2, \"b\": 3}"
    );
    assert_eq!(
        second[n - 1],
        json!({"role": "tool", "content": "5", "tool_call_id": "call_1"})
    );
    assert!(outcome.new_messages().iter().any(|m| m.role == Role::Tool));
}
