//! [`TurnStore`] rules.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::{
    Acquire, HistoryMark, LeaseRequest, LoadedHistory, TurnBegin, TurnBegun, TurnCommit, TurnStore,
};
use looopy_core::{Message, StoreError, TaskState};

use super::fixtures::{at, full_agent_state, full_checkpoint, full_message};
use super::{UniqueIds, ok};

const LONG: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_millis(300);
/// Comfortably longer than [`SHORT`].
const PAST_SHORT: Duration = Duration::from_millis(900);

/// Checks a [`TurnStore`] (its `lock`, `states` and `checkpoints` must be
/// set): a turn start takes the lease and reads state and history, a
/// refused one writes nothing; a commit appends, stores the state,
/// releases the lease and deletes the checkpoint only when asked; a start
/// that names the held history reads only what others appended since and
/// saves the input only when nobody did, and reads the whole history after
/// a rewrite; a commit by an owner whose lease was taken over is refused
/// with [`StoreError::LeaseLost`] and writes nothing; a checkpoint that
/// builds on the stored history a start read loads whole until that
/// history is rewritten ([`checkpoint_on_history`]). Sleeps about a second.
pub async fn turn_store(store: Arc<dyn TurnStore>, ids: &UniqueIds) {
    let store = &*store;
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    let kept_task = ids.next("task");
    let first = ids.next("owner");
    let second = ids.next("owner");
    let messages = store.messages();
    let states = store.states().expect("the turn store has a state store");
    let lock = store.lock().expect("the turn store has a turn lock");
    let checkpoints = store.checkpoints().expect("the turn store has checkpoints");

    let earlier: Vec<Message> = (0..3).map(|n| full_message(&ctx, n)).collect();
    ok(
        messages.append(&ctx, &earlier).await,
        "append before a turn",
    );
    let index_owner = ids.next("owner");
    let state = full_agent_state(
        &ctx,
        Some(&index_owner),
        looopy_core::store::LifecycleState::Ready,
        at(9),
    );
    ok(states.save(&state).await, "state before a turn");

    // A start takes the lease and reads the state and the whole history.
    let begun = begin(store, &ctx, Some((&first, &task)), None, &[]).await;
    let TurnBegun::Begun(begun) = begun else {
        panic!("conformance: a free lease was refused: {begun:?}")
    };
    assert_eq!(
        begun.state.as_ref(),
        Some(&state),
        "the start reads the state"
    );
    assert!(!begun.input_saved, "no input without a known history");
    let mark = match &begun.history {
        LoadedHistory::Whole { messages, mark } => {
            assert_eq!(messages, &earlier, "the start reads the whole history");
            mark.clone()
        }
        other => panic!("conformance: a start without a known history read {other:?}"),
    };
    let held = ok(lock.lease(&ctx).await, "lease after a start").expect("the lease is held");
    assert_eq!(held.owner, first);

    // Another owner is refused, and its input is not written.
    let refused = begin(
        store,
        &ctx,
        Some((&second, &task)),
        mark.as_ref(),
        &[Message::user("no")],
    )
    .await;
    assert_eq!(
        refused,
        TurnBegun::Refused(Acquire::Held),
        "a held lease refuses a start"
    );
    assert_eq!(
        ok(messages.count(&ctx).await, "count"),
        3,
        "a refused start writes nothing"
    );

    // A commit appends, stores the state, releases the lease and deletes
    // the checkpoint asked for (and no other).
    ok(
        checkpoints
            .save(&full_checkpoint(&task, &ctx, TaskState::Completed, 2))
            .await,
        "checkpoint",
    );
    ok(
        checkpoints
            .save(&full_checkpoint(
                &kept_task,
                &ctx,
                TaskState::InputRequired,
                2,
            ))
            .await,
        "checkpoint",
    );
    let produced: Vec<Arc<Message>> = (3..5).map(|n| Arc::new(full_message(&ctx, n))).collect();
    let mut after = state.clone();
    after.turn_count += 1;
    after.last_activity = at(20);
    ok(
        store
            .commit_turn(TurnCommit {
                context_id: &ctx,
                lease_owner: Some(&first),
                messages: &produced,
                state: Some(&Arc::new(after.clone())),
                forget_checkpoint: Some(&task),
                artifacts: None,
            })
            .await,
        "commit",
    );
    let stored = ok(messages.load(&ctx).await, "load after a commit");
    assert_eq!(stored[..3], earlier[..]);
    let produced_values: Vec<Message> = produced.iter().map(|m| Message::clone(m)).collect();
    assert_eq!(
        stored[3..],
        produced_values[..],
        "the commit appends the messages"
    );
    assert_eq!(
        ok(states.load(&ctx).await, "state after a commit"),
        Some(after.clone())
    );
    assert_eq!(
        ok(lock.lease(&ctx).await, "lease after a commit"),
        None,
        "the commit releases the lease"
    );
    assert_eq!(
        ok(checkpoints.load(&task).await, "checkpoint after a commit"),
        None
    );
    assert!(
        ok(checkpoints.load(&kept_task).await, "other checkpoint").is_some(),
        "a commit deletes only the checkpoint it names"
    );
    let listed = ok(
        states.list_by_owner(&index_owner, 10).await,
        "list by owner",
    );
    assert!(
        listed.iter().any(|s| s.context_id == ctx),
        "the committed state stays indexed under its owner"
    );

    // A start naming the held history: nothing new, so the input is saved.
    let known = mark.map(|m| HistoryMark {
        len: m.len + produced.len(),
        ..m
    });
    let input = vec![Message::user("next")];
    let TurnBegun::Begun(begun) =
        begin(store, &ctx, Some((&first, &task)), known.as_ref(), &input).await
    else {
        panic!("conformance: a free lease was refused")
    };
    match (&known, &begun.history) {
        (Some(known), LoadedHistory::Tail { messages, mark }) => {
            assert!(
                messages.is_empty(),
                "nothing was appended by others: {messages:?}"
            );
            assert_eq!(mark, known);
            assert!(
                begun.input_saved,
                "the input is saved when the history is the known one"
            );
        }
        (_, LoadedHistory::Whole { messages, .. }) => {
            assert_eq!(messages, &stored, "a whole read is the whole history");
            assert!(!begun.input_saved);
        }
        other => panic!("conformance: unexpected history {other:?}"),
    }
    if !begun.input_saved {
        ok(messages.append(&ctx, &input).await, "append the input");
    }
    let mut expected = stored.clone();
    expected.extend(input.iter().cloned());
    assert_eq!(
        ok(messages.load(&ctx).await, "load"),
        expected,
        "the input follows the history once"
    );
    let done = TurnCommit {
        context_id: &ctx,
        lease_owner: Some(&first),
        messages: &[],
        state: None,
        forget_checkpoint: None,
        artifacts: None,
    };
    ok(store.commit_turn(done).await, "commit without messages");

    // Another writer appended: the start reads just that, and keeps the input out.
    let known = known.map(|m| HistoryMark {
        len: m.len + 1,
        ..m
    });
    let other = vec![full_message(&ctx, 9)];
    ok(
        messages.append(&ctx, &other).await,
        "append by another writer",
    );
    let TurnBegun::Begun(begun) =
        begin(store, &ctx, None, known.as_ref(), &[Message::user("late")]).await
    else {
        panic!("conformance: a start without a lease was refused")
    };
    assert!(
        !begun.input_saved,
        "the input is not saved after another writer's append"
    );
    expected.extend(other.iter().cloned());
    assert_eq!(read(known.as_ref(), &expected, &begun.history), expected);

    // A rewritten history is read whole.
    ok(
        messages
            .replace_range(&ctx, 0..2, &[Message::user("summary")])
            .await,
        "rewrite",
    );
    let rewritten = ok(messages.load(&ctx).await, "load after a rewrite");
    let known = known.map(|m| HistoryMark {
        len: m.len + 1,
        ..m
    });
    let TurnBegun::Begun(begun) =
        begin(store, &ctx, None, known.as_ref(), &[Message::user("x")]).await
    else {
        panic!("conformance: a start without a lease was refused")
    };
    assert!(
        !begun.input_saved,
        "no input is saved onto a rewritten history"
    );
    match &begun.history {
        LoadedHistory::Whole { messages, .. } => assert_eq!(messages, &rewritten),
        other => panic!("conformance: a rewritten history was read as {other:?}"),
    }
    assert_eq!(ok(messages.load(&ctx).await, "load"), rewritten);

    stale_commit(store, ids).await;
    checkpoint_on_history(store, ids).await;
}

