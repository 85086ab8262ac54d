//! Turn throughput over HTTP: whole turns (three model
//! calls, four tool calls) through `AgentLoop` + `LiteLlmProvider` against a
//! fast OpenAI-compatible mock in another process, next to a bare reqwest loop
//! sending the same requests (the floor), each with whole answers and
//! streamed ones. Prints one JSON line per case. It runs on the system
//! allocator, as a program using the library does unless it installs
//! another (the serving benches run on `looopy_bench::Allocator`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

// The workload of the serving benches (the mock model, the tools, the bare
// streaming loop), so that both measure the same turns.
#[path = "serve/process.rs"]
mod process;
#[path = "serve/workload.rs"]
mod workload;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use looopy_bench::{cpu_seconds, median, ms, peak_rss_kb, percentile};
use looopy_core::{History, Message, TurnContext};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider};
use looopy_loop::AgentLoop;
use serde_json::{Value, json};
use workload::{NoopTools, tools_json};

const TURNS: usize = 1000;

/// Runs `TURNS` turns with `concurrency` in flight; returns (wall, per-turn latencies, cpu).
async fn drive<F, Fut>(concurrency: usize, turn: F) -> (Duration, Vec<Duration>, f64)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let turn = Arc::new(turn);
    let next = Arc::new(AtomicUsize::new(0));
    let cpu0 = cpu_seconds(None);
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
    (wall, latencies, cpu_seconds(None) - cpu0)
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

/// One row of the output.
fn row(case: &str, lat: &[Duration], tps: f64, cpu_ms: f64, extra: &str, notes: &str) {
    println!(
        "{{\"bench\":\"turn_throughput\",\"case\":\"{case}\",\"unit\":\"ms\",\"median\":{:.3},\"p99\":{:.3},\"turns_per_s\":{tps:.1},\"cpu_ms_per_turn\":{cpu_ms:.3}{extra},\"notes\":\"{notes}\"}}",
        ms(percentile(lat, 0.5)),
        ms(percentile(lat, 0.99))
    );
}

/// Runs one loop turn to its end.
async fn loop_turn(agent: &AgentLoop, i: usize) {
    let mut s = agent.start_turn(
        History::from(vec![Message::user("go")]),
        TurnContext::new(format!("t{i}"), format!("c{i}")),
    );
    while s.next().await.is_some() {}
}

/// Rounds of each comparison (`BENCH_ROUNDS`). The AgentLoop
/// and the bare loop alternate within a round, each going first in every
/// other round, and a ratio is the median of the ratios within each round:
/// one run of 1,000 turns at concurrency 100 lasts a fifth of a second, so
/// a single pair of runs reads the machine's moment more than the code.
const ROUNDS: usize = 5;

/// The runs of one side of a comparison.
#[derive(Default)]
struct Runs {
    turns_per_s: Vec<f64>,
    latencies: Vec<Duration>,
    cpu: f64,
}

impl Runs {
    fn add(&mut self, (wall, latencies, cpu): (Duration, Vec<Duration>, f64)) {
        self.turns_per_s.push(TURNS as f64 / wall.as_secs_f64());
        self.latencies.extend(latencies);
        self.cpu += cpu;
    }

    /// Median turns/s, every turn's latency sorted, CPU ms per turn.
    fn summary(mut self) -> (f64, Vec<Duration>, f64) {
        self.latencies.sort();
        let turns = (TURNS * self.turns_per_s.len()) as f64;
        (
            median(&self.turns_per_s),
            self.latencies,
            self.cpu * 1e3 / turns,
        )
    }
}

