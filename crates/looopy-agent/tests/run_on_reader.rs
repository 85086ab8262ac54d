//! A turn run on the task that reads it (`TurnOptions::run_on_reader`)
//! produces what a turn on its own task does, and a reader that drops it
//! early loses nothing: the rest moves to a task of its own.
#![allow(clippy::unwrap_used)]

mod support;

use looopy_agent::TurnOptions;
use looopy_core::{AgentEvent, Message, TaskState};
use looopy_testkit::ScriptedLlm;
use support::*;

fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(AgentEvent::kind).collect()
}

/// One turn with a tool call, read to its end; its events and what it saved.
async fn read_to_end(context: &str, on_reader: bool) -> (Vec<AgentEvent>, Vec<Message>) {
    let stores = looopy_stores_memory::stores();
    let llm = lookup_then_done();
    let agent = tool_agent(context, &llm, &stores);
    let t = start_turn(&agent, "go", TurnOptions::new().run_on_reader(on_reader)).await;
    let (events, summary) = t.collect_all().await;
    let summary = summary.unwrap();
    assert_eq!(summary.state, TaskState::Completed);
    assert!(summary.saved);
    (events, stores.messages.load(context).await.unwrap())
}

#[tokio::test]
async fn a_turn_run_by_its_reader_streams_and_saves_what_a_spawned_turn_does() {
    let (spawned, spawned_saved) = read_to_end("c-spawned", false).await;
    let (inline, inline_saved) = read_to_end("c-inline", true).await;
    assert_eq!(kinds(&inline), kinds(&spawned));
    assert!(inline.last().unwrap().is_final());
    assert_eq!(roles(&inline_saved), roles(&spawned_saved));
    assert_eq!(inline_saved.last().unwrap().text(), "all done");
}

#[tokio::test]
async fn a_turn_run_by_its_reader_and_kept_running_finishes_and_saves_when_dropped() {
    let stores = looopy_stores_memory::stores();
    let llm = lookup_then_done();
    let agent = tool_agent("c-inline-detach", &llm, &stores);
    let options = TurnOptions::new()
        .run_on_reader(true)
        .keep_running_on_drop(true);
    let mut t = start_turn(&agent, "go", options).await;
    // The turn has started on this task; then its reader goes away.
    until(&mut t, is_tool_start).await;
    drop(t);
    wait_ready(&agent).await;
    assert_saved_lookup_then_done(&stores, "c-inline-detach").await;
}

#[tokio::test]
async fn a_turn_run_by_its_reader_is_cancelled_and_saved_when_dropped() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(call("slow", &["s1"]));
    let agent = tool_agent("c-inline-drop", &llm, &stores);
    let mut t = start_turn(&agent, "start", TurnOptions::new().run_on_reader(true)).await;
    until(&mut t, is_tool_start).await;
    drop(t);
    wait_ready(&agent).await;
    assert_saved_cancelled_in_tool(&stores, "c-inline-drop").await;
}
