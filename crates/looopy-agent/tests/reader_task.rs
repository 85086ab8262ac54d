//! A turn runs on the task that reads its `AgentTurn`, and a reader that
//! drops it early loses nothing: the rest moves to a task of its own.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::TurnOptions;
use looopy_core::{AgentEvent, Role, TaskState};
use looopy_testkit::ScriptedLlm;
use support::*;

fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(AgentEvent::kind).collect()
}

#[tokio::test]
async fn a_turn_read_to_its_end_streams_and_saves() {
    let context = "c-inline";
    let stores = looopy_stores_memory::stores();
    let llm = lookup_then_done();
    let agent = tool_agent(context, &llm, &stores);
    let t = start_turn(&agent, "go", TurnOptions::new()).await;
    let (events, summary) = t.collect_all().await;
    let summary = summary.unwrap();
    assert_eq!(summary.state, TaskState::Completed);
    assert!(summary.saved);
    let kinds = kinds(&events);
    assert_eq!(kinds.first(), Some(&"task"), "{kinds:?}");
    assert!(kinds.contains(&"internal:tool-start"), "{kinds:?}");
    assert!(events.last().unwrap().is_final());
    let saved = stores.messages.load(context).await.unwrap();
    assert_eq!(
        roles(&saved),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(saved.last().unwrap().text(), "all done");
}

#[tokio::test]
async fn a_turn_run_by_its_reader_and_kept_running_finishes_and_saves_when_dropped() {
    let stores = looopy_stores_memory::stores();
    let llm = lookup_then_done();
    let agent = tool_agent("c-inline-detach", &llm, &stores);
    let options = TurnOptions::new().keep_running_on_drop(true);
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
    let mut t = start_turn(&agent, "start", TurnOptions::new()).await;
    until(&mut t, is_tool_start).await;
    drop(t);
    wait_ready(&agent).await;
    assert_saved_cancelled_in_tool(&stores, "c-inline-drop").await;
}

/// Counts the wake-ups a reader's task gets.
#[derive(Default)]
struct Wakes(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Wakes {
    fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A turn run by its reader queues its events while the reader polls it:
/// the reader is woken only by what the turn waits on (here the model's
/// answers), never by the turn's own events. Woken by them, it would be
/// polled again for nothing after each batch, and a server's connection
/// would send each event on its own write.
#[tokio::test(start_paused = true)]
async fn a_turn_run_by_its_reader_does_not_wake_its_reader_with_its_own_events() {
    use futures::Stream;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new()
        .respond_after(Duration::from_millis(5), call("lookup", &["l1"]))
        .respond_after(
            Duration::from_millis(5),
            looopy_core::LlmResponse::text("all done"),
        );
    let agent = tool_agent("c-inline-wakes", &llm, &stores);
    let mut t = start_turn(&agent, "go", TurnOptions::new()).await;
    let wakes = Arc::new(Wakes::default());
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);
    let mut events = Vec::new();
    let mut waits = 0;
    loop {
        let before = wakes.count();
        let polled = Pin::new(&mut t).poll_next(&mut cx);
        assert_eq!(
            wakes.count(),
            before,
            "the reader was woken while it polled the turn (after {:?})",
            kinds(&events)
        );
        match polled {
            Poll::Ready(Some(event)) => events.push(event),
            Poll::Ready(None) => break,
            Poll::Pending => {
                waits += 1;
                assert!(waits < 100, "the turn did not end: {:?}", kinds(&events));
                // What the turn waits on (the model's delay) wakes the
                // reader: it is polled again only once woken.
                let mut slept = 0;
                while wakes.count() == before {
                    slept += 1;
                    assert!(
                        slept < 1000,
                        "the reader was never woken: {:?}",
                        kinds(&events)
                    );
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
    }
    assert!(events.last().unwrap().is_final(), "{:?}", kinds(&events));
    assert!(
        kinds(&events).contains(&"internal:tool-complete"),
        "{:?}",
        kinds(&events)
    );
    assert!(
        wakes.count() >= 2,
        "the model's two answers woke the reader"
    );
    assert_eq!(t.summary().unwrap().state, TaskState::Completed);
}
