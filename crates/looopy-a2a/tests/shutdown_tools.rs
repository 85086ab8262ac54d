//! A server's graceful stop releases what its agents hold: the child
//! process of an MCP server used as a tool ends.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use looopy_core::{LlmResponse, ToolCall, ToolProvider};
use looopy_testkit::ScriptedLlm;
use looopy_testkit::external::{mcp_server_everything, process_alive, process_ends_within};
use looopy_tools::{McpToolProvider, StdioServer};
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_graceful_stop_ends_the_agents_mcp_server_process() {
    let Some(bin) = mcp_server_everything() else {
        return;
    };
    let mcp = McpToolProvider::new(StdioServer::new(bin).arg("stdio"));
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("c1", "get-sum", r#"{"a":2,"b":3}"#)],
        ))
        .respond(LlmResponse::text("5"));
    let tools: Vec<Arc<dyn ToolProvider>> = vec![Arc::new(mcp.clone())];
    let (runner, _stores) = agent_runner(llm.clone(), tools);
    let server = start(runner).await;
    let mut stream = stream_v1(&server.url, v1_message("2+3?")).await;
    while stream.next().await.is_some() {}
    assert_eq!(llm.remaining(), 0, "the turn ran to its end");
    let pid = mcp.server_pid().await.unwrap();
    assert!(process_alive(pid));

    server.stop().await;
    assert!(
        process_ends_within(pid, Duration::from_secs(20)).await,
        "the MCP server outlived the server's stop"
    );
}
