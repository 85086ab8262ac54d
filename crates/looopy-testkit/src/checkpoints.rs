//! What the stores' tests of checkpoints share: the checkpoint a turn
//! saves, the agent state a conversation keeps, the saves of checkpoints on
//! the stored history and the check of their typed failure once that
//! history was rewritten. The behaviour every backend keeps is in
//! [`conformance::turn_store`](crate::conformance::turn_store); a backend's
//! own tests add what only it can show (how many messages its row holds),
//! through the `kept` count they hand to [`saves_on_the_stored_history`].

use chrono::Utc;
use looopy_core::store::{AgentState, HistoryMark, LifecycleState, Stores, TaskCheckpoint};
use looopy_core::{History, Message, StoreError, TaskState};

/// How many messages [`store_history`] stores.
pub const STORED: usize = 50;

/// A working checkpoint of `task` in `ctx` holding `messages`, on no
/// stored history (its turn starts at the first message).
pub fn working(ctx: &str, task: &str, messages: History) -> TaskCheckpoint {
    on_history(ctx, task, messages, None)
}

/// A ready agent state of `ctx` (agent `agent`, no turn yet, no last turn),
/// held by `owner` when there is one.
pub fn ready_state(ctx: &str, owner: Option<&str>) -> AgentState {
    let now = Utc::now();
    AgentState {
        context_id: ctx.into(),
        agent_id: "agent".into(),
        lifecycle: LifecycleState::Ready,
        turn_count: 0,
        created_at: now,
        last_activity: now,
        owner: owner.map(str::to_owned),
        last_turn: None,
        metadata: Default::default(),
    }
}

/// A working checkpoint of `task` in `ctx` holding `messages`, built on the
/// stored history `mark` names (its turn starts after it), or on none.
pub fn on_history(
    ctx: &str,
    task: &str,
    messages: History,
    mark: Option<&HistoryMark>,
) -> TaskCheckpoint {
    TaskCheckpoint {
        task_id: task.into(),
        context_id: ctx.into(),
        agent_id: "agent".into(),
        iteration: 1,
        state: TaskState::Working,
        turn_start: mark.map_or(0, |m| m.len),
        messages,
        usage: Default::default(),
        completed_tool_results: Vec::new(),
        streamed_answers: Vec::new(),
        stored_history: mark.cloned(),
        created_at: Utc::now(),
        updated_at: Utc::now(),
        metadata: Default::default(),
    }
}

/// Asserts that loading `task`'s checkpoint gave
/// [`StoreError::HistoryRewritten`] naming `ctx` and `task`.
#[track_caller]
pub fn assert_history_rewritten(
    loaded: Result<Option<TaskCheckpoint>, StoreError>,
    ctx: &str,
    task: &str,
) {
    match loaded {
        Err(StoreError::HistoryRewritten {
            context_id,
            task_id,
        }) => {
            assert_eq!((context_id.as_str(), task_id.as_str()), (ctx, task));
        }
        other => panic!("expected HistoryRewritten, got {other:?}"),
    }
}

/// Appends [`STORED`] user messages to `ctx`'s history; returns them.
pub async fn store_history(stores: &Stores, ctx: &str) -> Vec<Message> {
    let stored: Vec<Message> = (0..STORED)
        .map(|n| Message::user(format!("old {n}")))
        .collect();
    stores
        .messages
        .append(ctx, &stored)
        .await
        .expect("append the stored history");
    stored
}

/// Saves three checkpoints of `task` in `ctx` on the history `stored` up
/// to `mark`, each one message longer: two through `stores`, the third
/// through `other` (another process, which never saved it, loads it whole
/// first). After each save `kept(task)`, the number of messages the
/// backend holds for the checkpoint itself, must be the turn's own ones,
/// and each loads back as it was saved. Returns the whole history of the
/// last one.
pub async fn saves_on_the_stored_history(
    stores: &Stores,
    other: &Stores,
    (ctx, task): (&str, &str),
    (stored, mark): (&[Message], &HistoryMark),
    kept: impl AsyncFn(&str) -> usize,
) -> History {
    let mut history = History::from(stored.to_vec());
    history.push(Message::assistant("the turn's first"));
    let first = on_history(ctx, task, history.clone(), Some(mark));
    stores.checkpoints.save(&first).await.expect("save");
    assert_eq!(
        kept(task).await,
        1,
        "only the turn's own message is written"
    );
    history.push(Message::assistant("the turn's second"));
    let second = on_history(ctx, task, history.clone(), Some(mark));
    stores.checkpoints.save(&second).await.expect("save");
    assert_eq!(kept(task).await, 2);
    assert_eq!(
        stores.checkpoints.load(task).await.expect("load"),
        Some(second),
        "loads with the stored history in front"
    );

    let loaded = other.checkpoints.load(task).await.expect("load");
    let loaded = loaded.expect("the checkpoint, loaded by the other process");
    assert_eq!(loaded.messages.to_vec(), history.to_vec());
    history.push(Message::assistant("after the resume"));
    let third = on_history(ctx, task, history.clone(), Some(mark));
    other.checkpoints.save(&third).await.expect("save");
    assert_eq!(kept(task).await, 3);
    assert_eq!(
        other.checkpoints.load(task).await.expect("load"),
        Some(third)
    );
    history
}

/// Saves a checkpoint `task-whole` of `history` in `ctx` on no stored
/// history: `kept` says the backend holds every message of it, and it
/// loads back as it was saved. Returns it.
pub async fn saves_whole(
    stores: &Stores,
    ctx: &str,
    history: History,
    kept: impl AsyncFn(&str) -> usize,
) -> TaskCheckpoint {
    let whole = on_history(ctx, "task-whole", history, None);
    stores.checkpoints.save(&whole).await.expect("save");
    assert_eq!(kept("task-whole").await, whole.messages.len());
    assert_eq!(
        stores.checkpoints.load("task-whole").await.expect("load"),
        Some(whole.clone())
    );
    whole
}

/// Rewrites `ctx`'s stored history (a compaction of its first ten
/// messages): `task`'s checkpoint on it cannot be rebuilt, and loading it
/// says why ([`assert_history_rewritten`]).
pub async fn rewrite_fails_the_checkpoint(stores: &Stores, ctx: &str, task: &str) {
    stores
        .messages
        .replace_range(ctx, 0..10, &[Message::user("summary")])
        .await
        .expect("rewrite the history");
    assert_history_rewritten(stores.checkpoints.load(task).await, ctx, task);
}
