//! What each model provider costs `looopy serve` on the peer workload,
//! side by side in one run: the OpenAI chat-completions provider
//! (`LiteLlmProvider`, the baseline), the Responses API
//! (`OpenAiResponsesProvider`), Anthropic Messages (`AnthropicProvider`)
//! and Gemini (`GeminiProvider`).
//!
//! `looopy serve` runs in a child process per case (this binary with
//! `BENCH_ROLE=looopy`), its `[llm] model` the provider's
//! (`anthropic:...`, `gemini:...`, `openai:...`, or a bare name for chat
//! completions) and its `base_url` a fast mock of that vendor, each mock a
//! process of its own (one Tokio worker, as `serve_e2e`'s). A mock plays
//! its vendor's streaming wire form with the provider conformance suite's
//! `VendorWire` (the same events the conformance tests hold every provider
//! to): per turn two answers calling two tools each, then an answer in
//! five text deltas, so every provider streams the same text, the same
//! four tool calls and the same usage, each in its vendor's events.
//! Clients drive A2A 1.0 `SendStreamingMessage` turns, as `serve_e2e`'s.
//!
//! Every provider runs once a round, each round starting one provider
//! later; a ratio is the median of the ratios within each round.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "serve/client.rs"]
mod client;
#[path = "serve/looopy.rs"]
mod looopy;
#[path = "serve/process.rs"]
mod process;
#[path = "serve/workload.rs"]
mod workload;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use looopy_bench::{Case, comment, cpu_seconds_fine, median, ms, peak_rss_kb_of, percentile};
use looopy_core::Usage;
use looopy_testkit::provider_conformance::{
    AnthropicWire, GeminiWire, OpenAiChatWire, OpenAiResponsesWire, ScriptCall, VendorWire,
};
use looopy_testkit::{FixtureReply, OpenAiFixture, SseEnd, SseEvent};
use serde_json::Value;

/// The allocator `looopy serve` runs with (see `looopy_bench::Allocator`).
#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "serve_providers";
const CONCURRENCY: [usize; 2] = [1, 100];
/// Rounds at each concurrency (`BENCH_ROUNDS`).
const ROUNDS: usize = 5;
/// Tool results in the history after which the mock answers.
const TOOL_RESULTS_PER_TURN: usize = 4;

use process::{exit_when_stdin_closes, spawn};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Provider {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

impl Provider {
    const ALL: [Provider; 4] = [
        Provider::Chat,
        Provider::Responses,
        Provider::Anthropic,
        Provider::Gemini,
    ];

    fn role(self) -> &'static str {
        match self {
            Provider::Chat => "mock-chat",
            Provider::Responses => "mock-responses",
            Provider::Anthropic => "mock-anthropic",
            Provider::Gemini => "mock-gemini",
        }
    }

    fn from_role(role: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.role() == role)
    }

    fn label(self) -> &'static str {
        match self {
            Provider::Chat => "chat completions (LiteLlmProvider)",
            Provider::Responses => "Responses API (OpenAiResponsesProvider)",
            Provider::Anthropic => "Anthropic Messages (AnthropicProvider)",
            Provider::Gemini => "Gemini (GeminiProvider)",
        }
    }

    fn wire(self) -> &'static dyn VendorWire {
        match self {
            Provider::Chat => &OpenAiChatWire,
            Provider::Responses => &OpenAiResponsesWire,
            Provider::Anthropic => &AnthropicWire,
            Provider::Gemini => &GeminiWire,
        }
    }

    /// `[llm] model` of `looopy serve`.
    fn model(self) -> &'static str {
        match self {
            Provider::Chat => "bench-model",
            Provider::Responses => "openai:gpt-4.1",
            Provider::Anthropic => "anthropic:claude-sonnet-4-5",
            Provider::Gemini => "gemini:gemini-2.5-flash",
        }
    }

    /// `[llm] base_url` for a mock at `url` (`http://127.0.0.1:PORT`), as
    /// the vendor's own base URL is written, and the variable of its key.
    fn base_url_and_key(self, url: &str) -> (String, &'static str) {
        match self {
            Provider::Chat => (format!("{url}/v1"), "LOOOPY_LLM_API_KEY"),
            Provider::Responses => (format!("{url}/v1"), "OPENAI_API_KEY"),
            Provider::Anthropic => (url.to_owned(), "ANTHROPIC_API_KEY"),
            Provider::Gemini => (format!("{url}/v1beta"), "GEMINI_API_KEY"),
        }
    }
}

/// The three answers of a turn in a vendor's form: two tool calls (ids
/// `c0a`, `c0b`), two more (`c1a`, `c1b`), then the text answer.
fn turn_replies(wire: &dyn VendorWire) -> [FixtureReply; 3] {
    let calls = |k: usize| {
        let (a, b) = (format!("c{k}a"), format!("c{k}b"));
        wire.tool_calls(
            &[
                ScriptCall {
                    id: &a,
                    name: "noop_a",
                    arguments: "{}",
                },
                ScriptCall {
                    id: &b,
                    name: "noop_b",
                    arguments: "{}",
                },
            ],
            true,
        )
    };
    let pieces: Vec<String> = (0..workload::text_chunks())
        .map(|i| format!("part {i} "))
        .collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 10,
        total_tokens: 20,
        ..Usage::default()
    };
    [calls(0), calls(1), wire.text_stream(&pieces, usage)]
}

