//! A history past its configured size, with compaction off, is reported
//! once per passing.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::CompactionConfig;
use looopy_core::{AgentEvent, EventPayload, HistoryLimit, LlmResponse};
use looopy_testkit::ScriptedLlm;
use support::*;

fn warnings(events: &[AgentEvent]) -> Vec<(HistoryLimit, usize, usize)> {
    events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::HistorySize {
                limit,
                threshold,
                size,
            } => Some((*limit, *threshold, *size)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_history_past_its_size_warns_once_while_compaction_is_off() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::repeating(looopy_testkit::ScriptStep::Respond(LlmResponse::text("ok")));
    let agent = builder("c-size", &llm, &stores)
        .compaction(CompactionConfig {
            auto: false,
            max_messages: Some(4),
            ..CompactionConfig::default()
        })
        .build()
        .unwrap();
    // Turn starts: 1, 3, 5, 7 messages (each turn adds a user message and an answer).
    let (e1, _) = turn(&agent, "u1").await;
    let (e2, _) = turn(&agent, "u2").await;
    assert!(warnings(&e1).is_empty() && warnings(&e2).is_empty());
    let (e3, s3) = turn(&agent, "u3").await;
    assert_eq!(warnings(&e3), vec![(HistoryLimit::Messages, 4, 5)]);
    assert!(s3.compaction.is_none(), "nothing was compacted");
    // After the task event, before the turn's end.
    let at = e3
        .iter()
        .position(|e| e.kind() == "internal:history-size")
        .unwrap();
    assert_eq!(e3[0].kind(), "task");
    assert!(at > 0 && at < e3.len() - 1);
    let (e4, _) = turn(&agent, "u4").await;
    assert!(warnings(&e4).is_empty(), "once per passing");
    assert_eq!(stores.messages.count("c-size").await.unwrap(), 8);
}

#[tokio::test]
async fn no_warning_when_compaction_is_on() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::repeating(looopy_testkit::ScriptStep::Respond(LlmResponse::text("ok")));
    let agent = builder("c-size-auto", &llm, &stores)
        .compaction(CompactionConfig::after_messages(2).keep_recent(1))
        .build()
        .unwrap();
    let mut compacted = false;
    for i in 0..3 {
        let (events, summary) = turn(&agent, &format!("u{i}")).await;
        assert!(warnings(&events).is_empty());
        compacted |= summary.compaction.is_some();
    }
    assert!(compacted, "the limit was passed: compaction ran instead");
}
