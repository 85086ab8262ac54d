//! [`CheckpointStore`] rules.

use std::sync::Arc;

use looopy_core::TaskState;
use looopy_core::store::CheckpointStore;

use super::fixtures::{TASK_STATES, at, full_checkpoint, full_message};
use super::{UniqueIds, ok};

/// Checks a [`CheckpointStore`]: round trips of every field and state,
/// replacement (by `save` and `save_owned`), isolation between tasks,
/// delete, missing tasks.
pub async fn task_state_store(store: Arc<dyn CheckpointStore>, ids: &UniqueIds) {
    let task = ids.next("task");
    let context = ids.next("ctx");

    // Missing.
    assert_eq!(ok(store.load(&task).await, "load of a missing task"), None);
    ok(store.delete(&task).await, "delete of a missing task");

    // Round trip of every field, with a long history.
    let checkpoint = full_checkpoint(&task, &context, TaskState::Working, 40);
    ok(store.save(&checkpoint).await, "save");
    let loaded = ok(store.load(&task).await, "load");
    assert_eq!(
        loaded.as_ref(),
        Some(&checkpoint),
        "a loaded checkpoint must equal the saved one, field by field"
    );

    // Save replaces.
    let mut next = checkpoint.clone();
    next.iteration += 1;
    next.messages.push(full_message("added", 99));
    next.turn_start = 3;
    next.updated_at = at(3600);
    next.metadata.clear();
    ok(store.save(&next).await, "second save");
    assert_eq!(
        ok(store.load(&task).await, "load after second save"),
        Some(next.clone()),
        "save must replace the previous checkpoint (including emptied metadata)"
    );

    // Every state, each under its own task; tasks do not see each other.
    let mut others = Vec::new();
    for state in TASK_STATES {
        let other = ids.next("task");
        let cp = full_checkpoint(&other, &context, state, 1);
        ok(store.save(&cp).await, "save of another task");
        others.push(cp);
    }
    for cp in &others {
        assert_eq!(
            ok(store.load(&cp.task_id).await, "load of another task").as_ref(),
            Some(cp),
            "checkpoint in state {:?} must round-trip under its own task id",
            cp.state
        );
    }
    assert_eq!(
        ok(store.load(&task).await, "load after saving other tasks"),
        Some(next.clone()),
        "saving other tasks must not change this one"
    );

    // A checkpoint handed over (`save_owned`) is stored as `save` stores it.
    let mut owned = next.clone();
    owned.iteration += 1;
    owned.messages.push(full_message("handed over", 100));
    ok(store.save_owned(owned.clone()).await, "save_owned");
    assert_eq!(
        ok(store.load(&task).await, "load after save_owned"),
        Some(owned),
        "save_owned must replace the checkpoint as save does"
    );
    ok(store.save(&next).await, "save after save_owned");

    // An empty history round-trips too.
    let empty_task = ids.next("task");
    let empty = full_checkpoint(&empty_task, &context, TaskState::Working, 0);
    ok(store.save(&empty).await, "save with an empty history");
    assert_eq!(
        ok(store.load(&empty_task).await, "load with an empty history"),
        Some(empty)
    );

    // Delete forgets only that task.
    ok(store.delete(&task).await, "delete");
    assert_eq!(
        ok(store.load(&task).await, "load after delete"),
        None,
        "a deleted checkpoint must be gone"
    );
    assert!(
        ok(store.load(&others[0].task_id).await, "load of a sibling").is_some(),
        "delete must not remove other tasks"
    );
    for cp in &others {
        ok(store.delete(&cp.task_id).await, "cleanup delete");
    }
    ok(store.delete(&empty_task).await, "cleanup delete");
}
