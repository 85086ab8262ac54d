//! A2A 1.0 over real HTTP: card, SendMessage, GetTask, ListTasks,
//! SendStreamingMessage, SubscribeToTask, the unsupported operations.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::json;
use support::*;

const V1: Option<&str> = Some("1.0");

#[tokio::test(flavor = "multi_thread")]
async fn card_is_negotiated_by_version() {
    let server = start(ScriptedRunner::hello()).await;
    let url = server.url.as_str();
    let get = move |path: &'static str, version| get_json(url, path, version);
    let v1 = get("/.well-known/agent-card.json", V1).await;
    assert_eq!(v1["name"], "Test agent");
    assert_eq!(v1["capabilities"]["streaming"], true);
    let interfaces = v1["supportedInterfaces"].as_array().unwrap();
    assert_eq!(interfaces[0]["protocolVersion"], "1.0");
    assert_eq!(interfaces[0]["protocolBinding"], "JSONRPC");
    assert_eq!(interfaces[0]["url"], format!("{}/", server.url));
    assert_eq!(interfaces[1]["protocolBinding"], "HTTP+JSON");
    assert_eq!(interfaces[1]["url"], format!("{}/rest", server.url));
    assert_eq!(interfaces[2]["protocolVersion"], "0.3");
    assert!(v1.get("protocolVersion").is_none());
    assert_eq!(
        v1["defaultInputModes"],
        json!(["text/plain", "application/json"])
    );

    // No header: the 1.0 card too (the document the 1.0 spec defines for
    // this URI), without any 0.3 field.
    let plain = get("/.well-known/agent-card.json", None).await;
    assert_eq!(plain, v1);
    // A 0.3 client names its version (header or query parameter).
    let v03 = get("/.well-known/agent-card.json", Some("0.3")).await;
    assert_eq!(v03["protocolVersion"], "0.3.0");
    assert_eq!(v03["url"], format!("{}/", server.url));
    assert_eq!(v03["preferredTransport"], "JSONRPC");
    assert_eq!(v03["supportedInterfaces"][0]["protocolVersion"], "1.0");
    let by_query = get("/.well-known/agent-card.json?A2A-Version=0.3", None).await;
    assert_eq!(by_query, v03);
    let legacy = get("/.well-known/agent.json", V1).await;
    assert_eq!(legacy["protocolVersion"], "0.3.0");
}

#[tokio::test(flavor = "multi_thread")]
async fn send_message_blocks_until_the_turn_ends() {
    let (server, llm) = agent_server(&["Paris is the capital of France."]).await;
    let r = rpc_v1(&server.url, "SendMessage", v1_message("Capital of France?")).await;
    assert_eq!(r["jsonrpc"], "2.0");
    assert_eq!(r["id"], 1);
    let task = &r["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Paris is the capital of France."
    );
    let ts = task["status"]["timestamp"].as_str().unwrap();
    assert!(
        ts.ends_with('Z') && ts.len() <= "2026-01-01T00:00:00.000Z".len(),
        "{ts}"
    );
    let history = task["history"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0]["role"], "ROLE_USER");
    assert_eq!(history[0]["parts"][0]["text"], "Capital of France?");
    assert_eq!(history[1]["role"], "ROLE_AGENT");
    // Streamed text arrives as the `response` artifact.
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "Paris is the capital of France."
    );
    assert!(task["metadata"].get("looopy").is_none());
    // The model saw the system prompt's turn with the user message.
    assert_eq!(
        llm.requests()[0].messages.last().unwrap().text(),
        "Capital of France?"
    );

    // GetTask answers the same, with the history limited on request.
    let id = task["id"].as_str().unwrap();
    let got = rpc_v1(
        &server.url,
        "GetTask",
        json!({"id": id, "historyLength": 1}),
    )
    .await;
    let got = &got["result"];
    assert_eq!(got["id"], id);
    assert_eq!(got["contextId"], task["contextId"]);
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(got["history"].as_array().unwrap().len(), 1);
    assert_eq!(got["history"][0]["role"], "ROLE_AGENT");
}

