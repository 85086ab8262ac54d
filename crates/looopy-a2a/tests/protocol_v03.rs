//! A2A 0.3 over real HTTP: message/send, message/stream, tasks/get,
//! tasks/cancel, tasks/resubscribe, with and without the version header.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::TaskState;
use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn message_send_answers_a_kind_tagged_task() {
    let (server, _llm) = agent_server(&["Bonjour!"]).await;
    // No A2A-Version header: a 0.3 request.
    let r = rpc_v03(
        &server.url,
        "message/send",
        v03_message("Say hello in French"),
    )
    .await;
    let task = &r["result"];
    assert_eq!(task["kind"], "task");
    assert_eq!(task["status"]["state"], "completed");
    let answer = &task["status"]["message"];
    assert_eq!(answer["kind"], "message");
    assert_eq!(answer["role"], "agent");
    assert_eq!(
        answer["parts"],
        json!([{"kind": "text", "text": "Bonjour!"}])
    );
    assert_eq!(answer["taskId"], task["id"]);
    assert_eq!(task["history"][0]["role"], "user");
    assert_eq!(task["history"][0]["parts"][0]["kind"], "text");
    assert_eq!(task["artifacts"][0]["parts"][0]["kind"], "text");

    // The same with an explicit 0.3 header, then tasks/get.
    let id = task["id"].as_str().unwrap();
    let got = rpc(&server.url, Some("0.3"), "tasks/get", json!({"id": id})).await;
    assert_eq!(got["result"]["kind"], "task");
    assert_eq!(got["result"]["status"]["state"], "completed");
    assert_eq!(got["result"]["history"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn message_stream_sends_kinds_and_the_final_flag() {
    let server = start(ScriptedRunner::hello()).await;
    let events = sse(&server.url, None, &[], "message/stream", v03_message("hi"))
        .await
        .rest()
        .await;
    let results: Vec<_> = events.iter().map(|e| e.data["result"].clone()).collect();
    let kinds: Vec<_> = results
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "task",
            "status-update",
            "artifact-update",
            "artifact-update",
            "status-update"
        ]
    );
    assert_eq!(results[0]["status"]["state"], "submitted");
    assert_eq!(results[1]["status"]["state"], "working");
    assert_eq!(results[1]["final"], false);
    assert_eq!(
        results[2]["artifact"]["parts"][0],
        json!({"kind": "text", "text": "Hello"})
    );
    assert_eq!(results[3]["append"], true);
    assert_eq!(results[4]["final"], true);
    assert_eq!(results[4]["status"]["state"], "completed");
    assert!(events.iter().all(|e| e.id.is_some()));
}

#[tokio::test(flavor = "multi_thread")]
async fn input_required_is_kebab_case_and_blocking_false_returns_at_once() {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let runner = ScriptedRunner::new(vec![vec![
        working(),
        Step::Gate(gate.clone()),
        finish(TaskState::InputRequired, "Which city?"),
    ]]);
    let server = start(runner).await;
    let mut params = v03_message("weather?");
    params["configuration"] = json!({"blocking": false});
    let r = rpc_v03(&server.url, "message/send", params).await;
    let id = r["result"]["id"].as_str().unwrap().to_owned();
    assert_ne!(r["result"]["status"]["state"], "input-required");
    gate.add_permits(1);
    let url = server.url.clone();
    eventually(async || {
        let r = rpc_v03(&url, "tasks/get", json!({"id": id})).await;
        r["result"]["status"]["state"] == "input-required"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_endpoint_serves_both_versions_and_the_a2a_path() {
    let server = start(ScriptedRunner::hello()).await;
    // A 1.0-only method without a header is served as 1.0 (as the Python SDK does).
    let r = rpc_v03(&server.url, "SendMessage", v1_message("x")).await;
    assert_eq!(
        r["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // `/a2a` answers too.
    let body =
        json!({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": v03_message("y")});
    let res = http()
        .post(format!("{}/a2a", server.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = res.json().await.unwrap();
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["kind"], "task");
    // A task made in 1.0 reads in 0.3.
    let id = r["result"]["task"]["id"].as_str().unwrap();
    let got = rpc_v03(&server.url, "tasks/get", json!({"id": id})).await;
    assert_eq!(got["result"]["status"]["state"], "completed");
}
