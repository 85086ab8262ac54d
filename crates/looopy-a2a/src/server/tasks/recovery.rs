//! Recovering turns whose process died.
//!
//! Every server process that has the turn registry scans it now and then
//! for stranded turn leases (their owner stopped renewing them). For each
//! one whose task it knows, it asks the runner to resume the turn; the
//! runner takes the lease over atomically, so exactly one process resumes
//! it. The resumed turn's events go to the same event log after the ones
//! already there, and its end to the same record, as for any turn.

use std::sync::Arc;

use looopy_core::store::TaskRecord;
use looopy_core::{AuthContext, CancellationToken, StoreError};
use tracing::Instrument;

use super::{Tasks, TurnState, turn_span};
use crate::runner::ResumeRequest;

/// How many stranded turns one scan looks at.
const SCAN_BATCH: usize = 256;

/// A stranded turn resumed by this process.
pub(crate) struct Resumed {
    pub(crate) task_id: String,
    /// The log id the turn's events come after (which turn it is).
    pub(crate) turn: Option<String>,
    /// The last event logged before it resumed: the dead process may have
    /// sent everything up to there already.
    pub(crate) last_event: Option<String>,
}

impl Tasks {
    /// Whether stranded turns are recovered here.
    pub(crate) fn recovers(&self) -> bool {
        self.recovery.is_some()
    }

    /// One scan of the turn registry: resumes here each stranded turn this
    /// process wins, and returns them (none without a registry).
    pub(crate) async fn recover_stranded(self: &Arc<Self>) -> Result<Vec<Resumed>, StoreError> {
        let Some(lock) = &self.recovery else {
            return Ok(Vec::new());
        };
        let mut resumed = Vec::new();
        for lease in lock.stranded(SCAN_BATCH).await? {
            let Some(task_id) = lease.task_id else {
                continue;
            };
            if self.running().contains_key(&task_id) {
                continue;
            }
            match self.store.get(&task_id).await {
                Ok(Some(record)) => {
                    let turn = Resumed {
                        task_id: record.task_id.clone(),
                        turn: record.turn_start_event_id.clone(),
                        last_event: record.last_event_id.clone(),
                    };
                    if self.resume(record).await {
                        resumed.push(turn);
                    }
                }
                // A turn of another application sharing the registry.
                Ok(None) => tracing::debug!(%task_id, "stranded turn without a task record"),
                Err(error) => tracing::warn!(%task_id, %error, "could not read a stranded task"),
            }
        }
        Ok(resumed)
    }

    /// Asks the runner to resume a stranded turn and drives it here when
    /// this process won it.
    async fn resume(self: &Arc<Self>, record: TaskRecord) -> bool {
        let cancel = CancellationToken::new();
        let Some(registered) = self.register(&record.task_id, &cancel) else {
            return false;
        };
        let task_id: Arc<str> = record.task_id.as_str().into();
        let context_id: Arc<str> = record.context_id.as_str().into();
        let principal = record.owner.clone().unwrap_or_default();
        let request = ResumeRequest {
            task_id: task_id.clone(),
            context_id: context_id.clone(),
            auth: AuthContext::new(principal),
            cancel: cancel.clone(),
        };
        let span = turn_span(&task_id, &context_id, true);
        let events = match self
            .runner
            .resume_turn(request)
            .instrument(span.clone())
            .await
        {
            Ok(Some(events)) => Ok(events),
            Ok(None) => {
                self.running().remove(&*task_id);
                return false;
            }
            Err(e) => {
                // Left stranded: the next scan tries again.
                tracing::warn!(%task_id, error = %e.message, "could not resume a stranded turn");
                self.running().remove(&*task_id);
                return false;
            }
        };
        tracing::info!(parent: &span, %task_id, "resuming a turn whose process died");
        // The request that started the turn is gone: whether it asked for
        // the extension is unknown, so a recovered turn logs the updates
        // whenever the server offers them.
        let mut turn = TurnState::new(
            task_id,
            context_id,
            record.turns,
            registered.phase,
            registered.readers,
        )
        .with_state(record.status.state, self.tool_progress);
        let this = Arc::clone(self);
        self.tracker.spawn(
            async move { this.run_to_end(&mut turn, events, &cancel).await }.instrument(span),
        );
        true
    }
}
