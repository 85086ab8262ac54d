//! A remote A2A agent used as a tool: the local agent's model decides when
//! to ask it, the call goes over A2A (streamed), its answer is the tool's
//! result.
//!
//! Start a remote agent (`cargo run -p looopy-examples --example axum_embed`),
//! then `REMOTE_AGENT_URL=http://127.0.0.1:3000 cargo run -p looopy-examples --example sub_agent`
//! (both with `LOOOPY_LLM_BASE_URL`, `LOOOPY_LLM_MODEL`, `LOOOPY_LLM_API_KEY`).
use looopy::a2a::{A2aClient, RemoteAgentTools};
use looopy::openai::LiteLlmProvider;
use looopy::prelude::*;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("REMOTE_AGENT_URL").unwrap_or_else(|_| "http://127.0.0.1:3000".into());
    // The tool's name and description come from the remote agent's card.
    let remote = RemoteAgentTools::from_card(A2aClient::new(url)).await?;
    let agent = AgentLoop::builder(LiteLlmProvider::from_env()?)
        .system_prompt("You plan outings. Ask the weather agent about the weather.")
        .tools(remote)
        .build();
    let prompt = std::env::var("PROMPT")
        .unwrap_or_else(|_| "Should I bike to work in Oslo tomorrow?".into());
    let history = History::from(vec![Message::user(prompt)]);
    let (events, outcome) = agent
        .start_turn(history, TurnContext::new("task-1", "context-1"))
        .collect_all()
        .await;
    for event in &events {
        if let EventPayload::ToolComplete { name, result, .. } = &*event.payload {
            println!("{name} said: {}", result.text_content());
        }
    }
    let answer = outcome.and_then(|o| o.message).map(|m| m.text());
    println!("answer: {}", answer.unwrap_or_default());
    Ok(())
}
