//! What is persisted when, and what resume derives from it.
//!
//! A checkpoint is taken before each iteration, after each model call, after
//! each tool call that finishes, and at the end of the turn. The history in a
//! checkpoint is a [`History`] snapshot: taking one copies nothing.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use looopy_core::store::{TaskCheckpoint, TaskStateStore};
use looopy_core::{History, Role, TaskState, ToolCall, ToolResult, TurnContext, Usage};

/// The parts of a turn a checkpoint records.
pub(crate) struct Snapshot<'a> {
    pub(crate) iteration: u32,
    pub(crate) state: TaskState,
    pub(crate) history: &'a History,
    pub(crate) turn_start: usize,
    pub(crate) usage: Usage,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) completed: &'a [ToolResult],
}

/// Saves checkpoints when a store is configured; a failing store is logged and
/// the turn goes on (it loses crash safety, not its work).
pub(crate) async fn save(
    store: Option<&Arc<dyn TaskStateStore>>,
    cx: &TurnContext,
    s: Snapshot<'_>,
) -> bool {
    let Some(store) = store else { return false };
    let checkpoint = TaskCheckpoint {
        task_id: cx.task_id.to_string(),
        context_id: cx.context_id.to_string(),
        agent_id: cx.agent_id.to_string(),
        iteration: s.iteration,
        state: s.state,
        messages: s.history.clone(),
        turn_start: s.turn_start,
        usage: s.usage,
        completed_tool_results: s.completed.to_vec(),
        created_at: s.created_at,
        updated_at: Utc::now(),
        metadata: Default::default(),
    };
    match store.save(&checkpoint).await {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(task_id = %cx.task_id, %error, "checkpoint failed; the turn continues without it");
            false
        }
    }
}

/// The calls of the turn's last assistant message that have no result yet,
/// with their position in that message. Results come from tool messages after
/// it or from `completed`.
pub(crate) fn pending_calls(
    history: &History,
    turn_start: usize,
    completed: &[ToolResult],
) -> Vec<(usize, ToolCall)> {
    let Some((position, assistant)) = history
        .iter()
        .enumerate()
        .skip(turn_start)
        .rev()
        .find(|(_, m)| m.role == Role::Assistant)
    else {
        return Vec::new();
    };
    let mut answered: HashSet<&str> = history
        .iter()
        .skip(position + 1)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    answered.extend(completed.iter().map(|r| r.tool_call_id.as_str()));
    assistant
        .tool_calls
        .iter()
        .enumerate()
        .filter(|(_, c)| !answered.contains(c.id.as_str()))
        .map(|(i, c)| (i, c.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::{LlmResponse, Message};

    #[test]
    fn pending_calls_skip_answered_and_completed() {
        let mut h = History::from(vec![Message::user("q")]);
        h.push(
            LlmResponse::tool_calls(
                "",
                vec![
                    ToolCall::new("a", "t", "{}"),
                    ToolCall::new("b", "t", "{}"),
                    ToolCall::new("c", "t", "{}"),
                ],
            )
            .message,
        );
        h.push(ToolResult::text("a", "1").into_message());
        let pending = pending_calls(&h, 0, &[ToolResult::text("c", "3")]);
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].0, 1);
        assert_eq!(pending[0].1.id, "b");
        assert!(
            pending_calls(&h, 2, &[]).is_empty(),
            "no assistant message after turn start"
        );
    }
}
