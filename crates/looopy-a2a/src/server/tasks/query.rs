//! Reading tasks: snapshots and lists. History and artifacts come from
//! where the turns keep them (the runner's stores); the record holds
//! neither.

use std::collections::HashMap;

use looopy_core::store::TaskRecord;
use looopy_core::{Artifact, AuthContext, Message};

use super::{Tasks, store_error};
use crate::RpcError;
use crate::model::ListQuery;
use crate::model::TaskSnapshot;
use crate::server::record;

/// How many events a snapshot reads from the log at most to fold the
/// artifacts of a running turn (or of every turn, for a runner that keeps
/// no artifacts).
const SNAPSHOT_READ_LIMIT: usize = 100_000;

fn runner_error(e: impl std::fmt::Display) -> RpcError {
    RpcError::internal(format!("turn runner: {e}"))
}

impl Tasks {
    /// The task as the client sees it.
    pub(crate) async fn snapshot(
        &self,
        record: &TaskRecord,
        history_length: Option<usize>,
    ) -> Result<TaskSnapshot, RpcError> {
        let history = if history_length == Some(0) {
            Vec::new()
        } else {
            let messages = self.context_messages(record).await?;
            record::task_history(&messages, &record.turn_message_ids)
        };
        let artifacts = self.artifacts(record).await?;
        Ok(record::snapshot(record, history, artifacts, history_length))
    }

    /// The messages of a task's conversation, as the runner keeps them.
    async fn context_messages(&self, record: &TaskRecord) -> Result<Vec<Message>, RpcError> {
        let owner = record.owner.as_deref().unwrap_or_default();
        Ok(self
            .runner
            .messages(&record.context_id, owner)
            .await
            .map_err(runner_error)?
            .unwrap_or_default())
    }

    /// A task's artifacts: those the runner keeps, with the chunks a running
    /// turn streamed since (from the log) folded over them; for a runner
    /// that keeps none, every `artifact-update` the task logged.
    async fn artifacts(&self, record: &TaskRecord) -> Result<Vec<Artifact>, RpcError> {
        let owner = record.owner.as_deref().unwrap_or_default();
        let kept = self
            .runner
            .artifacts(&record.context_id, &record.task_id, owner)
            .await
            .map_err(runner_error)?;
        let (mut artifacts, after) = match kept {
            Some(kept) if record.status.state.ends_turn() => {
                return Ok(kept.into_iter().map(record::joined).collect());
            }
            Some(kept) => (
                kept.into_iter().map(record::joined).collect(),
                record.turn_start_event_id.as_deref(),
            ),
            None => (Vec::new(), None),
        };
        let events = self
            .log
            .read(&record.task_id, after, SNAPSHOT_READ_LIMIT)
            .await
            .map_err(|e| RpcError::internal(format!("event log: {e}")))?;
        record::fold_events(&mut artifacts, &events);
        Ok(artifacts)
    }

    /// The principal's tasks, most recently updated first: one page, the
    /// offset of the next and the total.
    pub(crate) async fn list(
        &self,
        auth: &AuthContext,
        q: &ListQuery,
    ) -> Result<(Vec<TaskSnapshot>, Option<usize>, usize), RpcError> {
        let records = self
            .store
            .list(Some(&auth.principal), q.context_id.as_deref(), usize::MAX)
            .await
            .map_err(store_error)?;
        let matching: Vec<TaskRecord> = records
            .into_iter()
            .filter(|r| q.state.is_none_or(|s| r.status.state == s))
            .filter(|r| q.updated_after.is_none_or(|t| r.status.timestamp > t))
            .collect();
        let total = matching.len();
        // Each conversation is read once per page.
        let mut conversations: HashMap<&str, Vec<Message>> = HashMap::new();
        let mut page = Vec::new();
        for r in matching.iter().skip(q.offset).take(q.page_size) {
            let history = if q.history_length == Some(0) {
                Vec::new()
            } else {
                if !conversations.contains_key(r.context_id.as_str()) {
                    let messages = self.context_messages(r).await?;
                    conversations.insert(&r.context_id, messages);
                }
                let messages = conversations
                    .get(r.context_id.as_str())
                    .map_or(&[][..], Vec::as_slice);
                record::task_history(messages, &r.turn_message_ids)
            };
            let artifacts = if q.include_artifacts {
                self.artifacts(r).await?
            } else {
                Vec::new()
            };
            page.push(record::snapshot(r, history, artifacts, q.history_length));
        }
        let next = (q.offset + page.len() < total).then_some(q.offset + page.len());
        Ok((page, next, total))
    }
}
