//! What `looopy serve` does with nothing configured but a model (and, for
//! the tool limits, an MCP server), where a user meets it: a turn whose
//! model keeps calling tools stops after 10 iterations, at most 5 tool
//! calls run at once, the model sees the newest 50 messages, a failing
//! model call is tried 6 times (5 retries), and JSON-RPC is served at
//! `POST /api/a2a` beside `/` while the card advertises `/`. (The 30 s
//! tool timeout is checked where waiting for it costs nothing: the
//! Agent's defaults test, on a paused clock.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use looopy_a2a::{A2aClient, SendRequest, SendResponse, TaskSnapshot};
use looopy_core::TaskState;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use looopy_testkit::openai_fixture::{Responder, openai};
use looopy_testkit::{FixtureReply, OpenAiFixture, SseReply};
use serde_json::{Value, json};
use support::{Journal, serve_running, write_config};

/// Tool calls in one model answer, streamed or not as the request asks.
fn calls(body: &Value, calls: &[(String, &str)], job: &str) -> FixtureReply {
    let args = json!({ "job": job }).to_string();
    if body["stream"] == true {
        let mut chunks = Vec::new();
        for (i, (id, name)) in calls.iter().enumerate() {
            chunks.push(openai::tool_call_start_chunk(i, id, name));
            chunks.push(openai::tool_args_chunk(i, &args));
        }
        chunks.push(openai::finish_chunk("tool_calls"));
        return FixtureReply::Sse(SseReply::new(chunks));
    }
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, name)| (id.as_str(), *name, args.as_str()))
        .collect();
    FixtureReply::json(openai::tool_calls_completion(&calls))
}

/// The model, by the job of the last user message: `loop` calls a tool in
/// every answer it may (the wrap-up call offers no tools), `parallel`
/// calls a slow tool eight times at once, `retry` is always overloaded,
/// anything else is answered at once.
fn model(body: &Value) -> FixtureReply {
    let (job, results) = support::last_user_turn(body);
    let offered = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    match job.as_str() {
        "retry" => FixtureReply::error(503, "overloaded").with_header("retry-after", "0"),
        "loop" if offered => calls(body, &[(format!("q{}", results.len()), "quick_note")], &job),
        "parallel" if offered && results.is_empty() => {
            let slow: Vec<(String, &str)> =
                (0..8).map(|i| (format!("p{i}"), "slow_step")).collect();
            calls(body, &slow, &job)
        }
        _ => FixtureReply::Text(format!("answered {job} with {} results", results.len())),
    }
}

async fn ask(client: &A2aClient, text: &str, context: Option<&str>) -> TaskSnapshot {
    let mut request = SendRequest::text(text);
    if let Some(context) = context {
        request = request.in_context(context);
    }
    match client.send(&request).await.unwrap() {
        SendResponse::Task(task) => task,
        other => panic!("expected a task: {other:?}"),
    }
}

/// The bodies of the chat requests a model got.
type Seen = Arc<Mutex<Vec<Value>>>;

/// [`model`] on an OpenAI-compatible server, keeping what it was sent.
async fn recording_model() -> (OpenAiFixture, Seen) {
    let seen = Seen::default();
    let log = seen.clone();
    let respond: Responder = Arc::new(move |body: &Value| {
        log.lock().unwrap().push(body.clone());
        model(body)
    });
    let llm = OpenAiFixture::start_responder(Duration::ZERO, respond)
        .await
        .unwrap();
    (llm, seen)
}

/// The model requests of the turns asked `job` (by their last user message).
fn requests_for(seen: &Seen, job: &str) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|b| support::last_user_turn(b).0 == job)
        .cloned()
        .collect()
}