/// A vendor mock's process: answers by the tool calls the request's
/// history already holds; prints its URL, serves until stdin closes.
fn run_mock(provider: Provider) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let wire = provider.wire();
        let replies = turn_replies(wire);
        let respond = move |body: &Value| {
            let done = wire.sent_tool_calls(body).len();
            let next = if done < TOOL_RESULTS_PER_TURN {
                done / 2
            } else {
                2
            };
            replies[next].clone()
        };
        let fixture = OpenAiFixture::start_responder(Duration::ZERO, Arc::new(respond))
            .await
            .expect("mock model");
        println!("{}", fixture.url());
        std::io::stdout().flush().expect("stdout");
        exit_when_stdin_closes().await;
    });
}

/// SSE events and bytes a vendor's mock streams in one turn.
fn wire_size(wire: &dyn VendorWire) -> (usize, usize) {
    let (mut events, mut bytes) = (0, 0);
    for reply in turn_replies(wire) {
        let FixtureReply::Sse(sse) = reply else {
            panic!("{}: the mock's answers are streams", wire.name());
        };
        for event in &sse.events {
            events += 1;
            bytes += match event {
                SseEvent::Json(v) => format!("data: {v}\n\n").len(),
                SseEvent::Data(d) => format!("data: {d}\n\n").len(),
                SseEvent::Named(name, v) => format!("event: {name}\ndata: {v}\n\n").len(),
                SseEvent::Verbatim(t) => t.len(),
                SseEvent::Bytes(b) => b.len(),
                SseEvent::Pause(_) => {
                    events -= 1;
                    0
                }
            };
        }
        if sse.end == SseEnd::Done {
            events += 1;
            bytes += "data: [DONE]\n\n".len();
        }
    }
    (events, bytes)
}

/// What `looopy serve` did with one provider at one concurrency.
struct Measured {
    turns_per_s: f64,
    first_p50_ms: f64,
    first_p99_ms: f64,
    cpu_ms_per_turn: f64,
    peak_rss_mb: f64,
    events_per_turn: f64,
}

fn turns_for(concurrency: usize) -> usize {
    if let Some(turns) = std::env::var("BENCH_TURNS")
        .ok()
        .and_then(|t| t.parse().ok())
    {
        return turns;
    }
    match concurrency {
        1 => 1000,
        _ => 4000,
    }
}

async fn measure(provider: Provider, mock_url: &str, concurrency: usize) -> Measured {
    let (base, key) = provider.base_url_and_key(mock_url);
    let envs = [
        ("BENCH_MOCK", base),
        ("BENCH_MODEL", provider.model().to_owned()),
        (key, "bench-key".to_owned()),
    ];
    let (child, url) = spawn("looopy", &envs);
    let url = format!("{url}/");
    let pid = child.id();
    let client = reqwest::Client::new();
    client::drive(&client, &url, concurrency.min(50), 200).await;
    let turns = turns_for(concurrency);
    let cpu0 = cpu_seconds_fine(Some(pid));
    let (wall, seen) = client::drive(&client, &url, concurrency, turns).await;
    let cpu = cpu_seconds_fine(Some(pid)) - cpu0;
    let peak_kb = peak_rss_kb_of(pid);
    process::stop(child);
    let mut first: Vec<Duration> = seen.iter().map(|s| s.first_event).collect();
    first.sort();
    Measured {
        turns_per_s: turns as f64 / wall.as_secs_f64(),
        first_p50_ms: ms(percentile(&first, 0.5)),
        first_p99_ms: ms(percentile(&first, 0.99)),
        cpu_ms_per_turn: cpu * 1e3 / turns as f64,
        peak_rss_mb: peak_kb as f64 / 1024.0,
        events_per_turn: seen.iter().map(|s| s.events).sum::<usize>() as f64 / turns as f64,
    }
}