/// Measures `agent` against `bare` at one concurrency, in alternated
/// rounds ([`rounds`]), and prints the two rows.
async fn compare<B, BF>(label: &str, concurrency: usize, agent: &AgentLoop, bare: B)
where
    B: Fn() -> BF + Send + Sync + 'static,
    BF: std::future::Future<Output = ()> + Send,
{
    let bare = Arc::new(bare);
    let rounds = looopy_bench::rounds(ROUNDS);
    let (mut bare_runs, mut loop_runs) = (Runs::default(), Runs::default());
    for round in 0..rounds {
        let run_bare = || {
            let b = bare.clone();
            drive(concurrency, move |_| b())
        };
        let run_loop = || {
            let a = agent.clone();
            drive(concurrency, move |i| {
                let a = a.clone();
                async move { loop_turn(&a, i).await }
            })
        };
        if round % 2 == 0 {
            bare_runs.add(run_bare().await);
            loop_runs.add(run_loop().await);
        } else {
            loop_runs.add(run_loop().await);
            bare_runs.add(run_bare().await);
        }
    }
    let ratios: Vec<f64> = (loop_runs.turns_per_s.iter())
        .zip(&bare_runs.turns_per_s)
        .map(|(a, b)| a / b)
        .collect();
    let ratio = median(&ratios);
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(0.0, f64::max);
    let (tps, lat, cpu_ms) = loop_runs.summary();
    let (bare_tps, bare_lat, bare_cpu_ms) = bare_runs.summary();
    let rss = peak_rss_kb() as f64 / 1024.0;
    row(
        &format!("AgentLoop + LiteLlmProvider{label}, concurrency {concurrency}"),
        &lat,
        tps,
        cpu_ms,
        &format!(
            ",\"ratio_to_bare\":{ratio:.3},\"ratio_to_bare_min\":{low:.3},\"ratio_to_bare_max\":{high:.3},\"rounds\":{rounds},\"peak_rss_mb\":{rss:.1}"
        ),
        &format!(
            "{tps:.0} turns/s, {cpu_ms:.3} ms CPU/turn, {ratio:.2}x the bare loop's throughput ({low:.2}-{high:.2} over {rounds} rounds), peak RSS {rss:.0} MB"
        ),
    );
    row(
        &format!("bare reqwest loop (floor){label}, concurrency {concurrency}"),
        &bare_lat,
        bare_tps,
        bare_cpu_ms,
        "",
        &format!("{bare_tps:.0} turns/s, {bare_cpu_ms:.3} ms CPU/turn"),
    );
}

fn main() {
    if std::env::var("BENCH_ROLE").as_deref() == Ok("mock") {
        return workload::run_mock();
    }
    let (mock, base) = process::spawn("mock", &[]);
    let url = format!("{base}/chat/completions");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tools_json = tools_json();
        let client = reqwest::Client::new();
        let provider = |c: &reqwest::Client| {
            LiteLlmProvider::with_http_client(LiteLlmConfig::new(base.clone(), "bench-model"), c.clone()).unwrap()
        };
        // The same loop with its default layers (retry around the model, a
        // 30 s timeout around the tools) and without them: what the layers cost.
        let agent = AgentLoop::builder(provider(&client)).system_prompt("bench").tools(NoopTools).stream(false).build();
        let unlayered = AgentLoop::builder(provider(&client)).system_prompt("bench").tools(NoopTools).stream(false).without_default_layers().build();
        let streaming = AgentLoop::builder(provider(&client)).system_prompt("bench").tools(NoopTools).stream(true).build();
        // Warm up both paths.
        for _ in 0..50 {
            bare_turn(&client, &url, &tools_json).await;
            workload::bare_turn(&client, &url, &tools_json, &mut |_| {}).await;
        }
        for concurrency in [1usize, 100, 1000] {
            let b = unlayered.clone();
            let (plain_wall, plain_lat, plain_cpu) = drive(concurrency, move |i| {
                let b = b.clone();
                async move { loop_turn(&b, i).await }
            })
            .await;
            let plain_tps = TURNS as f64 / plain_wall.as_secs_f64();
            let plain_cpu_ms = plain_cpu * 1e3 / TURNS as f64;
            row(
                &format!("AgentLoop without its default layers, concurrency {concurrency}"),
                &plain_lat,
                plain_tps,
                plain_cpu_ms,
                "",
                &format!("{plain_tps:.0} turns/s, {plain_cpu_ms:.3} ms CPU/turn: the same loop with retry and tool timeout layers is the next row (the layers cost the difference, same run)"),
            );
            let (c, u, t) = (client.clone(), url.clone(), tools_json.clone());
            compare("", concurrency, &agent, move || {
                let (c, u, t) = (c.clone(), u.clone(), t.clone());
                async move { bare_turn(&c, &u, &t).await }
            })
            .await;
            let (c, u, t) = (client.clone(), url.clone(), tools_json.clone());
            compare(", streamed", concurrency, &streaming, move || {
                let (c, u, t) = (c.clone(), u.clone(), t.clone());
                async move { workload::bare_turn(&c, &u, &t, &mut |_| {}).await }
            })
            .await;
        }
    });
    process::stop(mock);
    println!(
        "# Per-turn figures are whole-turn latencies (the mock answers at once, so they are all overhead: client, server, loop). CPU is this process only; the mock runs in a child process. Streamed rows: the model's answers as server-sent events (the text in five chunks), the bare loop parsing them from the bytes. Each comparison runs in rounds (BENCH_ROUNDS, default 5), the AgentLoop and the bare loop alternating and each going first in every other round: a row's turns/s is the median of its rounds, its percentiles over every turn of them, its CPU the mean, and the ratio the median of the ratios within each round (the range in the notes). Budget (docs/performance.md): at least 1.0x the bare loop's throughput at 100 turns in flight, streamed and not; 0.3 ms CPU per turn or less (the library path's peak RSS against the bare loop's is compared in serve_e2e)."
    );
}
