//! The peer workload of `turn_throughput`, streamed: per turn three model
//! calls (two asking for two tool calls each, then an answer streamed in
//! [`text_chunks`] chunks) and four local tools that answer at once. The
//! mock model, the tools for the served Agent, and the bare reqwest loop
//! that the floor and the peer run.
#![allow(dead_code, reason = "each bench uses part of it")]

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use looopy_core::{ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult, TurnContext};
use looopy_testkit::openai_fixture::openai;
use looopy_testkit::{FixtureReply, OpenAiFixture};
use serde_json::{Value, json};

/// Tool results in the history after which the model answers.
const TOOL_RESULTS_PER_TURN: usize = 4;
/// Text chunks of the answer (each one `artifact-update` on the wire):
/// five, or `BENCH_ANSWER_CHUNKS` (a real model's answer is hundreds).
pub(crate) fn text_chunks() -> usize {
    static CHUNKS: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
        std::env::var("BENCH_ANSWER_CHUNKS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(5)
    });
    *CHUNKS
}

/// What the mock answers: two tool calls until the history holds four
/// results, then the answer; streamed when the request asks for it.
fn mock_reply(body: &Value) -> FixtureReply {
    let results = body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    let stream = body["stream"] == true;
    if results < TOOL_RESULTS_PER_TURN {
        let k = results / 2;
        let (a, b) = (format!("c{k}a"), format!("c{k}b"));
        if !stream {
            return FixtureReply::json(openai::tool_calls_completion(&[
                (&a, "noop_a", "{}"),
                (&b, "noop_b", "{}"),
            ]));
        }
        FixtureReply::sse(vec![
            openai::tool_call_start_chunk(0, &a, "noop_a"),
            openai::tool_args_chunk(0, "{}"),
            openai::tool_call_start_chunk(1, &b, "noop_b"),
            openai::tool_args_chunk(1, "{}"),
            openai::finish_chunk("tool_calls"),
            openai::usage_chunk(10, 10),
        ])
    } else if stream {
        let mut chunks: Vec<Value> = (0..text_chunks())
            .map(|i| openai::text_chunk(&format!("part {i} ")))
            .collect();
        chunks.push(openai::finish_chunk("stop"));
        chunks.push(openai::usage_chunk(10, 10));
        FixtureReply::sse(chunks)
    } else {
        FixtureReply::json(openai::completion("done"))
    }
}

/// The mock model's process: prints its base URL, serves until stdin closes.
pub(crate) fn run_mock() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let fixture = OpenAiFixture::start_responder(Duration::ZERO, Arc::new(mock_reply))
            .await
            .expect("mock model");
        println!("{}", fixture.base_url());
        std::io::stdout().flush().expect("stdout");
        super::process::exit_when_stdin_closes().await;
    });
}

/// The served Agent's local Rust tools: two that answer "ok" at once.
pub(crate) struct NoopTools;

#[async_trait]
impl ToolProvider for NoopTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(tool_defs())
    }
    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        ToolResult::text(&call.id, "ok")
    }
    // Rust tools made once: listed once per loop, as a library user declares.
    fn tools_are_fixed(&self) -> bool {
        true
    }
}

fn tool_defs() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::without_parameters("noop_a", "does nothing"),
        ToolDefinition::without_parameters("noop_b", "does nothing"),
    ]
}

/// The tools as the bare loop sends them (OpenAI `tools`).
pub(crate) fn tools_json() -> Value {
    json!(
        tool_defs()
            .iter()
            .map(|d| json!({"type": "function", "function": {"name": d.name, "description": d.description, "parameters": d.parameters}}))
            .collect::<Vec<_>>()
    )
}

/// What the bare loop reports as it goes.
pub(crate) enum Step {
    /// A tool call finished.
    ToolDone,
    /// A streamed piece of the answer.
    Text(String),
}

/// One turn of the bare loop: streamed requests, SSE parsed from the bytes,
/// tool calls gathered by index, the tools "run" in place.
pub(crate) async fn bare_turn(
    client: &reqwest::Client,
    url: &str,
    tools: &Value,
    emit: &mut (dyn FnMut(Step) + Send),
) {
    let mut messages = vec![
        json!({"role": "system", "content": "bench"}),
        json!({"role": "user", "content": "go"}),
    ];
    for _ in 0..3 {
        let body =
            json!({"model": "bench-model", "messages": messages, "tools": tools, "stream": true});
        let Ok(mut response) = client.post(url).json(&body).send().await else {
            return;
        };
        let mut buffer: Vec<u8> = Vec::new();
        let mut text = String::new();
        // (id, name, arguments) by index.
        let mut calls: Vec<(String, String, String)> = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            buffer.extend_from_slice(&chunk);
            while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = buffer.drain(..end + 2).collect();
                let Some(data) = block.strip_prefix(b"data: ") else {
                    continue;
                };
                let Ok(chunk) = serde_json::from_slice::<Value>(data) else {
                    continue; // [DONE]
                };
                let delta = &chunk["choices"][0]["delta"];
                if let Some(t) = delta["content"].as_str() {
                    text.push_str(t);
                    emit(Step::Text(t.to_owned()));
                }
                for call in delta["tool_calls"].as_array().into_iter().flatten() {
                    let i = call["index"].as_u64().unwrap_or(0) as usize;
                    if calls.len() <= i {
                        calls.resize(i + 1, Default::default());
                    }
                    if let Some(id) = call["id"].as_str() {
                        calls[i].0 = id.to_owned();
                    }
                    if let Some(name) = call["function"]["name"].as_str() {
                        calls[i].1.push_str(name);
                    }
                    if let Some(args) = call["function"]["arguments"].as_str() {
                        calls[i].2.push_str(args);
                    }
                }
            }
        }
        if calls.is_empty() {
            messages.push(json!({"role": "assistant", "content": text}));
            return;
        }
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": tool_calls}));
        for (id, _, _) in &calls {
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": "ok"}));
            emit(Step::ToolDone);
        }
    }
}
