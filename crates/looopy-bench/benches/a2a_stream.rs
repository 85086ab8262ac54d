//! The A2A server on loopback: time from the request to
//! the first SSE event for `SendStreamingMessage` (A2A 1.0) and
//! `message/stream` (0.3), one stream at a time; then events per second
//! delivered to 1,000 concurrent streaming clients.
//!
//! The server runs in a child process (this binary with
//! `BENCH_ROLE=server`), so that its CPU time is read apart from the
//! clients' (`/proc/<pid>/stat`). It serves `looopy-agent` Agents
//! (`AgentRunner`, in-memory stores) whose model streams 20 text chunks at
//! once: each turn sends the `task`, a `working` status, 20 artifact chunks
//! and the final status. The clients are reqwest with the SSE bytes parsed
//! by hand (split on blank lines, as `eventsource-stream` does).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use looopy_a2a::{A2aServer, AgentCardConfig, AgentRunner};
use looopy_agent::Agent;
use looopy_bench::{Case, comment, cpu_seconds, ms, percentile};
use looopy_core::{FinishReason, LlmChunk};
use looopy_stores_memory::MemoryTaskRecordStore;
use looopy_testkit::{ScriptStep, ScriptedLlm};
use serde_json::json;

/// The allocator `looopy serve` runs with (see `looopy_bench::Allocator`).
#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "a2a_stream";
const CHUNKS: usize = 20;
const WARMUP: usize = 30;
const CLIENTS: usize = 1000;
const ROUNDS: usize = 3;

/// `nodelay`: serve `A2aServer::router()` with `axum::serve` on a listener
/// that sets `TCP_NODELAY` on every connection, instead of
/// `A2aServer::serve` (which sets TCP_NODELAY since the fix that this bench found).
fn run_server(nodelay: bool) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut chunks: Vec<LlmChunk> = (0..CHUNKS)
            .map(|i| LlmChunk::TextDelta(format!("chunk {i} ")))
            .collect();
        chunks.push(LlmChunk::Finish(FinishReason::Stop));
        let llm = ScriptedLlm::repeating(ScriptStep::Stream(chunks));
        let stores = looopy_stores_memory::stores();
        let s = stores.clone();
        let runner = AgentRunner::new(move |context_id, owner| {
            Agent::builder(context_id)
                .llm(llm.clone())
                .system_prompt("Be brief.")
                .message_store(s.messages.clone())
                .artifact_store(s.artifacts.clone())
                .state_store(s.agents.clone())
                .turn_lock(s.locks.clone())
                .owner(owner)
                .build()
        })
        .max_cached(2 * CLIENTS);
        let server = A2aServer::builder(
            runner,
            stores.events.clone(),
            Arc::new(MemoryTaskRecordStore::new()),
        )
        .card(AgentCardConfig::new("Bench agent", "Streams 20 chunks"))
        .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("http://{}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        // Serve until the parent closes our stdin.
        let stop = async {
            let _ = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
            })
            .await;
        };
        if nodelay {
            use axum::serve::ListenerExt;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, server.router())
                .with_graceful_shutdown(stop)
                .await
                .unwrap();
        } else {
            server.serve(listener, stop).await.unwrap();
        }
    });
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V03,
}

impl Version {
    fn label(self) -> &'static str {
        match self {
            Version::V1 => "SendStreamingMessage (A2A 1.0)",
            Version::V03 => "message/stream (A2A 0.3)",
        }
    }
}

fn body(v: Version, n: usize) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    match v {
        Version::V1 => json!({"jsonrpc": "2.0", "id": n, "method": "SendStreamingMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": id, "parts": [{"text": "go"}]}}}),
        Version::V03 => json!({"jsonrpc": "2.0", "id": n, "method": "message/stream",
            "params": {"message": {"kind": "message", "role": "user", "messageId": id, "parts": [{"kind": "text", "text": "go"}]}}}),
    }
    .to_string()
}

/// What one streaming request saw.
struct Streamed {
    headers: Duration,
    first_event: Duration,
    total: Duration,
    events: usize,
}

