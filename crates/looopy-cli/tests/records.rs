//! Execution records through the real binary: a served turn's record at
//! `GET /v1/tasks/{id}/record` for its own principal only, and
//! `looopy record <task-id>` printing it.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::process::Command;

use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::{Value, json};
use support::{BIN, serve_running};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_turn_is_recorded_and_readable_by_its_principal_only() {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::error(503, "busy now").with_header("retry-after", "0"));
    llm.push(FixtureReply::Text("Hello from the model.".into()));
    let rest = "[store]\nbackend = \"memory\"\n\
                [[auth.tokens]]\nprincipal = \"alice\"\ntoken = \"alice-token\"\n\
                [[auth.tokens]]\nprincipal = \"bob\"\ntoken = \"bob-token\"\n";
    let (_dir, config) = support::config_with_model(&llm, "m", rest);
    let (server, url) = serve_running(&config, &[]);

    let http = reqwest::Client::new();
    let answer: Value = http
        .post(format!("{url}/"))
        .bearer_auth("alice-token")
        .header("A2A-Version", "1.0")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": { "message": {
                "messageId": "m-1", "role": "ROLE_USER",
                "parts": [{ "text": "Hi, my key is sk-abcdefghijklmnopqrstuv" }]
            }}
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = answer["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answer}"
    );

    let get = |token: &'static str| {
        http.get(format!("{url}/v1/tasks/{task}/record"))
            .bearer_auth(token)
            .send()
    };
    assert_eq!(
        get("bob-token").await.unwrap().status(),
        404,
        "another principal"
    );
    let unauthenticated = http
        .get(format!("{url}/v1/tasks/{task}/record"))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
    let mine = get("alice-token").await.unwrap();
    assert_eq!(mine.status(), 200);
    let record: Value = mine.json().await.unwrap();
    assert_eq!(record["principal"], "alice");
    let types: Vec<&str> = record["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["model-call", "retry", "model-call"], "{record}");
    assert_eq!(record["outcome"]["state"], "completed");
    let text = record.to_string();
    assert!(
        !text.contains("sk-abcdefghijklmnopqrstuv"),
        "the key is redacted: {text}"
    );

    let cli = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            Command::new(BIN).arg("record").args(args).output().unwrap()
        })
    };
    let out = cli(vec![
        task.clone(),
        "--url".into(),
        url.clone(),
        "--token".into(),
        "alice-token".into(),
    ])
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("FAILED"), "{stdout}");
    assert!(stdout.contains("retry #1"), "{stdout}");
    assert!(stdout.contains("Hello from the model."), "{stdout}");
    let out = cli(vec![
        task.clone(),
        "--url".into(),
        url.clone(),
        "--token".into(),
        "alice-token".into(),
        "--json".into(),
    ])
    .await
    .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["taskId"], task.as_str());
    let out = cli(vec![
        task.clone(),
        "--url".into(),
        url.clone(),
        "--token".into(),
        "bob-token".into(),
    ])
    .await
    .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no execution record"));
    server.stop();
}
