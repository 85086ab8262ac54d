//! Turn throughput over HTTP: whole turns (three model
//! calls, four tool calls) through `AgentLoop` + `LiteLlmProvider` against a
//! fast OpenAI-compatible mock in another process, next to a bare reqwest loop
//! sending the same requests (the floor). Prints one JSON line per case.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    History, Message, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult, TurnContext,
};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_loop::AgentLoop;
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::{Value, json};

const TURNS: usize = 1000;
const TOOL_RESULTS_PER_TURN: usize = 4;

fn mock_reply(body: &Value) -> FixtureReply {
    let results = body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    if results < TOOL_RESULTS_PER_TURN {
        let k = results / 2;
        let (a, b) = (format!("c{k}a"), format!("c{k}b"));
        FixtureReply::json(openai::tool_calls_completion(&[
            (&a, "noop_a", "{}"),
            (&b, "noop_b", "{}"),
        ]))
    } else {
        FixtureReply::json(openai::completion("done"))
    }
}

/// The mock runs in its own process so that its CPU time is not ours.
fn run_mock() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let fixture = OpenAiFixture::start_responder(Duration::ZERO, Arc::new(mock_reply))
            .await
            .unwrap();
        println!("{}", fixture.base_url());
        std::io::stdout().flush().unwrap();
        // Live until the parent closes our stdin.
        tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
        })
        .await
        .unwrap();
    });
}

struct NoopTools;

#[async_trait]
impl ToolProvider for NoopTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(tool_defs())
    }
    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        ToolResult::text(&call.id, "ok")
    }
}

fn tool_defs() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::without_parameters("noop_a", "does nothing"),
        ToolDefinition::without_parameters("noop_b", "does nothing"),
    ]
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields
        .get(11)
        .and_then(|u| u.parse::<f64>().ok())
        .unwrap_or(0.0)
        + fields
            .get(12)
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(0.0);
    ticks / 100.0
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs `TURNS` turns with `concurrency` in flight; returns (wall, per-turn latencies, cpu).
async fn drive<F, Fut>(concurrency: usize, turn: F) -> (Duration, Vec<Duration>, f64)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let turn = Arc::new(turn);
    let next = Arc::new(AtomicUsize::new(0));
    let cpu0 = cpu_seconds();
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (turn, next) = (turn.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= TURNS {
                    break;
                }
                let t = Instant::now();
                turn(i).await;
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut latencies = Vec::with_capacity(TURNS);
    for w in workers {
        latencies.extend(w.await.unwrap());
    }
    let wall = started.elapsed();
    latencies.sort();
    (wall, latencies, cpu_seconds() - cpu0)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
}

async fn bare_turn(client: &reqwest::Client, url: &str, tools: &Value) {
    let mut messages = vec![
        json!({"role": "system", "content": "bench"}),
        json!({"role": "user", "content": "go"}),
    ];
    for _ in 0..3 {
        let body = json!({"model": "bench-model", "messages": messages, "tools": tools});
        let response: Value = client
            .post(url)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let message = response["choices"][0]["message"].clone();
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages.push(message);
        if calls.is_empty() {
            return;
        }
        for call in calls {
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": "ok"}));
        }
    }
}

