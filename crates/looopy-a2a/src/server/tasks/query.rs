//! Reading tasks: snapshots and lists.

use looopy_core::AuthContext;
use looopy_core::store::TaskRecord;

use super::{Tasks, store_error};
use crate::RpcError;
use crate::model::TaskSnapshot;
use crate::server::record::{self, Bookkeeping};
use crate::wire::ListQuery;

/// How many events a snapshot reads from the log at most to fold the
/// artifacts of a running turn.
const SNAPSHOT_READ_LIMIT: usize = 100_000;

impl Tasks {
    /// The task as the client sees it. A running turn's artifacts come from
    /// the log.
    pub(crate) async fn snapshot(
        &self,
        record: &TaskRecord,
        history_length: Option<usize>,
    ) -> Result<TaskSnapshot, RpcError> {
        let bk = Bookkeeping::of(record);
        let mut artifacts = bk.artifacts.clone();
        if !record.status.state.ends_turn() {
            let events = self
                .log
                .read(
                    &record.task_id,
                    bk.turn_start_event_id.as_deref(),
                    SNAPSHOT_READ_LIMIT,
                )
                .await
                .map_err(|e| RpcError::internal(format!("event log: {e}")))?;
            record::fold_events(&mut artifacts, &events);
        }
        Ok(record::snapshot(record, artifacts, history_length))
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
        let page: Vec<TaskSnapshot> = matching
            .iter()
            .skip(q.offset)
            .take(q.page_size)
            .map(|r| {
                let artifacts = if q.include_artifacts {
                    Bookkeeping::of(r).artifacts
                } else {
                    Vec::new()
                };
                record::snapshot(r, artifacts, q.history_length)
            })
            .collect();
        let next = (q.offset + page.len() < total).then_some(q.offset + page.len());
        Ok((page, next, total))
    }
}