#[tokio::test(flavor = "multi_thread")]
async fn return_immediately_answers_before_the_turn_ends() {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let runner = ScriptedRunner::new(vec![vec![
        working(),
        Step::Gate(gate.clone()),
        finish(looopy_core::TaskState::Completed, "done"),
    ]]);
    let server = start(runner).await;
    let mut params = v1_message("hi");
    params["configuration"] = json!({"returnImmediately": true});
    let r = rpc_v1(&server.url, "SendMessage", params).await;
    let task = &r["result"]["task"];
    let state = task["status"]["state"].as_str().unwrap();
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"].contains(&state),
        "{state}"
    );
    let id = task["id"].as_str().unwrap().to_owned();
    gate.add_permits(1);
    let url = server.url.clone();
    eventually(async || {
        let r = rpc_v1(&url, "GetTask", json!({"id": id})).await;
        r["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn streaming_sends_every_public_event_with_log_ids() {
    let server = start(ScriptedRunner::hello()).await;
    let reader = sse(
        &server.url,
        V1,
        &[],
        "SendStreamingMessage",
        v1_message("hi"),
    )
    .await;
    assert!(reader.content_type.starts_with("text/event-stream"));
    let events = reader.rest().await;
    let results: Vec<_> = events.iter().map(|e| &e.data["result"]).collect();
    assert!(
        events
            .iter()
            .all(|e| e.data["id"] == "s1" && e.data["jsonrpc"] == "2.0")
    );
    assert!(
        events.iter().all(|e| e.id.is_some()),
        "every log event has an id"
    );
    // task (submitted), working, two chunks, completed; the internal event is not sent.
    assert_eq!(results.len(), 5, "{results:#?}");
    assert_eq!(
        results[0]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    let task_id = results[0]["task"]["id"].as_str().unwrap();
    assert_eq!(
        results[1]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert_eq!(results[1]["statusUpdate"]["taskId"], task_id);
    assert_eq!(
        results[2]["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "Hello"
    );
    assert_eq!(results[2]["artifactUpdate"]["append"], false);
    assert_eq!(results[3]["artifactUpdate"]["append"], true);
    assert_eq!(results[3]["artifactUpdate"]["lastChunk"], true);
    let last = &results[4]["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        last["status"]["message"]["parts"][0]["text"],
        "Hello, world"
    );
    assert!(last.get("final").is_none(), "1.0 has no final flag");
    // Ids grow.
    let ids: Vec<u64> = events
        .iter()
        .map(|e| e.id.as_ref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));

    // The record has the folded artifact.
    let got = rpc_v1(&server.url, "GetTask", json!({"id": task_id})).await;
    assert_eq!(
        got["result"]["artifacts"][0]["parts"],
        json!([{"text": "Hello, world"}])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn list_tasks_pages_the_callers_tasks() {
    let server = start(ScriptedRunner::hello()).await;
    let first = rpc_v1(&server.url, "SendMessage", v1_message("a")).await;
    let context = first["result"]["task"]["contextId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut second = v1_message("b");
    second["message"]["contextId"] = json!(context);
    rpc_v1(&server.url, "SendMessage", second).await;
    rpc_v1(&server.url, "SendMessage", v1_message("c")).await;

    let all = rpc_v1(&server.url, "ListTasks", json!({})).await;
    assert_eq!(all["result"]["totalSize"], 3);
    assert_eq!(all["result"]["nextPageToken"], "");
    assert!(all["result"]["tasks"][0].get("artifacts").is_none());

    let page = rpc_v1(
        &server.url,
        "ListTasks",
        json!({"pageSize": 2, "includeArtifacts": true}),
    )
    .await;
    assert_eq!(page["result"]["tasks"].as_array().unwrap().len(), 2);
    assert_eq!(page["result"]["pageSize"], 2);
    assert!(page["result"]["tasks"][0]["artifacts"].is_array());
    let token = page["result"]["nextPageToken"].as_str().unwrap().to_owned();
    assert!(!token.is_empty());
    let rest = rpc_v1(
        &server.url,
        "ListTasks",
        json!({"pageSize": 2, "pageToken": token}),
    )
    .await;
    assert_eq!(rest["result"]["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(rest["result"]["nextPageToken"], "");

    let in_context = rpc_v1(&server.url, "ListTasks", json!({"contextId": context})).await;
    assert_eq!(in_context["result"]["totalSize"], 2);
    let completed = rpc_v1(
        &server.url,
        "ListTasks",
        json!({"status": "TASK_STATE_COMPLETED"}),
    )
    .await;
    assert_eq!(completed["result"]["totalSize"], 3);
    let working = rpc_v1(
        &server.url,
        "ListTasks",
        json!({"status": "TASK_STATE_WORKING"}),
    )
    .await;
    assert_eq!(working["result"]["totalSize"], 0);
    let bad = rpc_v1(&server.url, "ListTasks", json!({"pageSize": 0})).await;
    assert_eq!(bad["error"]["code"], -32602);
}

#[tokio::test(flavor = "multi_thread")]
async fn unsupported_operations_have_their_codes() {
    let server = start(ScriptedRunner::hello()).await;
    let r = rpc_v1(&server.url, "GetExtendedAgentCard", json!({})).await;
    assert_eq!(r["error"]["code"], -32004);
    for m in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        let r = rpc_v1(&server.url, m, json!({"taskId": "t", "id": "x"})).await;
        assert_eq!(r["error"]["code"], -32003, "{m}");
    }
    let r = rpc_v03(&server.url, "tasks/pushNotificationConfig/set", json!({})).await;
    assert_eq!(r["error"]["code"], -32003);
}
