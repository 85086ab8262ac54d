//! Execution records through the real binary: a served turn's record at
//! `GET /v1/tasks/{id}/record` for its own principal only, and
//! `looopy record <task-id>` printing it; on the default SQLite store (and
//! on PostgreSQL) a task that runs two turns (a tool call waiting for
//! approval, then the approval) keeps a record per turn, at
//! `GET /v1/tasks/{id}/records`, `/record?turn=N` and `looopy record
//! --turn N`, and a restarted server still serves them.
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

/// Sends one JSON-RPC `SendMessage` of `message` as `token`; the task.
async fn send(http: &reqwest::Client, url: &str, token: &str, message: Value) -> Value {
    let answer: Value = http
        .post(format!("{url}/"))
        .bearer_auth(token)
        .header("A2A-Version", "1.0")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": { "message": message }
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["result"]["task"].clone()
}

/// `looopy record` with these arguments; its exit and output.
async fn record_cli(args: Vec<String>) -> (bool, String, String) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN).arg("record").args(args).output().unwrap()
    })
    .await
    .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `[agent]` and `[[auth.tokens]]` of the two-turn tests: the artifact
/// tools, `create_artifact` waiting for approval, alice and bob.
const APPROVING: &str = "[agent]\nartifact_tools = true\napprove_tools = [\"create_artifact\"]\n\
                         [[auth.tokens]]\nprincipal = \"alice\"\ntoken = \"alice-token\"\n\
                         [[auth.tokens]]\nprincipal = \"bob\"\ntoken = \"bob-token\"\n";

/// The model of the two-turn tests: asks for `create_artifact` (which waits
/// for approval: the first turn ends `input-required`), then, once the
/// approved call ran, answers.
fn approving_model(llm: &OpenAiFixture) {
    let args = json!({ "artifact_id": "note", "text": "buy milk" }).to_string();
    llm.push(FixtureReply::json(
        looopy_testkit::openai_fixture::openai::tool_calls_completion(&[(
            "call-note",
            "create_artifact",
            &args,
        )]),
    ));
    llm.push(FixtureReply::Text("Saved the note.".into()));
}

