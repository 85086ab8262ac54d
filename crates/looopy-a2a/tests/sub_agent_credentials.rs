//! Credentials of sub-agents, across real servers with different tokens:
//! a remote agent used as a tool is called with its own configured
//! credential, or with the caller's, forwarded.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_a2a::{A2aClient, AuthConfig, RemoteAgentTools};
use looopy_core::{LlmResponse, ToolCall, ToolProvider};
use looopy_testkit::ScriptedLlm;
use support::*;

/// A remote agent that accepts only `token` (as `principal`).
async fn remote(token: &str, principal: &str) -> (TestServer, ScriptedRunner) {
    let runner = ScriptedRunner::new(vec![hello_script()]);
    let stores = SharedStores::default();
    let auth = AuthConfig::none().bearer(token, principal);
    let server = serve(builder(runner.clone(), &stores).auth(auth).build(), &stores).await;
    (server, runner)
}

/// A caller server (accepting `alice-token` for alice) whose Agents have
/// `tool`; runs one turn that calls it and returns the tool's result text.
async fn call_through(tool: RemoteAgentTools) -> (String, bool) {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("c1", "helper", r#"{"message":"hi"}"#)],
        ))
        .respond(LlmResponse::text("done"));
    let tools: Vec<Arc<dyn ToolProvider>> = vec![Arc::new(tool.with_name("helper"))];
    let (runner, _stores) = agent_runner(llm.clone(), tools);
    let shared = SharedStores::default();
    let auth = AuthConfig::none().bearer("alice-token", "alice");
    let caller = serve(builder(runner, &shared).auth(auth).build(), &shared).await;
    let response = stream_request(
        &caller.url,
        Some("1.0"),
        &[("authorization", "Bearer alice-token")],
        "SendStreamingMessage",
        v1_message("ask the helper"),
    )
    .await;
    SseReader::new(response).rest().await;
    assert_eq!(llm.remaining(), 0, "the turn ran to its end");
    let result = llm.requests()[1]
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("c1"))
        .cloned()
        .unwrap();
    (result.text(), result.is_error())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configured_credential_is_used_for_its_remote_agent() {
    let (remote, runner) = remote("svc-token", "svc").await;
    let client = A2aClient::builder(&remote.url)
        .bearer_token("svc-token")
        .build();
    let (text, is_error) = call_through(RemoteAgentTools::new(client, "helper", "helps")).await;
    assert!(!is_error, "{text}");
    assert!(text.contains("Hello"), "{text}");
    let seen = runner.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].auth.principal, "svc");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_callers_credential_is_forwarded_when_asked() {
    let (remote, runner) = remote("alice-token", "alice").await;
    // Its own token is not one the remote accepts: only forwarding works.
    let client = || {
        A2aClient::builder(&remote.url)
            .bearer_token("caller-server-token")
            .build()
    };
    let (text, is_error) =
        call_through(RemoteAgentTools::new(client(), "helper", "helps").forward_credentials(true))
            .await;
    assert!(!is_error, "{text}");
    assert_eq!(runner.requests()[0].auth.principal, "alice");

    let (text, is_error) = call_through(RemoteAgentTools::new(client(), "helper", "helps")).await;
    assert!(is_error, "not forwarded, the remote refuses: {text}");
    assert_eq!(runner.requests().len(), 1);
}
