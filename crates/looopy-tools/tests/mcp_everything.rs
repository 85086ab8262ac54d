//! `McpToolProvider` against `@modelcontextprotocol/server-everything`
//! (npm), the reference server of the MCP project, over stdio.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use crate::support;

use std::path::Path;
use std::sync::{Arc, Mutex};

use looopy_core::{EventPayload, EventSink, Part, ToolCall, ToolProvider};
use looopy_tools::{McpToolProvider, StdioServer};
use serde_json::{Value, json};
use support::{call, cx};

fn provider(bin: &Path) -> McpToolProvider {
    McpToolProvider::new(
        StdioServer::new(bin)
            .arg("stdio")
            .env("LOOOPY_TEST_MARKER", "marker-42"),
    )
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let Some(bin) = support::server_everything() else {
        return;
    };
    let mcp = provider(&bin);
    assert_eq!(mcp.name(), "mcp-server-everything");

    let defs = mcp.tools(&cx()).await.unwrap();
    let names: Vec<_> = defs.iter().map(|d| d.name.as_str()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
        "get-env",
        "get-resource-links",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let sum = defs.iter().find(|d| d.name == "get-sum").unwrap();
    assert_eq!(sum.description, "Returns the sum of two numbers");
    assert_eq!(sum.parameters["properties"]["a"]["type"], "number");

    let r = call(&mcp, "1", "echo", r#"{"message": "hello"}"#).await;
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(r.text_content(), "Echo: hello");

    let r = call(&mcp, "2", "get-sum", r#"{"a": 2, "b": 3}"#).await;
    assert_eq!(r.text_content(), "The sum of 2 and 3 is 5.");

    // Text around an image; the image is an inline PNG.
    let r = call(&mcp, "3", "get-tiny-image", "{}").await;
    assert!(!r.is_error, "{}", r.text_content());
    let files: Vec<_> = r
        .content
        .iter()
        .filter_map(|p| match p {
            Part::File { file } => Some(file),
            _ => None,
        })
        .collect();
    assert_eq!(files.len(), 1, "{:?}", r.content);
    assert_eq!(files[0].mime_type.as_deref(), Some("image/png"));
    assert!(
        files[0]
            .bytes
            .as_deref()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );
    assert!(r.content.iter().any(|p| p.as_text().is_some()));

    // Structured content: one data part, the JSON text copy dropped.
    let r = call(
        &mcp,
        "4",
        "get-structured-content",
        r#"{"location": "Chicago"}"#,
    )
    .await;
    assert!(!r.is_error, "{}", r.text_content());
    assert_eq!(
        r.content,
        vec![Part::data(json!({
            "temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82
        }))]
    );

    // Resource links become files by URI.
    let r = call(&mcp, "5", "get-resource-links", r#"{"count": 2}"#).await;
    assert!(!r.is_error, "{}", r.text_content());
    let uris: Vec<_> = r
        .content
        .iter()
        .filter_map(|p| match p {
            Part::File { file } => file.uri.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(uris.len(), 2, "{:?}", r.content);

    // The child got the configured environment.
    let r = call(&mcp, "6", "get-env", "{}").await;
    let env: Value = serde_json::from_str(&r.text_content()).unwrap();
    assert_eq!(env["LOOOPY_TEST_MARKER"], "marker-42");

    // Arguments the server's schema rejects give an error result.
    let r = call(&mcp, "7", "get-sum", r#"{"a": "two"}"#).await;
    assert!(r.is_error, "{}", r.text_content());
    assert!(r.text_content().starts_with("Error:"));

    let pid = mcp.server_pid().await.unwrap();
    mcp.shutdown().await.unwrap();
    assert!(!support::alive(pid), "the node server outlived shutdown()");
}

#[tokio::test]
async fn server_everything_is_respawned_after_a_crash() {
    let Some(bin) = support::server_everything() else {
        return;
    };
    let mcp = provider(&bin).with_prefix("ev_");
    let defs = mcp.tools(&cx()).await.unwrap();
    assert!(defs.iter().all(|d| d.name.starts_with("ev_")));
    let first = mcp.server_pid().await.unwrap();
    support::kill9(first);

    let again = ToolCall::new("1", "ev_echo", r#"{"message": "again"}"#);
    let r = support::call_after_crash(&mcp, &again).await;
    assert_eq!(r.text_content(), "Echo: again");
    let second = mcp.server_pid().await.unwrap();
    assert_ne!(first, second);
    assert!(
        support::wait_gone(first).await,
        "the dead child was not reaped"
    );
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_servers_progress_becomes_tool_report_events_of_the_turn() {
    let Some(bin) = support::server_everything() else {
        return;
    };
    let mcp = provider(&bin);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let seen = seen.clone();
        EventSink::new(move |payload| seen.lock().unwrap().push(payload))
    };
    let cx = cx().with_events(sink);
    let call = ToolCall::new(
        "lr1",
        "trigger-long-running-operation",
        r#"{"duration": 1.5, "steps": 3}"#,
    );
    let r = mcp.execute(&call, &cx).await;
    assert!(!r.is_error, "{}", r.text_content());
    let reports: Vec<(f64, Option<f64>)> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|p| match p {
            EventPayload::ToolReport {
                call_id,
                tool,
                progress,
                total,
                ..
            } => {
                assert_eq!(call_id, "lr1");
                assert_eq!(tool, "trigger-long-running-operation");
                Some((*progress, *total))
            }
            _ => None,
        })
        .collect();
    // Steps a third of the operation apart: the first two arrive well
    // before the result (the last may come after the call ended, when
    // nobody listens for it any more).
    assert!(reports.len() >= 2, "{reports:?}");
    assert!(reports.windows(2).all(|w| w[0].0 < w[1].0), "{reports:?}");
    assert!(
        reports.iter().all(|(_, total)| *total == Some(3.0)),
        "{reports:?}"
    );
    assert_eq!(reports[0].0, 1.0);

    // Without an event sink the call asks for no progress, and still works.
    let r = mcp
        .execute(
            &ToolCall::new(
                "lr2",
                "trigger-long-running-operation",
                r#"{"duration": 0.2, "steps": 2}"#,
            ),
            &support::cx(),
        )
        .await;
    assert!(!r.is_error, "{}", r.text_content());
    mcp.shutdown().await.unwrap();
}

/// A model that answers every request with the same text.
struct Fixed;

#[async_trait::async_trait]
impl looopy_core::LlmProvider for Fixed {
    async fn call(
        &self,
        _request: looopy_core::LlmRequest,
        _cx: &looopy_core::TurnContext,
    ) -> Result<looopy_core::LlmResponse, looopy_core::LlmError> {
        Ok(looopy_core::LlmResponse::text("sampled by looopy"))
    }
    fn model_name(&self) -> &str {
        "fixed-model"
    }
}

#[tokio::test]
async fn server_everything_samples_and_lists_roots_only_when_offered() {
    let Some(bin) = support::server_everything() else {
        return;
    };
    // The server registers its sampling and roots tools only for a client
    // that advertises the capabilities.
    let plain = provider(&bin);
    let names: Vec<String> = plain
        .tools(&cx())
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert!(
        !names.iter().any(|n| n == "trigger-sampling-request"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n == "get-roots-list"), "{names:?}");
    plain.shutdown().await.unwrap();

    let mcp = provider(&bin)
        .with_sampling(looopy_tools::McpSampling::new(Arc::new(Fixed)))
        .with_roots([looopy_tools::McpRoot::new("file:///srv/project")
            .unwrap()
            .with_name("project")]);
    let r = call(
        &mcp,
        "1",
        "trigger-sampling-request",
        r#"{"prompt": "hello", "maxTokens": 50}"#,
    )
    .await;
    assert!(!r.is_error, "{}", r.text_content());
    let text = r.text_content();
    assert!(text.contains("sampled by looopy"), "{text}");
    assert!(text.contains("fixed-model"), "{text}");

    let r = call(&mcp, "2", "get-roots-list", "{}").await;
    assert!(!r.is_error, "{}", r.text_content());
    let text = r.text_content();
    assert!(
        text.contains("file:///srv/project") && text.contains("project"),
        "{text}"
    );
    mcp.shutdown().await.unwrap();
}
