//! Retention of the memory stores: the cap drops the least recently used
//! conversation or task of each store, and entries expire after their last
//! write, as the Redis stores' TTLs do.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use looopy_core::store::{
    AgentState, AgentStateStore, CheckpointStore, EventLog, MessageStore, TaskCheckpoint,
    TaskRecord, TaskRecordStore,
};
use looopy_core::{AgentEvent, EventPayload, History, Message, StoreError, TaskState, TaskStatus};
use looopy_stores_memory::{
    MemoryAgentStateStore, MemoryCheckpointStore, MemoryEventLog, MemoryMessageStore,
    MemoryRetention, MemoryTaskRecordStore,
};
use looopy_testkit::checkpoints;

fn checkpoint(task_id: &str) -> TaskCheckpoint {
    checkpoints::working("c", task_id, History::from(vec![Message::user(task_id)]))
}

fn owned_state(context_id: &str, owner: &str) -> AgentState {
    AgentState {
        turn_count: 1,
        ..checkpoints::ready_state(context_id, Some(owner))
    }
}

fn status(task_id: &str, state: TaskState, is_final: bool) -> AgentEvent {
    AgentEvent::new(
        task_id.into(),
        "c".into(),
        EventPayload::StatusUpdate {
            status: TaskStatus::new(state),
            is_final,
            metadata: Default::default(),
        },
    )
}

fn working(task_id: &str) -> Arc<AgentEvent> {
    Arc::new(status(task_id, TaskState::Working, false))
}

fn completed(task_id: &str) -> Arc<AgentEvent> {
    Arc::new(status(task_id, TaskState::Completed, true))
}

fn capped(max_entries: usize) -> MemoryRetention {
    MemoryRetention {
        max_entries,
        ..MemoryRetention::unbounded()
    }
}

#[tokio::test]
async fn the_message_store_keeps_the_most_recently_used_conversations() {
    let messages = MemoryMessageStore::with_retention(&capped(3));
    for c in ["a", "b", "c"] {
        messages.append(c, &[Message::user(c)]).await.unwrap();
    }
    // Reading "a" makes "b" the least recently used.
    assert_eq!(messages.count("a").await.unwrap(), 1);
    messages.append("d", &[Message::user("d")]).await.unwrap();
    assert_eq!(messages.context_count(), 3);
    assert_eq!(messages.count("b").await.unwrap(), 0);
    for c in ["a", "c", "d"] {
        assert_eq!(messages.count(c).await.unwrap(), 1, "{c}");
    }
}

#[tokio::test]
async fn checkpoints_event_logs_and_states_are_capped_too() {
    let retention = capped(2);
    let checkpoints = MemoryCheckpointStore::with_retention(&retention);
    let events = MemoryEventLog::with_retention(&retention);
    let agents = MemoryAgentStateStore::with_retention(&retention);
    for t in ["t1", "t2", "t3"] {
        checkpoints.save(&checkpoint(t)).await.unwrap();
        // Ended tasks' logs: the cap drops those (a running task's it keeps).
        events.append(t, completed(t)).await.unwrap();
        agents.save(&owned_state(t, "me")).await.unwrap();
    }
    assert!(checkpoints.load("t1").await.unwrap().is_none());
    assert!(checkpoints.load("t3").await.unwrap().is_some());
    assert_eq!(checkpoints.len(), 2);
    assert!(events.read("t1", None, 10).await.unwrap().is_empty());
    assert_eq!(events.read("t3", None, 10).await.unwrap().len(), 1);
    // The owner index lists only the states still kept.
    let listed: Vec<String> = agents
        .list_by_owner("me", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.context_id)
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(!listed.contains(&"t1".to_owned()), "{listed:?}");
}

