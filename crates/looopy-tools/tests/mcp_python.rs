//! `McpToolProvider` against a Python MCP server (PyPI `mcp` 2.x, the
//! fixture in tests/fixtures/mcp_server.py), over stdio and streamable HTTP.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use crate::support;

use std::time::Duration;

use looopy_core::{Part, ToolCall, ToolDefinition, ToolError, ToolProvider};
use looopy_loop::layers::ToolProviderExt;
use looopy_tools::{HttpServer, IDEMPOTENCY_KEY_META, McpToolProvider, StdioServer};
use serde_json::json;
use support::{call, cx, stdio_provider};

/// The checks shared by both transports.
async fn exercise(mcp: &McpToolProvider) {
    let defs = mcp.tools(&cx()).await.unwrap();
    let mut names: Vec<_> = defs.iter().map(|d| d.name.as_str()).collect();
    names.sort_unstable();
    // `echo.text` is not a valid model tool name: the dot becomes `_`.
    assert_eq!(
        names,
        [
            "py_ask_count",
            "py_capabilities",
            "py_echo_text",
            "py_fail",
            "py_grow",
            "py_list_resources",
            "py_pid",
            "py_pixel",
            "py_read_resource",
            "py_roots",
            "py_sample",
            "py_set_note",
            "py_trace_context",
            "py_weather"
        ]
    );
    // `weather` says `idempotentHint: true`, `pid` `readOnlyHint: true`;
    // `fail` says `idempotentHint: false`, the others nothing. The two
    // resource tools only read.
    let mut idempotent: Vec<_> = defs
        .iter()
        .filter(|d| d.idempotent)
        .map(|d| d.name.as_str())
        .collect();
    idempotent.sort_unstable();
    assert_eq!(
        idempotent,
        [
            "py_list_resources",
            "py_pid",
            "py_read_resource",
            "py_weather"
        ]
    );
    let weather = defs.iter().find(|d| d.name == "py_weather").unwrap();
    assert_eq!(weather.description, "Structured weather for a city.");
    assert_eq!(weather.parameters["properties"]["city"]["type"], "string");

    // Text, routed back to the server's own name.
    let r = call(mcp, "1", "py_echo_text", r#"{"text": "hi"}"#).await;
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(r.tool_call_id, "1");
    assert_eq!(r.content[0], Part::text("echo: hi"));

    // Structured content becomes a data part, without the JSON text copy.
    let r = call(mcp, "2", "py_weather", r#"{"city": "Oslo"}"#).await;
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(
        r.content,
        vec![Part::data(json!({"city": "Oslo", "celsius": 21.5}))]
    );

    // Images become inline files.
    let r = call(mcp, "3", "py_pixel", "").await;
    assert!(!r.is_error, "{}", r.text_content());
    match &r.content[..] {
        [Part::File { file }] => {
            assert_eq!(file.mime_type.as_deref(), Some("image/png"));
            assert!(file.bytes.as_deref().unwrap().starts_with("iVBORw0KGgo"));
        }
        other => panic!("expected one file part, got {other:?}"),
    }

    // A failing tool is an error result with the server's message.
    let r = call(mcp, "4", "py_fail", r#"{"reason": "testing"}"#).await;
    assert!(r.is_error);
    let text = r.text_content();
    assert!(text.starts_with("Error: "), "{text}");
    assert!(text.contains("failed on purpose: testing"), "{text}");

    // Arguments the server rejects, and ones that are not an object.
    let r = call(mcp, "5", "py_weather", r#"{"town": 1}"#).await;
    assert!(r.is_error, "{}", r.text_content());
    let r = call(mcp, "6", "py_weather", "[1]").await;
    assert!(r.is_error);
    assert!(r.text_content().contains("must be a JSON object"));

    let r = call(mcp, "7", "py_nope", "{}").await;
    assert!(r.is_error);
    assert!(r.text_content().contains("Unknown tool 'py_nope'"));

    // The call's idempotency key reaches the server in `_meta`: the
    // context's (the loop sets the call id there), else the call id.
    let meta_of = |r: looopy_core::ToolResult| -> serde_json::Value {
        assert!(!r.is_error, "{}", r.text_content());
        serde_json::from_str::<serde_json::Value>(&r.text_content()).unwrap()["meta"].clone()
    };
    let r = mcp
        .execute(
            &ToolCall::new("call-8", "py_trace_context", ""),
            &cx().with_call_id("call-8"),
        )
        .await;
    assert_eq!(meta_of(r)[IDEMPOTENCY_KEY_META], "call-8");
    let r = call(mcp, "call-9", "py_trace_context", "").await;
    assert_eq!(meta_of(r)["io.looopy/idempotencyKey"], "call-9");
}

#[tokio::test]
async fn python_server_over_stdio() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    exercise(&mcp).await;
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_call_before_any_listing_connects_and_routes() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    let r = call(&mcp, "1", "py_echo_text", r#"{"text": "first"}"#).await;
    assert_eq!(r.text_content(), "echo: first");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_provider_reconnects_after_the_child_dies() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    mcp.connect().await.unwrap();
    let first = mcp.server_pid().await.unwrap();
    let r = call(&mcp, "1", "py_pid", "").await;
    assert_eq!(r.text_content(), first.to_string());

    support::kill9(first);
    // The provider reaps the dead child when it notices; it may also be
    // reaped by the reconnect below.
    let r = support::call_after_crash(&mcp, &ToolCall::new("2", "py_pid", "")).await;
    let second = r.text_content().parse::<u32>().unwrap();
    assert_ne!(second, first, "the server was not re-spawned");
    assert_eq!(mcp.server_pid().await, Some(second));
    assert!(
        support::wait_gone(first).await,
        "the dead child was not reaped"
    );

    // Listing works on the new session too.
    assert_eq!(mcp.tools(&cx()).await.unwrap().len(), 14);
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_ends_the_child_and_later_calls_fail() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    mcp.connect().await.unwrap();
    let pid = mcp.server_pid().await.unwrap();
    assert!(support::alive(pid));
    mcp.shutdown().await.unwrap();
    // shutdown waits for the child: it is gone at once, not eventually.
    assert!(!support::alive(pid), "the child outlived shutdown()");

    let r = call(&mcp, "1", "py_pid", "").await;
    assert!(r.is_error);
    assert!(
        r.text_content().contains("shut down"),
        "{}",
        r.text_content()
    );
    assert!(matches!(
        mcp.tools(&cx()).await,
        Err(ToolError::Unavailable { .. })
    ));
}

#[tokio::test]
async fn dropping_the_provider_kills_the_child() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    mcp.connect().await.unwrap();
    let pid = mcp.server_pid().await.unwrap();
    drop(mcp);
    assert!(
        support::wait_gone(pid).await,
        "the child outlived the provider"
    );
}

#[tokio::test]
async fn a_missing_program_is_reported_unavailable() {
    let mcp = McpToolProvider::new(StdioServer::new("/nonexistent/mcp-server"));
    let err = mcp.connect().await.unwrap_err();
    assert!(err.to_string().contains("could not start"), "{err}");
    let r = call(&mcp, "1", "x", "{}").await;
    assert!(r.is_error);
    assert!(
        r.text_content().contains("unavailable"),
        "{}",
        r.text_content()
    );
}

#[tokio::test]
async fn python_server_over_streamable_http() {
    let Some(python) = support::python() else {
        return;
    };
    let mut server = support::HttpFixture::start(&python).await;
    let mcp = McpToolProvider::new(HttpServer::new(server.url.clone()).header("X-Test", "looopy"))
        .with_name("py")
        .with_prefix("py_");
    exercise(&mcp).await;

    // The server goes away: calls fail as unavailable, none hangs.
    server.child.kill().await.unwrap();
    let tools = mcp
        .clone()
        .with_timeouts()
        .with_default(Duration::from_secs(20));
    let r = call(&tools, "9", "py_echo_text", r#"{"text": "x"}"#).await;
    assert!(r.is_error, "{}", r.text_content());

    // A new server process on the same URL: the provider reconnects.
    let _restarted = support::HttpFixture::start_on(&python, server.port).await;
    let mut ok = false;
    for _ in 0..3 {
        let r = call(&tools, "10", "py_echo_text", r#"{"text": "back"}"#).await;
        if !r.is_error {
            assert_eq!(r.text_content(), "echo: back");
            ok = true;
            break;
        }
    }
    assert!(ok, "the provider did not reconnect to the restarted server");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_sessions_tools_are_listed_once() {
    let Some(python) = support::python() else {
        return;
    };
    let mut server = support::HttpFixture::start(&python).await;
    let mcp = McpToolProvider::new(HttpServer::new(server.url.clone())).with_name("py");
    let first = mcp.tools(&cx()).await.unwrap();
    assert!(!first.is_empty());
    // Every turn asks again; the session's listing answers without the server.
    server.child.kill().await.unwrap();
    let again = mcp.tools(&cx()).await.unwrap();
    assert_eq!(again, first);
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_tools_list_changed_notification_refreshes_the_listing() {
    let Some(mcp) = stdio_provider() else {
        return;
    };
    let names = |tools: Vec<ToolDefinition>| -> Vec<String> {
        tools.into_iter().map(|t| t.name).collect::<Vec<_>>()
    };
    let before = names(mcp.tools(&cx()).await.unwrap());
    assert!(!before.contains(&"py_late".to_owned()));
    let grown = call(&mcp, "g1", "py_grow", r#"{"name":"late"}"#).await;
    assert!(!grown.is_error, "{}", grown.text_content());
    // The notification arrives on its own; the next listing (the next
    // turn) sees the new tool without reconnecting.
    let mut seen = Vec::new();
    for _ in 0..50 {
        seen = names(mcp.tools(&cx()).await.unwrap());
        if seen.contains(&"py_late".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen.contains(&"py_late".to_owned()), "tools: {seen:?}");
    let called = call(&mcp, "l1", "py_late", "{}").await;
    assert_eq!(called.text_content(), "I am late");
    mcp.shutdown().await.unwrap();
}
