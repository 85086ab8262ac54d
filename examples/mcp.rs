//! An MCP server's tools in a turn: the server is the command line given
//! after `--` (a stdio MCP server), the model comes from the environment.
//!
//! `cargo run -p looopy-examples --example mcp -- npx -y @modelcontextprotocol/server-everything`
//! (with `LOOOPY_LLM_BASE_URL`, `LOOOPY_LLM_MODEL`, `LOOOPY_LLM_API_KEY` set).
//! The question is the `PROMPT` variable (default: ask to echo a word).
use looopy::openai::LiteLlmProvider;
use looopy::prelude::*;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: mcp <server command> [args...]"))?;
    let server = McpToolProvider::new(StdioServer::new(command).args(args));
    server.connect().await?; // fail here, not in the middle of a turn
    let names: Vec<String> = server
        .tools(&TurnContext::new("list", "list"))
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    println!("tools: {}", names.join(", "));

    let agent = AgentLoop::builder(LiteLlmProvider::from_env()?)
        .tools(server.clone())
        .build();
    let prompt = std::env::var("PROMPT").unwrap_or_else(|_| "Echo the word 'looopy'.".into());
    let history = History::from(vec![Message::user(prompt)]);
    let (events, outcome) = agent
        .start_turn(history, TurnContext::new("task-1", "context-1"))
        .collect_all()
        .await;
    for event in &events {
        if let EventPayload::ToolComplete { result, .. } = &*event.payload {
            println!("tool result: {}", result.text_content());
        }
    }
    let answer = outcome.and_then(|o| o.message).map(|m| m.text());
    println!("answer: {}", answer.unwrap_or_default());
    server.shutdown().await?;
    Ok(())
}