/// Sends one streaming request and reads the stream to its end.
async fn stream_once(client: &reqwest::Client, url: &str, v: Version, n: usize) -> Streamed {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body(v, n));
    if v == Version::V1 {
        req = req.header("A2A-Version", "1.0");
    }
    let started = Instant::now();
    let mut response = req.send().await.expect("request");
    let headers = started.elapsed();
    assert_eq!(response.status().as_u16(), 200);
    let mut buffer: Vec<u8> = Vec::with_capacity(4096);
    let mut first_event = None;
    let mut events = 0;
    let mut scanned = 0;
    while let Some(chunk) = response.chunk().await.expect("stream") {
        buffer.extend_from_slice(&chunk);
        // Count complete events (blocks ending with a blank line) with data.
        while let Some(end) = buffer[scanned..].windows(2).position(|w| w == b"\n\n") {
            let block = &buffer[scanned..scanned + end];
            if block.starts_with(b"data:") || block.windows(6).any(|w| w == b"\ndata:") {
                assert!(
                    !block.windows(7).any(|w| w == b"\"error\""),
                    "error event: {}",
                    String::from_utf8_lossy(block)
                );
                events += 1;
                first_event.get_or_insert_with(|| started.elapsed());
            }
            scanned += end + 2;
        }
        if scanned > 0 {
            buffer.drain(..scanned);
            scanned = 0;
        }
    }
    Streamed {
        headers,
        first_event: first_event.expect("no event"),
        total: started.elapsed(),
        events,
    }
}

