//! Cancelling tasks: here, in another process, or while they wait for input.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use looopy_core::store::TaskRecord;
use looopy_core::{AgentEvent, AuthContext, EventPayload, TaskState, TaskStatus};

use super::{Tasks, done, reopen_waiting, store_error};
use crate::RpcError;
use crate::model::TaskSnapshot;

impl Tasks {
    /// Cancels a task: -32001 when not visible, -32002 when it already ended.
    pub(crate) async fn cancel(
        &self,
        auth: &AuthContext,
        task_id: &str,
    ) -> Result<TaskSnapshot, RpcError> {
        let record = self.owned(task_id, &auth.principal).await?;
        if record.status.state.is_terminal() {
            return Err(RpcError::task_not_cancelable(
                task_id,
                record.status.state.as_str(),
            ));
        }
        let local = self
            .running()
            .get(task_id)
            .map(|r| (r.cancel.clone(), r.phase.clone()));
        let record = match local {
            Some((token, phase)) => {
                token.cancel();
                // The flag is raised too: what is registered here may be an
                // attempt to resume a stranded turn that another process is
                // winning, which this token does not reach. (A flag left
                // after a turn that ended here is lowered by the task's
                // next turn.)
                let raise = async {
                    if let Err(error) = self.store.request_cancel(task_id).await {
                        tracing::warn!(%task_id, %error, "could not raise the cancel flag");
                    }
                };
                let _ = tokio::join!(raise, tokio::time::timeout(self.cancel_wait, done(phase)));
                let record = self.owned(task_id, &auth.principal).await?;
                // The attempt to resume lost: wait for the winner's end.
                if record.status.state.ends_turn() || self.running().contains_key(task_id) {
                    record
                } else {
                    self.cancel_remote(record).await?
                }
            }
            None if !record.status.state.ends_turn() => self.cancel_remote(record).await?,
            None => record,
        };
        let record = if matches!(
            record.status.state,
            TaskState::InputRequired | TaskState::AuthRequired
        ) {
            self.cancel_idle(record).await?
        } else {
            record
        };
        self.snapshot(&record, None).await
    }

    /// Asks the process running the turn to cancel it (raises the task's
    /// cancel flag, which that process takes) and waits (bounded) for the
    /// turn's final event.
    async fn cancel_remote(&self, record: TaskRecord) -> Result<TaskRecord, RpcError> {
        let task_id = record.task_id.clone();
        let after = record.turn_start_event_id.clone();
        self.store
            .request_cancel(&task_id)
            .await
            .map_err(store_error)?;
        let wait = async {
            let mut events = self.log.follow(&task_id, after);
            while let Some(Ok(e)) = events.next().await {
                if e.event.is_final() {
                    break;
                }
            }
            // The record follows the final event closely.
            for _ in 0..50 {
                match self.store.get(&task_id).await {
                    Ok(Some(r)) if r.status.state.ends_turn() => return,
                    _ => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        };
        let _ = tokio::time::timeout(self.cancel_wait, wait).await;
        self.store
            .get(&task_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| RpcError::task_not_found(&task_id))
    }

    /// Cancels a task no turn runs for (it waits for input): moves the
    /// record to `canceled` while it still waits (atomically: a turn started
    /// meanwhile by another process wins), then logs the final status.
    async fn cancel_idle(&self, record: TaskRecord) -> Result<TaskRecord, RpcError> {
        let task_id = record.task_id.clone();
        let status = TaskStatus::new(TaskState::Canceled);
        let claimed = self
            .store
            .update(&task_id, &mut |r| {
                if !reopen_waiting(r) {
                    return false;
                }
                r.status = status.clone();
                r.updated_at = Utc::now();
                true
            })
            .await
            .map_err(store_error)?;
        let Some(claimed) = claimed else {
            // Something else moved it on first: answer with what it is now.
            return self
                .store
                .get(&task_id)
                .await
                .map_err(store_error)?
                .ok_or_else(|| RpcError::task_not_found(&task_id));
        };
        let event = AgentEvent::new(
            claimed.task_id.as_str().into(),
            claimed.context_id.as_str().into(),
            EventPayload::StatusUpdate {
                status,
                is_final: true,
                metadata: looopy_core::StatusMetadata::default(),
            },
        );
        let id = self
            .log
            .append(&task_id, Arc::new(event))
            .await
            .map_err(|e| RpcError::internal(format!("event log: {e}")))?;
        let turn = claimed.turns;
        self.update(&task_id, turn, move |r| {
            r.last_event_id = Some(id.clone());
            r.final_event_id = Some(id.clone());
        })
        .await;
        self.store
            .get(&task_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| RpcError::task_not_found(&task_id))
    }
}