/// Runs the two-turn task on the server at `url`: a message whose tool
/// call waits for approval, then the approval, each its own turn. Returns
/// the task id.
async fn two_turn_task(http: &reqwest::Client, url: &str) -> String {
    let asked = send(
        http,
        url,
        "alice-token",
        json!({
            "messageId": "m-1", "role": "ROLE_USER",
            "parts": [{ "text": "Write a note: buy milk" }]
        }),
    )
    .await;
    assert_eq!(
        asked["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let task = asked["id"].as_str().unwrap().to_owned();
    let done = send(
        http,
        url,
        "alice-token",
        json!({
            "messageId": "m-2", "role": "ROLE_USER",
            "taskId": task, "contextId": asked["contextId"],
            "parts": [{ "data": { "approval": { "toolCallId": "call-note", "decision": "approve" } } }]
        }),
    )
    .await;
    assert_eq!(done["id"], task.as_str(), "{done}");
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    task
}

/// Reads the records of the two-turn task `task` at `url` and checks them:
/// one per turn, oldest first, the first `input-required`, the second with
/// the approved tool call; `/record` is the latest, `?turn=N` one turn.
/// Returns the two turn numbers.
async fn two_turn_records(http: &reqwest::Client, url: &str, task: &str) -> (u64, u64) {
    let get = |path: String, token: Option<&'static str>| {
        let mut request = http.get(format!("{url}/v1/tasks/{task}/{path}"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let all = get("records".into(), Some("alice-token")).await.unwrap();
    assert_eq!(all.status(), 200);
    let all: Value = all.json().await.unwrap();
    let records = all["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "a record per turn: {all}");
    let turn = |r: &Value| r["turnNumber"].as_u64().unwrap();
    let (first, second) = (turn(&records[0]), turn(&records[1]));
    assert!(first < second, "oldest first: {all}");
    assert_eq!(records[0]["outcome"]["state"], "input-required", "{all}");
    assert_eq!(records[1]["outcome"]["state"], "completed", "{all}");
    let tools: Vec<&str> = records[1]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "tool-call")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["create_artifact"],
        "the approved call ran in the second turn: {all}"
    );

    let latest: Value = get("record".into(), Some("alice-token"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for field in ["turnNumber", "startedAt", "steps", "outcome"] {
        assert_eq!(
            latest[field], records[1][field],
            "/record is the latest turn's"
        );
    }
    let earlier: Value = get(format!("record?turn={first}"), Some("alice-token"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for field in ["turnNumber", "startedAt", "steps", "outcome"] {
        assert_eq!(earlier[field], records[0][field], "?turn={first}");
    }
    let missing = get(format!("record?turn={}", second + 10), Some("alice-token"))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404, "a turn without a record");
    let bad = get("record?turn=latest".into(), Some("alice-token"))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400, "a turn that is not a number");
    let body = bad.text().await.unwrap();
    assert!(body.contains("`turn` must be a turn number"), "{body}");
    for path in ["records", "record"] {
        let theirs = get(path.into(), Some("bob-token")).await.unwrap();
        assert_eq!(theirs.status(), 404, "another principal: {path}");
        let anonymous = get(path.into(), None).await.unwrap();
        assert_eq!(anonymous.status(), 401, "no token: {path}");
    }
    (first, second)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_sqlite_store_records_every_turn_of_a_task() {
    let llm = OpenAiFixture::start().await.unwrap();
    approving_model(&llm);
    // No `[store]`: the default SQLite file in the config's folder.
    let (dir, config) = support::config_with_model(&llm, "m", APPROVING);
    let (server, url) = serve_running(&config, &[]);
    let http = reqwest::Client::new();
    let task = two_turn_task(&http, &url).await;
    assert!(dir.path().join(".looopy/looopy.db").exists());
    let (first, second) = two_turn_records(&http, &url, &task).await;

    let base = vec![
        task.clone(),
        "--url".into(),
        url.clone(),
        "--token".into(),
        "alice-token".into(),
    ];
    let (ok, stdout, stderr) = record_cli(base.clone()).await;
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains(&format!("turn {second}")), "{stdout}");
    assert!(stdout.contains("tool create_artifact"), "{stdout}");
    assert!(stdout.contains("Saved the note."), "{stdout}");
    let mut args = base.clone();
    args.extend(["--turn".into(), first.to_string(), "--json".into()]);
    let (ok, stdout, stderr) = record_cli(args).await;
    assert!(ok, "{stdout}{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["turnNumber"], first);
    assert_eq!(json["outcome"]["state"], "input-required");
    let mut args = base.clone();
    args.extend(["--turn".into(), (second + 10).to_string()]);
    let (ok, _, stderr) = record_cli(args).await;
    assert!(!ok);
    assert!(
        stderr.contains(&format!("no execution record of turn {}", second + 10)),
        "{stderr}"
    );
    server.stop();

    // The records are in the file: a restarted server serves them.
    let (server, url) = serve_running(&config, &[]);
    assert_eq!(two_turn_records(&http, &url, &task).await, (first, second));
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_store_records_every_turn_of_a_task() {
    let Some(postgres) =
        looopy_testkit::test_postgres_or_skip("a_postgres_store_records_every_turn_of_a_task")
    else {
        return;
    };
    let llm = OpenAiFixture::start().await.unwrap();
    approving_model(&llm);
    let schema = format!("rec_{}", uuid::Uuid::new_v4().simple());
    let rest = format!(
        "[store]\nbackend = \"postgres\"\nurl = \"{}\"\nschema = \"{schema}\"\n{APPROVING}",
        postgres.url()
    );
    let (_dir, config) = support::config_with_model(&llm, "m", &rest);
    let (server, url) = serve_running(&config, &[]);
    let http = reqwest::Client::new();
    let task = two_turn_task(&http, &url).await;
    two_turn_records(&http, &url, &task).await;
    server.stop();
}
