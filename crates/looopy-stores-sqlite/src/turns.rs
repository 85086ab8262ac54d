//! [`SqliteTurnStore`]: a turn's start and its end, each in one write
//! transaction.

use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{
    Acquire, AgentStateStore, ArtifactStore, BegunTurn, CheckpointStore, HistoryMark,
    LoadedHistory, MessageStore, TurnBegin, TurnBegun, TurnCommit, TurnLock, TurnStore,
};

use crate::backend::SqliteBackend;
use crate::{
    SqliteAgentStateStore, SqliteArtifactStore, SqliteCheckpointStore, SqliteMessageStore,
    SqliteTurnLock, agents, artifacts, checkpoints, locks, messages,
};

/// The [`TurnStore`] of the SQLite stores. A turn's start (take the lease,
/// read the state and the history, save the input) and its end (the held
/// artifacts, the lease check, the messages, the state, the lease's
/// release, the checkpoint's deletion) are one write transaction each: a
/// crash leaves the turn's end wholly saved or not at all, and a turn
/// whose lease was taken over writes nothing but the artifacts it had
/// announced.
#[derive(Debug, Clone)]
pub struct SqliteTurnStore {
    backend: SqliteBackend,
    messages: Arc<SqliteMessageStore>,
    states: Arc<SqliteAgentStateStore>,
    lock: Arc<SqliteTurnLock>,
    checkpoints: Arc<SqliteCheckpointStore>,
    artifacts: Arc<SqliteArtifactStore>,
}

impl SqliteTurnStore {
    /// The turn store over the other stores of `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqliteTurnStore {
            messages: Arc::new(SqliteMessageStore::new(backend.clone())),
            states: Arc::new(SqliteAgentStateStore::new(backend.clone())),
            lock: Arc::new(SqliteTurnLock::new(backend.clone())),
            checkpoints: Arc::new(SqliteCheckpointStore::new(backend.clone())),
            artifacts: Arc::new(SqliteArtifactStore::new(backend.clone())),
            backend,
        }
    }

    /// The turn store over the bundle's own stores (the very allocations
    /// an Agent is given, so that it knows its checkpoints and artifacts
    /// are the turn store's: see [`crate::stores`]).
    pub(crate) fn over(backend: SqliteBackend, stores: TurnStores) -> Self {
        SqliteTurnStore {
            backend,
            messages: stores.messages,
            states: stores.states,
            lock: stores.lock,
            checkpoints: stores.checkpoints,
            artifacts: stores.artifacts,
        }
    }
}

/// The stores a [`SqliteTurnStore`] works over.
pub(crate) struct TurnStores {
    pub(crate) messages: Arc<SqliteMessageStore>,
    pub(crate) states: Arc<SqliteAgentStateStore>,
    pub(crate) lock: Arc<SqliteTurnLock>,
    pub(crate) checkpoints: Arc<SqliteCheckpointStore>,
    pub(crate) artifacts: Arc<SqliteArtifactStore>,
}

#[async_trait]
impl TurnStore for SqliteTurnStore {
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
        Some(self.artifacts.as_ref())
    }

    async fn begin_turn(&self, begin: TurnBegin<'_>) -> Result<TurnBegun, StoreError> {
        let ctx = begin.context_id;
        let mut tx = self.backend.write().await?;
        if let Some(lease) = begin.lease {
            let found =
                locks::acquire_in(tx.conn(), ctx, lease.owner, lease.task_id, lease.ttl).await?;
            if found != Acquire::Acquired {
                // Nothing was written.
                tx.rollback().await?;
                return Ok(TurnBegun::Refused(found));
            }
        }
        let state = if begin.load_state {
            agents::load_in(tx.conn(), ctx).await?
        } else {
            None
        };
        let (epoch, len) = messages::ensure_history(tx.conn(), ctx).await?;
        let mark = HistoryMark {
            epoch: epoch.clone(),
            len,
        };
        let (history, input_saved) = match begin.known {
            Some(known) if known.epoch == epoch && known.len <= len => {
                let tail = messages::load_in(tx.conn(), ctx, known.len, len).await?;
                let save = known.len == len && !begin.input.is_empty();
                if save {
                    messages::append_in(tx.conn(), ctx, begin.input).await?;
                }
                (
                    LoadedHistory::Tail {
                        messages: tail,
                        mark,
                    },
                    save,
                )
            }
            _ => {
                let whole = messages::load_in(tx.conn(), ctx, 0, len).await?;
                (
                    LoadedHistory::Whole {
                        messages: whole,
                        mark: Some(mark),
                    },
                    false,
                )
            }
        };
        tx.commit().await?;
        Ok(TurnBegun::Begun(Box::new(BegunTurn {
            state,
            history,
            input_saved,
        })))
    }

    async fn commit_turn(&self, commit: TurnCommit<'_>) -> Result<(), StoreError> {
        let ctx = commit.context_id;
        let mut tx = self.backend.write().await?;
        if let Some(held) = commit.artifacts {
            for write in held.writes {
                artifacts::apply_in(tx.conn(), ctx, held.task_id, write).await?;
            }
        }
        if let Some(owner) = commit.lease_owner {
            let held = locks::held_in(tx.conn(), ctx).await?;
            if held.is_none_or(|lease| lease.owner != owner) {
                // The announced artifacts are kept; nothing else is written.
                tx.commit().await?;
                return Err(StoreError::LeaseLost {
                    context_id: ctx.to_owned(),
                });
            }
        }
        if !commit.messages.is_empty() {
            messages::append_in(tx.conn(), ctx, commit.messages).await?;
        }
        if let Some(state) = commit.state {
            agents::save_in(tx.conn(), state).await?;
        }
        if let Some(owner) = commit.lease_owner {
            locks::release_in(tx.conn(), ctx, owner).await?;
        }
        if let Some(task_id) = commit.forget_checkpoint {
            checkpoints::delete_in(tx.conn(), task_id).await?;
        }
        tx.commit().await
    }
}