fn main() {
    match std::env::var("BENCH_ROLE").as_deref() {
        Ok("server") => return run_server(false),
        Ok("server-nodelay") => return run_server(true),
        _ => {}
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for nodelay in [false, true] {
        let mut server = Command::new(std::env::current_exe().unwrap())
            .env(
                "BENCH_ROLE",
                if nodelay { "server-nodelay" } else { "server" },
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the server process");
        let pid = server.id();
        let mut base = String::new();
        BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut base)
            .unwrap();
        let url = format!("{}/", base.trim());
        let label = if nodelay {
            "server with TCP_NODELAY (router() + axum::serve)"
        } else {
            "A2aServer::serve"
        };
        rt.block_on(async {
            for v in [Version::V1, Version::V03] {
                first_event(&url, pid, v, label, if nodelay { 1000 } else { 300 }).await;
            }
            concurrent(&url, pid, label).await;
        });
        drop(server.stdin.take());
        let _ = server.wait();
    }
    comment(&format!(
        "Server: A2aServer + AgentRunner (an Agent per context, the memory stores with turn lock, in-memory event log and task store) in a child process, so that its CPU is read apart (/proc/<pid>/stat); Tokio multi-thread runtime. The model streams {CHUNKS} text chunks at once, so the figures are all server, HTTP and client overhead. Clients: reqwest (HTTP/1.1, keep-alive pool) in this process, SSE parsed from the raw bytes; the first-event time runs from before the request is sent to the first complete `data:` event read (the `task` event, logged before the response starts). \"server with TCP_NODELAY\" is the same server served through `A2aServer::router()` and `axum::serve` on a listener that sets TCP_NODELAY: without TCP_NODELAY the first event, written after the response head, waits for the client's delayed ACK (about 40 ms on Linux), so `A2aServer::serve` sets it itself and this variant stays as a cross-check. Client and server share the machine's 2 cores, and the machine was shared with other work, so the p99 figures are noisy. Budget (docs/performance.md): first SSE event within 5 ms of the request on loopback."
    ));
}

/// One stream at a time: time to the first event.
async fn first_event(url: &str, server_pid: u32, v: Version, label: &str, samples: usize) {
    let client = reqwest::Client::new();
    for i in 0..WARMUP {
        stream_once(&client, url, v, i).await;
    }
    let (server_cpu0, cpu0) = (cpu_seconds(Some(server_pid)), cpu_seconds(None));
    let mut first = Vec::with_capacity(samples);
    let mut headers = Vec::with_capacity(samples);
    let mut totals = Vec::with_capacity(samples);
    let mut events = 0;
    for i in 0..samples {
        let s = stream_once(&client, url, v, i).await;
        first.push(s.first_event);
        headers.push(s.headers);
        totals.push(s.total);
        events += s.events;
    }
    let server_cpu = cpu_seconds(Some(server_pid)) - server_cpu0;
    let client_cpu = cpu_seconds(None) - cpu0;
    first.sort();
    headers.sort();
    totals.sort();
    let n = samples as f64;
    let per_turn = events as f64 / n;
    Case::new(BENCH, format!("first SSE event, {}, {label}", v.label()), "ms")
        .median_p99(ms(percentile(&first, 0.5)), ms(percentile(&first, 0.99)))
        .num("max_ms", ms(percentile(&first, 1.0)))
        .num("headers_median_ms", ms(percentile(&headers, 0.5)))
        .num("headers_p99_ms", ms(percentile(&headers, 0.99)))
        .num("whole_stream_median_ms", ms(percentile(&totals, 0.5)))
        .num("whole_stream_p99_ms", ms(percentile(&totals, 0.99)))
        .num("events_per_stream", per_turn)
        .num("server_cpu_ms_per_turn", server_cpu * 1e3 / n)
        .num("client_cpu_ms_per_turn", client_cpu * 1e3 / n)
        .notes(format!(
            "{samples} streams one after the other on a keep-alive connection; response head {:.2} ms median; whole stream ({per_turn:.0} events) {:.2} ms median, {:.2} ms p99; server CPU {:.3} ms/turn",
            ms(percentile(&headers, 0.5)),
            ms(percentile(&totals, 0.5)),
            ms(percentile(&totals, 0.99)),
            server_cpu * 1e3 / n,
        ))
        .print();
}

/// `CLIENTS` clients at once, each streaming one turn; the median of a few rounds.
async fn concurrent(url: &str, server_pid: u32, label: &str) {
    let client = reqwest::Client::new();
    let mut rounds = Vec::new();
    for round in 0..ROUNDS {
        let (server_cpu0, cpu0) = (cpu_seconds(Some(server_pid)), cpu_seconds(None));
        let started = Instant::now();
        let mut handles = Vec::with_capacity(CLIENTS);
        for i in 0..CLIENTS {
            let (client, url) = (client.clone(), url.to_owned());
            handles.push(tokio::spawn(async move {
                stream_once(&client, &url, Version::V1, round * CLIENTS + i).await
            }));
        }
        let mut results = Vec::with_capacity(CLIENTS);
        for h in handles {
            results.push(h.await.unwrap());
        }
        let wall = started.elapsed();
        let server_cpu = cpu_seconds(Some(server_pid)) - server_cpu0;
        let client_cpu = cpu_seconds(None) - cpu0;
        rounds.push((wall, results, server_cpu, client_cpu));
    }
    rounds.sort_by_key(|r| r.0);
    let walls: Vec<String> = rounds.iter().map(|r| format!("{:.0}", ms(r.0))).collect();
    let (wall, results, server_cpu, client_cpu) = &rounds[rounds.len() / 2];
    let events: usize = results.iter().map(|r| r.events).sum();
    let mut first: Vec<Duration> = results.iter().map(|r| r.first_event).collect();
    let mut totals: Vec<Duration> = results.iter().map(|r| r.total).collect();
    first.sort();
    totals.sort();
    let eps = events as f64 / wall.as_secs_f64();
    Case::new(
        BENCH,
        format!("{CLIENTS} concurrent streaming clients (A2A 1.0), {label}"),
        "ms",
    )
    .median_p99(ms(percentile(&totals, 0.5)), ms(percentile(&totals, 0.99)))
    .num("events_per_s", eps)
    .num("events", events as f64)
    .num("wall_ms", ms(*wall))
    .num("first_event_median_ms", ms(percentile(&first, 0.5)))
    .num("first_event_p99_ms", ms(percentile(&first, 0.99)))
    .num("server_cpu_us_per_event", server_cpu * 1e6 / events as f64)
    .num("client_cpu_us_per_event", client_cpu * 1e6 / events as f64)
    .notes(format!(
        "median/p99: whole stream per client; {eps:.0} events/s delivered ({events} events in {:.0} ms, median of {ROUNDS} rounds: {} ms); first event {:.1} ms median, {:.1} ms p99 under this load; server CPU {:.1} µs/event, clients {:.1} µs/event",
        ms(*wall),
        walls.join("/"),
        ms(percentile(&first, 0.5)),
        ms(percentile(&first, 0.99)),
        server_cpu * 1e6 / events as f64,
        client_cpu * 1e6 / events as f64,
    ))
    .print();
}
