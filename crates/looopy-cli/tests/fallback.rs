//! `[llm] fallback` through the real binary: an overloaded Claude model
//! hands the turn to the next model of the list; a bad request does not.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::process::{Command, Output};

use looopy_testkit::anthropic_fixture::anthropic;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use support::{BIN, write_config};

/// An Anthropic error reply with this status and `error.type`.
fn anthropic_error(status: u16, kind: &str, message: &str) -> FixtureReply {
    FixtureReply::raw(status, anthropic::error(kind, message).to_string())
}

/// `looopy run --config <toml>` with the primary model at `claude` and the
/// fallback at `openai`, without the caller's model variables.
async fn run(claude: &OpenAiFixture, openai: &OpenAiFixture) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        &dir,
        "[llm]\nmodel = \"anthropic:claude-sonnet-4-5\"\nmax_retries = 0\n\
         fallback = [\"openai-chat:gpt-4o-mini\"]\n",
    );
    let env = [
        ("ANTHROPIC_API_KEY", "a-test".to_owned()),
        ("ANTHROPIC_BASE_URL", claude.url()),
        ("OPENAI_API_KEY", "sk-test".to_owned()),
        ("OPENAI_BASE_URL", openai.base_url()),
    ];
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(BIN);
        cmd.args(["run", "--config"]).arg(&config).arg("Hello?");
        for var in [
            "LOOOPY_LLM_BASE_URL",
            "LOOOPY_LLM_MODEL",
            "LOOOPY_LLM_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            cmd.env_remove(var);
        }
        cmd.envs(env);
        let out = cmd.output().unwrap();
        drop(dir);
        out
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_model_hands_the_turn_to_the_fallback() {
    let claude = OpenAiFixture::start().await.unwrap();
    claude.push(anthropic_error(529, "overloaded_error", "Overloaded"));
    let openai = OpenAiFixture::start().await.unwrap();
    openai.push(FixtureReply::Text("Hello from the fallback.".into()));
    let out = run(&claude, &openai).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Hello from the fallback."),
        "{}",
        text(&out.stdout)
    );
    let tried = claude.requests();
    assert_eq!(tried.len(), 1);
    assert!(tried[0].path.ends_with("/v1/messages"), "{}", tried[0].path);
    let fallback = openai.requests();
    assert_eq!(fallback.len(), 1);
    assert_eq!(fallback[0].body["model"], "gpt-4o-mini");
    let user = fallback[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(user["content"], "Hello?", "the same conversation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_request_fails_without_trying_the_fallback() {
    let claude = OpenAiFixture::start().await.unwrap();
    claude.push(anthropic_error(
        400,
        "invalid_request_error",
        "max_tokens: must be positive",
    ));
    let openai = OpenAiFixture::start().await.unwrap();
    openai.push(FixtureReply::Text("never".into()));
    let out = run(&claude, &openai).await;
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("max_tokens: must be positive"), "{all}");
    assert_eq!(claude.requests().len(), 1);
    assert_eq!(openai.requests().len(), 0, "not sent to the fallback");
}
