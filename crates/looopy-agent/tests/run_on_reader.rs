//! A turn run on the task that reads it (`TurnOptions::run_on_reader`)
//! produces what a turn on its own task does, and a reader that drops it
//! early loses nothing: the rest moves to a task of its own.
#![allow(clippy::unwrap_used)]

mod support;

use looopy_agent::TurnOptions;
use looopy_core::{AgentEvent, LlmResponse, Message, Role, TaskState};
use looopy_testkit::ScriptedLlm;
use support::*;

fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(AgentEvent::kind).collect()
}

/// One turn with a tool call, read to its end; its events and what it saved.
async fn read_to_end(context: &str, on_reader: bool) -> (Vec<AgentEvent>, Vec<Message>) {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["l1"]))
        .respond(LlmResponse::text("all done"));
    let agent = builder(context, &llm, &stores)
        .tools(TestTools::default())
        .build()
        .unwrap();
    let t = agent
        .execute_turn_with(
            Some(Message::user("go")),
            TurnOptions::new().run_on_reader(on_reader),
        )
        .await
        .unwrap();
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
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["l1"]))
        .respond(LlmResponse::text("all done"));
    let agent = builder("c-inline-detach", &llm, &stores)
        .tools(TestTools::default())
        .build()
        .unwrap();
    let mut t = agent
        .execute_turn_with(
            Some(Message::user("go")),
            TurnOptions::new()
                .run_on_reader(true)
                .keep_running_on_drop(true),
        )
        .await
        .unwrap();
    // The turn has started on this task; then its reader goes away.
    until(&mut t, is_tool_start).await;
    drop(t);
    wait_ready(&agent).await;
    let stored = stores.messages.load("c-inline-detach").await.unwrap();
    assert_eq!(
        roles(&stored),
        vec![Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(stored[3].text(), "all done");
}

#[tokio::test]
async fn a_turn_run_by_its_reader_is_cancelled_and_saved_when_dropped() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(call("slow", &["s1"]));
    let agent = builder("c-inline-drop", &llm, &stores)
        .tools(TestTools::default())
        .build()
        .unwrap();
    let mut t = agent
        .execute_turn_with(
            Some(Message::user("start")),
            TurnOptions::new().run_on_reader(true),
        )
        .await
        .unwrap();
    until(&mut t, is_tool_start).await;
    drop(t);
    wait_ready(&agent).await;
    let stored = stores.messages.load("c-inline-drop").await.unwrap();
    assert_eq!(
        roles(&stored),
        vec![Role::User, Role::Assistant, Role::Tool]
    );
    assert!(stored[2].is_error());
    let state = stores.agents.load("c-inline-drop").await.unwrap().unwrap();
    assert_eq!(state.last_turn.as_ref().unwrap().state, TaskState::Canceled);
}
