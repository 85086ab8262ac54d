//! `looopy serve` speaks A2A 1.0 over its three bindings on one port (the
//! card lists them; a gRPC client reaches the same agent), and
//! `[server] card_default_version` picks the card a version-less request gets.
#![cfg(feature = "grpc")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use a2a_pb::a2a_service_client::A2aServiceClient;
use a2a_pb::{Message, Part, Role, SendMessageRequest, part, send_message_response};
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::Value;
use support::{Running, config_with_model, serve_running, write_config};

/// The agent card of the server at `url`, asked for in `version` (the
/// `A2A-Version` header; none: the server's default).
async fn card_in(url: &str, version: Option<&str>) -> Value {
    let mut request = reqwest::Client::new().get(format!("{url}/.well-known/agent-card.json"));
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    request.send().await.unwrap().json().await.unwrap()
}

/// The server's default agent card.
async fn card(url: &str) -> Value {
    card_in(url, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_lists_three_bindings_and_grpc_reaches_the_agent() {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Text("answered over gRPC".into()));
    let (_dir, config) = config_with_model(&llm, "test-model", "");
    let (server, url): (Running, String) = serve_running(&config, &[]);

    let card = card(&url).await;
    assert!(card.get("protocolVersion").is_none(), "a 1.0 card: {card}");
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let mut bindings: Vec<(&str, &str)> = interfaces
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap(),
                i["protocolVersion"].as_str().unwrap(),
            )
        })
        .collect();
    bindings.sort();
    assert_eq!(
        bindings,
        [
            ("GRPC", "1.0"),
            ("HTTP+JSON", "1.0"),
            ("JSONRPC", "0.3"),
            ("JSONRPC", "1.0")
        ],
        "{card}"
    );

    let grpc = interfaces
        .iter()
        .find(|i| i["protocolBinding"] == "GRPC")
        .unwrap();
    let mut client = A2aServiceClient::connect(format!("http://{}", grpc["url"].as_str().unwrap()))
        .await
        .unwrap();
    let mut request = tonic::Request::new(SendMessageRequest {
        message: Some(Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: Role::User as i32,
            parts: vec![Part {
                content: Some(part::Content::Text("hello".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().unwrap());
    let reply = client.send_message(request).await.unwrap().into_inner();
    let Some(send_message_response::Payload::Task(task)) = reply.payload else {
        panic!("a task: {reply:?}");
    };
    let answer: Vec<String> = task
        .artifacts
        .iter()
        .flat_map(|a| a.parts.iter())
        .chain(
            task.status
                .iter()
                .flat_map(|s| s.message.iter())
                .flat_map(|m| m.parts.iter()),
        )
        .filter_map(|p| match &p.content {
            Some(part::Content::Text(t)) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert!(answer.concat().contains("answered over gRPC"), "{answer:?}");
    assert_eq!(llm.served(), 1);
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn card_default_version_serves_the_0_3_card_to_version_less_requests() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(&dir, "[server]\ncard_default_version = \"0.3\"\n");
    let (server, url) = serve_running(&config, &[]);
    let card = card(&url).await;
    let version = card["protocolVersion"].as_str().unwrap_or_default();
    assert!(version.starts_with("0.3"), "a 0.3 card: {card}");
    // A request that names 1.0 still gets the 1.0 card.
    let v1 = card_in(&url, Some("1.0")).await;
    assert!(v1.get("protocolVersion").is_none(), "{v1}");
    assert!(server.stop().success());
}

#[test]
fn an_unknown_card_version_stops_serve_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(&dir, "[server]\ncard_default_version = \"2.0\"\n");
    let out = std::process::Command::new(support::BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("card_default_version \"2.0\""), "{err}");
}
