//! One turn with Claude: extended thinking and a tool. The thinking block
//! of the first answer goes back, with its signature, in the request that
//! carries the tool's result. Prints the reasoning and the answer.
//!
//! `ANTHROPIC_API_KEY=sk-ant-... cargo run -p looopy-examples --example anthropic`
//!
//! `ANTHROPIC_BASE_URL` points it elsewhere (a proxy, a mock);
//! `ANTHROPIC_MODEL` picks the model (default `claude-sonnet-4-5`).

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    EventPayload, Message, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
use looopy_llm_anthropic::{AnthropicConfig, AnthropicProvider};
use looopy_loop::AgentLoop;

/// A calculator with one tool.
struct Calculator;

#[async_trait]
impl ToolProvider for Calculator {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::new(
            "multiply",
            "Multiplies two numbers",
            serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        )])
    }

    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        let args = call.parsed_arguments();
        match (args["a"].as_f64(), args["b"].as_f64()) {
            (Some(a), Some(b)) => ToolResult::text(&call.id, (a * b).to_string()),
            _ => ToolResult::error(&call.id, "expected numbers `a` and `b`"),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let model = std::env::var("ANTHROPIC_MODEL").unwrap_or_else(|_| "claude-sonnet-4-5".into());
    let claude = AnthropicProvider::new(
        AnthropicConfig::from_env(model)?
            .with_max_tokens(8192)
            .with_thinking(2048),
    )?;
    let agent = AgentLoop::builder(claude)
        .system_prompt("You are a careful calculator. Use the tool for arithmetic.")
        .tools(Calculator)
        .build();
    let mut events = agent.start_turn(
        vec![Message::user("What is 12.5 times 8?")].into(),
        TurnContext::new("task-1", "context-1"),
    );
    while let Some(event) = events.next().await {
        match event.payload.as_ref() {
            EventPayload::Reasoning { text } => println!("thinking: {text}"),
            EventPayload::StatusUpdate {
                status,
                is_final: true,
                ..
            } => {
                let answer = status
                    .message
                    .as_ref()
                    .map(|m| m.text())
                    .unwrap_or_default();
                println!("answer: {answer}");
            }
            _ => {}
        }
    }
    Ok(())
}
