//! Interoperability with the official Python SDK clients, a2a-sdk 1.x
//! (`.tools/venv`) and 0.3.x (`.tools/venv-a2a03`), provisioned by
//! `scripts/provision.sh python`: card discovery, send, get, stream, list,
//! error codes, against a Looopy server with an Agent on a scripted model.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_a2a::AuthConfig;
use looopy_core::LlmResponse;
use looopy_testkit::{ScriptStep, ScriptedLlm};
use serde_json::Value;
use support::*;

async fn server() -> TestServer {
    let llm = ScriptedLlm::new()
        .with_fallback(ScriptStep::Respond(LlmResponse::text("Hello from Looopy")));
    let (runner, _stores) = agent_runner(llm, Vec::new());
    let stores = SharedStores::default();
    let auth = AuthConfig::none().bearer("py-token", "python");
    serve(builder(runner, &stores).auth(auth).build(), &stores).await
}

fn stream_states(stream: &[Value], state_at: impl Fn(&Value) -> Option<String>) -> Vec<String> {
    stream.iter().filter_map(state_at).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_1_x_client() {
    let Some(python) = sdk_1_x_python() else {
        return;
    };
    let server = server().await;
    let out = run_python(&python, "a2a_client_v1.py", &[&server.url, "py-token"]).await;

    assert_eq!(out["sent_version_header"], "1.0");
    assert_eq!(out["card"]["name"], "Test agent");
    assert_eq!(
        out["card"]["supportedInterfaces"][0]["protocolVersion"],
        "1.0"
    );
    assert_eq!(out["card"]["capabilities"]["streaming"], true);
    assert!(out["card"]["securitySchemes"]["bearer"].is_object());

    let send = out["send"].as_array().unwrap();
    assert_eq!(send.len(), 1);
    let task = &send[0]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Hello from Looopy"
    );
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "Hello from Looopy"
    );

    assert_eq!(out["get"]["id"], task["id"]);
    assert_eq!(out["get"]["history"].as_array().unwrap().len(), 2);
    assert_eq!(out["get"]["history"][0]["parts"][0]["text"], "Hello");

    let stream = out["stream"].as_array().unwrap();
    assert!(stream[0]["task"].is_object(), "{stream:#?}");
    assert_eq!(stream[0]["task"]["contextId"], task["contextId"]);
    let states = stream_states(stream, |e| {
        e.pointer("/statusUpdate/status/state")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    assert_eq!(
        states.last().map(String::as_str),
        Some("TASK_STATE_COMPLETED"),
        "{stream:#?}"
    );
    assert!(stream.iter().any(|e| e["artifactUpdate"].is_object()));

    assert_eq!(out["list"]["tasks"].as_array().unwrap().len(), 2);
    assert_eq!(out["list"]["totalSize"], 2);

    assert_eq!(
        out["cancel_finished"]["type"], "TaskNotCancelableError",
        "{}",
        out["cancel_finished"]
    );
    assert_eq!(
        out["get_unknown"]["type"], "TaskNotFoundError",
        "{}",
        out["get_unknown"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn python_sdk_0_3_client() {
    let Some(python) = sdk_0_3_python() else {
        return;
    };
    let server = server().await;
    let out = run_python(&python, "a2a_client_v03.py", &[&server.url, "py-token"]).await;

    assert_eq!(out["card"]["name"], "Test agent");
    assert_eq!(out["card"]["protocolVersion"], "0.3.0");
    assert_eq!(out["card"]["url"], format!("{}/", server.url));
    assert_eq!(out["card"]["securitySchemes"]["bearer"]["type"], "http");

    // Non-streaming: one (task, None) pair.
    let send = out["send"].as_array().unwrap();
    let task = &send[0][0];
    assert_eq!(task["kind"], "task");
    assert_eq!(task["status"]["state"], "completed");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Hello from Looopy"
    );

    assert_eq!(out["get"]["id"], task["id"]);
    assert_eq!(out["get"]["history"].as_array().unwrap().len(), 2);

    // Streaming: (task, update) pairs; the last update is the final one.
    let stream = out["stream"].as_array().unwrap();
    let last = stream.last().unwrap();
    assert_eq!(last[1]["kind"], "status-update", "{stream:#?}");
    assert_eq!(last[1]["final"], true);
    assert_eq!(last[0]["status"]["state"], "completed");
    assert_eq!(last[0]["contextId"], task["contextId"]);
    assert!(stream.iter().any(|e| e[1]["kind"] == "artifact-update"));

    // 0.3 clients raise one error class carrying the code.
    assert_eq!(out["cancel_finished"]["type"], "A2AClientJSONRPCError");
    assert!(
        out["cancel_finished"]["message"]
            .as_str()
            .unwrap()
            .contains("code=-32002"),
        "{}",
        out["cancel_finished"]
    );
    assert!(
        out["get_unknown"]["message"]
            .as_str()
            .unwrap()
            .contains("code=-32001"),
        "{}",
        out["get_unknown"]
    );
}
