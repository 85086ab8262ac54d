//! The span tree of a turn, asserted on an in-memory OpenTelemetry exporter.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use looopy_core::CacheStore;
use looopy_core::{
    EventPayload, History, LlmError, LlmResponse, Message, ToolCall, ToolFailure, ToolOutcome,
    ToolResult, TurnContext, Usage,
};
use looopy_loop::AgentLoop;
use looopy_loop::layers::{LlmCacheLayer, ToolCacheLayer};
use looopy_stores_memory::MemoryCacheStore;
use looopy_testkit::ScriptedLlm;
use looopy_testkit::{SpanCapture, attribute};
use opentelemetry::trace::{SpanId, Status};
use opentelemetry_sdk::trace::SpanData;
use support::*;

/// Runs `f` with a subscriber that exports to memory; returns the spans.
async fn traced<F: std::future::Future<Output = ()>>(f: F) -> Vec<SpanData> {
    let capture = SpanCapture::install();
    f.await;
    capture.finish()
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found = named(spans, name);
    assert_eq!(
        found.len(),
        1,
        "one span named {name:?}; all: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    found[0]
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(ToString::to_string)
}

fn cx() -> TurnContext {
    TurnContext::new("task-s", "ctx-s")
}

#[tokio::test]
async fn a_turn_with_two_parallel_tool_calls_has_the_seed_hierarchy() {
    let spans = traced(async {
        let tools = FnTools::new()
            .echo("weather", Duration::from_millis(20))
            .echo("calculate", Duration::from_millis(10));
        let llm = ScriptedLlm::new()
            .respond(LlmResponse::tool_calls(
                "",
                vec![
                    ToolCall::new("w1", "weather", "{}"),
                    ToolCall::new("c1", "calculate", "{}"),
                ],
            ))
            .respond(LlmResponse::text("sunny, 4").with_usage(Usage {
                input_tokens: 11,
                output_tokens: 3,
                total_tokens: 14,
                ..Default::default()
            }));
        let agent = AgentLoop::builder(llm)
            .agent_id("forecaster")
            .tools(tools)
            .build();
        drain(agent.start_turn(History::from(vec![Message::user("?")]), cx())).await;
    })
    .await;

    let root = one(&spans, "invoke_agent forecaster");
    assert_eq!(root.parent_span_id, SpanId::INVALID);
    assert_eq!(
        attr(root, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        attr(root, "gen_ai.conversation.id").as_deref(),
        Some("ctx-s")
    );
    assert_eq!(
        attr(root, "gen_ai.agent.name").as_deref(),
        Some("forecaster")
    );
    assert_eq!(attr(root, "a2a.task.state").as_deref(), Some("completed"));

    let it1 = one(&spans, "iteration 1");
    let it2 = one(&spans, "iteration 2");
    assert_eq!(it1.parent_span_id, root.span_context.span_id());
    assert_eq!(it2.parent_span_id, root.span_context.span_id());

    let chats = named(&spans, "chat scripted");
    assert_eq!(chats.len(), 2);
    assert!(
        chats
            .iter()
            .any(|c| c.parent_span_id == it1.span_context.span_id())
    );
    let last_chat = chats
        .iter()
        .find(|c| c.parent_span_id == it2.span_context.span_id())
        .unwrap();
    assert_eq!(
        attr(last_chat, "gen_ai.usage.input_tokens").as_deref(),
        Some("11")
    );
    assert_eq!(
        attr(last_chat, "gen_ai.usage.output_tokens").as_deref(),
        Some("3")
    );
    assert_eq!(
        attr(last_chat, "gen_ai.provider.name").as_deref(),
        Some("scripted")
    );
    assert!(
        attr(last_chat, "gen_ai.response.finish_reasons")
            .unwrap()
            .contains("stop")
    );

    let batch = one(&spans, "execute_tools");
    assert_eq!(batch.parent_span_id, it1.span_context.span_id());
    for (name, id) in [
        ("execute_tool weather", "w1"),
        ("execute_tool calculate", "c1"),
    ] {
        let tool = one(&spans, name);
        assert_eq!(
            tool.parent_span_id,
            batch.span_context.span_id(),
            "{name} nests under the batch"
        );
        assert_eq!(attr(tool, "gen_ai.tool.call.id").as_deref(), Some(id));
        assert_eq!(tool.span_context.trace_id(), root.span_context.trace_id());
    }
    // The two calls overlapped in time: they really ran in parallel.
    let w = one(&spans, "execute_tool weather");
    let c = one(&spans, "execute_tool calculate");
    assert!(c.start_time < w.end_time && w.start_time < c.end_time);
}

#[tokio::test]
async fn an_llm_error_is_recorded_on_the_span_that_failed() {
    let spans = traced(async {
        let llm = ScriptedLlm::new().fail(LlmError::Server {
            retry_after: None,
            status: 502,
            message: "bad gateway".into(),
        });
        drain(
            AgentLoop::builder(llm)
                .without_default_layers()
                .build()
                .start_turn(History::from(vec![Message::user("?")]), cx()),
        )
        .await;
    })
    .await;
    let chat = one(&spans, "chat scripted");
    assert!(
        matches!(chat.status, Status::Error { .. }),
        "{:?}",
        chat.status
    );
    assert_eq!(attr(chat, "error.type").as_deref(), Some("server_error"));
    assert!(chat.events.iter().any(|e| {
        e.name == "exception"
            || e.attributes
                .iter()
                .any(|kv| kv.value.to_string().contains("bad gateway"))
    }));
    let root = one(&spans, "invoke_agent agent");
    assert!(matches!(root.status, Status::Error { .. }));
    assert_eq!(attr(root, "error.type").as_deref(), Some("server_error"));
}

#[tokio::test]
async fn a_cancelled_turn_closes_every_span() {
    let spans = traced(async {
        let tools = FnTools::new().echo("slow", Duration::from_secs(30));
        let llm = ScriptedLlm::new().respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("s", "slow", "{}")],
        ));
        let cx = cx();
        let token = cx.cancel.clone();
        let stream = AgentLoop::builder(llm)
            .tools(tools)
            .build()
            .start_turn(History::from(vec![Message::user("?")]), cx);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            token.cancel();
        });
        let events = drain(stream).await;
        let cancelled = events.iter().find_map(|e| match &*e.payload {
            EventPayload::ToolComplete { name, result, .. } if name == "slow" => {
                Some(result.failure)
            }
            _ => None,
        });
        assert_eq!(cancelled, Some(Some(ToolFailure::Cancelled)));
    })
    .await;
    // Exported spans are ended spans: each level of the tree is there.
    let root = one(&spans, "invoke_agent agent");
    assert_eq!(attr(root, "looopy.turn.end").as_deref(), Some("cancelled"));
    assert_eq!(attr(root, "a2a.task.state").as_deref(), Some("canceled"));
    one(&spans, "iteration 1");
    one(&spans, "execute_tools");
    let slow = one(&spans, "execute_tool slow");
    assert_eq!(attr(slow, "error.type").as_deref(), Some("cancelled"));
}

