//! End to end against `@copilotkit/aimock` (installed by
//! `scripts/provision.sh node`), which serves the Messages API and checks,
//! as the real API does with thinking on, that a tool-loop continuation
//! begins with the thinking block and its signature.
//!
//! The test starts aimock's `llmock` on a free port with
//! `tests/fixtures/aimock-thinking-weather.json` and kills it when done.
//! `LOOOPY_AIMOCK_BIN` overrides where the command is looked for; without
//! it the test fails, unless `LOOOPY_SKIP_EXTERNAL=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use looopy_core::{
    FinishReason, History, LlmChunk, LlmProvider, LlmRequest, Message, ResponseAssembler,
    ToolDefinition, ToolResult, TurnContext,
};
use looopy_llm_anthropic::{AnthropicConfig, AnthropicProvider};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

struct Aimock {
    _child: Child,
    url: String,
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
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Aimock { _child: child, url }
    }
}

fn aimock_bin() -> Option<PathBuf> {
    looopy_testkit::external::require(
        "LOOOPY_AIMOCK_BIN",
        looopy_testkit::external::repo_root().join(".tools/node/node_modules/.bin/llmock"),
        "@copilotkit/aimock",
    )
}

async fn streamed(
    llm: &AnthropicProvider,
    request: LlmRequest,
) -> (Vec<LlmChunk>, looopy_core::LlmResponse) {
    let cx = TurnContext::new("t", "c");
    let mut stream = llm.stream(request, &cx);
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        chunks.push(item.unwrap_or_else(|e| panic!("aimock stream failed: {e}")));
    }
    let mut a = ResponseAssembler::new();
    chunks.iter().for_each(|c| a.push(c));
    (chunks, a.finish())
}

#[tokio::test]
async fn a_thinking_tool_turn_against_aimock() {
    let Some(bin) = aimock_bin() else { return };
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/aimock-thinking-weather.json");
    let server = Aimock::start(&bin, &fixture).await;
    let llm = AnthropicProvider::new(
        AnthropicConfig::new("claude-sonnet-4-5")
            .with_api_key("sk-ant-aimock")
            .with_base_url(&server.url)
            .with_max_tokens(4096)
            .with_thinking(1024),
    )
    .unwrap();
    let tool = ToolDefinition::new(
        "get_weather",
        "Current weather of a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}),
    );
    let mut history = History::from(vec![Message::user("What is the weather in Paris?")]);
    let request = |history: &History| LlmRequest {
        system_prompt: Some("You report the weather.".into()),
        messages: history.clone(),
        tools: vec![tool.clone()].into(),
        ..Default::default()
    };

    // 1. Thinking, then a streamed tool call.
    let (chunks, first) = streamed(&llm, request(&history)).await;
    assert_eq!(first.finish_reason, FinishReason::ToolCalls, "{chunks:?}");
    let call = first.message.tool_calls[0].clone();
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("toolu_weather_1", "get_weather")
    );
    assert_eq!(
        call.parsed_arguments(),
        json!({"city": "Paris", "unit": "celsius"})
    );
    let thought = first
        .message
        .reasoning()
        .next()
        .expect("the thinking block is kept");
    assert_eq!(
        thought.signature.as_deref(),
        Some("EqQBCkgIARABGAIiQLaimock+sig/==")
    );
    assert!(thought.text.contains("weather tool"), "{thought:?}");
    assert!(first.reasoning.is_some_and(|r| r.contains("weather tool")));

    // The same, not streamed.
    let whole = llm
        .call(request(&history), &TurnContext::new("t", "c"))
        .await
        .unwrap();
    assert_eq!(whole.message.tool_calls, first.message.tool_calls);
    assert_eq!(whole.message.reasoning().next(), Some(thought));

    // 2. The result goes back after the thinking block (aimock refuses the
    // continuation otherwise, as the API does); the model answers.
    history.push(first.message.clone());
    history.push(ToolResult::json(&call.id, &json!({"temp_c": 18, "sky": "sunny"})).into_message());
    let (_, answer) = streamed(&llm, request(&history)).await;
    assert_eq!(
        answer.message.text(),
        "It is 18 degrees and sunny in Paris."
    );
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    let whole = llm
        .call(request(&history), &TurnContext::new("t", "c"))
        .await
        .unwrap();
    assert_eq!(whole.message.text(), "It is 18 degrees and sunny in Paris.");
}
