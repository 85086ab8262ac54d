//! The A2A server inside an existing axum application: the app keeps its
//! own routes (`/health`, `/api/hello`) and gains the agent's (`POST /` for
//! JSON-RPC, `/.well-known/agent-card.json`).
//!
//! `LOOOPY_LLM_BASE_URL=... LOOOPY_LLM_MODEL=... PORT=3000 cargo run -p looopy-examples --example axum_embed`
//! then `cargo run -p looopy-cli -- chat http://127.0.0.1:3000`.
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use looopy::a2a::{A2aServer, AgentCardConfig, LoopRunner};
use looopy::openai::LiteLlmProvider;
use looopy::prelude::*;
use looopy::stores::memory::{MemoryEventLog, MemoryMessageStore, MemoryTaskRecordStore};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let agent = AgentLoop::builder(LiteLlmProvider::from_env()?)
        .system_prompt("You are the weather desk. Answer in one sentence.")
        .build();
    let runner = LoopRunner::new(agent, Arc::new(MemoryMessageStore::new()));
    let server = A2aServer::builder(
        runner,
        Arc::new(MemoryEventLog::new()),
        Arc::new(MemoryTaskRecordStore::new()),
    )
    .card(AgentCardConfig::new(
        "weather",
        "Answers questions about the weather",
    ))
    .build();

    // The application as it was, plus the agent's routes.
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/api/hello", get(|| async { "hello from the app" }))
        .merge(server.router());

    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".into());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            // Ctrl-C ends the program; a failure to listen for it too.
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