/// A checkpoint that builds on the stored history
/// ([`TaskCheckpoint::stored_history`](looopy_core::store::TaskCheckpoint),
/// with the mark a turn start read) loads whole, field by field, however
/// the store keeps it: after each save, after another writer appended to
/// the history (an append keeps the mark valid), and through a mark longer
/// than its messages (which says nothing about them). Once the history is
/// rewritten, a load is the whole checkpoint or
/// [`StoreError::HistoryRewritten`], never a checkpoint with other
/// messages. A store that reads no mark at a turn start is not checked.
async fn checkpoint_on_history(store: &dyn TurnStore, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    let messages = store.messages();
    let checkpoints = store.checkpoints().expect("checkpoints");
    let stored: Vec<Message> = (0..20).map(|n| full_message(&ctx, n)).collect();
    ok(messages.append(&ctx, &stored).await, "append a history");
    let TurnBegun::Begun(begun) = begin(store, &ctx, None, None, &[]).await else {
        panic!("conformance: a start without a lease was refused")
    };
    let LoadedHistory::Whole {
        mark: Some(mark), ..
    } = begun.history
    else {
        return;
    };
    assert_eq!(mark.len, stored.len(), "the mark counts the history read");
    let mut checkpoint = full_checkpoint(&task, &ctx, TaskState::Working, 0);
    checkpoint.messages = stored.iter().cloned().collect();
    checkpoint.turn_start = stored.len();
    checkpoint.stored_history = Some(mark.clone());
    for n in 0..3 {
        checkpoint.messages.push(full_message(&task, n));
        ok(checkpoints.save(&checkpoint).await, "save on the history");
        assert_eq!(
            ok(checkpoints.load(&task).await, "load on the history").as_ref(),
            Some(&checkpoint),
            "a checkpoint on the stored history loads whole (save {n})"
        );
    }
    ok(
        messages.append(&ctx, &[Message::user("later")]).await,
        "append after the checkpoint",
    );
    assert_eq!(
        ok(checkpoints.load(&task).await, "load after an append").as_ref(),
        Some(&checkpoint),
        "an append to the history keeps the checkpoint on it whole"
    );
    // A mark longer than the messages: the checkpoint is kept as it is.
    let other = ids.next("task");
    let mut short = full_checkpoint(&other, &ctx, TaskState::Working, 3);
    short.stored_history = Some(HistoryMark {
        len: 10,
        ..mark.clone()
    });
    ok(checkpoints.save(&short).await, "save with a long mark");
    let loaded = ok(checkpoints.load(&other).await, "load with a long mark")
        .expect("the checkpoint is there");
    assert_eq!(
        loaded.messages.to_vec(),
        short.messages.to_vec(),
        "a mark longer than the messages says nothing about them"
    );
    ok(checkpoints.delete(&other).await, "delete");

    ok(
        messages
            .replace_range(&ctx, 0..5, &[Message::user("summary")])
            .await,
        "rewrite",
    );
    match checkpoints.load(&task).await {
        Ok(Some(loaded)) => assert_eq!(
            loaded, checkpoint,
            "a checkpoint loaded after a rewrite is the one saved"
        ),
        Err(StoreError::HistoryRewritten {
            context_id,
            task_id,
        }) => assert_eq!(
            (context_id.as_str(), task_id.as_str()),
            (ctx.as_str(), task.as_str()),
            "HistoryRewritten names the conversation and the task"
        ),
        other => panic!(
            "conformance: a checkpoint on a rewritten history loaded as {other:?}; expected it whole or HistoryRewritten"
        ),
    }
    ok(checkpoints.delete(&task).await, "delete");
    assert_eq!(ok(checkpoints.load(&task).await, "load after delete"), None);
}