/// Prints one provider's row: medians over its rounds, its CPU and
/// turns/s against the chat provider's of the same round.
fn report(
    provider: Provider,
    concurrency: usize,
    runs: &[Measured],
    chat: Option<&[Measured]>,
    rounds: usize,
) {
    let of = |f: fn(&Measured) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let against = |f: fn(&Measured) -> f64| -> Vec<f64> {
        runs.iter()
            .enumerate()
            .map(|(r, m)| chat.map_or(f64::NAN, |c| f(m) / f(&c[r])))
            .collect()
    };
    let cpu_ratios = against(|m| m.cpu_ms_per_turn);
    let cpu_ratio = median(&cpu_ratios);
    let (low, high) = cpu_ratios
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
            (l.min(*x), h.max(*x))
        });
    let tps_ratio = median(&against(|m| m.turns_per_s));
    let rss_ratio = median(&against(|m| m.peak_rss_mb));
    let turns_per_s = of(|m| m.turns_per_s);
    let cpu = of(|m| m.cpu_ms_per_turn);
    let rss = of(|m| m.peak_rss_mb);
    let events = of(|m| m.events_per_turn);
    let (wire_events, wire_bytes) = wire_size(provider.wire());
    Case::new(
        BENCH,
        format!("{}, concurrency {concurrency}", provider.label()),
        "ms",
    )
    .median_p99(of(|m| m.first_p50_ms), of(|m| m.first_p99_ms))
    .num("concurrency", concurrency as f64)
    .num("turns", turns_for(concurrency) as f64)
    .num("rounds", rounds as f64)
    .num("turns_per_s", turns_per_s)
    .num("server_cpu_ms_per_turn", cpu)
    .num("server_peak_rss_mb", rss)
    .num("cpu_ratio_to_chat", cpu_ratio)
    .num("cpu_ratio_to_chat_min", low)
    .num("cpu_ratio_to_chat_max", high)
    .num("turns_per_s_ratio_to_chat", tps_ratio)
    .num("peak_rss_ratio_to_chat", rss_ratio)
    .num("events_per_turn", events)
    .num("model_sse_events_per_turn", wire_events as f64)
    .num("model_sse_bytes_per_turn", wire_bytes as f64)
    .notes(format!(
        "{turns_per_s:.0} turns/s ({tps_ratio:.2}x chat completions'), server CPU {cpu:.3} ms/turn ({cpu_ratio:.2}x chat completions', {low:.2}-{high:.2} over {rounds} rounds), peak RSS {rss:.0} MB ({rss_ratio:.2}x), {events:.0} A2A events/turn; the model streams {wire_events} SSE events, {wire_bytes} bytes a turn"
    ))
    .print();
}

fn main() {
    match std::env::var("BENCH_ROLE").as_deref() {
        Ok("looopy") => {
            let base = std::env::var("BENCH_MOCK").expect("BENCH_MOCK");
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .unwrap();
            return rt.block_on(looopy::serve(&base));
        }
        Ok(role) => {
            let provider =
                Provider::from_role(role).unwrap_or_else(|| panic!("unknown role {role}"));
            return run_mock(provider);
        }
        Err(_) => {}
    }
    // For a longer look at one provider: BENCH_ONLY=<mock role without
    // `mock-`> (chat, responses, anthropic, gemini), BENCH_CONCURRENCY=100.
    let only = std::env::var("BENCH_ONLY").ok();
    let providers: Vec<Provider> = Provider::ALL
        .into_iter()
        .filter(|p| {
            only.as_deref()
                .is_none_or(|o| p.role().strip_prefix("mock-") == Some(o))
        })
        .collect();
    let levels: Vec<usize> = match std::env::var("BENCH_CONCURRENCY") {
        Ok(c) => vec![c.parse().expect("BENCH_CONCURRENCY is a number")],
        Err(_) => CONCURRENCY.to_vec(),
    };
    let mocks: Vec<_> = providers.iter().map(|p| spawn(p.role(), &[])).collect();
    let rounds = looopy_bench::rounds(ROUNDS);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for concurrency in levels {
            let mut runs: Vec<Vec<Measured>> = providers.iter().map(|_| Vec::new()).collect();
            for round in 0..rounds {
                for k in 0..providers.len() {
                    let i = (k + round) % providers.len();
                    let m = measure(providers[i], &mocks[i].1, concurrency).await;
                    runs[i].push(m);
                }
            }
            let chat = providers
                .iter()
                .position(|p| *p == Provider::Chat)
                .map(|c| &runs[c][..]);
            for (i, provider) in providers.iter().enumerate() {
                report(*provider, concurrency, &runs[i], chat, rounds);
            }
        }
    });
    for (mock, _) in mocks {
        process::stop(mock);
    }
    comment(
        "median/p99: time from before the request to the first SSE event the client reads. Each row is `looopy serve` (the binary's `App` and `looopy_cli::serve::serve`, memory store, two local Rust tools added to `App::tools`, as in serve_e2e) in a fresh child process, its `[llm] model` the provider's (a bare name for chat completions, `openai:gpt-4.1` for the Responses API, `anthropic:claude-sonnet-4-5`, `gemini:gemini-2.5-flash`) and its `base_url` that vendor's mock, a child process of its own with one Tokio worker. A mock streams its vendor's SSE form as the provider conformance suite's `VendorWire` plays it: per turn two answers calling two tools each (chat completions, Responses and Anthropic send each call's arguments in pieces, Gemini each call whole in one event), then five text deltas, the same usage; the SSE events and bytes this comes to per turn are in the notes. Each concurrency runs every provider in 5 rounds (BENCH_ROUNDS), each round starting one provider later; a row's figures are the medians of its rounds and its ratios the medians of the ratios to chat completions within each round. Server CPU from /proc/<pid>/task/*/sched over the measured turns (200 warm-up turns excluded); peak RSS is the server's VmHWM over warm-up and measurement. Budget (docs/performance.md): no provider's server CPU per turn above 1.2x the chat-completions provider's.",
    );
}
