//! One turn with a real model and a typed tool: the README's program.
//!
//! `LOOOPY_LLM_BASE_URL=http://localhost:4000 LOOOPY_LLM_MODEL=gpt-4o-mini \
//!  LOOOPY_LLM_API_KEY=sk-... cargo run -p looopy-examples --example turn`
use looopy::openai::LiteLlmProvider;
use looopy::prelude::*;
use serde::Deserialize;

/// The arguments of `add`: the doc comments become the schema the model reads.
#[derive(Deserialize, JsonSchema)]
struct Add {
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let llm = LiteLlmProvider::from_env()?; // LOOOPY_LLM_BASE_URL, _MODEL, _API_KEY
    let calculator = LocalTools::new().tool(
        "add",
        "Adds two numbers",
        |args: Add, _cx: TurnContext| async move { Ok::<_, ToolFnError>(args.a + args.b) },
    );
    let agent = AgentLoop::builder(llm)
        .system_prompt("You are a careful calculator. Use the add tool.")
        .tools(calculator)
        .build();
    let history = History::from(vec![Message::user("What is 2 + 40?")]);
    let mut events = agent.start_turn(history, TurnContext::new("task-1", "context-1"));
    while let Some(event) = events.next().await {
        // task, status-update, artifact-update (streamed text), internal:* (tool calls...)
        println!("{}", serde_json::to_string(&event)?);
    }
    let outcome = events.handle().outcome();
    let answer = outcome.and_then(|o| o.message).map(|m| m.text());
    println!("answer: {}", answer.unwrap_or_default());
    Ok(())
}