#[tokio::test]
async fn the_cap_never_drops_a_running_task_s_log_or_record() {
    let retention = capped(2);
    let events = MemoryEventLog::with_retention(&retention);
    let records = MemoryTaskRecordStore::with_retention(&retention);
    // Three tasks start and run; four more start and end.
    let tasks = [
        ("run", 3, TaskState::Working),
        ("done", 4, TaskState::Completed),
    ];
    for (name, count, state) in tasks {
        for i in 1..=count {
            let t = format!("{name}{i}");
            let event = Arc::new(status(&t, state, state.is_terminal()));
            events.append(&t, event).await.unwrap();
            let record = TaskRecord::new(t, "c", None, TaskStatus::new(state));
            records.put(&record).await.unwrap();
        }
    }
    for t in ["run1", "run2", "run3"] {
        assert_eq!(events.read(t, None, 10).await.unwrap().len(), 1, "{t}");
        assert!(records.get(t).await.unwrap().is_some(), "{t}");
    }
    // The ended ones are capped: the older ones went.
    assert!(events.read("done1", None, 10).await.unwrap().is_empty());
    assert!(records.get("done1").await.unwrap().is_none());
    assert_eq!(events.read("done4", None, 10).await.unwrap().len(), 1);
    // Once it ends, a task's log is capped like any other.
    events.append("run1", completed("run1")).await.unwrap();
    for t in ["done5", "done6", "done7"] {
        events.append(t, completed(t)).await.unwrap();
    }
    assert!(events.read("run1", None, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_stream_reaches_its_task_s_final_event_however_many_tasks_start() {
    let events = MemoryEventLog::with_retention(&capped(2));
    events.append("t", working("t")).await.unwrap();
    let mut follow = events.follow("t", None);
    assert!(!follow.next().await.unwrap().unwrap().event.is_final());
    // The task ends, then many tasks start and end before the stream reads
    // on (the cap is 2): the log it follows stays.
    events.append("t", completed("t")).await.unwrap();
    for i in 0..20 {
        let other = format!("other{i}");
        events.append(&other, working(&other)).await.unwrap();
        events.append(&other, completed(&other)).await.unwrap();
    }
    let last = tokio::time::timeout(Duration::from_secs(5), follow.next())
        .await
        .expect("the final event reaches the stream")
        .unwrap()
        .unwrap();
    assert!(last.event.is_final());
    assert!(follow.next().await.is_none(), "the stream ends after it");
    drop(follow);
    // Followed no more, the ended log is capped like any other.
    for t in ["late1", "late2", "late3"] {
        events.append(t, completed(t)).await.unwrap();
    }
    assert!(events.read("t", None, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_stream_whose_log_is_dropped_under_it_ends_with_an_error() {
    let events = MemoryEventLog::with_retention(&MemoryRetention {
        ttl_secs: 1,
        ..MemoryRetention::unbounded()
    });
    events.append("t", working("t")).await.unwrap();
    let mut follow = events.follow("t", None);
    assert!(follow.next().await.unwrap().is_ok());
    // The log expires (a second after its last append) and an append
    // elsewhere sweeps it while the stream waits for the task's next event.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    events.append("other", working("other")).await.unwrap();
    events.append("other", completed("other")).await.unwrap();
    assert!(events.read("t", None, 10).await.unwrap().is_empty());
    let next = tokio::time::timeout(Duration::from_secs(5), follow.next())
        .await
        .expect("the stream does not wait for events that will not come")
        .unwrap();
    let error = next.unwrap_err();
    assert!(
        matches!(error, StoreError::NotFound { .. }) && error.to_string().contains("dropped"),
        "{error}"
    );
}

#[tokio::test]
async fn conversations_expire_after_their_last_write() {
    // Through the bundle: its constructor hands the retention to each store.
    let stores = looopy_stores_memory::stores_with_retention(&MemoryRetention {
        ttl_secs: 1,
        task_ttl_secs: 1,
        max_entries: 0,
    });
    stores
        .messages
        .append("old", &[Message::user("x")])
        .await
        .unwrap();
    stores.checkpoints.save(&checkpoint("t")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    stores
        .messages
        .append("kept", &[Message::user("y")])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    // "old" was written 1.2 s ago, "kept" 0.6 s ago.
    assert_eq!(stores.messages.count("old").await.unwrap(), 0);
    assert!(stores.checkpoints.load("t").await.unwrap().is_none());
    assert_eq!(stores.messages.count("kept").await.unwrap(), 1);
    // A conversation that expired starts again empty.
    stores
        .messages
        .append("old", &[Message::user("z")])
        .await
        .unwrap();
    assert_eq!(stores.messages.count("old").await.unwrap(), 1);
}

#[tokio::test]
async fn the_bundle_without_retention_keeps_everything() {
    // Twice the default cap: with it, the first conversations would go.
    let stores = looopy_stores_memory::stores();
    for i in 0..20_000 {
        stores
            .messages
            .append(&format!("c{i}"), &[Message::user("x")])
            .await
            .unwrap();
    }
    for i in 0..20_000 {
        let count = stores.messages.count(&format!("c{i}")).await.unwrap();
        assert_eq!(count, 1, "c{i} was dropped");
    }
}
