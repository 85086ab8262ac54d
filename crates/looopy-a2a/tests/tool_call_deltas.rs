//! A tool call as the model writes it reaches tool-progress clients: its
//! begin and its argument pieces, before it runs.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_a2a::TOOL_PROGRESS_EXTENSION;
use looopy_core::{
    FinishReason, LlmChunk, LlmResponse, ToolCall, ToolDefinition, ToolProvider, ToolResult,
};
use looopy_testkit::ScriptedLlm;
use looopy_tools::LocalTools;
use serde_json::{Value, json};
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn streamed_tool_call_arguments_reach_opted_in_clients_before_the_call_runs() {
    let tools = LocalTools::new().raw_tool(
        ToolDefinition::new("weather", "Weather", json!({"type": "object"})),
        |call: ToolCall, _cx| async move { ToolResult::text(call.id, "sunny") },
    );
    let llm = ScriptedLlm::new()
        .stream(vec![
            LlmChunk::ToolCallStart {
                index: 0,
                id: "call-w".into(),
                name: "weather".into(),
            },
            LlmChunk::ToolCallDelta {
                index: 0,
                arguments: "{\"city\":".into(),
            },
            LlmChunk::ToolCallDelta {
                index: 0,
                arguments: "\"Paris\"}".into(),
            },
            LlmChunk::Finish(FinishReason::ToolCalls),
        ])
        .respond(LlmResponse::text("Sunny."));
    let tools: Arc<dyn ToolProvider> = Arc::new(tools);
    let (runner, _stores) = agent_runner(llm, vec![tools]);
    let server = start(runner).await;
    let response = stream_request(
        &server.url,
        Some("1.0"),
        &[("A2A-Extensions", TOOL_PROGRESS_EXTENSION)],
        "SendStreamingMessage",
        v1_message("weather in Paris?"),
    )
    .await;
    let events = SseReader::new(response).rest().await;
    let progress: Vec<Value> = events
        .iter()
        .filter_map(|e| {
            let u = e.data["result"].get("statusUpdate")?;
            u["metadata"].get(TOOL_PROGRESS_EXTENSION)?;
            Some(u["status"]["message"]["parts"][0]["data"].clone())
        })
        .filter(|d| d["callId"] == "call-w")
        .collect();
    let kinds: Vec<&str> = progress
        .iter()
        .map(|d| d["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "tool-call-begin",
            "tool-call-delta",
            "tool-call-delta",
            "tool-start",
            "tool-complete"
        ]
    );
    assert_eq!(progress[0]["name"], "weather");
    let joined: String = progress[1..3]
        .iter()
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(joined, r#"{"city":"Paris"}"#);
    assert_eq!(progress[3]["arguments"], json!({"city": "Paris"}));
}
