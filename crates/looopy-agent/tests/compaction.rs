//! Compaction: old history is summarised by the model and replaced in the
//! store; tool pairs stay intact; the model sees the summary.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::compaction::{COMPACTION_KEY, SUMMARY_PREFIX};
use looopy_agent::{CompactionConfig, keys};
use looopy_core::{LlmError, LlmResponse, Message, TaskState};
use looopy_testkit::ScriptedLlm;
use support::*;

/// Two turns, each with one tool exchange: 8 stored messages.
fn two_tool_turns(llm: ScriptedLlm) -> ScriptedLlm {
    llm.respond(call("lookup", &["a"]))
        .respond(LlmResponse::text("answer 1"))
        .respond(call("lookup", &["b"]))
        .respond(LlmResponse::text("answer 2"))
}

#[tokio::test]
async fn compaction_summarises_old_turns_keeps_tool_pairs_and_the_model_sees_the_summary() {
    let stores = looopy_stores_memory::stores();
    let llm = two_tool_turns(ScriptedLlm::new())
        .respond(LlmResponse::text("SUMMARY-ONE"))
        .respond(LlmResponse::text("answer 3"))
        .respond(LlmResponse::text("SUMMARY-TWO"))
        .respond(LlmResponse::text("answer 4"));
    let agent = builder("c-compact", &llm, &stores)
        .tools(TestTools::default())
        .compaction(CompactionConfig::after_messages(6).keep_recent(3))
        .build()
        .unwrap();
    turn(&agent, "u1").await;
    let (_, s2) = turn(&agent, "u2").await;
    assert!(s2.compaction.is_none(), "5 messages do not pass 6");
    assert_eq!(stores.messages.count("c-compact").await.unwrap(), 8);

    // Turn 3 starts with 9 messages: compaction first. Keeping 3 would cut
    // between call b and its result: the cut moves back to the call.
    let (events, s3) = turn(&agent, "u3").await;
    assert_eq!(s3.state, TaskState::Completed);
    let report = s3.compaction.clone().unwrap();
    assert_eq!(report.replaced, 5);
    assert_eq!(report.covered, 5);
    assert_eq!(report.range, 0..5);
    assert!(report.tokens_after < report.tokens_before);
    assert!(final_metadata(&events).contains_key(COMPACTION_KEY));

    let requests = llm.requests();
    let summary_call = &requests[4];
    assert!(
        summary_call.tools.is_empty(),
        "no tools for the summary call"
    );
    assert_eq!(summary_call.messages.len(), 1);
    let transcript = summary_call.messages.get(0).unwrap().text();
    assert!(transcript.contains("u1") && transcript.contains("called lookup"));
    assert!(
        !transcript.contains("u3"),
        "kept messages are not summarised"
    );
    let turn_call = &requests[5];
    assert!(!turn_call.tools.is_empty());
    let first = turn_call.messages.get(0).unwrap();
    assert!(first.text().starts_with(SUMMARY_PREFIX));
    assert!(first.text().contains("SUMMARY-ONE"));
    let sent: Vec<Message> = turn_call.messages.to_vec();
    assert_eq!(sent.len(), 5);
    assert_tool_pairs_intact(&sent);

    let stored = stores.messages.load("c-compact").await.unwrap();
    assert_eq!(stored.len(), 6);
    assert_eq!(stored[0].metadata[COMPACTION_KEY]["originalCount"], 5);
    assert_eq!(stored[0].metadata[COMPACTION_KEY]["range"]["end"], 5);
    assert_eq!(stored[1].tool_calls[0].id, "b");
    assert_tool_pairs_intact(&stored);
    let state = stores.agents.load("c-compact").await.unwrap().unwrap();
    assert_eq!(state.metadata[keys::COMPACTION_COUNT], 1);
    assert_eq!(state.metadata[keys::COMPACTIONS][0]["originalCount"], 5);

    // Turn 4: 7 messages, compaction again; the first summary is folded in.
    let (_, s4) = turn(&agent, "u4").await;
    let report = s4.compaction.unwrap();
    assert_eq!(report.replaced, 4);
    assert_eq!(report.covered, 8, "5 from the first summary + 3");
    let requests = llm.requests();
    assert!(
        requests[6]
            .messages
            .get(0)
            .unwrap()
            .text()
            .contains("summary of what came before")
    );
    assert!(
        requests[7]
            .messages
            .get(0)
            .unwrap()
            .text()
            .contains("SUMMARY-TWO")
    );
    let stored = stores.messages.load("c-compact").await.unwrap();
    assert_tool_pairs_intact(&stored);
    assert_eq!(
        stored
            .iter()
            .filter(|m| m.metadata.contains_key(COMPACTION_KEY))
            .count(),
        1
    );
    let state = stores.agents.load("c-compact").await.unwrap().unwrap();
    assert_eq!(state.metadata[keys::COMPACTION_COUNT], 2);
    assert_eq!(
        state.metadata[keys::COMPACTIONS].as_array().unwrap().len(),
        2
    );
}

#[tokio::test]
async fn a_failed_summary_does_not_fail_the_turn() {
    let stores = looopy_stores_memory::stores();
    let llm = two_tool_turns(ScriptedLlm::new())
        .fail(LlmError::Timeout {
            message: "slow".into(),
        })
        .respond(LlmResponse::text("answer 3"));
    let agent = builder("c-compact-fail", &llm, &stores)
        .tools(TestTools::default())
        .compaction(CompactionConfig::after_messages(6).keep_recent(3))
        .build()
        .unwrap();
    turn(&agent, "u1").await;
    turn(&agent, "u2").await;
    let (events, s) = turn(&agent, "u3").await;
    assert_eq!(s.state, TaskState::Completed);
    assert!(s.compaction.is_none());
    assert!(
        final_metadata(&events)["compactionError"]
            .as_str()
            .unwrap()
            .contains("slow")
    );
    assert_eq!(
        llm.requests()[5].messages.len(),
        9,
        "the full history was sent"
    );
    assert_eq!(stores.messages.count("c-compact-fail").await.unwrap(), 10);
}

#[tokio::test]
async fn manual_compaction_works_without_automatic_limits() {
    let stores = looopy_stores_memory::stores();
    let llm = two_tool_turns(ScriptedLlm::new()).respond(LlmResponse::text("MANUAL"));
    let agent = builder("c-manual-compact", &llm, &stores)
        .tools(TestTools::default())
        .compaction(CompactionConfig::default().keep_recent(1))
        .build()
        .unwrap();
    turn(&agent, "u1").await;
    let (_, s) = turn(&agent, "u2").await;
    assert!(s.compaction.is_none(), "no automatic compaction by default");
    let report = agent.compact().await.unwrap().unwrap();
    assert_eq!(report.replaced, 7);
    let stored = agent.messages().await.unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored[0].text().contains("MANUAL"));
    assert_eq!(stored[1].text(), "answer 2");
    // Nothing left worth compacting.
    assert_eq!(agent.compact().await.unwrap(), None);
}
