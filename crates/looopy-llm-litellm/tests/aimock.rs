//! End to end against `@copilotkit/aimock`, a third-party OpenAI-compatible
//! mock server (installed by `scripts/provision.sh node`).
//!
//! The test starts aimock's LLM server (its `llmock` command) on a free port
//! with `tests/fixtures/aimock-weather.json`: a streamed tool call, then the
//! answer once the tool result is in the history. The server is killed when
//! the test ends.
//!
//! `LOOOPY_AIMOCK_BIN` overrides where the command is looked for. When it is
//! not installed the test fails, unless `LOOOPY_SKIP_EXTERNAL=1`.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use looopy_core::{
    FinishReason, History, LlmProvider, LlmRequest, Message, ToolDefinition, ToolResult,
};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_loop::layers::{RetryPolicy, RetryingLlm};
use serde_json::json;
use support::{assemble, cx, drain};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running aimock, killed on drop.
struct Aimock {
    _child: Child,
    url: String,
}

fn aimock_bin() -> Option<PathBuf> {
    let bin = match std::env::var_os("LOOOPY_AIMOCK_BIN") {
        Some(path) => PathBuf::from(path),
        None => {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/node/node_modules/.bin/llmock")
        }
    };
    bin.exists().then_some(bin)
}

impl Aimock {
    async fn start(bin: &Path, fixture: &Path) -> Aimock {
        let mut child = Command::new(bin)
            .args([
                "--port",
                "0",
                "--host",
                "127.0.0.1",
                "--strict",
                "--log-level",
                "info",
                "--fixtures",
            ])
            .arg(fixture)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {} (is node installed?): {e}", bin.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.expect("aimock output") {
                eprintln!("aimock: {line}");
                if let Some(at) = line.find("listening on ") {
                    return line[at + "listening on ".len()..].trim().to_owned();
                }
            }
            panic!("aimock exited before listening");
        })
        .await
        .expect("aimock did not start within 30 s");
        // Keep draining its output so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Aimock { _child: child, url }
    }
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition::new(
        "get_weather",
        "Current weather of a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
               "required": ["city"]}),
    )
}

#[tokio::test]
async fn tool_call_round_trip_against_aimock() {
    let Some(bin) = aimock_bin() else {
        if std::env::var("LOOOPY_SKIP_EXTERNAL").as_deref() == Ok("1") {
            eprintln!(
                "\n!!!!! SKIPPED tool_call_round_trip_against_aimock: @copilotkit/aimock is not installed \
                 (LOOOPY_SKIP_EXTERNAL=1). Run `scripts/provision.sh node` to run it. !!!!!\n"
            );
            return;
        }
        panic!(
            "@copilotkit/aimock is not installed (looked for .tools/node/node_modules/.bin/llmock or \
             $LOOOPY_AIMOCK_BIN): run `scripts/provision.sh node`, or set LOOOPY_SKIP_EXTERNAL=1 to skip"
        );
    };
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aimock-weather.json");
    let server = Aimock::start(&bin, &fixture).await;

    let config = LiteLlmConfig::new(format!("{}/v1", server.url), "gpt-4o-mini")
        .with_api_key("sk-aimock-test");
    let llm = RetryingLlm::new(LiteLlmProvider::new(config).unwrap(), RetryPolicy::none());
    let cx = cx();
    let mut history = History::from(vec![Message::user("What is the weather in Paris?")]);
    let request = |history: &History| LlmRequest {
        system_prompt: Some("You report the weather.".into()),
        messages: history.clone(),
        tools: vec![weather_tool()].into(),
        ..Default::default()
    };

    // 1. A streamed tool call.
    let (chunks, err) = drain(llm.stream(request(&history), &cx)).await;
    assert_eq!(err, None);
    let first = assemble(&chunks);
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.message.tool_calls.len(), 1);
    let call = &first.message.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_weather_1", "get_weather")
    );
    assert_eq!(
        call.parsed_arguments(),
        json!({"city": "Paris", "unit": "celsius"})
    );
    assert!(
        first.usage.is_some_and(|u| u.total_tokens > 0),
        "usage from the final chunk"
    );

    // The same, not streamed.
    let plain = llm.call(request(&history), &cx).await.unwrap();
    assert_eq!(plain.message.tool_calls, first.message.tool_calls);

    // 2. The tool result goes back; the model answers.
    history.push(first.message.clone());
    history.push(ToolResult::json(&call.id, &json!({"temp_c": 18, "sky": "sunny"})).into_message());
    let (chunks, err) = drain(llm.stream(request(&history), &cx)).await;
    assert_eq!(err, None);
    let answer = assemble(&chunks);
    assert_eq!(
        answer.message.text(),
        "It is 18 degrees and sunny in Paris."
    );
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert!(answer.message.tool_calls.is_empty());
}
