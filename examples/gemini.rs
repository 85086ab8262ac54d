//! One turn with Gemini: thinking and a tool. The thought signature of
//! the first answer goes back, on its function call, in the request that
//! carries the tool's result. Prints the thought summary and the answer.
//!
//! `GEMINI_API_KEY=... cargo run -p looopy-examples --example gemini`
//!
//! `GEMINI_BASE_URL` points it elsewhere (a proxy, a mock); `GEMINI_MODEL`
//! picks the model (default `gemini-2.5-flash`).

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    EventPayload, Message, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
use looopy_llm_gemini::{GeminiConfig, GeminiProvider};
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
    let model = std::env::var("GEMINI_MODEL").unwrap_or_else(|_| "gemini-2.5-flash".into());
    let gemini = GeminiProvider::new(GeminiConfig::from_env(model)?.with_thinking_budget(1024))?;
    let agent = AgentLoop::builder(gemini)
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
