//! `looopy run --model provider:model` through the real binary, against
//! `@copilotkit/aimock` serving each vendor's API: the model calls a tool
//! the agent does not have, reads the error, and answers.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::process::{Command, Output};

use looopy_testkit::aimock::{Aimock, weather_fixtures};
use support::BIN;

/// `looopy run --model <model> <prompt>` without the caller's model
/// variables, with `env`.
async fn run(model: &str, prompt: &str, env: Vec<(&'static str, String)>) -> Output {
    let model = model.to_owned();
    let prompt = prompt.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(BIN);
        cmd.args(["run", "--model", &model, &prompt]);
        for var in [
            "LOOOPY_LLM_BASE_URL",
            "LOOOPY_LLM_MODEL",
            "LOOOPY_LLM_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GEMINI_BASE_URL",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ] {
            cmd.env_remove(var);
        }
        cmd.envs(env);
        cmd.output().unwrap()
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_a_provider_model_answers_through_each_vendors_api() {
    let Some(aimock) = Aimock::start(&weather_fixtures()).await else {
        return;
    };
    let url = aimock.url().to_owned();
    let cases = [
        (
            "gemini:gemini-2.5-flash",
            vec![
                ("GEMINI_API_KEY", "g-test".to_owned()),
                ("GEMINI_BASE_URL", format!("{url}/v1beta")),
            ],
        ),
        (
            "openai:gpt-4.1",
            vec![
                ("OPENAI_API_KEY", "sk-test".to_owned()),
                ("OPENAI_BASE_URL", format!("{url}/v1")),
            ],
        ),
        (
            "openai-chat:gpt-4o-mini",
            vec![
                ("OPENAI_API_KEY", "sk-test".to_owned()),
                ("OPENAI_BASE_URL", format!("{url}/v1")),
            ],
        ),
        (
            "anthropic:claude-sonnet-4-5",
            vec![
                ("ANTHROPIC_API_KEY", "a-test".to_owned()),
                ("ANTHROPIC_BASE_URL", url.clone()),
            ],
        ),
        (
            "litellm:gpt-4o-mini",
            vec![("LOOOPY_LLM_BASE_URL", format!("{url}/v1"))],
        ),
    ];
    for (model, env) in cases {
        let out = run(model, "What is the weather in Paris?", env).await;
        assert!(out.status.success(), "{model}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("It is 18 degrees and sunny in Paris."),
            "{model}: {stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_model_without_its_key_says_what_to_do() {
    let out = run("gemini:gemini-2.5-flash", "hi", Vec::new()).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("GEMINI_API_KEY") && err.contains("GOOGLE_API_KEY"),
        "{err}"
    );

    let out = run("anthropic:claude-sonnet-4-5", "hi", Vec::new()).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");

    let out = run("gemini:", "hi", Vec::new()).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("names no model"), "{err}");
}
