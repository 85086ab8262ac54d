//! [`PostgresTurnStore`]: an Agent turn's start and its end, each one
//! transaction.
//!
//! The start takes the lease, reads the agent state and the history (only
//! its new tail when the caller's [`HistoryMark`] still holds) and saves
//! the input when the stored history is the caller's. The end writes the
//! artifacts the turn held back, checks the lease, appends the messages,
//! stores the state, releases the lease and deletes the checkpoint: it
//! commits whole or not at all, so that no half-saved turn is ever read,
//! after a crash either.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::StoreError;
use looopy_core::store::{
    AgentStateStore, ArtifactStore, BegunTurn, CheckpointStore, HistoryMark, LoadedHistory,
    MessageStore, TurnBegin, TurnBegun, TurnCommit, TurnLock, TurnStore,
};

use crate::agents::{decode_state, load_state, save_state};
use crate::artifacts::{PreparedWrite, write};
use crate::backend::{PostgresBackend, Retry, int, uint};
use crate::locks::{acquire, holds, release};
use crate::messages::{append_bodies, decode, encode, load_bodies};
use crate::{
    PostgresAgentStateStore, PostgresArtifactStore, PostgresCheckpointStore, PostgresMessageStore,
    PostgresTurnLock,
};

/// The [`TurnStore`] of the PostgreSQL stores (see the module docs).
#[derive(Debug, Clone)]
pub struct PostgresTurnStore {
    backend: PostgresBackend,
    messages: Arc<PostgresMessageStore>,
    states: Arc<PostgresAgentStateStore>,
    lock: Arc<PostgresTurnLock>,
    checkpoints: Arc<PostgresCheckpointStore>,
    artifacts: Option<Arc<PostgresArtifactStore>>,
}

impl PostgresTurnStore {
    /// The turn store over these stores (all on `backend`).
    pub fn new(
        backend: PostgresBackend,
        messages: Arc<PostgresMessageStore>,
        states: Arc<PostgresAgentStateStore>,
        lock: Arc<PostgresTurnLock>,
        checkpoints: Arc<PostgresCheckpointStore>,
    ) -> Self {
        PostgresTurnStore {
            backend,
            messages,
            states,
            lock,
            checkpoints,
            artifacts: None,
        }
    }

    /// Also takes the turn's artifact writes into its end's transaction.
    #[must_use]
    pub fn with_artifacts(mut self, artifacts: Arc<PostgresArtifactStore>) -> Self {
        self.artifacts = Some(artifacts);
        self
    }
}

/// What a commit found: done, or refused because the lease is another's.
enum Committed {
    Done,
    LeaseLost,
}

#[async_trait]
impl TurnStore for PostgresTurnStore {
    fn messages(&self) -> &dyn MessageStore {
        self.messages.as_ref()
    }

    fn states(&self) -> Option<&dyn AgentStateStore> {
        Some(self.states.as_ref())
    }

    fn lock(&self) -> Option<&dyn TurnLock> {
        Some(self.lock.as_ref())
    }

    fn checkpoints(&self) -> Option<&dyn CheckpointStore> {
        Some(self.checkpoints.as_ref())
    }

    fn artifacts(&self) -> Option<&dyn ArtifactStore> {
        self.artifacts.as_deref().map(|a| a as &dyn ArtifactStore)
    }

