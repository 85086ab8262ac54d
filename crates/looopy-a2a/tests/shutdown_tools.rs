//! A server's graceful stop releases what its agents hold: the child
//! process of an MCP server used as a tool ends.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use looopy_core::{LlmResponse, ToolCall, ToolProvider};
use looopy_testkit::ScriptedLlm;
use looopy_tools::{McpToolProvider, StdioServer};
use support::*;

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_graceful_stop_ends_the_agents_mcp_server_process() {
    let Some(bin) = require(
        "LOOOPY_MCP_EVERYTHING",
        repo_root().join(".tools/node/node_modules/.bin/mcp-server-everything"),
        "@modelcontextprotocol/server-everything",
    ) else {
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
    assert!(alive(pid));

    server.stop().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(pid), "the MCP server outlived the server's stop");
}
