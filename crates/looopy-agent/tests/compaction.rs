//! Compaction: old history is summarised by the model and replaced in the
//! store; tool pairs stay intact; the model sees the summary.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::compaction::{COMPACTION_KEY, SUMMARY_PREFIX, TURN_SUMMARY_PREFIX};
use looopy_agent::{Agent, CompactionConfig, WindowConfig, keys};
use looopy_core::store::Stores;
use looopy_core::tokens::{HeuristicCounter, TokenCounter};
use looopy_core::{
    LlmError, LlmProvider, LlmRequest, LlmResponse, Message, TaskState, TurnContext,
};
use looopy_testkit::{ScriptStep, ScriptedLlm};
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

/// Sends requests without tools (the summary calls) to `summaries`, the
/// others (the turn's) to `turns`.
#[derive(Clone)]
struct Router {
    turns: ScriptedLlm,
    summaries: ScriptedLlm,
}

#[async_trait::async_trait]
impl LlmProvider for Router {
    async fn call(&self, request: LlmRequest, cx: &TurnContext) -> Result<LlmResponse, LlmError> {
        if request.tools.is_empty() {
            self.summaries.call(request, cx).await
        } else {
            self.turns.call(request, cx).await
        }
    }
}

/// A call id of about 200 tokens: `lookup` answers `result of <id>`, so
/// each round costs about 400.
fn long_id(n: usize) -> String {
    format!("c{n}-{}", "x".repeat(800))
}

/// A turn of six lookups, then an answer, on an Agent whose window holds
/// 1500 tokens.
fn six_rounds(compaction: Option<CompactionConfig>) -> (Agent, Router, Stores) {
    let stores = looopy_stores_memory::stores();
    let mut turns = ScriptedLlm::new();
    for n in 1..=6 {
        turns = turns.respond(call("lookup", &[&long_id(n)]));
    }
    let router = Router {
        turns: turns.respond(LlmResponse::text("done")),
        summaries: ScriptedLlm::new().with_fallback(ScriptStep::Respond(LlmResponse::text(
            "the lookups returned their ids",
        ))),
    };
    let mut builder = Agent::builder("c-in-turn")
        .llm(router.clone())
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .tools(TestTools::default())
        .window(WindowConfig::max_tokens(1500));
    if let Some(compaction) = compaction {
        builder = builder.compaction(compaction);
    }
    (builder.build().unwrap(), router, stores)
}

#[tokio::test]
async fn a_long_turn_is_compacted_inside_the_turn_and_answers() {
    let (agent, router, stores) = six_rounds(Some(CompactionConfig::after_messages(1000)));
    let (_, finished) = turn(&agent, "look everything up").await;
    assert_eq!(finished.state, TaskState::Completed);
    assert_eq!(finished.message.unwrap().text(), "done");
    let requests = router.turns.requests();
    assert_eq!(requests.len(), 7, "six lookups and the answer");
    for r in &requests {
        let tokens = HeuristicCounter.request(r);
        assert!(tokens <= 1500, "a request of {tokens} tokens was sent");
        assert_tool_pairs_intact(&r.messages.to_vec());
    }
    let summaries = router.summaries.requests();
    assert!(!summaries.is_empty(), "the turn was compacted");
    let transcript = summaries[0].messages.get(0).unwrap().text();
    assert!(transcript.contains(&long_id(1)), "the oldest round first");
    let last = requests.last().unwrap().messages.to_vec();
    assert_eq!(last[0].text(), "look everything up");
    assert!(
        last[1].text().starts_with(TURN_SUMMARY_PREFIX),
        "{:?}",
        last[1]
    );
    assert!(
        last.iter()
            .any(|m| m.text() == format!("result of {}", long_id(6))),
        "the newest result is sent whole"
    );
    // The store keeps every round: only what the model was sent changed.
    assert_eq!(stores.messages.count("c-in-turn").await.unwrap(), 14);
}

#[tokio::test]
async fn without_compaction_a_turn_that_outgrows_the_window_ends_context_length() {
    let (agent, router, stores) = six_rounds(None);
    let (events, finished) = turn(&agent, "look everything up").await;
    assert_eq!(finished.state, TaskState::Failed);
    let error = looopy_testkit::events::final_report(&events).error.unwrap();
    assert_eq!(error.kind, looopy_loop::CONTEXT_LENGTH);
    assert!(error.message.contains("compaction"), "{}", error.message);
    let requests = router.turns.requests();
    assert!(requests.len() < 7);
    for r in &requests {
        assert!(
            HeuristicCounter.request(r) <= 1500,
            "an oversized request was sent"
        );
    }
    assert!(router.summaries.requests().is_empty());
    // Every lookup that ran is saved (the call that asked for it and its
    // result), after the user's message.
    let stored = stores.messages.count("c-in-turn").await.unwrap();
    assert_eq!(stored, 1 + 2 * requests.len());
}