    async fn begin_turn(&self, begin: TurnBegin<'_>) -> Result<TurnBegun, StoreError> {
        let input = encode(begin.input)?;
        let sends_input = begin.known.is_some() && !input.is_empty();
        let pool = self.backend.pool();
        let input = &input;
        // With input, not repeated once sent: after a lost reply the input
        // may be stored.
        let retry = if sends_input {
            Retry::Never
        } else {
            Retry::Safe
        };
        let read = self
            .backend
            .run(retry, || async move {
                let mut tx = pool.begin().await?;
                if let Some(lease) = begin.lease {
                    let got = acquire(
                        &mut tx,
                        begin.context_id,
                        lease.owner,
                        lease.task_id,
                        lease.ttl,
                    )
                    .await?;
                    if got != looopy_core::store::Acquire::Acquired {
                        tx.rollback().await?;
                        return Ok(Err(got));
                    }
                }
                let state = if begin.load_state {
                    load_state(&mut tx, begin.context_id).await?
                } else {
                    None
                };
                // Locks the history (made when missing, so that it has an
                // epoch to mark): no append slips in before the input.
                let (len, epoch): (i64, String) = sqlx::query_as(
                    "INSERT INTO histories AS h (context_id, len, epoch) VALUES ($1, 0, $2)
                     ON CONFLICT (context_id) DO UPDATE SET len = h.len RETURNING len, epoch",
                )
                .bind(begin.context_id)
                .bind(crate::backend::new_epoch())
                .fetch_one(&mut *tx)
                .await?;
                let from = match begin.known {
                    Some(known) if known.epoch == epoch && int(known.len) <= len => int(known.len),
                    _ => 0,
                };
                let bodies = load_bodies(&mut tx, begin.context_id, from, len).await?;
                let saved = sends_input
                    && begin
                        .known
                        .is_some_and(|k| k.epoch == epoch && int(k.len) == len);
                if saved {
                    append_bodies(&mut tx, begin.context_id, input).await?;
                }
                tx.commit().await?;
                Ok(Ok((state, len, epoch, from, bodies, saved)))
            })
            .await?;
        let (state, len, epoch, from, bodies, saved) = match read {
            Ok(read) => read,
            Err(refused) => return Ok(TurnBegun::Refused(refused)),
        };
        let messages = decode(bodies)?;
        let mark = HistoryMark {
            epoch,
            len: uint(len),
        };
        let history = if from > 0 {
            LoadedHistory::Tail { messages, mark }
        } else {
            LoadedHistory::Whole {
                messages,
                mark: Some(mark),
            }
        };
        Ok(TurnBegun::Begun(Box::new(BegunTurn {
            state: state.as_deref().map(decode_state).transpose()?,
            history,
            input_saved: saved,
        })))
    }

    async fn commit_turn(&self, commit: TurnCommit<'_>) -> Result<(), StoreError> {
        if commit.artifacts.is_some() && self.artifacts.is_none() {
            return Err(StoreError::Backend {
                message: "artifacts were given to a turn store that takes none".into(),
            });
        }
        let writes = commit
            .artifacts
            .map(|held| {
                held.writes
                    .iter()
                    .map(PreparedWrite::new)
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?
            .unwrap_or_default();
        let task_of_writes = commit.artifacts.map_or("", |held| held.task_id);
        let messages = encode(commit.messages.iter().map(|m| &**m))?;
        let state = commit
            .state
            .map(|s| serde_json::to_string(&**s))
            .transpose()?;
        let pool = self.backend.pool();
        let (writes, messages, state) = (&writes, &messages, &state);
        let ctx = commit.context_id;
        // Not repeated once sent: the messages may have landed.
        let outcome = self
            .backend
            .run(Retry::Never, || async move {
                let mut tx = pool.begin().await?;
                let now = Utc::now();
                for w in writes {
                    write(&mut tx, ctx, task_of_writes, w, now).await?;
                }
                if let Some(owner) = commit.lease_owner
                    && !holds(&mut tx, ctx, owner).await?
                {
                    // The artifacts stand, as if written while they streamed.
                    tx.commit().await?;
                    return Ok(Committed::LeaseLost);
                }
                if !messages.is_empty() {
                    append_bodies(&mut tx, ctx, messages).await?;
                }
                if let (Some(state), Some(body)) = (commit.state, state) {
                    save_state(&mut tx, state, body).await?;
                }
                if let Some(owner) = commit.lease_owner {
                    release(&mut tx, ctx, owner).await?;
                }
                if let Some(task_id) = commit.forget_checkpoint {
                    sqlx::query("DELETE FROM checkpoints WHERE task_id = $1")
                        .bind(task_id)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(Committed::Done)
            })
            .await?;
        match outcome {
            Committed::Done => Ok(()),
            Committed::LeaseLost => Err(StoreError::LeaseLost {
                context_id: ctx.to_owned(),
            }),
        }
    }
}
