//! The chat page (`A2aServerBuilder::web_ui`) driven in headless Chromium:
//! `tests/fixtures/web_ui.cjs` (Playwright through npm `playwright-core`)
//! chats with two in-process servers (one open, one behind a bearer token)
//! whose Agents run a scripted model with a `sleep` tool, and saves
//! screenshots under `$CARGO_TARGET_TMPDIR/web-ui/`;
//! `tests/fixtures/web_timeline.cjs` opens the turn timeline of a server
//! that keeps execution records and prices the scripted model, and checks
//! the page with axe-core.
//!
//! Chromium and playwright-core come from `scripts/provision.sh chromium`;
//! without them this test fails, unless `LOOOPY_SKIP_EXTERNAL=1`.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream;
use looopy_a2a::{AgentCardConfig, AgentRunner, AuthConfig};
use looopy_agent::Agent;
use looopy_core::models::{ModelRef, ProviderKind};
use looopy_core::pricing::{Price, PriceTable};
use looopy_core::store::{RecordStore, TaskRecordStore};
use looopy_core::{
    AgentEvent, Artifact, EventPayload, LlmChunk, LlmError, LlmProvider, LlmRequest, LlmResponse,
    LlmStream, Message, Part, Role, TaskState, TaskStatus, ToolCall, ToolDefinition, ToolFailure,
    ToolProvider, ToolResult, TurnContext,
};
use looopy_testkit::external::browser;
use looopy_tools::LocalTools;
use serde_json::json;
use support::*;

const TOKEN: &str = "let-me-in";

/// A model that answers from the user's words: "model down" fails as an
/// unreachable model, "slow" calls `sleep` for a minute, "tool" calls it for
/// a second, anything else is echoed with the number of the user's messages
/// in the conversation. Text is streamed in small chunks.
struct DemoLlm;

#[async_trait]
impl LlmProvider for DemoLlm {
    fn provider_name(&self) -> &str {
        "openai"
    }

    fn model_name(&self) -> &str {
        DEMO_MODEL
    }

