//! The gRPC binding (feature `grpc`), driven by the official generated
//! client of `a2a-pb` over HTTP/2 on the server's own port: the card lists
//! it, every method reaches the same tasks as JSON-RPC, streams end at the
//! turn's end, errors carry the spec's codes and an `ErrorInfo`.
#![cfg(feature = "grpc")]
#![allow(clippy::unwrap_used)]

use crate::support;

use a2a_pb::a2a_service_client::A2aServiceClient;
use a2a_pb::stream_response::Payload;
use a2a_pb::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role, SendMessageRequest,
    SubscribeToTaskRequest, TaskState, part,
};
use futures::StreamExt;
use looopy_a2a::AuthConfig;
use serde_json::json;
use support::*;
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

/// The gRPC URL the card lists, dialled.
async fn client(server: &TestServer) -> A2aServiceClient<Channel> {
    let card = agent_card(&server.url, None).await;
    let grpc = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "GRPC")
        .unwrap();
    assert_eq!(grpc["protocolVersion"], "1.0");
    let authority = grpc["url"].as_str().unwrap();
    A2aServiceClient::connect(format!("http://{authority}"))
        .await
        .unwrap()
}

fn message(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        message: Some(Message {
            message_id: uuid(),
            role: Role::User as i32,
            parts: vec![Part {
                content: Some(part::Content::Text(text.into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn v1<T>(body: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(body);
    r.metadata_mut()
        .insert("a2a-version", MetadataValue::from_static("1.0"));
    r
}

/// The `reason` of the `ErrorInfo` in a status's details.
fn reason(status: &tonic::Status) -> String {
    // google.rpc.Status { details: [Any { type_url, value: ErrorInfo }] }:
    // find the reason string inside the encoded ErrorInfo.
    let bytes = status.details();
    let text = String::from_utf8_lossy(bytes);
    assert!(
        text.contains("type.googleapis.com/google.rpc.ErrorInfo"),
        "{text}"
    );
    assert!(text.contains("a2a-protocol.org"), "{text}");
    [
        "TASK_NOT_FOUND",
        "TASK_NOT_CANCELABLE",
        "UNSUPPORTED_OPERATION",
        "VERSION_NOT_SUPPORTED",
        "UNAUTHENTICATED",
    ]
    .into_iter()
    .find(|r| text.contains(r))
    .unwrap_or_default()
    .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_method_works_over_grpc() {
    let server = start(ScriptedRunner::hello()).await;
    let mut grpc = client(&server).await;

    let sent = grpc
        .send_message(v1(message("hi")))
        .await
        .unwrap()
        .into_inner();
    let task = match sent.payload.unwrap() {
        a2a_pb::send_message_response::Payload::Task(t) => t,
        other => panic!("{other:?}"),
    };
    assert_eq!(task.status.unwrap().state, TaskState::Completed as i32);

    let got = grpc
        .get_task(v1(GetTaskRequest {
            id: task.id.clone(),
            history_length: Some(1),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.history.len(), 1);
    assert_eq!(got.artifacts.len(), 1);

    let listed = grpc
        .list_tasks(v1(ListTasksRequest {
            context_id: task.context_id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.tasks.len(), 1);

    // The same task over JSON-RPC.
    let v = rpc_v1(&server.url, "GetTask", json!({"id": task.id})).await;
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_COMPLETED");

    // A stream: the task first, the completed status last.
    let items: Vec<_> = grpc
        .send_streaming_message(v1(message("again")))
        .await
        .unwrap()
        .into_inner()
        .collect()
        .await;
    let items: Vec<Payload> = items
        .into_iter()
        .map(|i| i.unwrap().payload.unwrap())
        .collect();
    assert!(matches!(items[0], Payload::Task(_)));
    match items.last().unwrap() {
        Payload::StatusUpdate(u) => {
            assert_eq!(
                u.status.as_ref().unwrap().state,
                TaskState::Completed as i32
            );
        }
        other => panic!("{other:?}"),
    }

    // Errors: the spec's codes, with an ErrorInfo.
    let e = grpc
        .get_task(v1(GetTaskRequest {
            id: "nope".into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert_eq!(reason(&e), "TASK_NOT_FOUND");
    let e = grpc
        .cancel_task(v1(CancelTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(reason(&e), "TASK_NOT_CANCELABLE");
    let e = grpc
        .subscribe_to_task(v1(SubscribeToTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);
    assert_eq!(reason(&e), "UNSUPPORTED_OPERATION");
    let mut odd = tonic::Request::new(GetTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    });
    odd.metadata_mut()
        .insert("a2a-version", MetadataValue::from_static("0.3"));
    let e = grpc.get_task(odd).await.unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);
    assert_eq!(reason(&e), "VERSION_NOT_SUPPORTED");
}

#[tokio::test(flavor = "multi_thread")]
async fn grpc_requires_the_same_credentials() {
    let stores = SharedStores::default();
    let server = serve(
        builder(ScriptedRunner::hello(), &stores)
            .auth(AuthConfig::none().bearer("s3cret", "alice"))
            .build(),
        &stores,
    )
    .await;
    let mut grpc = client(&server).await;
    let e = grpc.send_message(v1(message("hi"))).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let mut ok = v1(message("hi"));
    ok.metadata_mut()
        .insert("authorization", MetadataValue::from_static("Bearer s3cret"));
    assert!(grpc.send_message(ok).await.is_ok());
}