/// Each failed call's span names its kind; a successful one has none.
#[tokio::test]
async fn a_failed_tool_call_records_its_kind_as_error_type() {
    let mut events = Vec::new();
    let spans = traced(async {
        let tools = FnTools::new()
            .tool("slow", |call, _| async move {
                ToolResult::failed(
                    &call.id,
                    ToolFailure::Timeout,
                    "tool 'slow' timed out after 5 ms",
                )
            })
            .tool("boom", |_call, _| async move { panic!("kaboom") })
            .echo("fine", Duration::ZERO);
        let llm = calls_then(
            &[
                ("a", "slow", "{}"),
                ("b", "boom", "{}"),
                ("c", "nope", "{}"),
                ("d", "fine", "{}"),
            ],
            "done",
        );
        let stream = AgentLoop::builder(llm)
            .tools(tools)
            .build()
            .start_turn(History::from(vec![Message::user("?")]), cx());
        events = drain(stream).await;
    })
    .await;
    let kind = |name: &str| attr(one(&spans, &format!("execute_tool {name}")), "error.type");
    assert_eq!(kind("slow").as_deref(), Some("timeout"));
    assert_eq!(kind("boom").as_deref(), Some("panicked"));
    assert_eq!(kind("nope").as_deref(), Some("unknown_tool"));
    assert_eq!(kind("fine"), None);
    let complete: Vec<(String, Option<ToolFailure>, ToolOutcome)> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ToolComplete {
                name,
                result,
                outcome,
                ..
            } => Some((name.clone(), result.failure, *outcome)),
            _ => None,
        })
        .collect();
    for expected in [
        ("slow", Some(ToolFailure::Timeout), ToolOutcome::Timeout),
        ("boom", Some(ToolFailure::Panicked), ToolOutcome::Error),
        ("nope", Some(ToolFailure::UnknownTool), ToolOutcome::Error),
        ("fine", None, ToolOutcome::Success),
    ] {
        assert!(
            complete
                .iter()
                .any(|(n, f, o)| (n.as_str(), *f, *o) == expected),
            "{expected:?} in {complete:?}"
        );
    }
}