    async fn call(&self, request: LlmRequest, _cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        let last = request.messages.last().unwrap();
        if last.role == Role::Tool {
            let text = format!("The tool said: {}", last.text());
            return Ok(LlmResponse::text(text).with_usage(usage(40, 9)));
        }
        let text = last.text();
        let sleep = |ms: u64| {
            let call = ToolCall::new(
                format!("call-{}", uuid()),
                "sleep",
                json!({ "ms": ms }).to_string(),
            );
            Ok(LlmResponse::tool_calls("", vec![call]).with_usage(usage(30, 6)))
        };
        if text.contains("model down") {
            Err(LlmError::Connection {
                message: "connection refused (127.0.0.1:9)".into(),
            })
        } else if text.contains("delegate") {
            let call = ToolCall::new(
                format!("call-{}", uuid()),
                "delegate",
                r#"{"task":"look it up"}"#,
            );
            Ok(LlmResponse::tool_calls("", vec![call]).with_usage(usage(30, 6)))
        } else if text.contains("broken tool") {
            // A tool whose service does not answer: the call times out.
            let call = ToolCall::new(format!("call-{}", uuid()), "lookup", r#"{"city":"Oslo"}"#);
            Ok(LlmResponse::tool_calls("", vec![call]).with_usage(usage(30, 6)))
        } else if text.contains("slow") {
            sleep(60_000)
        } else if text.contains("tool") {
            sleep(1000)
        } else {
            let n = request
                .messages
                .iter()
                .filter(|m| m.role == Role::User)
                .count();
            let answer = format!("Echo: {text} (message {n} of this conversation)");
            Ok(LlmResponse::text(answer).with_usage(usage(25, 11)))
        }
    }

    fn stream<'a>(&'a self, request: LlmRequest, cx: &'a TurnContext) -> LlmStream<'a> {
        stream::once(async move { self.call(request, cx).await })
            .flat_map(|result| match result {
                Ok(response) => stream::iter(small_chunks(response.into_chunks()))
                    .then(|c| async move {
                        tokio::time::sleep(Duration::from_millis(40)).await;
                        Ok(c)
                    })
                    .boxed(),
                Err(e) => stream::once(async move { Err(e) }).boxed(),
            })
            .boxed()
    }
}

/// Text deltas cut into pieces of a few characters.
fn small_chunks(chunks: Vec<LlmChunk>) -> Vec<LlmChunk> {
    let mut out = Vec::new();
    for c in chunks {
        match c {
            LlmChunk::TextDelta(text) => {
                let chars: Vec<char> = text.chars().collect();
                for piece in chars.chunks(6) {
                    out.push(LlmChunk::TextDelta(piece.iter().collect()));
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `sleep {"ms": n}`: waits, or stops when the turn is cancelled.
/// `lookup {"city"}`: fails as timed out.
/// `delegate {"task"}`: reports what the agent it calls does (a working
/// status with text, then its answer in two chunks), as a remote agent
/// tool does, and answers `delegated`.
fn sleep_tool() -> Arc<dyn ToolProvider> {
    let schema = json!({
        "type": "object",
        "properties": {"ms": {"type": "integer", "description": "How long"}},
        "required": ["ms"]
    });
    Arc::new(
        LocalTools::new()
            .raw_tool(
                ToolDefinition::new(
                    "lookup",
                    "Looks up the weather",
                    json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                ),
                |call: ToolCall, _cx| async move {
                    ToolResult::failed(
                        call.id,
                        ToolFailure::Timeout,
                        "the weather service did not answer",
                    )
                },
            )
            .raw_tool(
                ToolDefinition::new("sleep", "Sleeps for a while", schema),
                |call: ToolCall, cx| async move {
                    let ms = call.parsed_arguments()["ms"].as_u64().unwrap_or(0);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(ms)) => {
                            ToolResult::text(call.id, format!("slept {ms} ms"))
                        }
                        () = cx.cancel.cancelled() => ToolResult::error(call.id, "cancelled"),
                    }
                },
            )
            .raw_tool(
                ToolDefinition::new(
                    "delegate",
                    "Asks another agent",
                    json!({"type": "object", "properties": {"task": {"type": "string"}}}),
                ),
                |call: ToolCall, cx| async move {
                    let remote =
                        |payload| AgentEvent::new("remote-1".into(), "remote-ctx".into(), payload);
                    let chunk = |text: &str, append| EventPayload::ArtifactUpdate {
                        artifact: Artifact::new("sub-answer", vec![Part::text(text)]),
                        append,
                        last_chunk: append,
                    };
                    let updates = [
                        remote(EventPayload::StatusUpdate {
                            status: TaskStatus::new(TaskState::Working)
                                .with_message(Message::assistant("looking it up")),
                            is_final: false,
                            metadata: Default::default(),
                        }),
                        remote(chunk("The answer ", false)),
                        remote(chunk("is 42.", true)),
                    ];
                    if let Some(sink) = &cx.events {
                        for event in updates {
                            sink.emit(EventPayload::SubAgent {
                                path: format!("{}/remote-1", cx.task_id),
                                tool: "delegate".into(),
                                call_id: call.id.clone(),
                                event: Box::new(event),
                            });
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                    ToolResult::text(call.id, "delegated")
                },
            ),
    )
}

/// The Agents of a server, writing execution records into `records` when
/// given.
fn runner(records: Option<Arc<dyn RecordStore>>) -> AgentRunner {
    let stores = looopy_stores_memory::stores();
    let tools = sleep_tool();
    AgentRunner::new(move |context_id, owner| {
        let builder = match &records {
            Some(records) => Agent::builder(context_id).record_store(records.clone()),
            None => Agent::builder(context_id).without_records(),
        };
        builder
            .llm(DemoLlm)
            .system_prompt("Be brief.")
            .message_store(stores.messages.clone())
            .artifact_store(stores.artifacts.clone())
            .state_store(stores.agents.clone())
            .turn_lock(stores.locks.clone())
            .tools(tools.clone())
            // "model down" fails at once, as the page shows it, rather than
            // after the default retries.
            .configure_loop(|l| l.retry(looopy_loop::layers::RetryPolicy::none()))
            .owner(owner)
            .build()
    })
}

async fn web_server(auth: AuthConfig) -> TestServer {
    let stores = SharedStores::default();
    let server = builder(runner(None), &stores)
        .card(AgentCardConfig::new("Web test agent", "Echoes and sleeps"))
        .auth(auth)
        .web_ui(true)
        .build();
    serve(server, &stores).await
}

/// The scripted model's name, priced by [`timeline_server`].
const DEMO_MODEL: &str = "demo-model";

/// A server that keeps execution records and prices [`DEMO_MODEL`] at
/// $1,000 per million prompt tokens and $2,000 per million generated ones.
async fn timeline_server() -> TestServer {
    let records: Arc<dyn RecordStore> = Arc::new(looopy_stores_memory::MemoryRecordStore::new());
    let stores = SharedStores::default();
    let prices = PriceTable::builtin().with_price(
        ModelRef::new(ProviderKind::OpenAi, DEMO_MODEL),
        Price::new(1000.0, 2000.0),
    );
    let server = builder(runner(Some(records.clone())), &stores)
        .card(AgentCardConfig::new("Timeline agent", "Echoes and sleeps"))
        .web_ui(true)
        .execution_records(records)
        .prices(prices)
        .build();
    serve(server, &stores).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_timeline_works_in_a_real_browser() {
    let Some(browser) = browser() else {
        return;
    };
    let server = timeline_server().await;
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-ui");
    std::fs::create_dir_all(&shots).unwrap();
    let env: [(&str, &dyn AsRef<OsStr>); 2] = [("URL", &server.url), ("SHOTS", &shots)];
    let run = browser
        .run_script(&fixture("web_timeline.cjs"), &env, Duration::from_secs(180))
        .await
        .unwrap();
    eprintln!("screenshots in {}", shots.display());
    assert!(run.all_ok(), "the browser script failed: {run:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_page_works_in_a_real_browser() {
    let Some(browser) = browser() else {
        return;
    };

    let open = web_server(AuthConfig::none()).await;
    let guarded = web_server(AuthConfig::none().bearer(TOKEN, "alice")).await;
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-ui");
    std::fs::create_dir_all(&shots).unwrap();

    let env: [(&str, &dyn AsRef<OsStr>); 4] = [
        ("OPEN_URL", &open.url),
        ("AUTH_URL", &guarded.url),
        ("TOKEN", &TOKEN),
        ("SHOTS", &shots),
    ];
    let run = browser
        .run_script(&fixture("web_ui.cjs"), &env, Duration::from_secs(240))
        .await
        .unwrap();
    eprintln!("screenshots in {}", shots.display());
    assert!(run.all_ok(), "the browser script failed: {run:?}");

    // What the page did is what the servers recorded.
    let records = open.tasks.list(None, None, 100).await.unwrap();
    let states: Vec<TaskState> = records.iter().map(|r| r.status.state).collect();
    assert!(states.contains(&TaskState::Canceled), "{states:?}");
    assert!(states.contains(&TaskState::Failed), "{states:?}");
    let mut contexts: Vec<&str> = records.iter().map(|r| r.context_id.as_str()).collect();
    contexts.sort_unstable();
    contexts.dedup();
    assert_eq!(contexts.len(), 2, "two conversations: {contexts:?}");
    let alice = guarded.tasks.list(Some("alice"), None, 100).await.unwrap();
    assert!(!alice.is_empty(), "the page sent alice's token");
    assert_eq!(
        guarded.tasks.list(None, None, 100).await.unwrap().len(),
        alice.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_is_served_with_a_strict_policy() {
    let server = web_server(AuthConfig::none().bearer(TOKEN, "alice")).await;
    // The page needs no token (it holds no data); the API does.
    let page = http().get(format!("{}/", server.url)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let h = page.headers().clone();
    assert!(h["content-type"].to_str().unwrap().starts_with("text/html"));
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"));
    assert_eq!(h["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    for script in [
        "web/client.js",
        "web/markdown.js",
        "web/view.js",
        "web/app.js",
    ] {
        assert!(html.contains(script), "{script}");
    }
    // Nothing from elsewhere.
    assert!(!html.contains("http://") && !html.contains("https://"));
    for (path, kind) in [
        ("web/app.js", "text/javascript"),
        ("web/client.js", "text/javascript"),
        ("web/view.js", "text/javascript"),
        ("web/markdown.js", "text/javascript"),
        ("web/app.css", "text/css"),
    ] {
        let r = http()
            .get(format!("{}/{path}", server.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
    }
    // POST / is still the JSON-RPC endpoint.
    let (status, _) = rpc_raw(&server.url, Some("1.0"), &[], "{}".into()).await;
    assert_eq!(status, 401);

    // Without web_ui there is no page.
    let plain = start(ScriptedRunner::hello()).await;
    let r = http().get(format!("{}/", plain.url)).send().await.unwrap();
    assert_eq!(r.status(), 405);
    let r = http()
        .get(format!("{}/web/app.js", plain.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
