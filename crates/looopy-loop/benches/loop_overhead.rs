//! Loop overhead per iteration, LLM and tools excluded: an in-process
//! scripted model answers at once and the tools are no-ops. Prints one JSON
//! line per case (read by `cargo xtask bench`).
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    History, LlmResponse, Message, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_testkit::{ScriptStep, ScriptedLlm};

struct NoopTools;

#[async_trait]
impl ToolProvider for NoopTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![
            ToolDefinition::without_parameters("noop_a", "does nothing"),
            ToolDefinition::without_parameters("noop_b", "does nothing"),
        ])
    }
    async fn execute(&self, call: &ToolCall, _cx: &TurnContext) -> ToolResult {
        ToolResult::text(&call.id, "ok")
    }
}

fn history(n: usize) -> History {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("question {i}"))
            } else {
                Message::assistant(format!("answer {i}"))
            }
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

async fn measure(
    agent: &AgentLoop,
    base: &History,
    iterations_per_turn: u32,
    samples: usize,
) -> (f64, f64) {
    let mut times = Vec::with_capacity(samples);
    for i in 0..(samples + samples / 5) {
        let cx = TurnContext::new(format!("t{i}"), "bench");
        let started = Instant::now();
        let mut s = agent.start_turn(base.clone(), cx);
        while s.next().await.is_some() {}
        let per_iteration = started.elapsed() / iterations_per_turn;
        if i >= samples / 5 {
            times.push(per_iteration);
        }
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        for n in [10usize, 100, 1000] {
            let base = history(n);
            let text = ScriptedLlm::repeating(ScriptStep::Respond(LlmResponse::text("done")));
            let plain = AgentLoop::builder(text).build();
            let (median, p99) = measure(&plain, &base, 1, 3000).await;
            println!(
                "{{\"bench\":\"loop_overhead\",\"case\":\"no tools, history {n}\",\"unit\":\"µs\",\"median\":{median:.3},\"p99\":{p99:.3},\"notes\":\"one iteration per turn, turn set-up included\"}}"
            );

            let k = 20u32;
            let calls = LlmResponse::tool_calls(
                "",
                vec![ToolCall::new("a", "noop_a", "{}"), ToolCall::new("b", "noop_b", "{}")],
            );
            let llm = ScriptedLlm::repeating(ScriptStep::Respond(calls));
            let tools = AgentLoop::builder(llm).tools(NoopTools).max_iterations(k).build();
            let (median, p99) = measure(&tools, &base, k + 1, 300).await;
            println!(
                "{{\"bench\":\"loop_overhead\",\"case\":\"two no-op tools, history {n}\",\"unit\":\"µs\",\"median\":{median:.3},\"p99\":{p99:.3},\"notes\":\"{k} iterations of two tool calls + the wrap-up call, per iteration\"}}"
            );
        }
    });
    println!(
        "# Budget (docs/performance.md): 20 µs median per iteration or less, flat as the history grows."
    );
}
