//! Per-turn settings given through `TurnOptions`.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use looopy_agent::{TurnEnd, TurnOptions};
use looopy_core::{LlmResponse, TaskState};
use looopy_loop::TurnSettings;
use looopy_testkit::ScriptedLlm;
use support::*;

#[tokio::test]
async fn a_turns_system_prompt_and_iteration_limit_reach_the_loop() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["a"]))
        .respond(LlmResponse::text("Partial result."))
        .respond(LlmResponse::text("Plain."));
    let agent = builder("c-settings", &llm, &stores)
        .system_prompt("Agent prompt.")
        .tools(TestTools::default())
        .max_iterations(10)
        .build()
        .unwrap();
    let options = TurnOptions::new()
        .with_system_prompt("Turn prompt.")
        .with_max_iterations(1);
    let t = start_turn(&agent, "go", options).await;
    let (events, s) = t.collect_all().await;
    let s = s.unwrap();
    assert_eq!(s.end, TurnEnd::MaxIterations);
    assert_eq!(final_metadata(&events)["finishReason"], "max_iterations");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2, "one iteration, then the wrap-up call");
    assert_eq!(reqs[0].system_prompt.as_deref(), Some("Turn prompt."));
    // The next turn has no settings: the agent's prompt again.
    let (_, s) = turn(&agent, "again").await;
    assert_eq!(s.end, TurnEnd::Finished);
    assert_eq!(
        llm.requests()[2].system_prompt.as_deref(),
        Some("Agent prompt.")
    );
}

#[tokio::test]
async fn a_wall_time_limit_fails_the_turn_and_the_stored_history_stays_whole() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(call("slow", &["s1"]));
    let agent = tool_agent("c-wall", &llm, &stores);
    let limit = TurnSettings::new().with_max_duration(Duration::from_millis(200));
    let t = start_turn(&agent, "go", TurnOptions::new().with_settings(limit)).await;
    let (events, s) = tokio::time::timeout(Duration::from_secs(60), t.collect_all())
        .await
        .expect("the limit did not stop the turn");
    let s = s.unwrap();
    assert_eq!(s.end, TurnEnd::MaxDuration);
    assert_eq!(s.state, TaskState::Failed);
    let meta = final_metadata(&events);
    assert_eq!(meta["finishReason"], "max_duration");
    assert_eq!(meta["error"]["type"], "limit_exceeded");
    let stored = stores.messages.load("c-wall").await.unwrap();
    assert_tool_pairs_intact(&stored);
}