/// How many of the journal's slow calls ran at once, at most.
fn most_at_once(lines: &[String]) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for line in lines {
        if line.starts_with("start ") {
            now += 1;
            most = most.max(now);
        } else if line.starts_with("end ") {
            now = now.saturating_sub(1);
        }
    }
    most
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_iterations_five_tools_at_once_and_a_window_of_fifty_messages() {
    let Some(python) = support::python() else {
        return;
    };
    let (llm, seen) = recording_model().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::create(dir.path());
    let tools = support::durable_tools_section(&python, &journal, "SLOW_SECS = \"1\"");
    let config = write_config(
        &dir,
        &format!(
            "[llm]\nbase_url = \"{}\"\nmodel = \"m\"\n{tools}",
            llm.base_url()
        ),
    );
    let (server, url) = serve_running(&config, &[]);
    let client = A2aClient::new(&url);

    // A model that never stops calling tools: ten iterations, each running
    // its call, then the wrap-up call (no tools offered) answers.
    let first = ask(&client, "loop", None).await;
    assert_eq!(first.status.state, TaskState::Completed, "{first:?}");
    let quick = |lines: &[String]| lines.iter().filter(|l| l.starts_with("quick ")).count();
    assert_eq!(quick(&journal.lines()), 10, "{:?}", journal.lines());
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 11, "ten iterations and the wrap-up call");
    let offers_tools = |b: &Value| b["tools"].as_array().is_some_and(|t| !t.is_empty());
    assert!(asked[..10].iter().all(offers_tools));
    assert!(
        !offers_tools(&asked[10]),
        "the wrap-up call offers no tools"
    );

    // Three turns of 22 messages each: the fourth turn's model call sees
    // the newest 50 or fewer (a tool call travels with its result), of 67.
    let context = first.context_id.clone();
    for _ in 0..2 {
        let next = ask(&client, "loop", Some(&context)).await;
        assert_eq!(next.status.state, TaskState::Completed);
    }
    assert_eq!(quick(&journal.lines()), 30);
    let last = ask(&client, "hello", Some(&context)).await;
    assert_eq!(last.status.state, TaskState::Completed);
    let hello = requests_for(&seen, "hello");
    assert_eq!(hello.len(), 1);
    let sent = hello[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .count();
    assert!((45..=50).contains(&sent), "the model saw {sent} messages");

    // Eight slow calls in one answer: five run at once, then three.
    let parallel = ask(&client, "parallel", None).await;
    assert_eq!(parallel.status.state, TaskState::Completed, "{parallel:?}");
    let lines = journal.lines();
    let slow: Vec<String> = lines
        .into_iter()
        .filter(|l| l.starts_with("start ") || l.starts_with("end "))
        .collect();
    assert_eq!(slow.len(), 16, "{slow:?}");
    assert_eq!(most_at_once(&slow), 5, "{slow:?}");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_retries_and_json_rpc_at_api_a2a_beside_the_canonical_url() {
    let (llm, seen) = recording_model().await;
    let (_dir, config) = support::config_with_model(&llm, "m", "");
    let (server, url) = serve_running(&config, &[]);

    // An overloaded model (503, retry at once): the call and five retries.
    let failed = ask(&A2aClient::new(&url), "retry", None).await;
    assert_eq!(failed.status.state, TaskState::Failed, "{failed:?}");
    assert_eq!(requests_for(&seen, "retry").len(), 6);

    // `/api/a2a` takes JSON-RPC, in either version.
    let http = reqwest::Client::new();
    let sent = http
        .post(format!("{url}/api/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": { "message": {
                "messageId": "m-1",
                "role": "ROLE_USER",
                "parts": [{ "text": "at the seed's endpoint" }]
            }}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);
    let answer: Value = sent.json().await.unwrap();
    assert_eq!(
        answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answer}"
    );
    let sent = http
        .post(format!("{url}/api/a2a"))
        .json(&json!({
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tasks/get",
            "params": { "id": answer["result"]["task"]["id"] }
        }))
        .send()
        .await
        .unwrap();
    let got: Value = sent.json().await.unwrap();
    assert_eq!(got["result"]["status"]["state"], "completed", "{got}");

    // The card still names `/` as the JSON-RPC URL.
    let card: Value = http
        .get(format!("{url}/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let jsonrpc: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["protocolBinding"] == "JSONRPC")
        .map(|i| i["url"].as_str().unwrap())
        .collect();
    assert!(!jsonrpc.is_empty(), "{card}");
    assert!(jsonrpc.iter().all(|u| *u == format!("{url}/")), "{card}");
    assert!(server.stop().success());
}