fn main() {
    if std::env::var("BENCH_ROLE").as_deref() == Ok("mock") {
        return run_mock();
    }
    let mut mock = Command::new(std::env::current_exe().unwrap())
        .env("BENCH_ROLE", "mock")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the mock process");
    let mut base = String::new();
    BufReader::new(mock.stdout.take().unwrap())
        .read_line(&mut base)
        .unwrap();
    let base = base.trim().to_owned();
    let url = format!("{base}/chat/completions");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tools_json: Value = json!(tool_defs()
            .iter()
            .map(|d| json!({"type": "function", "function": {"name": d.name, "description": d.description, "parameters": d.parameters}}))
            .collect::<Vec<_>>());
        let client = reqwest::Client::new();
        let provider = LiteLlmProvider::with_http_client(LiteLlmConfig::new(base.clone(), "bench-model"), client.clone()).unwrap();
        // The same loop with its default layers (retry around the model, a
        // 30 s timeout around the tools) and without them: what the layers cost.
        let agent = AgentLoop::builder(provider).system_prompt("bench").tools(NoopTools).stream(false).build();
        let unlayered_provider = LiteLlmProvider::with_http_client(LiteLlmConfig::new(base.clone(), "bench-model"), client.clone()).unwrap();
        let unlayered = AgentLoop::builder(unlayered_provider).system_prompt("bench").tools(NoopTools).stream(false).without_default_layers().build();
        // Warm up both paths.
        for _ in 0..50 {
            bare_turn(&client, &url, &tools_json).await;
        }
        for concurrency in [1usize, 100, 1000] {
            let (c, u, t) = (client.clone(), url.clone(), tools_json.clone());
            let (bare_wall, bare_lat, bare_cpu) = drive(concurrency, move |_| {
                let (c, u, t) = (c.clone(), u.clone(), t.clone());
                async move { bare_turn(&c, &u, &t).await }
            })
            .await;
            let a = agent.clone();
            let (wall, lat, cpu) = drive(concurrency, move |i| {
                let a = a.clone();
                async move {
                    let mut s = a.start_turn(History::from(vec![Message::user("go")]), TurnContext::new(format!("t{i}"), format!("c{i}")));
                    while s.next().await.is_some() {}
                }
            })
            .await;
            let b = unlayered.clone();
            let (plain_wall, plain_lat, plain_cpu) = drive(concurrency, move |i| {
                let b = b.clone();
                async move {
                    let mut s = b.start_turn(History::from(vec![Message::user("go")]), TurnContext::new(format!("u{i}"), format!("c{i}")));
                    while s.next().await.is_some() {}
                }
            })
            .await;
            let plain_tps = TURNS as f64 / plain_wall.as_secs_f64();
            let plain_cpu_ms = plain_cpu * 1e3 / TURNS as f64;
            println!(
                "{{\"bench\":\"turn_throughput\",\"case\":\"AgentLoop without its default layers, concurrency {concurrency}\",\"unit\":\"ms\",\"median\":{:.3},\"p99\":{:.3},\"turns_per_s\":{plain_tps:.1},\"cpu_ms_per_turn\":{plain_cpu_ms:.3},\"notes\":\"{plain_tps:.0} turns/s, {plain_cpu_ms:.3} ms CPU/turn: the same loop with retry and tool timeout layers is the next row (the layers cost the difference, same run)\"}}",
                pct(&plain_lat, 0.5), pct(&plain_lat, 0.99)
            );
            let tps = TURNS as f64 / wall.as_secs_f64();
            let bare_tps = TURNS as f64 / bare_wall.as_secs_f64();
            let ratio = tps / bare_tps;
            let cpu_ms = cpu * 1e3 / TURNS as f64;
            let bare_cpu_ms = bare_cpu * 1e3 / TURNS as f64;
            println!(
                "{{\"bench\":\"turn_throughput\",\"case\":\"AgentLoop + LiteLlmProvider, concurrency {concurrency}\",\"unit\":\"ms\",\"median\":{:.3},\"p99\":{:.3},\"turns_per_s\":{tps:.1},\"cpu_ms_per_turn\":{cpu_ms:.3},\"ratio_to_bare\":{ratio:.3},\"peak_rss_mb\":{:.1},\"notes\":\"{tps:.0} turns/s, {cpu_ms:.3} ms CPU/turn, {ratio:.2}x the bare loop's throughput, peak RSS {:.0} MB\"}}",
                pct(&lat, 0.5), pct(&lat, 0.99), peak_rss_mb(), peak_rss_mb()
            );
            println!(
                "{{\"bench\":\"turn_throughput\",\"case\":\"bare reqwest loop (floor), concurrency {concurrency}\",\"unit\":\"ms\",\"median\":{:.3},\"p99\":{:.3},\"turns_per_s\":{bare_tps:.1},\"cpu_ms_per_turn\":{bare_cpu_ms:.3},\"notes\":\"{bare_tps:.0} turns/s, {bare_cpu_ms:.3} ms CPU/turn\"}}",
                pct(&bare_lat, 0.5), pct(&bare_lat, 0.99)
            );
        }
    });
    drop(mock.stdin.take());
    let _ = mock.wait();
    println!(
        "# Per-turn figures are whole-turn latencies (the mock answers at once, so they are all overhead: client, server, loop). CPU is this process only; the mock runs in a child process. Budget (ARCHITECTURE.md): at least 0.8x the bare loop's throughput at 100 turns in flight, 0.3 ms CPU per turn or less."
    );
}
