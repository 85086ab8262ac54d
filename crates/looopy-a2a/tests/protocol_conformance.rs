//! What the official conformance suite (the A2A TCK) checks on the
//! JSON-RPC binding, kept here so that CI catches a regression without the
//! TCK: the card per version and its caching headers, Content-Type,
//! requests without an id, ProtoJSON field names, subscriptions to finished
//! and waiting tasks, direct message replies, history lengths.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use async_trait::async_trait;
use looopy_a2a::{ProtocolVersion, RunnerError, TurnEvents, TurnRequest, TurnRunner};
use looopy_core::{AuthContext, Message, TaskState};
use serde_json::{Value, json};
use support::*;
use tokio::sync::Semaphore;

const V1: Option<&str> = Some("1.0");

async fn card(url: &str, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = http().get(format!("{url}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

/// The 0.3 fields the 1.0 card schema refuses (`additionalProperties: false`).
const V03_ONLY: [&str; 5] = [
    "url",
    "preferredTransport",
    "protocolVersion",
    "supportsAuthenticatedExtendedCard",
    "additionalInterfaces",
];

#[tokio::test(flavor = "multi_thread")]
async fn the_card_is_1_0_unless_0_3_is_named_and_revalidates() {
    let server = start(ScriptedRunner::hello()).await;
    let url = &server.url;
    let plain = card(url, "/.well-known/agent-card.json", &[]).await;
    assert_eq!(plain.status(), 200);
    let etag = plain.headers()["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert!(plain.headers().contains_key("last-modified"));
    assert!(
        plain.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age")
    );
    let body: Value = plain.json().await.unwrap();
    for field in V03_ONLY {
        assert!(body.get(field).is_none(), "{field} in the 1.0 card");
    }
    // The official types read it.
    let _: a2a::AgentCard = serde_json::from_value(body.clone()).unwrap();

    // The same tag again: 304, no body.
    let again = card(
        url,
        "/.well-known/agent-card.json",
        &[("if-none-match", &etag)],
    )
    .await;
    assert_eq!(again.status(), 304);
    assert!(again.bytes().await.unwrap().is_empty());

    // 0.3, by header, query parameter or the legacy path.
    for (path, headers) in [
        (
            "/.well-known/agent-card.json",
            &[("A2A-Version", "0.3")][..],
        ),
        ("/.well-known/agent-card.json?A2A-Version=0.3", &[][..]),
        ("/.well-known/agent.json", &[][..]),
    ] {
        let v03: Value = card(url, path, headers).await.json().await.unwrap();
        assert_eq!(v03["protocolVersion"], "0.3.0", "{path}");
        assert_eq!(v03["url"], format!("{url}/"));
    }
    // A version the server does not know: the default card, never an error.
    let odd = card(
        url,
        "/.well-known/agent-card.json",
        &[("A2A-Version", "9.9")],
    )
    .await;
    assert_eq!(odd.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_can_default_to_the_0_3_card() {
    let stores = SharedStores::default();
    let server = serve(
        builder(ScriptedRunner::hello(), &stores)
            .card_default_version(ProtocolVersion::V0_3)
            .build(),
        &stores,
    )
    .await;
    let plain = agent_card(&server.url, None).await;
    assert_eq!(plain["protocolVersion"], "0.3.0");
    let v1 = agent_card(&server.url, Some("1.0")).await;
    assert!(v1.get("url").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_declared_as_something_else_than_json_gets_32005() {
    let server = start(ScriptedRunner::hello()).await;
    for version in ["1.0", "0.3"] {
        let res = http()
            .post(format!("{}/", server.url))
            .header("content-type", "text/plain")
            .header("A2A-Version", version)
            // Not even JSON: the Content-Type decides first.
            .body("{'jsonrpc': '2.0'}")
            .send()
            .await
            .unwrap();
        let v: Value = res.json().await.unwrap();
        assert_eq!(v["error"]["code"], -32005, "{version}: {v}");
    }
    // `application/json; charset=utf-8` and `+json` types are JSON.
    let (_, v) = rpc_raw(
        &server.url,
        V1,
        &[("content-type", "application/a2a+json")],
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}).to_string(),
    )
    .await;
    assert_eq!(v["error"]["code"], -32001);
}

#[tokio::test(flavor = "multi_thread")]
async fn proto_field_names_are_read_like_json_names() {
    let server = start(ScriptedRunner::hello()).await;
    let url = &server.url;
    let sent = rpc_v1(url, "SendMessage", v1_message("hi")).await;
    let task = &sent["result"]["task"];
    let id = task["id"].as_str().unwrap();
    assert!(!task["history"].as_array().unwrap().is_empty());
    let none = rpc_v1(url, "GetTask", json!({"id": id, "history_length": 0})).await;
    assert!(none["result"].get("history").is_none(), "{none}");
    let one = rpc_v1(url, "GetTask", json!({"id": id, "historyLength": 1})).await;
    assert_eq!(one["result"]["history"].as_array().unwrap().len(), 1);
    let listed = rpc_v1(
        url,
        "ListTasks",
        json!({"context_id": task["contextId"], "page_size": 1}),
    )
    .await;
    assert_eq!(listed["result"]["pageSize"], 1);
    assert_eq!(listed["result"]["tasks"][0]["id"], id);
    // A negative history length is refused, in both versions.
    let bad = rpc_v1(url, "GetTask", json!({"id": id, "historyLength": -1})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let bad = rpc_v03(url, "tasks/get", json!({"id": id, "historyLength": -1})).await;
    assert_eq!(bad["error"]["code"], -32602);
}

#[tokio::test(flavor = "multi_thread")]
async fn subscribing_to_a_finished_task_fails_before_any_stream() {
    let server = start(ScriptedRunner::hello()).await;
    let url = &server.url;
    let sent = rpc_v1(url, "SendMessage", v1_message("hi")).await;
    let id = sent["result"]["task"]["id"].as_str().unwrap();
    // 1.0: a plain JSON-RPC error, no event stream.
    let res = stream_request(url, V1, &[], "SubscribeToTask", json!({"id": id})).await;
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let v: Value = res.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32004);
    // 0.3 clients read errors only from SSE: one error event.
    let events = sse(url, None, &[], "tasks/resubscribe", json!({"id": id}))
        .await
        .rest()
        .await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data["error"]["code"], -32004);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_to_a_waiting_task_follows_its_next_turn_to_the_end() {
    let gate = Arc::new(Semaphore::new(0));
    let runner = ScriptedRunner::new(vec![
        vec![working(), finish(TaskState::InputRequired, "Which city?")],
        vec![
            Step::Gate(gate.clone()),
            working(),
            chunk("Sunny", true, true),
            finish(TaskState::Completed, "Sunny"),
        ],
    ]);
    let server = start(runner).await;
    let url = &server.url;
    let sent = rpc_v1(url, "SendMessage", v1_message("weather?")).await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        sent["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    let mut sub = subscribe_v1(url, &id).await;
    let first = sub.next().await.unwrap();
    assert_eq!(
        first.data["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let mut answer = v1_message("Paris");
    answer["message"]["taskId"] = json!(id);
    answer["configuration"] = json!({"returnImmediately": true});
    rpc_v1(url, "SendMessage", answer).await;
    gate.add_permits(1);
    let rest = sub.rest().await;
    let states: Vec<&str> = rest
        .iter()
        .filter_map(|e| {
            let r = &e.data["result"];
            r["statusUpdate"]["status"]["state"]
                .as_str()
                .or(r["task"]["status"]["state"].as_str())
        })
        .collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED"
        ],
        "{rest:?}"
    );
    assert!(
        rest.iter()
            .any(|e| e.data["result"].get("artifactUpdate").is_some())
    );
}

/// Answers "ping" with a message of its own; anything else runs a turn.
struct Replying(ScriptedRunner);

#[async_trait]
impl TurnRunner for Replying {
    async fn reply(
        &self,
        _context_id: &str,
        message: &Message,
        _auth: &AuthContext,
    ) -> Result<Option<Message>, RunnerError> {
        Ok((message.text() == "ping").then(|| Message::assistant("pong")))
    }

    async fn run_turn(&self, request: TurnRequest) -> Result<TurnEvents, RunnerError> {
        self.0.run_turn(request).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_may_answer_with_a_message_instead_of_a_task() {
    let server = start(Replying(ScriptedRunner::hello())).await;
    let url = &server.url;
    let mut ping = v1_message("ping");
    ping["message"]["contextId"] = json!("ctx-1");
    let v = rpc_v1(url, "SendMessage", ping.clone()).await;
    let message = &v["result"]["message"];
    assert!(v["result"].get("task").is_none(), "{v}");
    assert_eq!(message["role"], "ROLE_AGENT");
    assert_eq!(message["parts"][0]["text"], "pong");
    assert_eq!(message["contextId"], "ctx-1");
    assert!(!message["messageId"].as_str().unwrap().is_empty());
    // Streaming: a stream of that one message.
    let events = stream_v1(url, ping).await.rest().await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].data["result"]["message"]["parts"][0]["text"],
        "pong"
    );
    // 0.3: the message itself, with its kind.
    let v = rpc_v03(url, "message/send", v03_message("ping")).await;
    assert_eq!(v["result"]["kind"], "message");
    assert_eq!(v["result"]["role"], "agent");
    // No task was made; other messages still get one.
    let listed = rpc_v1(url, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0);
    let v = rpc_v1(url, "SendMessage", v1_message("hello")).await;
    assert_eq!(
        v["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}
