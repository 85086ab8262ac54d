//! What the stores' tests of checkpoints on the stored history share: the
//! checkpoint a turn saves, and the check of its typed failure once that
//! history was rewritten. The behaviour every backend keeps is in
//! [`conformance::turn_store`](crate::conformance::turn_store); a backend's
//! own tests add what only it can show (how many messages its row holds).

use chrono::Utc;
use looopy_core::store::{HistoryMark, TaskCheckpoint};
use looopy_core::{History, StoreError, TaskState};

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
