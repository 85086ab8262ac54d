//! `A2aClient` against the server, in both versions, and against a server
//! that only speaks 0.3.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use axum::Json;
use axum::routing::post;
use futures::StreamExt;
use looopy_a2a::{
    A2aClient, A2aClientError, AuthConfig, ProtocolVersion, SendRequest, SendResponse, StreamEvent,
};
use looopy_core::{EventPayload, TaskState};
use serde_json::{Value, json};
use support::*;
use tokio::sync::Semaphore;

fn task(r: SendResponse) -> looopy_a2a::TaskSnapshot {
    match r {
        SendResponse::Task(t) => t,
        SendResponse::Message(m) => panic!("expected a task, got {m:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn discover_send_get_list_in_1_0() {
    let (server, _llm) = agent_server(&["Hi there!", "Again."]).await;
    let client = A2aClient::new(&server.url);
    let card = client.discover().await.unwrap();
    assert_eq!(card.name, "Test agent");
    assert!(card.streaming);
    assert_eq!(card.best_version(), Some(ProtocolVersion::V1_0));
    assert_eq!(client.version(), ProtocolVersion::V1_0);

    let t = task(client.send(&SendRequest::text("Hello")).await.unwrap());
    assert_eq!(t.status.state, TaskState::Completed);
    assert_eq!(t.answer_text(), "Hi there!");
    assert_eq!(t.history.len(), 2);
    let t2 = task(
        client
            .send(&SendRequest::text("Hello again").in_context(&t.context_id))
            .await
            .unwrap(),
    );
    assert_eq!(t2.context_id, t.context_id);

    let got = client.get_task(&t.id, Some(1)).await.unwrap();
    assert_eq!(got.id, t.id);
    assert_eq!(got.history.len(), 1);
    let page = client.list_tasks(None, Some(1), None).await.unwrap();
    assert_eq!(page.tasks.len(), 1);
    let next = page.next_page_token.unwrap();
    let page2 = client.list_tasks(None, Some(1), Some(&next)).await.unwrap();
    assert_eq!(page2.tasks.len(), 1);
    assert!(page2.next_page_token.is_none());

    let e = client.cancel_task(&t.id).await.unwrap_err();
    assert_eq!(e.code(), Some(-32002));
    let e = client.get_task("nope", None).await.unwrap_err();
    assert_eq!(e.code(), Some(-32001));
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_and_resubscribe_in_both_versions() {
    for version in [ProtocolVersion::V1_0, ProtocolVersion::V0_3] {
        let gate = Arc::new(Semaphore::new(0));
        // Held until the resubscribed stream has read the last chunk: once
        // the turn ends, its chunks are kept as one whole artifact.
        let end = Arc::new(Semaphore::new(0));
        let runner = ScriptedRunner::new(vec![vec![
            working(),
            chunk("a", true, false),
            Step::Gate(gate.clone()),
            chunk("b", false, true),
            Step::Gate(end.clone()),
            finish(TaskState::Completed, "ab"),
        ]]);
        let server = start(runner).await;
        let client = A2aClient::builder(&server.url).version(version).build();
        let mut events = client.stream(&SendRequest::text("go")).await.unwrap();
        let first = events.next().await.unwrap().unwrap();
        let StreamEvent::Task(t) = &first.event else {
            panic!("{first:?}")
        };
        let task_id = t.id.clone();
        let working = events.next().await.unwrap().unwrap();
        assert_eq!(
            match &working.event {
                StreamEvent::Update(e) => e.state(),
                _ => None,
            },
            Some(TaskState::Working)
        );
        let a = events.next().await.unwrap().unwrap();
        let seen = a.id.clone().unwrap();
        drop(events);
        gate.add_permits(1);

        let mut again = client.resubscribe(&task_id, Some(&seen)).await.unwrap();
        let mut items = Vec::new();
        while let Some(item) = again.next().await {
            let item = item.unwrap();
            if matches!(&item.event, StreamEvent::Update(e) if matches!(&*e.payload, EventPayload::ArtifactUpdate { .. }))
            {
                end.add_permits(1);
            }
            items.push(item);
        }
        if version == ProtocolVersion::V1_0 {
            assert!(
                matches!(items.remove(0).event, StreamEvent::Task(_)),
                "1.0 starts with the task"
            );
        }
        assert_eq!(items.len(), 2, "{version}: {items:#?}");
        match &items[0].event {
            StreamEvent::Update(e) => match &*e.payload {
                EventPayload::ArtifactUpdate {
                    artifact, append, ..
                } => {
                    assert_eq!(artifact.parts[0].as_text(), Some("b"));
                    assert!(append);
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        assert!(items[1].event.is_final());
        let done = client.get_task(&task_id, None).await.unwrap();
        assert_eq!(done.answer_text(), "ab");
        assert_eq!(done.artifacts[0].parts[0].as_text(), Some("ab"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_and_input_required_in_0_3() {
    let runner = ScriptedRunner::new(vec![
        vec![working(), finish(TaskState::InputRequired, "Which city?")],
        vec![working(), Step::UntilCancelled],
    ]);
    let server = start(runner).await;
    let client = A2aClient::builder(&server.url)
        .version(ProtocolVersion::V0_3)
        .build();
    let t = task(client.send(&SendRequest::text("weather")).await.unwrap());
    assert_eq!(t.status.state, TaskState::InputRequired);
    assert_eq!(t.answer_text(), "Which city?");
    let t2 = task(
        client
            .send(&SendRequest::text("Paris").for_task(&t.id).non_blocking())
            .await
            .unwrap(),
    );
    assert_eq!(t2.id, t.id);
    let canceled = client.cancel_task(&t.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let e = client.list_tasks(None, None, None).await.unwrap_err();
    assert!(matches!(e, A2aClientError::Unsupported(_)));
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_are_sent() {
    let stores = SharedStores::default();
    let auth = AuthConfig::none()
        .bearer("tok", "alice")
        .api_key("key", "bob");
    let runner = ScriptedRunner::hello();
    let server = serve(builder(runner.clone(), &stores).auth(auth).build(), &stores).await;
    let anonymous = A2aClient::new(&server.url);
    match anonymous.send(&SendRequest::text("x")).await.unwrap_err() {
        A2aClientError::Http { status, .. } => assert_eq!(status, 401),
        other => panic!("{other:?}"),
    }
    // The card needs no credentials.
    anonymous.discover().await.unwrap();
    A2aClient::builder(&server.url)
        .bearer_token("tok")
        .build()
        .send(&SendRequest::text("x"))
        .await
        .unwrap();
    A2aClient::builder(&server.url)
        .api_key("key")
        .build()
        .send(&SendRequest::text("y"))
        .await
        .unwrap();
    let who: Vec<_> = runner
        .requests()
        .iter()
        .map(|r| r.auth.principal.clone())
        .collect();
    assert_eq!(who, ["alice", "bob"]);
}

/// A server that speaks only 0.3 and refuses 1.0 methods.
async fn legacy_server() -> String {
    async fn rpc(Json(body): Json<Value>) -> Json<Value> {
        let id = body["id"].clone();
        Json(match body["method"].as_str() {
            Some("message/send") => json!({"jsonrpc": "2.0", "id": id, "result": {
                "kind": "task", "id": "t1", "contextId": "c1",
                "status": {"state": "completed", "message": {"kind": "message", "role": "agent",
                    "messageId": "m1", "parts": [{"kind": "text", "text": "legacy answer"}]}}}}),
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
            }
        })
    }
    let app = axum::Router::new().route("/", post(rpc));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test(flavor = "multi_thread")]
async fn falls_back_to_0_3_unless_the_version_is_fixed() {
    let url = legacy_server().await;
    let client = A2aClient::new(&url);
    let t = task(client.send(&SendRequest::text("x")).await.unwrap());
    assert_eq!(t.answer_text(), "legacy answer");
    assert_eq!(client.version(), ProtocolVersion::V0_3);

    let fixed = A2aClient::builder(&url)
        .version(ProtocolVersion::V1_0)
        .build();
    assert_eq!(
        fixed
            .send(&SendRequest::text("x"))
            .await
            .unwrap_err()
            .code(),
        Some(-32601)
    );
}
