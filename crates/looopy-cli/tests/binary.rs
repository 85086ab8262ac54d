//! The `looopy` binary's three commands, run as real processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support;

use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use support::{BIN, config_with_model, serve, stop, write_config};

fn chat(url: &str, input: &str) -> (String, String) {
    let mut child = Command::new(BIN)
        .args(["chat", url])
        .env_remove("LOOOPY_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "chat failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_chat_keep_one_conversation_and_stop_on_sigterm() {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Text("Hello from the fixture".into()));
    llm.push(FixtureReply::Text("Second answer".into()));
    let agent = "[agent]\nname = \"fixture-agent\"\nsystem_prompt = \"Be brief.\"\n";
    let (_dir, config) = config_with_model(&llm, "test-model", agent);
    let (server, url) = serve(&config, &[]);
    let (out, err) = tokio::task::spawn_blocking(move || chat(&url, "hi there\nand again\n"))
        .await
        .unwrap();
    assert!(err.contains("connected to fixture-agent"), "{err}");
    assert!(out.contains("Hello from the fixture"), "{out}");
    assert!(out.contains("Second answer"), "{out}");
    // The second request carried the first turn: one conversation.
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1].body["messages"];
    let texts: Vec<String> = second
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(texts.iter().any(|t| t.contains("hi there")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("Hello from the fixture")),
        "{texts:?}"
    );
    assert_eq!(second[0]["role"], "system");
    // No tool output was ever cut, so the served agent offers no tools at
    // all: not even the tool-output cache's `read_tool_output`.
    for request in &requests {
        assert!(request.body.get("tools").is_none(), "{}", request.body);
    }
    let status = tokio::task::spawn_blocking(move || stop(server))
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_without_a_model_starts_and_says_how_to_configure_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(&dir, "");
    let (server, url) = serve(&config, &[]);
    let (_out, err) = tokio::task::spawn_blocking(move || chat(&url, "hello\n"))
        .await
        .unwrap();
    assert!(err.contains("[failed]"), "{err}");
    assert!(err.contains("LOOOPY_LLM_BASE_URL"), "{err}");
    tokio::task::spawn_blocking(move || stop(server))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_streams_one_turn_to_the_terminal_and_env_overrides_the_file() {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::json(openai::completion("The answer is 42.")));
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(&dir, "[llm]\nbase_url = \"http://unused\"\nmodel = \"m\"\n");
    let base = llm.base_url();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(["run", "--config"])
            .arg(&config)
            .arg("What is six times seven?")
            .env("LOOOPY_LLM_BASE_URL", base)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("The answer is 42."));
    // The environment overrode the file's base URL.
    assert_eq!(llm.requests().len(), 1);
    assert_eq!(
        llm.requests()[0].body["messages"][0]["content"],
        "What is six times seven?"
    );
}

#[test]
fn a_bad_config_file_is_refused_with_the_mistake_named() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(&dir, "[agent]\nmax_iteratons = 3\n");
    let out = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&config)
        .arg("x")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("max_iteratons"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_window_of_looopy_toml_limits_what_the_model_is_sent() {
    let llm = OpenAiFixture::start().await.unwrap();
    for answer in ["first answer", "second answer", "third answer"] {
        llm.push(FixtureReply::Text(answer.into()));
    }
    let (_dir, config) = config_with_model(&llm, "m", "[history]\nwindow_messages = 3\n");
    let (server, url) = serve(&config, &[]);
    tokio::task::spawn_blocking(move || chat(&url, "one\ntwo\nthree\n"))
        .await
        .unwrap();
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    let sent = |i: usize| -> Vec<String> {
        requests[i].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].to_string())
            .collect()
    };
    // The third turn's history is five messages; the window sends the last three.
    let third = sent(2);
    assert_eq!(third.len(), 3, "{third:?}");
    assert!(
        third[0].contains("two") && third[2].contains("three"),
        "{third:?}"
    );
    assert!(!third.iter().any(|m| m.contains("one")), "{third:?}");
    tokio::task::spawn_blocking(move || stop(server))
        .await
        .unwrap();
}
