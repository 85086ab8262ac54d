//! `McpToolProvider` against a server that misbehaves
//! (tests/fixtures/faulty_mcp_server.py): lines on its stdout that are not
//! JSON-RPC, and a child that exits in the middle of a call. Each call gets
//! a result or a typed error with a message; the provider (and the process
//! that holds it) goes on, and the next call is served.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use looopy_core::ToolCall;
use looopy_tools::{McpToolProvider, StdioServer};
use support::call;

fn faulty() -> Option<McpToolProvider> {
    let python = support::python()?;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/faulty_mcp_server.py");
    let server = StdioServer::new(python)
        .arg(script.display().to_string())
        .env("PYTHONUNBUFFERED", "1");
    Some(
        McpToolProvider::new(server)
            .with_name("faulty")
            .with_prefix("f_")
            .with_connect_timeout(Duration::from_secs(20)),
    )
}

#[tokio::test]
async fn lines_that_are_not_json_rpc_do_not_break_the_session() {
    let Some(mcp) = faulty() else {
        return;
    };
    mcp.connect().await.unwrap();
    let pid = mcp.server_pid().await.unwrap();
    let r = call(&mcp, "1", "f_garble", "").await;
    // The garbage is skipped: the call's own answer still arrives, on the
    // same session (the server was not restarted for it).
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(r.text_content(), "after the garbage");
    let r = call(&mcp, "2", "f_ok", "").await;
    assert_eq!(r.text_content(), "fine");
    assert_eq!(mcp.server_pid().await, Some(pid));
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_server_that_dies_mid_call_fails_that_call_and_serves_the_next() {
    let Some(mcp) = faulty() else {
        return;
    };
    mcp.connect().await.unwrap();
    let first = mcp.server_pid().await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(15), call(&mcp, "1", "f_exit", ""))
        .await
        .expect("the call waited on a dead server");
    assert!(r.is_error);
    let text = r.text_content();
    assert!(
        text.contains("faulty") && text.contains("unavailable"),
        "the error names the server and what happened: {text}"
    );
    assert!(
        support::wait_gone(first).await,
        "the dead child was not reaped"
    );

    // The next call starts a new server.
    let r = support::call_after_crash(&mcp, &ToolCall::new("2", "f_ok", "")).await;
    assert_eq!(r.text_content(), "fine");
    let second = mcp.server_pid().await.unwrap();
    assert_ne!(second, first);
    mcp.shutdown().await.unwrap();
}
