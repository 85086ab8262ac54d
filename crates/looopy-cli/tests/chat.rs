//! `looopy chat` against a `looopy serve` child: tool calls and token usage
//! as the turn runs, Ctrl-C (SIGINT) cancelling a turn and a second one
//! leaving, and a stream cut in the middle resumed without losing or
//! repeating anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::Write;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture, SseEvent, SseReply};
use support::{BIN, Captured, Running, config_with_model, interrupt, serve_running};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `looopy chat <url>` with piped stdin, stdout and stderr.
fn chat(url: &str) -> (Running, ChildStdin, Captured, Captured) {
    let mut child = Command::new(BIN)
        .args(["chat", url])
        .env_remove("LOOOPY_TOKEN")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = Captured::spawn(child.stdout.take().unwrap());
    let err = Captured::spawn(child.stderr.take().unwrap());
    (Running::new(child), stdin, out, err)
}

/// A config on `llm` that does not retry failed model calls.
fn config_for(llm: &OpenAiFixture) -> (tempfile::TempDir, std::path::PathBuf) {
    config_with_model(llm, "m", "max_retries = 0\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_shows_tool_calls_token_usage_and_the_trace_id() {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::sse(vec![
        openai::tool_call_start_chunk(0, "call-1", "lookup"),
        openai::tool_args_chunk(0, r#"{"q":"weather"}"#),
        openai::finish_chunk("tool_calls"),
        openai::usage_chunk(7, 3),
    ]));
    llm.push(FixtureReply::sse(vec![
        openai::text_chunk("No such tool, sorry."),
        openai::finish_chunk("stop"),
        openai::usage_chunk(20, 5),
    ]));
    let (_dir, config) = config_for(&llm);
    // The server exports its traces: chat shows the turn's trace id.
    let (otlp, received) = support::otlp_receiver().await;
    let traces = format!("{otlp}/v1/traces");
    let (server, url) = serve_running(
        &config,
        &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.as_str())],
    );
    let (out, err) = tokio::task::spawn_blocking(move || {
        let (child, mut stdin, out, err) = chat(&url);
        stdin.write_all(b"what is the weather?\n").unwrap();
        drop(stdin);
        let status = child.wait();
        assert!(status.success(), "{}", err.to_end());
        (out.to_end(), err.to_end())
    })
    .await
    .unwrap();
    assert!(out.contains("No such tool, sorry."), "{out}");
    assert!(err.contains(r#"  → lookup {"q":"weather"}"#), "{err}");
    assert!(err.contains("  ← lookup (unknown tool, "), "{err}");
    // Both model calls: 27 in, 8 out.
    assert!(
        err.contains("tokens: 27 in, 8 out, 35 total · trace "),
        "{err}"
    );
    let shown = err.split("· trace ").nth(1).unwrap()[..32].to_owned();
    // Stopping the server flushes its spans.
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    let exported: std::collections::HashSet<String> = support::exported_spans(&received)
        .iter()
        .map(|s| s.trace_id.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    assert!(exported.contains(&shown), "{shown} not in {exported:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_turn_and_a_second_ctrl_c_leaves() {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Sse(SseReply::from_events(vec![
        // The server holds a text chunk back until the next one comes
        // (to mark the last), so two come before the pause.
        SseEvent::Json(openai::text_chunk("Thinking")),
        SseEvent::Json(openai::text_chunk("...")),
        SseEvent::Pause(Duration::from_secs(60)),
        SseEvent::Json(openai::text_chunk(" never shown")),
    ])));
    let (_dir, config) = config_for(&llm);
    let (server, url) = serve_running(&config, &[]);
    let (err, status) = tokio::task::spawn_blocking(move || {
        let (child, mut stdin, out, err) = chat(&url);
        stdin.write_all(b"think hard\n").unwrap();
        out.wait_for("Thinking");
        interrupt(&child);
        let shown = err.wait_for("[canceled]");
        assert!(shown.contains("stopping the turn"), "{shown}");
        // Back at the prompt: the session goes on until a second Ctrl-C.
        interrupt(&child);
        let status = child.wait();
        drop(stdin);
        (err.to_end(), status)
    })
    .await
    .unwrap();
    assert!(status.success(), "{status:?}: {err}");
    assert!(!err.contains("never shown"));
    assert_eq!(llm.requests().len(), 1);
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
}