/// The stored history a start read, with the held part (`expected` up to
/// the known length) put back in front of a tail.
fn read(
    known: Option<&HistoryMark>,
    expected: &[Message],
    history: &LoadedHistory,
) -> Vec<Message> {
    match history {
        LoadedHistory::Whole { messages, .. } => messages.clone(),
        LoadedHistory::Tail { messages, .. } => {
            let len = known.map_or(0, |k| k.len);
            let mut out = expected[..len].to_vec();
            out.extend(messages.iter().cloned());
            out
        }
    }
}

/// A commit by an owner whose lease ran out and was taken over writes
/// nothing.
async fn stale_commit(store: &dyn TurnStore, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    let stale = ids.next("owner");
    let taker = ids.next("owner");
    let lock = store.lock().expect("lock");
    let states = store.states().expect("states");
    let TurnBegun::Begun(_) = begin_with(store, &ctx, Some((&stale, &task)), SHORT).await else {
        panic!("conformance: a free lease was refused")
    };
    tokio::time::sleep(PAST_SHORT).await;
    assert!(
        ok(lock.take_over(&ctx, &task, &taker, LONG).await, "take over"),
        "the stranded lease is taken over"
    );
    let state = full_agent_state(
        &ctx,
        None,
        looopy_core::store::LifecycleState::Ready,
        at(30),
    );
    let refused = store
        .commit_turn(TurnCommit {
            context_id: &ctx,
            lease_owner: Some(&stale),
            messages: &[Arc::new(Message::user("stale"))],
            state: Some(&Arc::new(state.clone())),
            forget_checkpoint: None,
            artifacts: None,
        })
        .await;
    assert!(
        matches!(&refused, Err(StoreError::LeaseLost { context_id }) if *context_id == ctx),
        "a stale owner's commit is refused: {refused:?}"
    );
    assert_eq!(
        ok(store.messages().count(&ctx).await, "count"),
        0,
        "a refused commit appends nothing"
    );
    assert_eq!(
        ok(states.load(&ctx).await, "state"),
        None,
        "a refused commit stores no state"
    );
    let lease = ok(lock.lease(&ctx).await, "lease").expect("still held");
    assert_eq!(
        lease.owner, taker,
        "a refused commit leaves the lease to its new owner"
    );
    ok(lock.release(&ctx, &taker).await, "release");
}

async fn begin(
    store: &dyn TurnStore,
    ctx: &str,
    lease: Option<(&str, &str)>,
    known: Option<&HistoryMark>,
    input: &[Message],
) -> TurnBegun {
    let request = lease.map(|(owner, task)| LeaseRequest {
        owner,
        task_id: Some(task),
        ttl: LONG,
    });
    ok(
        store
            .begin_turn(TurnBegin {
                context_id: ctx,
                lease: request,
                load_state: true,
                known,
                input,
            })
            .await,
        "turn start",
    )
}

async fn begin_with(
    store: &dyn TurnStore,
    ctx: &str,
    lease: Option<(&str, &str)>,
    ttl: Duration,
) -> TurnBegun {
    let request = lease.map(|(owner, task)| LeaseRequest {
        owner,
        task_id: Some(task),
        ttl,
    });
    ok(
        store
            .begin_turn(TurnBegin {
                context_id: ctx,
                lease: request,
                load_state: true,
                known: None,
                input: &[],
            })
            .await,
        "turn start",
    )
}
