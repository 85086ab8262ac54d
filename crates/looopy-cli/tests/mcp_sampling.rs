//! MCP sampling through the real `looopy run`: a `[[tools.mcp]]` server
//! with `sampling = "allowed"` asks the agent's model during a tool call
//! (the Python fixture's `sample` tool), and the sampled answer reaches the
//! tool's result and the turn's answer. With `sampling = "ask"` the turn
//! stops `input-required` with the question before the model is sampled.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::process::Command;

use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::Value;
use support::{BIN, write_config};

/// The system prompt of the fixture's sampling requests.
const SAMPLING_PROMPT: &str = "Answer in one sentence.";

/// The model's replies: a call of `sample`, then (when `sampled` is
/// given) the answer to the server's sampling request, then the turn's
/// answer.
fn model(sampled: Option<&str>) -> Vec<FixtureReply> {
    let mut replies = vec![FixtureReply::json(openai::tool_calls_completion(&[(
        "call-1",
        "sample",
        r#"{"prompt": "Capital of France?"}"#,
    )]))];
    replies.extend(sampled.map(|s| FixtureReply::Text(s.into())));
    replies.push(FixtureReply::Text("the turn's answer".into()));
    replies
}

/// The text of the tool result the request sends back to the model.
fn tool_result(body: &Value) -> String {
    let (_, results) = support::last_user_turn(body);
    results.join(" | ")
}

/// `looopy run` of one message with the fixture server under `sampling`
/// (more keys of its `[[tools.mcp]]`), the model answering `replies`.
async fn run(
    sampling: &str,
    replies: Vec<FixtureReply>,
) -> (String, Vec<looopy_testkit::openai_fixture::RecordedRequest>) {
    let python = support::python().expect("checked by the caller");
    let llm = OpenAiFixture::start().await.unwrap();
    for reply in replies {
        llm.push(reply);
    }
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        &dir,
        &format!(
            "[llm]\nbase_url = \"{base}\"\nmodel = \"m\"\n{mcp}{sampling}\n",
            base = llm.base_url(),
            mcp = support::mcp_fixture_section(&python, "fixture"),
        ),
    );
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(["run", "--config"])
            .arg(&config)
            .arg("Ask the server.")
            .env_remove("LOOOPY_LLM_BASE_URL")
            .env_remove("LOOOPY_LLM_MODEL")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    (stdout, llm.requests())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_server_samples_the_agents_model_during_a_tool_call() {
    if support::python().is_none() {
        return;
    }
    let replies = model(Some("Paris, sampled."));
    let (stdout, requests) =
        run("sampling = \"allowed\"\nsampling_max_tokens = 500", replies).await;
    assert!(stdout.contains("the turn's answer"), "{stdout}");
    assert_eq!(requests.len(), 3, "turn, sampling, turn");
    let sampled = &requests[1].body;
    assert_eq!(
        support::message_text(&sampled["messages"][0]),
        SAMPLING_PROMPT
    );
    assert!(
        sampled["tools"].as_array().is_none_or(Vec::is_empty),
        "a sampling request offers no tools: {sampled}"
    );
    let result = tool_result(&requests[2].body);
    assert!(result.ends_with(": Paris, sampled."), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_policy_the_server_is_refused_and_the_turn_goes_on() {
    if support::python().is_none() {
        return;
    }
    let (stdout, requests) = run("", model(None)).await;
    assert!(stdout.contains("the turn's answer"), "{stdout}");
    assert_eq!(requests.len(), 2, "the model was not sampled");
    let result = tool_result(&requests[1].body);
    assert!(result.contains("sampling is off"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asking_server_waits_for_a_persons_approval_before_sampling() {
    if support::python().is_none() {
        return;
    }
    let (stdout, requests) = run("sampling = \"ask\"", model(None)).await;
    assert!(
        stdout.contains("sample asks: MCP server 'fixture' asks the agent's model"),
        "{stdout}"
    );
    assert!(stdout.contains("Capital of France?"), "{stdout}");
    assert_eq!(
        requests.len(),
        1,
        "the model was not sampled before the approval"
    );
}
