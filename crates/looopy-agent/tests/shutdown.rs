//! `Agent::shutdown` releases what the agent holds: an MCP server's child
//! process ends, and starts again when the agent is used again.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use looopy_core::{LlmResponse, ToolCall};
use looopy_testkit::ScriptedLlm;
use looopy_testkit::external::{mcp_server_everything, process_alive, process_ends_within};
use looopy_tools::{McpToolProvider, StdioServer};
use support::*;

/// Whether the process ends within 20 s.
async fn gone(pid: u32) -> bool {
    process_ends_within(pid, Duration::from_secs(20)).await
}

fn sum(id: &str) -> LlmResponse {
    LlmResponse::tool_calls("", vec![ToolCall::new(id, "get-sum", r#"{"a":2,"b":3}"#)])
}

#[tokio::test]
async fn shutdown_ends_the_mcp_server_process_and_a_restart_starts_it_again() {
    let Some(bin) = mcp_server_everything() else {
        return;
    };
    let mcp = McpToolProvider::new(StdioServer::new(bin).arg("stdio"));
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(sum("a"))
        .respond(LlmResponse::text("5"))
        .respond(sum("b"))
        .respond(LlmResponse::text("5 again"));
    let agent = builder("c-shutdown", &llm, &stores)
        .tools(mcp.clone())
        .build()
        .unwrap();
    let (_, first) = turn(&agent, "2+3?").await;
    let result = first
        .new_messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("a"))
        .unwrap()
        .text();
    assert!(result.contains('5'), "{result}");
    let pid = mcp.server_pid().await.unwrap();
    assert!(process_alive(pid));

    agent.shutdown().await.unwrap();
    assert!(gone(pid).await, "the MCP server outlived Agent::shutdown");
    assert_eq!(mcp.server_pid().await, None);
    let saved = stores.agents.load("c-shutdown").await.unwrap().unwrap();
    assert_eq!(saved.lifecycle, looopy_agent::LifecycleState::Shutdown);

    // Started again, the agent starts its MCP server before any turn, and
    // its tools work again, in a new process.
    agent.start().await.unwrap();
    let started = mcp
        .server_pid()
        .await
        .expect("the start started the server");
    assert_ne!(started, pid);
    let (_, second) = turn(&agent, "again?").await;
    let again = second
        .new_messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("b"))
        .unwrap()
        .text();
    assert!(again.contains('5'), "{again}");
    let new_pid = mcp.server_pid().await.unwrap();
    assert_ne!(new_pid, pid);
    agent.shutdown().await.unwrap();
    assert!(gone(new_pid).await);
}
