//! One turn of an AgentLoop: a scripted model asks for a tool, the tool runs,
//! the model answers. Prints every event as JSON, one per line.
//!
//! `cargo run -p looopy-examples --example hello_turn`

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    LlmResponse, Message, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_testkit::ScriptedLlm;

/// A calculator with one tool.
struct Calculator;

#[async_trait]
impl ToolProvider for Calculator {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::new(
            "add",
            "Adds two numbers",
            serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        )])
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        let args = call.parsed_arguments();
        match (args["a"].as_f64(), args["b"].as_f64()) {
            (Some(a), Some(b)) => ToolResult::text(&call.id, (a + b).to_string()),
            _ => ToolResult::error(&call.id, "expected numbers `a` and `b`"),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "Let me add that.",
            vec![ToolCall::new("call-1", "add", r#"{"a": 2, "b": 40}"#)],
        ))
        .respond(LlmResponse::text("2 + 40 = 42."));
    let agent = AgentLoop::builder(llm)
        .system_prompt("You are a careful calculator.")
        .tools(Calculator)
        .build();
    let mut events = agent.start_turn(
        vec![Message::user("What is 2 + 40?")].into(),
        TurnContext::new("task-1", "context-1"),
    );
    while let Some(event) = events.next().await {
        println!("{}", serde_json::to_string(&event)?);
    }
    Ok(())
}