/// A TCP proxy on `listener` to `upstream` that cuts the first connection
/// whose response has carried an artifact update (the answer's first
/// chunk), once. True in the flag once it did.
fn cutting_proxy(listener: tokio::net::TcpListener, upstream: String) -> Arc<AtomicBool> {
    let cut = Arc::new(AtomicBool::new(false));
    let cut_flag = cut.clone();
    tokio::spawn(async move {
        loop {
            let (mut client, _) = listener.accept().await.unwrap();
            let upstream = upstream.clone();
            let cut = cut_flag.clone();
            tokio::spawn(async move {
                let mut server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                let (mut cr, mut cw) = client.split();
                let (mut sr, mut sw) = server.split();
                let up = tokio::io::copy(&mut cr, &mut sw);
                let down = async {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 8192];
                    loop {
                        let n = sr.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        cw.write_all(&buf[..n]).await.unwrap_or(());
                        seen.extend_from_slice(&buf[..n]);
                        let has_chunk = seen.windows(14).any(|w| w == b"artifactUpdate");
                        if has_chunk && !cut.swap(true, Ordering::SeqCst) {
                            return; // drops both sides: the stream breaks
                        }
                    }
                };
                tokio::select! {
                    _ = up => {}
                    () = down => {}
                }
            });
        }
    });
    cut
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_in_the_middle_is_resumed_without_loss_or_repeats() {
    // The turn still runs when the chat resubscribes: the rest comes in chunks.
    cut_and_resumed(Duration::from_millis(1500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_before_the_turn_ends_prints_the_rest_once() {
    // The turn ends before the chat resubscribes (200 ms after the cut):
    // the resumed stream starts with the finished task, and the chat prints
    // what it had not shown of the answer. (Without a pause the whole
    // stream may pass the proxy in one read, before its cut.)
    cut_and_resumed(Duration::from_millis(50)).await;
}

/// A chat whose first turn's stream is cut after its first chunk, the
/// model's answer pausing `pause` before its last piece: every part of the
/// answer is printed once, and the session goes on.
async fn cut_and_resumed(pause: Duration) {
    let llm = OpenAiFixture::start().await.unwrap();
    llm.push(FixtureReply::Sse(SseReply::from_events(vec![
        SseEvent::Json(openai::text_chunk("Part one. ")),
        SseEvent::Json(openai::text_chunk("Part two")),
        SseEvent::Pause(pause),
        SseEvent::Json(openai::text_chunk(".")),
        SseEvent::Json(openai::finish_chunk("stop")),
    ])));
    llm.push(FixtureReply::Text("Second turn works.".into()));
    // The card must send clients through the proxy: its URL is the public one.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = format!("http://{}", listener.local_addr().unwrap());
    let rest = format!("max_retries = 0\n[server]\npublic_url = \"{proxy}\"\n");
    let (_dir, config) = config_with_model(&llm, "m", &rest);
    let (server, url) = serve_running(&config, &[]);
    let cut = cutting_proxy(listener, url.trim_start_matches("http://").to_owned());
    let (out, err, status) = tokio::task::spawn_blocking(move || {
        let (child, mut stdin, out, err) = chat(&proxy);
        stdin.write_all(b"tell me in two parts\n").unwrap();
        out.wait_for("Part two.");
        stdin.write_all(b"and again\n").unwrap();
        out.wait_for("Second turn works.");
        drop(stdin);
        let status = child.wait();
        (out.to_end(), err.to_end(), status)
    })
    .await
    .unwrap();
    assert!(cut.load(Ordering::SeqCst), "the proxy cut a stream");
    assert!(status.success(), "{err}");
    assert!(err.contains("resubscribing"), "{err}");
    assert_eq!(out.matches("Part one.").count(), 1, "{out}");
    assert_eq!(out.matches("Part two.").count(), 1, "{out}");
    // The session went on in the same conversation.
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body["messages"]
            .to_string()
            .contains("Part one. Part two."),
        "{}",
        requests[1].body
    );
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
}
