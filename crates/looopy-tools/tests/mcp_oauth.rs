//! OAuth client credentials against a Python MCP server that requires
//! bearer tokens, with its authorization server in the same process (the
//! fixture in tests/fixtures/oauth_mcp_server.py, on PyPI `mcp` 2.x).
#![cfg(feature = "mcp-oauth")]
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use crate::support;

use std::time::Duration;

use looopy_core::ToolProvider;
use looopy_tools::{HttpServer, McpToolProvider, ToolsError};
use serde_json::Value;
use support::{HttpFixture, call, cx};

/// A provider of the fixture's MCP server with this client secret.
fn provider(server: &HttpFixture, secret: &str) -> McpToolProvider {
    let http = HttpServer::new(server.url.clone()).with_oauth_client_credentials(
        "agent",
        secret,
        ["tools"],
    );
    McpToolProvider::new(http).with_name("secured")
}

/// The fixture's counts: tokens issued, tokens its MCP server refused, and
/// the scopes of the token the call came with.
async fn stats(mcp: &McpToolProvider, id: &str) -> Value {
    let r = call(mcp, id, "token_stats", "{}").await;
    assert!(!r.is_error, "{}", r.text_content());
    serde_json::from_str(&r.text_content()).unwrap()
}

#[tokio::test]
async fn a_client_with_the_right_secret_gets_a_token_and_calls_the_server() {
    let Some(python) = support::python() else {
        return;
    };
    let server = HttpFixture::start_oauth(&python, 3600).await;

    // The server does require a token.
    let anonymous = McpToolProvider::new(HttpServer::new(server.url.clone())).with_name("anon");
    assert!(anonymous.connect().await.is_err());

    let mcp = provider(&server, "s3cret");
    let names: Vec<String> = mcp
        .tools(&cx())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"token_stats".to_owned()), "{names:?}");
    let s = stats(&mcp, "1").await;
    assert_eq!(s["issued"], 1, "one token for the session: {s}");
    assert_eq!(s["refused"], 0, "{s}");
    assert_eq!(s["scopes"], serde_json::json!(["tools"]), "{s}");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_wrong_secret_is_a_typed_error_naming_the_server_and_nothing_breaks() {
    let Some(python) = support::python() else {
        return;
    };
    let server = HttpFixture::start_oauth(&python, 3600).await;
    let refused = provider(&server, "wrong");

    match refused.connect().await {
        Err(ToolsError::McpAuthRefused { server, message }) => {
            assert_eq!(server, "secured");
            assert!(message.contains("invalid_client"), "{message}");
        }
        other => panic!("expected McpAuthRefused, got {other:?}"),
    }
    // A tool call says so in its result, and so does the next connection.
    let r = call(&refused, "1", "token_stats", "{}").await;
    assert!(r.is_error);
    let text = r.text_content();
    assert!(
        text.contains("'secured'")
            && text.contains("refused the client credentials")
            && text.contains("invalid_client"),
        "{text}"
    );
    assert!(matches!(
        refused.connect().await,
        Err(ToolsError::McpAuthRefused { .. })
    ));

    // The server issued nothing to it, and serves a client with the right
    // secret.
    let mcp = provider(&server, "s3cret");
    let s = stats(&mcp, "2").await;
    assert_eq!(s["issued"], 1, "{s}");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_token_about_to_expire_is_replaced_before_the_server_refuses_it() {
    let Some(python) = support::python() else {
        return;
    };
    // Tokens live 4 s: the client replaces one 2 s after it was issued.
    let server = HttpFixture::start_oauth(&python, 4).await;
    let mcp = provider(&server, "s3cret");
    assert_eq!(stats(&mcp, "1").await["issued"], 1);

    tokio::time::sleep(Duration::from_millis(2500)).await;
    let s = stats(&mcp, "2").await;
    assert_eq!(s["issued"], 2, "a new token for the later call: {s}");
    assert_eq!(s["refused"], 0, "the old one was never sent late: {s}");
    mcp.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_token_the_server_refuses_is_replaced_and_the_request_sent_again() {
    let Some(python) = support::python() else {
        return;
    };
    let server = HttpFixture::start_oauth(&python, 3600).await;
    let mcp = provider(&server, "s3cret");
    let r = call(&mcp, "1", "revoke_tokens", "{}").await;
    assert_eq!(r.text_content(), "revoked");

    // The next request meets a 401; the call itself succeeds.
    let s = stats(&mcp, "2").await;
    assert_eq!(s["issued"], 2, "{s}");
    assert!(s["refused"].as_u64().unwrap() >= 1, "{s}");
    let again = stats(&mcp, "3").await;
    assert_eq!(again["issued"], 2, "the new token is kept: {again}");
    mcp.shutdown().await.unwrap();
}
