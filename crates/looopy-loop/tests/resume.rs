//! Checkpointing and resume.

#![allow(clippy::unwrap_used)]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use looopy_core::store::TaskStateStore;
use looopy_core::{
    History, LlmResponse, Message, Role, TaskState, ToolCall, ToolResult, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_stores_memory::MemoryTaskStateStore;
use looopy_testkit::ScriptedLlm;

fn cx() -> TurnContext {
    TurnContext::new("task-r", "ctx-r")
}

/// Tools `a`, `b`, `c`: `c` hangs unless `c_works`; every run is counted.
fn tools(runs: Arc<AtomicUsize>, c_works: bool) -> FnTools {
    let mut t = FnTools::new();
    for name in ["a", "b", "c"] {
        let runs = runs.clone();
        t = t.tool(name, move |call, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            let name = call.name.clone();
            async move {
                if name == "c" && !c_works {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                ToolResult::text(&call.id, format!("result {name}"))
            }
        });
    }
    t
}

/// Waits (at most 5 s) until the stored checkpoint of the test task satisfies `ok`.
async fn wait_for(
    store: &MemoryTaskStateStore,
    ok: impl Fn(&looopy_core::store::TaskCheckpoint) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(c) = store.load("task-r").await.unwrap()
            && ok(&c)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the checkpoint never landed"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn three_calls() -> LlmResponse {
    LlmResponse::tool_calls(
        "",
        vec![
            ToolCall::new("ca", "a", "{}"),
            ToolCall::new("cb", "b", "{}"),
            ToolCall::new("cc", "c", "{}"),
        ],
    )
}

#[tokio::test]
async fn checkpoints_are_taken_and_the_last_one_holds_the_final_state() {
    let store = Arc::new(MemoryTaskStateStore::new());
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![ToolCall::new("ca", "a", "{}")],
        ))
        .respond(LlmResponse::text("ok"));
    let agent = AgentLoop::builder(llm)
        .tools(tools(Arc::default(), true))
        .task_store(store.clone())
        .build();
    let events = drain(agent.start_turn(History::from(vec![Message::user("go")]), cx())).await;
    // Six snapshots are taken (before it.1, after llm 1, after tool a, before
    // it.2, after llm 2, end); the writer may fold those that arrive while a
    // save runs into one save of the newest, but the end is always written,
    // before the final event.
    let saves = kinds(&events)
        .iter()
        .filter(|k| **k == "internal:checkpoint")
        .count();
    assert!((1..=6).contains(&saves), "{saves} saves");
    let k = kinds(&events);
    let last_save = k.iter().rposition(|k| *k == "internal:checkpoint").unwrap();
    assert!(
        last_save < k.len() - 1,
        "the last save precedes the final event"
    );
    let saved = store.load("task-r").await.unwrap().unwrap();
    assert_eq!(saved.state, TaskState::Completed);
    assert_eq!(saved.messages.len(), 4);
    assert_eq!(saved.turn_start, 1);
    assert_eq!(saved.iteration, 2);
}

#[tokio::test]
async fn resume_after_a_crash_mid_batch_runs_only_the_missing_calls() {
    let store = Arc::new(MemoryTaskStateStore::new());
    let first_runs = Arc::new(AtomicUsize::new(0));
    let llm = ScriptedLlm::new().respond(three_calls());
    let agent = AgentLoop::builder(llm)
        .tools(tools(first_runs.clone(), false))
        .task_store(store.clone())
        .build();
    let mut stream = agent.start_turn(History::from(vec![Message::user("go")]), cx());
    // Read until a and b completed, then "crash" (drop everything).
    let mut completed = 0;
    while let Some(e) = stream.next().await {
        if e.kind() == "internal:tool-complete" {
            completed += 1;
            if completed == 2 {
                break;
            }
        }
    }
    // Checkpoints are written in the background: wait until the one after
    // the second completion landed, then "crash".
    wait_for(&store, |c| c.completed_tool_results.len() == 2).await;
    drop(stream);
    drop(agent);
    assert_eq!(first_runs.load(Ordering::SeqCst), 3);
    let saved = store.load("task-r").await.unwrap().unwrap();
    assert_eq!(saved.completed_tool_results.len(), 2);

    // A new process: new loop, new tool counters, c works now.
    let second_runs = Arc::new(AtomicUsize::new(0));
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("all three done"));
    let agent2 = AgentLoop::builder(llm2.clone())
        .tools(tools(second_runs.clone(), true))
        .task_store(store.clone())
        .build();
    let stream = agent2.resume(cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(second_runs.load(Ordering::SeqCst), 1, "only c ran again");
    let history = handle.outcome().unwrap().history;
    let results: Vec<String> = history
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results, vec!["result a", "result b", "result c"]);
    assert_eq!(history.last().unwrap().text(), "all three done");
    assert_eq!(llm2.requests()[0].messages.len(), 5);
    assert_eq!(
        events[0].kind(),
        "status-update",
        "a resumed turn does not announce a new task"
    );
}

#[tokio::test]
async fn resume_after_a_crash_before_the_tools_ran_runs_them_all_once() {
    let store = Arc::new(MemoryTaskStateStore::new());
    let llm = ScriptedLlm::new().respond(three_calls());
    let agent = AgentLoop::builder(llm)
        .tools(tools(Arc::default(), false))
        .task_store(store.clone())
        .build();
    let mut stream = agent.start_turn(History::from(vec![Message::user("go")]), cx());
    while let Some(e) = stream.next().await {
        if e.kind() == "internal:llm-response" {
            break;
        }
    }
    wait_for(&store, |c| c.messages.len() == 2).await;
    drop(stream);
    let runs = Arc::new(AtomicUsize::new(0));
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("fine"));
    let agent2 = AgentLoop::builder(llm2)
        .tools(tools(runs.clone(), true))
        .task_store(store.clone())
        .build();
    let events = drain(agent2.resume(cx())).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    // a and b may have finished before the crash (they are instant); c never did.
    let saved = store.load("task-r").await.unwrap().unwrap();
    let results = saved
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    assert_eq!(results, 3);
    assert!(runs.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn resume_of_an_ended_task_reports_it_without_calling_the_model() {
    let store = Arc::new(MemoryTaskStateStore::new());
    let llm = ScriptedLlm::new().respond(LlmResponse::text("answer"));
    let agent = AgentLoop::builder(llm).task_store(store.clone()).build();
    drain(agent.start_turn(History::from(vec![Message::user("q")]), cx())).await;
    let llm2 = ScriptedLlm::new();
    let agent2 = AgentLoop::builder(llm2.clone()).task_store(store).build();
    let events = drain(agent2.resume(cx())).await;
    assert_eq!(events.len(), 1);
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(llm2.request_count(), 0);
}

#[tokio::test]
async fn resume_without_a_checkpoint_fails_clearly() {
    let agent = AgentLoop::builder(ScriptedLlm::new())
        .task_store(Arc::new(MemoryTaskStateStore::new()))
        .build();
    let events = drain(agent.resume(cx())).await;
    let last = final_event(&events);
    assert_eq!(last.state(), Some(TaskState::Failed));
    let looopy_core::EventPayload::StatusUpdate { status, .. } = &*last.payload else {
        unreachable!()
    };
    assert!(
        status
            .message
            .as_ref()
            .unwrap()
            .text()
            .contains("no checkpoint for task 'task-r'")
    );

    let no_store = AgentLoop::builder(ScriptedLlm::new()).build();
    let events = drain(no_store.resume(cx())).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
}
