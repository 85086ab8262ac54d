//! [`PostgresTurnStore`]: an Agent turn's start and its end, each one
//! transaction sent as one statement (one round trip).
//!
//! The start takes the lease, reads the agent state and the history (only
//! its new tail when the caller's [`HistoryMark`] still holds) and saves
//! the input when the stored history is the caller's. The end writes the
//! artifacts the turn held back, checks the lease, appends the messages,
//! stores the state, releases the lease and deletes the checkpoint: it
//! commits whole or not at all, so that no half-saved turn is ever read,
//! after a crash either. Each is a function of the schema
//! (`looopy_begin_turn`, `looopy_commit_turn`, migration 3): the server
//! runs the steps one after another in the statement's own transaction,
//! so that a turn's start and end each wait for the network once.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::StoreError;
use looopy_core::store::{
    Acquire, AgentStateStore, ArtifactStore, BegunTurn, CheckpointStore, HistoryMark,
    LoadedHistory, MessageStore, TurnBegin, TurnBegun, TurnCommit, TurnLock, TurnStore,
};

use crate::agents::decode_state;
use crate::artifacts::PreparedWrite;
use crate::backend::{PostgresBackend, Retry, int, millis, nanos, new_epoch, uint};
use crate::messages::{decode, encode};
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
        let backend = &self.backend;
        let input = &input;
        // With input, not repeated once sent: after a lost reply the input
        // may be stored.
        let retry = if sends_input {
            Retry::Never
        } else {
            Retry::Safe
        };
        let lease = begin.lease.as_ref();
        let row: BeginRow = self
            .backend
            .run(retry, || async move {
                let mut conn = backend.lend().await?;
                let row = sqlx::query_as(
                    "SELECT r_refused, r_held_task, r_state, r_len, r_epoch, r_from, r_bodies, r_saved
                     FROM looopy_begin_turn($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                )
                .bind(begin.context_id)
                .bind(lease.map(|l| l.owner))
                .bind(lease.and_then(|l| l.task_id))
                .bind(lease.map_or(1, |l| millis(l.ttl).max(1)))
                .bind(begin.load_state)
                .bind(begin.known.map(|k| k.epoch.as_str()))
                .bind(begin.known.map_or(0, |k| int(k.len)))
                .bind(if sends_input { &input[..] } else { &[][..] })
                .bind(new_epoch())
                .fetch_one(&mut *conn)
                .await?;
                conn.park();
                Ok(row)
            })
            .await?;
        let (refused, held_task, state, len, epoch, from, bodies, saved) = row;
        match (refused.as_deref(), held_task) {
            (None, _) => {}
            (Some("stranded"), Some(task_id)) => {
                return Ok(TurnBegun::Refused(Acquire::Stranded { task_id }));
            }
            _ => return Ok(TurnBegun::Refused(Acquire::Held)),
        }
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
        let writes = WriteArrays::new(writes);
        let task_of_writes = commit.artifacts.map_or("", |held| held.task_id);
        let messages = encode(commit.messages.iter().map(|m| &**m))?;
        let state = commit
            .state
            .map(|s| serde_json::to_string(&**s))
            .transpose()?;
        // The state's row, when both are there (as before: both or none).
        let state = commit.state.zip(state);
        let backend = &self.backend;
        let (writes, messages, state) = (&writes, &messages, &state);
        let ctx = commit.context_id;
        // Not repeated once sent: the messages may have landed.
        let done: bool = self
            .backend
            .run(Retry::Never, || async move {
                let mut conn = backend.lend().await?;
                let done = sqlx::query_scalar(
                    "SELECT looopy_commit_turn($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
                         $12, $13, $14, $15, $16)",
                )
                .bind(ctx)
                .bind(commit.lease_owner)
                .bind(messages)
                .bind(state.as_ref().map(|(s, _)| s.context_id.as_str()))
                .bind(state.as_ref().and_then(|(s, _)| s.owner.as_deref()))
                .bind(state.as_ref().map_or(0, |(s, _)| nanos(s.last_activity)))
                .bind(state.as_ref().map(|(_, body)| body.as_str()))
                .bind(commit.forget_checkpoint)
                .bind(new_epoch())
                .bind(task_of_writes)
                .bind(nanos(Utc::now()))
                .bind(&writes.put)
                .bind(&writes.ids)
                .bind(&writes.metas)
                .bind(&writes.nparts)
                .bind(&writes.parts)
                .fetch_one(&mut *conn)
                .await?;
                conn.park();
                Ok(done)
            })
            .await?;
        if done {
            Ok(())
        } else {
            Err(StoreError::LeaseLost {
                context_id: ctx.to_owned(),
            })
        }
    }
}

/// What `looopy_begin_turn` returns: the refusal (`held`, `stranded`) and
/// the stranded lease's task, the state, the history's length and epoch,
/// where the messages read start, the messages, whether the input was
/// saved.
type BeginRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    String,
    i64,
    Vec<String>,
    bool,
);

/// The turn's artifact writes as the parallel arrays `looopy_commit_turn`
/// takes: each write's kind, id, metadata and count of parts, and all the
/// parts one after another.
struct WriteArrays {
    put: Vec<bool>,
    ids: Vec<String>,
    metas: Vec<String>,
    nparts: Vec<i64>,
    parts: Vec<String>,
}

impl WriteArrays {
    fn new(writes: Vec<PreparedWrite>) -> Self {
        let mut arrays = WriteArrays {
            put: Vec::with_capacity(writes.len()),
            ids: Vec::with_capacity(writes.len()),
            metas: Vec::with_capacity(writes.len()),
            nparts: Vec::with_capacity(writes.len()),
            parts: Vec::new(),
        };
        for w in writes {
            arrays.put.push(w.put);
            arrays.ids.push(w.artifact_id);
            arrays.metas.push(w.meta);
            arrays.nparts.push(int(w.parts.len()));
            arrays.parts.extend(w.parts);
        }
        arrays
    }
}
