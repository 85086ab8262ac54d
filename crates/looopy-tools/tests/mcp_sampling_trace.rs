//! The span of a sampling request: `mcp.sampling`, a child of the
//! `execute_tool` span of the call that caused it, with the model call's
//! `chat` span inside. Alone in its binary: it installs a span capture.
#![cfg(all(feature = "mcp", feature = "otel"))]
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use looopy_core::{History, LlmResponse, Message, ToolCall, TurnContext};
use looopy_loop::AgentLoop;
use looopy_testkit::{ScriptedLlm, SpanCapture, attribute};
use looopy_tools::McpSampling;
use opentelemetry::Value;

#[tokio::test]
async fn the_sampling_span_is_a_child_of_the_tools_span() {
    let Some(mcp) = support::stdio_provider() else {
        return;
    };
    let capture = SpanCapture::install();
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("call-1", "py_sample", r#"{"prompt": "hi"}"#)],
        ))
        .respond(LlmResponse::text("hello"))
        .respond(LlmResponse::text("done"));
    let mcp = mcp.with_sampling(McpSampling::new(Arc::new(llm.clone())));
    let agent = AgentLoop::builder(llm.clone()).tools(mcp.clone()).build();
    let history = History::from(vec![Message::user("go")]);
    agent
        .start_turn(history, TurnContext::new("t1", "c1"))
        .collect_all()
        .await;
    mcp.shutdown().await.unwrap();
    let spans = capture.finish();
    let find = |name: &str| {
        spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
            panic!(
                "no span {name}: {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        })
    };
    let tool = find("execute_tool py_sample");
    let sampling = find("mcp.sampling");
    assert_eq!(sampling.parent_span_id, tool.span_context.span_id());
    assert_eq!(
        sampling.span_context.trace_id(),
        tool.span_context.trace_id()
    );
    assert_eq!(
        attribute(sampling, "gen_ai.request.max_tokens"),
        Some(&Value::I64(100))
    );
    let chat = spans
        .iter()
        .find(|s| s.parent_span_id == sampling.span_context.span_id())
        .expect("the model call's span inside");
    assert_eq!(chat.name, "chat scripted");
    assert_eq!(
        attribute(chat, "gen_ai.response.finish_reasons"),
        Some(&Value::from("[\"stop\"]"))
    );
}
