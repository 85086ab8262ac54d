//! Decode cost per streamed chunk of each model provider, side by side in
//! one run: OpenAI chat completions (`LiteLlmProvider`, the baseline), the
//! Responses API (`OpenAiResponsesProvider`), Anthropic Messages
//! (`AnthropicProvider`) and Gemini (`GeminiProvider`).
//!
//! Each provider streams the same answer of `CHUNKS` text deltas from an
//! in-process fixture that plays its vendor's SSE form (the provider
//! conformance suite's `VendorWire`s), the whole body written at once. A
//! round streams once through every provider, in a rotated order; the
//! figure is the time from the request to the stream's end, divided by the
//! chunks, and the CPU time of this process over the same span (the
//! fixture's writes included, the same for every provider but for the
//! bytes of each vendor's form). The ratio is each provider's median over
//! the chat provider's, read in the same run.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use looopy_bench::{Case, comment, cpu_seconds_fine, median, percentile, rounds, us};
use looopy_core::{LlmChunk, LlmProvider, LlmRequest, Message, TurnContext, Usage};
use looopy_llm_anthropic::{AnthropicConfig, AnthropicProvider};
use looopy_llm_gemini::{GeminiConfig, GeminiProvider};
use looopy_llm_litellm::{LiteLlmConfig, LiteLlmProvider, OpenAiResponsesProvider};
use looopy_testkit::OpenAiFixture;
use looopy_testkit::provider_conformance::{
    AnthropicWire, GeminiWire, OpenAiChatWire, OpenAiResponsesWire, VendorWire,
};

#[global_allocator]
static GLOBAL: looopy_bench::Allocator = looopy_bench::Allocator;

const BENCH: &str = "provider_decode";
const CHUNKS: usize = 2000;
const WARMUP: usize = 3;

type Make = fn(&str) -> Arc<dyn LlmProvider>;

fn chat(url: &str) -> Arc<dyn LlmProvider> {
    Arc::new(
        LiteLlmProvider::new(LiteLlmConfig::new(url, "gpt-4o-mini").with_api_key("k")).unwrap(),
    )
}

fn responses(url: &str) -> Arc<dyn LlmProvider> {
    Arc::new(
        OpenAiResponsesProvider::new(LiteLlmConfig::new(url, "gpt-4.1").with_api_key("k")).unwrap(),
    )
}

fn anthropic(url: &str) -> Arc<dyn LlmProvider> {
    let config = AnthropicConfig::new("claude-sonnet-4-5")
        .with_api_key("k")
        .with_base_url(url);
    Arc::new(AnthropicProvider::new(config).unwrap())
}

fn gemini(url: &str) -> Arc<dyn LlmProvider> {
    let config = GeminiConfig::new("gemini-2.5-flash")
        .with_api_key("k")
        .with_base_url(url);
    Arc::new(GeminiProvider::new(config).unwrap())
}

struct Provider {
    name: &'static str,
    llm: Arc<dyn LlmProvider>,
    _fixture: OpenAiFixture,
    per_chunk_us: Vec<Duration>,
    cpu_us: Vec<f64>,
}

/// Streams one answer; the time it took and the CPU seconds spent.
async fn stream_once(llm: &dyn LlmProvider) -> (Duration, f64) {
    let request = LlmRequest {
        messages: vec![Message::user("Count.")].into(),
        ..LlmRequest::default()
    };
    let cx = TurnContext::new("bench", "bench");
    let cpu = cpu_seconds_fine(None);
    let started = Instant::now();
    let mut deltas = 0;
    let mut stream = llm.stream(request, &cx);
    while let Some(chunk) = stream.next().await {
        if let LlmChunk::TextDelta(_) = chunk.expect("the fixture's stream decodes") {
            deltas += 1;
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(deltas, CHUNKS, "every delta arrived");
    (elapsed, cpu_seconds_fine(None) - cpu)
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    let texts: Vec<String> = (0..CHUNKS).map(|i| format!("token {i} ")).collect();
    let pieces: Vec<&str> = texts.iter().map(String::as_str).collect();
    let usage = Usage {
        input_tokens: 10,
        output_tokens: CHUNKS as u64,
        total_tokens: 10 + CHUNKS as u64,
        ..Usage::default()
    };
    let wires: [(&'static str, &dyn VendorWire, Make); 4] = [
        ("chat completions", &OpenAiChatWire, chat),
        ("responses", &OpenAiResponsesWire, responses),
        ("anthropic", &AnthropicWire, anthropic),
        ("gemini", &GeminiWire, gemini),
    ];
    let mut providers = Vec::new();
    for (name, wire, make) in wires {
        let reply = wire.text_stream(&pieces, usage);
        let fixture = OpenAiFixture::start_fast(Duration::ZERO, reply)
            .await
            .unwrap();
        let llm = make(&fixture.base_url());
        for _ in 0..WARMUP {
            stream_once(llm.as_ref()).await;
        }
        providers.push(Provider {
            name,
            llm,
            _fixture: fixture,
            per_chunk_us: Vec::new(),
            cpu_us: Vec::new(),
        });
    }
    let rounds = rounds(30);
    for round in 0..rounds {
        let n = providers.len();
        for k in 0..n {
            let p = &mut providers[(round + k) % n];
            let (elapsed, cpu) = stream_once(p.llm.as_ref()).await;
            p.per_chunk_us.push(elapsed / CHUNKS as u32);
            p.cpu_us.push(cpu * 1e6 / CHUNKS as f64);
        }
    }
    let medians: Vec<(f64, f64)> = providers
        .iter_mut()
        .map(|p| {
            p.per_chunk_us.sort();
            let wall = us(percentile(&p.per_chunk_us, 0.5));
            (wall, median(&p.cpu_us))
        })
        .collect();
    let (base_wall, base_cpu) = medians[0];
    for (p, &(wall, cpu)) in providers.iter().zip(&medians) {
        let ratio = wall / base_wall;
        let cpu_ratio = cpu / base_cpu;
        Case::new(BENCH, format!("{} per chunk", p.name), "µs")
            .median_p99(wall, us(percentile(&p.per_chunk_us, 0.99)))
            .nums([
                ("cpu_us_per_chunk", cpu),
                ("ratio_to_chat", ratio),
                ("cpu_ratio_to_chat", cpu_ratio),
            ])
            .notes(format!(
                "{ratio:.2}× chat completions; CPU {cpu:.2} µs/chunk ({cpu_ratio:.2}×)"
            ))
            .print();
    }
    comment(&format!(
        "{CHUNKS} text deltas per stream, {rounds} rounds, each provider once a round in a \
         rotated order; one current-thread runtime, the fixture in the same process."
    ));
}
