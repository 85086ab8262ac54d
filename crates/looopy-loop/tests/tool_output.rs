//! Large tool outputs are stored as artifacts and read back on demand.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;

use looopy_core::store::ArtifactStore;
use looopy_core::{
    History, LlmResponse, Message, Role, TaskState, ToolCall, ToolResult, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_loop::tool_output::ToolOutputCache;
use looopy_stores_memory::MemoryArtifactStore;
use looopy_testkit::ScriptedLlm;
use support::*;

fn big_text() -> String {
    (0..2000).map(|i| format!("{:04} ", i)).collect()
}

#[tokio::test]
async fn a_large_output_becomes_a_preview_and_the_model_reads_the_rest() {
    let store = Arc::new(MemoryArtifactStore::new());
    let tools = FnTools::new().tool("dump", |call, _| async move {
        ToolResult::text(&call.id, big_text())
    });
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("d1", "dump", "{}")],
        ))
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new(
                "r1",
                "read_tool_output",
                r#"{"artifact_id":"tool-output-d1","offset":1000,"limit":500}"#,
            )],
        ))
        .respond(LlmResponse::text("read it"));
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .tool_output_cache(ToolOutputCache::new(store.clone(), 1000, 200))
        .build();
    let stream = agent.start_turn(
        History::from(vec![Message::user("dump it")]),
        TurnContext::new("t", "ctx"),
    );
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));

    let history = handle.history();
    let tool_msgs: Vec<&Message> = history.iter().filter(|m| m.role == Role::Tool).collect();
    let preview = tool_msgs[0].text();
    assert!(preview.starts_with(&big_text()[..200]));
    assert!(
        preview.len() < 600,
        "the history holds a preview, not 10 000 characters"
    );
    assert!(preview.contains("artifact 'tool-output-d1'"));
    let cut = tool_msgs[0].cut_output.as_deref().unwrap();
    assert_eq!(cut.original_chars, 10_000);
    assert_eq!(cut.artifact_id, "tool-output-d1");

    let page = tool_msgs[1].text();
    assert!(page.starts_with(&big_text()[1000..1500]));
    assert!(page.ends_with("[characters 1000..1500 of 10000]"));

    let stored = store.get("ctx", "tool-output-d1").await.unwrap().unwrap();
    assert_eq!(stored.artifact.parts[0].as_text().unwrap(), big_text());
    // The reading tool is offered once there is something to read.
    let offers_reader = |i: usize| {
        llm.requests()[i]
            .tools
            .iter()
            .any(|t| t.name == "read_tool_output")
    };
    assert!(!offers_reader(0), "nothing was cut before the first call");
    assert!(offers_reader(1), "the output of d1 was cut");
    assert!(offers_reader(2));
}

#[tokio::test]
async fn small_outputs_and_unknown_references_are_left_alone_or_refused() {
    let store = Arc::new(MemoryArtifactStore::new());
    let tools = FnTools::new().tool("small", |call, _| async move {
        ToolResult::text(&call.id, "tiny")
    });
    let llm = calls_then(
        &[
            ("s", "small", "{}"),
            ("r", "read_tool_output", r#"{"artifact_id":"nope"}"#),
        ],
        "ok",
    );
    let agent = AgentLoop::builder(llm.clone())
        .tools(tools)
        .tool_output_cache(ToolOutputCache::new(store.clone(), 1000, 200))
        .build();
    let stream = agent.start_turn(
        History::from(vec![Message::user("x")]),
        TurnContext::new("t", "ctx"),
    );
    let handle = stream.handle();
    drain(stream).await;
    let history = handle.history();
    let tool_msgs: Vec<&Message> = history.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(tool_msgs[0].text(), "tiny");
    assert!(tool_msgs[1].is_error());
    assert!(tool_msgs[1].text().contains("no stored tool output 'nope'"));
    assert!(store.list("ctx").await.unwrap().is_empty());
    // Nothing was cut, so the reader was never offered: the call above was
    // answered all the same.
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "the two calls, then the answer");
    for request in &requests {
        let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(offered, ["small"]);
    }
}

#[tokio::test]
async fn a_cut_output_in_the_stored_history_offers_the_reader_from_the_first_call() {
    let store = Arc::new(MemoryArtifactStore::new());
    let llm = ScriptedLlm::new().respond(LlmResponse::text("ok"));
    let agent = AgentLoop::builder(llm.clone())
        .tool_output_cache(ToolOutputCache::new(store, 1000, 200))
        .build();
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new("d1", "dump", "{}")];
    let mut cut = ToolResult::text("d1", "preview").into_message();
    cut.cut_output = Some(Box::new(looopy_core::CutOutput {
        artifact_id: "tool-output-d1".into(),
        original_chars: 5000,
    }));
    let history = History::from(vec![
        Message::user("dump it"),
        call,
        cut,
        Message::user("more"),
    ]);
    drain(agent.start_turn(history, TurnContext::new("t2", "ctx"))).await;
    let requests = llm.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["read_tool_output"]);
}
