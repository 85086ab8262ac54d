//! The Agent's own spans, with no server in front: `agent.turn` around a
//! whole turn, with the loop's `invoke_agent` under it and the turn's
//! final state, iterations and token totals on it; `agent.initialize`
//! around the Agent's start. Asserted on an in-memory OpenTelemetry
//! exporter (a subscriber of this thread only: the tests run on a
//! current-thread runtime).
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_core::{LlmError, LlmResponse, Usage};
use looopy_testkit::{ScriptedLlm, SpanCapture, attribute};
use opentelemetry::trace::{SpanId, Status};
use opentelemetry_sdk::trace::SpanData;
use support::*;

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Usage::default()
    }
}

fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(
        found.len(),
        1,
        "one span named {name:?}; all: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    found[0]
}

fn attr(spans: &[SpanData], name: &str, key: &str) -> Option<String> {
    attribute(one(spans, name), key).map(ToString::to_string)
}

#[tokio::test]
async fn a_library_turn_is_one_agent_turn_span_with_the_totals_of_the_turn() {
    let capture = SpanCapture::install();
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["l1"]).with_usage(usage(10, 2)))
        .respond(LlmResponse::text("all done").with_usage(usage(20, 5)));
    let stores = looopy_stores_memory::stores();
    let agent = tool_agent("c-spans", &llm, &stores);
    let (_, finished) = turn(&agent, "look it up").await;
    let spans = capture.finish();

    let turn = one(&spans, "agent.turn");
    assert_eq!(
        turn.parent_span_id,
        SpanId::INVALID,
        "a library turn's span is a root"
    );
    let invoke = spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent"))
        .expect("the loop's span");
    assert_eq!(invoke.parent_span_id, turn.span_context.span_id());
    assert_eq!(invoke.span_context.trace_id(), turn.span_context.trace_id());
    // The Agent was not started: its first turn loads it, inside the turn.
    let initialize = one(&spans, "agent.initialize");
    assert_eq!(initialize.parent_span_id, turn.span_context.span_id());
    // The tool call's span is in the same trace, under the loop's.
    let tool = spans
        .iter()
        .find(|s| s.name.starts_with("execute_tool "))
        .expect("the tool call's span");
    assert_eq!(tool.span_context.trace_id(), turn.span_context.trace_id());

    let on_turn = |key| attr(&spans, "agent.turn", key);
    assert_eq!(on_turn("a2a.task.state").as_deref(), Some("completed"));
    assert_eq!(on_turn("looopy.turn.end").as_deref(), Some("finished"));
    assert_eq!(on_turn("looopy.turn.iterations").as_deref(), Some("2"));
    assert_eq!(on_turn("looopy.turn.number").as_deref(), Some("1"));
    assert_eq!(on_turn("gen_ai.usage.input_tokens").as_deref(), Some("30"));
    assert_eq!(on_turn("gen_ai.usage.output_tokens").as_deref(), Some("7"));
    assert_eq!(on_turn("looopy.usage.total_tokens").as_deref(), Some("37"));
    assert_eq!(
        on_turn("gen_ai.conversation.id").as_deref(),
        Some("c-spans")
    );
    assert_eq!(
        on_turn("a2a.task.id").as_deref(),
        Some(finished.task_id.as_str())
    );
    assert_eq!(on_turn("error.type"), None);
}

#[tokio::test]
async fn a_start_is_its_own_initialize_span_and_a_failed_turn_says_so() {
    let capture = SpanCapture::install();
    let llm = ScriptedLlm::new().fail(LlmError::BadRequest {
        message: "refused".into(),
    });
    let stores = looopy_stores_memory::stores();
    let agent = tool_agent("c-spans-failed", &llm, &stores);
    agent.start().await.unwrap();
    let (_, finished) = turn(&agent, "fail").await;
    let spans = capture.finish();

    // Started on its own: the load is a root span, and the turn loads
    // nothing.
    let initialize = one(&spans, "agent.initialize");
    assert_eq!(initialize.parent_span_id, SpanId::INVALID);
    assert_eq!(
        attribute(initialize, "looopy.agent.state_loaded").map(ToString::to_string),
        Some("false".into()),
        "a new conversation has no stored state"
    );
    let turn = one(&spans, "agent.turn");
    assert_ne!(
        turn.span_context.trace_id(),
        initialize.span_context.trace_id()
    );
    assert_eq!(finished.state, looopy_core::TaskState::Failed);
    assert_eq!(
        attr(&spans, "agent.turn", "a2a.task.state").as_deref(),
        Some("failed")
    );
    assert_eq!(
        attr(&spans, "agent.turn", "error.type").as_deref(),
        Some(finished.end.as_str())
    );
    assert!(matches!(turn.status, Status::Error { .. }));
}

/// Tools whose start takes a span of its own (and fails when told to).
struct Starting {
    fails: bool,
    starts: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl looopy_core::ToolProvider for Starting {
    async fn tools(
        &self,
        _cx: &looopy_core::TurnContext,
    ) -> Result<Vec<looopy_core::ToolDefinition>, looopy_core::ToolError> {
        Ok(Vec::new())
    }

    async fn execute(
        &self,
        call: &looopy_core::ToolCall,
        _cx: &looopy_core::TurnContext,
    ) -> looopy_core::ToolResult {
        looopy_core::ToolResult::error(call.id.clone(), "no tools")
    }

    async fn start(&self) -> Result<(), looopy_core::ToolError> {
        let _span = tracing::info_span!("test.tools_start").entered();
        self.starts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.fails {
            return Err(looopy_core::ToolError::Unavailable {
                message: "the server is down".into(),
            });
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_start_starts_the_tools_inside_its_span_and_a_tool_that_fails_to_start_fails_nothing() {
    for fails in [false, true] {
        let capture = SpanCapture::install();
        let tools = std::sync::Arc::new(Starting {
            fails,
            starts: Default::default(),
        });
        let llm = ScriptedLlm::new().respond(LlmResponse::text("hello"));
        let stores = looopy_stores_memory::stores();
        let agent = builder("c-spans-tools", &llm, &stores)
            .tools(tools.clone())
            .build()
            .unwrap();
        agent.start().await.unwrap();
        let (_, finished) = turn(&agent, "hi").await;
        let spans = capture.finish();

        assert_eq!(tools.starts.load(std::sync::atomic::Ordering::SeqCst), 1);
        let initialize = one(&spans, "agent.initialize");
        let start = one(&spans, "test.tools_start");
        assert_eq!(start.parent_span_id, initialize.span_context.span_id());
        assert_eq!(
            attribute(initialize, "looopy.agent.tools_started").map(ToString::to_string),
            Some((!fails).to_string())
        );
        // A tool that did not start is the tool's problem, not the turn's.
        assert_eq!(
            finished.state,
            looopy_core::TaskState::Completed,
            "fails: {fails}"
        );
    }
}