async fn run_turn(agent: &AgentLoop, context: &str, text: &str) {
    let history = History::from(vec![Message::user(text)]);
    drain(agent.start_turn(history, TurnContext::new(format!("t-{context}"), context))).await;
}

/// In this binary, where every test runs under a subscriber: tracing caches
/// a callsite's interest, and a test without one running at the same time
/// could leave the cache's spans unrecorded.
#[tokio::test]
async fn a_hit_is_marked_on_the_chat_and_execute_tool_spans() {
    let store: Arc<dyn CacheStore> = Arc::new(MemoryCacheStore::new());
    // The model's own call id: a call id the loop made up would differ
    // between the turns, and so would their second requests.
    let llm = calls_then(&[("c1", "weather", "{}")], "sunny");
    let agent = AgentLoop::builder(llm)
        .tools(FnTools::new().echo("weather", Duration::ZERO))
        .llm_layer(LlmCacheLayer::new(store.clone(), Duration::from_secs(60)))
        .tool_layer(ToolCacheLayer::new(store, Duration::from_secs(60)).tool("weather"))
        .build();
    let spans = traced(async {
        // Iterations 1 and 2 call the model; the second turn's iterations
        // send the same requests: both answers and the tool result are hits.
        run_turn(&agent, "a", "weather?").await;
        run_turn(&agent, "b", "weather?").await;
    })
    .await;
    let hits = |name: &str| {
        spans
            .iter()
            .filter(|s| s.name.starts_with(name))
            .map(|s| {
                s.attributes.iter().any(|kv| {
                    kv.key.as_str() == "looopy.cache.hit" && kv.value.to_string() == "true"
                })
            })
            .collect::<Vec<bool>>()
    };
    assert_eq!(hits("chat"), [false, false, true, true]);
    assert_eq!(hits("execute_tool "), [false, true]);
}

#[tokio::test]
async fn reaching_the_iteration_limit_logs_a_warning_on_the_turns_span() {
    let spans = traced(async {
        let tools = FnTools::new().echo("weather", Duration::ZERO);
        let llm = ScriptedLlm::new()
            .respond(LlmResponse::tool_calls(
                "",
                vec![ToolCall::new("w1", "weather", "{}")],
            ))
            .respond(LlmResponse::text("sunny"));
        drain(
            AgentLoop::builder(llm)
                .tools(tools)
                .max_iterations(1)
                .build()
                .start_turn(History::from(vec![Message::user("?")]), cx()),
        )
        .await;
    })
    .await;
    let root = one(&spans, "invoke_agent agent");
    let warning = root
        .events
        .iter()
        .find(|e| e.name.contains("reached its limit of 1 iterations"))
        .unwrap_or_else(|| panic!("no warning among {:?}", root.events));
    let level = warning
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "level")
        .map(|kv| kv.value.to_string());
    assert_eq!(level.as_deref(), Some("WARN"));
    assert_eq!(
        attr(root, "looopy.turn.end").as_deref(),
        Some("max_iterations")
    );
}
