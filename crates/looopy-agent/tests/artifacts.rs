//! Artifacts a turn produces are saved through the ArtifactStore, in order.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::FLUSH_EVERY;
use looopy_agent::TurnOptions;
use looopy_core::{EventPayload, FinishReason, LlmChunk, LlmResponse, Part, Role};
use looopy_loop::{InternalEvents, TurnSettings};
use looopy_testkit::ScriptedLlm;
use support::*;

fn texts(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .map(|p| p.as_text().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn streamed_text_is_saved_in_order_a_part_per_batch() {
    let stores = looopy_stores_memory::stores();
    let deltas: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    let mut chunks: Vec<LlmChunk> = deltas.iter().cloned().map(LlmChunk::TextDelta).collect();
    chunks.push(LlmChunk::Finish(FinishReason::Stop));
    let llm = ScriptedLlm::new().stream(chunks).stream(vec![
        LlmChunk::TextDelta("Hel".into()),
        LlmChunk::TextDelta("lo".into()),
        LlmChunk::Finish(FinishReason::Stop),
    ]);
    let agent = builder("c-art", &llm, &stores).build().unwrap();
    let (events, s1) = turn(&agent, "long answer please").await;
    let streamed: Vec<String> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ArtifactUpdate { artifact, .. } => Some(texts(&artifact.parts)),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(streamed, deltas, "events carry every chunk in order");
    let (_, s2) = turn(&agent, "short").await;

    let stored = agent.artifacts().await.unwrap();
    assert_eq!(stored.len(), 2);
    let first = &stored[0];
    // Written as it comes: the first chunk, then a part per batch of
    // chunks (their text joined), not one per chunk.
    assert_eq!(texts(&first.artifact.parts).concat(), deltas.concat());
    assert_eq!(
        first.artifact.parts.len(),
        1 + (deltas.len() - 1).div_ceil(FLUSH_EVERY)
    );
    assert_eq!(first.task_id, s1.task_id);
    assert_eq!(first.artifact.name.as_deref(), Some("response"));
    assert_eq!(s1.artifact_ids, vec![first.artifact.artifact_id.clone()]);
    let second = stores
        .artifacts
        .get("c-art", &s2.artifact_ids[0])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(texts(&second.artifact.parts), ["Hel", "lo"]);
    assert_eq!(second.task_id, s2.task_id);
}

#[tokio::test]
async fn artifacts_made_by_tools_are_stored_announced_and_referenced() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("chart", &["k1"]))
        .respond(LlmResponse::text("Here is your chart."));
    let agent = tool_agent("c-tool-art", &llm, &stores);
    let (events, s) = turn(&agent, "draw").await;
    let tool_done = events
        .iter()
        .position(|e| matches!(*e.payload, EventPayload::ToolComplete { .. }))
        .unwrap();
    match &*events[tool_done + 1].payload {
        EventPayload::ArtifactUpdate {
            artifact,
            append,
            last_chunk,
        } => {
            assert_eq!(artifact.artifact_id, "chart-k1");
            assert!(!append && *last_chunk);
        }
        other => panic!("expected the tool's artifact, got {other:?}"),
    }
    let chart = agent.artifact("chart-k1").await.unwrap().unwrap();
    assert_eq!(chart.artifact.name.as_deref(), Some("chart"));
    assert_eq!(texts(&chart.artifact.parts), vec!["<svg/>"]);
    assert_eq!(chart.task_id, s.task_id);
    assert!(s.artifact_ids.contains(&"chart-k1".to_owned()));

    let stored = stores.messages.load("c-tool-art").await.unwrap();
    let tool = stored.iter().find(|m| m.role == Role::Tool).unwrap();
    // The history keeps the ids, not the artifacts.
    assert!(!tool.metadata.contains_key("artifacts"));
    assert_eq!(tool.artifact_ids, ["chart-k1"]);
}

#[tokio::test]
async fn a_caller_that_asks_for_no_internal_events_gets_none_yet_tool_artifacts_are_kept() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("chart", &["k1"]))
        .respond(LlmResponse::text("Here is your chart."));
    let agent = tool_agent("c-quiet", &llm, &stores);
    // The driver builds the tool results for itself (`internal:tool-complete`);
    // this caller did not ask for them.
    let settings = TurnSettings::new().with_internal_events(InternalEvents::NONE);
    let t = start_turn(&agent, "draw", TurnOptions::new().with_settings(settings)).await;
    let (events, s) = t.collect_all().await;
    let s = s.unwrap();
    assert!(
        events.iter().all(|e| !e.is_internal()),
        "no internal event reaches the caller: {:?}",
        events.iter().map(|e| e.kind()).collect::<Vec<_>>()
    );
    let announced: Vec<&str> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ArtifactUpdate { artifact, .. } => Some(artifact.artifact_id.as_str()),
            _ => None,
        })
        .collect();
    assert!(announced.contains(&"chart-k1"), "announced: {announced:?}");
    assert!(s.artifact_ids.contains(&"chart-k1".to_owned()));
    let stored = stores.messages.load("c-quiet").await.unwrap();
    let tool = stored.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool.artifact_ids, ["chart-k1"]);
}
