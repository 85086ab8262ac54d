//! [`TurnStore`]: what an Agent turn reads at its start and writes at its
//! end, as two combined operations.
//!
//! A turn takes the conversation's lease, reads the agent state and the
//! history, saves its input; at its end it saves the messages it produced
//! and the state, releases the lease and forgets its checkpoint. Done one
//! store call after the other, that is a round trip per step on a remote
//! store. A [`TurnStore`] does each end as one operation: the default
//! methods call the separate stores in order ([`SeparateStores`] is that
//! default for any stores); a store that keeps everything on one server
//! (Redis) overrides them with one atomic script each.
//!
//! The history is read whole, or only its tail when the caller says which
//! history it already holds ([`HistoryMark`]) and the store can tell that
//! the stored one still starts with it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{
    Acquire, AgentState, AgentStateStore, ArtifactStore, CheckpointStore, MessageStore, StoreError,
    TurnLock,
};
use crate::message::{Message, Part};
use crate::task::Artifact;

/// Which stored history a caller holds: the store's token for that history
/// (`epoch`, changed whenever the history is rewritten or deleted, never
/// by an append) and how many of its messages the caller holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HistoryMark {
    /// The store's token for the history (opaque to callers).
    pub epoch: String,
    /// How many messages of it the caller holds (the first `len`).
    pub len: usize,
}

/// The turn lease a turn start takes.
#[derive(Debug, Clone, Copy)]
pub struct LeaseRequest<'a> {
    /// The new owner token.
    pub owner: &'a str,
    /// The turn's task (a lease without one just runs out).
    pub task_id: Option<&'a str>,
    /// How long the lease lasts unless renewed.
    pub ttl: Duration,
}

/// What a turn start asks for.
#[derive(Debug, Clone, Copy)]
pub struct TurnBegin<'a> {
    /// The conversation.
    pub context_id: &'a str,
    /// The lease to take first; nothing else is done when it is refused.
    pub lease: Option<LeaseRequest<'a>>,
    /// Whether to read the agent state.
    pub load_state: bool,
    /// The history the caller holds: only what follows it is read when the
    /// stored history still starts with it.
    pub known: Option<&'a HistoryMark>,
    /// The turn's input, appended when the stored history is exactly the
    /// `known` one (so that the input, built from that history, still fits
    /// it). [`BegunTurn::input_saved`] says whether it was.
    pub input: &'a [Message],
}

/// The stored history as a turn start read it.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadedHistory {
    /// Every stored message (the caller's history, if any, is stale).
    Whole {
        /// The messages, oldest first.
        messages: Vec<Message>,
        /// The store's mark of the history read (`None`: the store keeps
        /// no epochs, so every read is whole).
        mark: Option<HistoryMark>,
    },
    /// The messages after the `known.len` ones the caller holds.
    Tail {
        /// The messages after the caller's, oldest first.
        messages: Vec<Message>,
        /// The mark of the history read (input not counted).
        mark: HistoryMark,
    },
}

/// A started turn's reads.
#[derive(Debug, Clone, PartialEq)]
pub struct BegunTurn {
    /// The stored agent state (`None` when not asked for, or none stored).
    pub state: Option<AgentState>,
    /// The history before the input.
    pub history: LoadedHistory,
    /// Whether the input was appended to the history.
    pub input_saved: bool,
}

/// How a turn start went.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnBegun {
    /// The lease was refused ([`Acquire::Held`] or [`Acquire::Stranded`]);
    /// nothing was read or written.
    Refused(Acquire),
    /// The lease (if asked for) is held; boxed: the refusal is small.
    Begun(Box<BegunTurn>),
}

/// What a turn's end writes.
#[derive(Debug, Clone, Copy)]
pub struct TurnCommit<'a> {
    /// The conversation.
    pub context_id: &'a str,
    /// The owner token of the lease the turn holds: checked before anything
    /// is written ([`StoreError::LeaseLost`] when another owner holds it),
    /// released after.
    pub lease_owner: Option<&'a str>,
    /// Messages to append to the history (shared with the turn's history).
    pub messages: &'a [Arc<Message>],
    /// The agent state to store (shared: see
    /// [`AgentStateStore::save_shared`](super::AgentStateStore::save_shared)).
    pub state: Option<&'a Arc<AgentState>>,
    /// The task whose checkpoint is deleted (a turn that ended for good).
    pub forget_checkpoint: Option<&'a str>,
    /// Artifact writes the turn held back to save with its end (only given
    /// to a store whose [`TurnStore::artifacts`] is the turn's artifact
    /// store). Written before the messages, whether or not the lease check
    /// passes: an artifact the turn announced is stored as it would have
    /// been had it been written while it streamed.
    pub artifacts: Option<TurnArtifacts<'a>>,
}

/// The artifact writes of one task handed to [`TurnCommit`], in the order
/// they are applied.
#[derive(Debug, Clone, Copy)]
pub struct TurnArtifacts<'a> {
    /// The task that made them.
    pub task_id: &'a str,
    /// The writes, in order.
    pub writes: &'a [ArtifactWrite],
}

/// One held-back write to an [`ArtifactStore`].
#[derive(Debug, Clone, PartialEq)]
pub enum ArtifactWrite {
    /// [`ArtifactStore::put`]: the artifact whole.
    Put(Artifact),
    /// [`ArtifactStore::append_parts`]: parts after the stored ones.
    Append {
        /// The artifact's id.
        artifact_id: String,
        /// The parts, in order.
        parts: Vec<Part>,
    },
}

impl ArtifactWrite {
    /// The artifact written.
    pub fn artifact_id(&self) -> &str {
        match self {
            ArtifactWrite::Put(artifact) => &artifact.artifact_id,
            ArtifactWrite::Append { artifact_id, .. } => artifact_id,
        }
    }

    /// Applies the write to `store`.
    pub async fn apply(
        &self,
        store: &dyn ArtifactStore,
        context_id: &str,
        task_id: &str,
    ) -> Result<(), StoreError> {
        match self {
            ArtifactWrite::Put(artifact) => store.put(context_id, task_id, artifact).await,
            ArtifactWrite::Append { artifact_id, parts } => {
                store
                    .append_parts(context_id, task_id, artifact_id, parts)
                    .await
            }
        }
    }
}

/// The two ends of an Agent turn as combined operations (see the module
/// docs). The default methods call the stores the accessors return, one
/// after the other.
#[async_trait]
pub trait TurnStore: Send + Sync {
    /// The history store.
    fn messages(&self) -> &dyn MessageStore;
    /// The agent state store, if any.
    fn states(&self) -> Option<&dyn AgentStateStore>;
    /// The turn lock, if any.
    fn lock(&self) -> Option<&dyn TurnLock>;
    /// The checkpoint store, if any.
    fn checkpoints(&self) -> Option<&dyn CheckpointStore>;
    /// The artifact store that [`TurnCommit::artifacts`] are written to, if
    /// this turn store takes them. The default: none (the Agent writes its
    /// artifacts itself as they stream). A store returns one where saving
    /// them with the turn's end saves round trips.
    fn artifacts(&self) -> Option<&dyn ArtifactStore> {
        None
    }

    /// Takes the lease, reads the state and the history (see
    /// [`TurnBegin`]). On an error the lease is not held.
    async fn begin_turn(&self, begin: TurnBegin<'_>) -> Result<TurnBegun, StoreError> {
        begin_separately(self, begin).await
    }

    /// Checks the lease, appends the messages, stores the state, releases
    /// the lease, deletes the checkpoint (see [`TurnCommit`]). A refused
    /// commit ([`StoreError::LeaseLost`]) writes nothing; after another
    /// error the lease may still be held (the caller releases it).
    async fn commit_turn(&self, commit: TurnCommit<'_>) -> Result<(), StoreError> {
        commit_separately(self, commit).await
    }
}

/// [`TurnStore::begin_turn`] done with one call per store, in order.
pub async fn begin_separately<S: TurnStore + ?Sized>(
    store: &S,
    begin: TurnBegin<'_>,
) -> Result<TurnBegun, StoreError> {
    let lock = match begin.lease {
        Some(lease) => {
            let lock = store.lock().ok_or_else(no_lock)?;
            let found = lock
                .try_acquire(begin.context_id, lease.owner, lease.task_id, lease.ttl)
                .await?;
            if found != Acquire::Acquired {
                return Ok(TurnBegun::Refused(found));
            }
            Some((lock, lease.owner))
        }
        None => None,
    };
    let read = async {
        let state = match (begin.load_state, store.states()) {
            (true, Some(states)) => states.load(begin.context_id).await?,
            _ => None,
        };
        let messages = store.messages().load(begin.context_id).await?;
        Ok::<_, StoreError>((state, messages))
    };
    match read.await {
        Ok((state, messages)) => Ok(TurnBegun::Begun(Box::new(BegunTurn {
            state,
            history: LoadedHistory::Whole {
                messages,
                mark: None,
            },
            input_saved: false,
        }))),
        Err(error) => {
            if let Some((lock, owner)) = lock {
                // The caller gets no lease on an error.
                let _ = lock.release(begin.context_id, owner).await;
            }
            Err(error)
        }
    }
}

/// [`TurnStore::commit_turn`] done with one call per store, in order.
pub async fn commit_separately<S: TurnStore + ?Sized>(
    store: &S,
    commit: TurnCommit<'_>,
) -> Result<(), StoreError> {
    if let Some(held) = commit.artifacts {
        let artifacts = store.artifacts().ok_or_else(no_artifacts)?;
        for write in held.writes {
            write
                .apply(artifacts, commit.context_id, held.task_id)
                .await?;
        }
    }
    let lock = match commit.lease_owner {
        Some(owner) => {
            let lock = store.lock().ok_or_else(no_lock)?;
            let held = lock.lease(commit.context_id).await?;
            if held.is_none_or(|l| l.owner != owner) {
                return Err(StoreError::LeaseLost {
                    context_id: commit.context_id.to_owned(),
                });
            }
            Some((lock, owner))
        }
        None => None,
    };
    if !commit.messages.is_empty() {
        store
            .messages()
            .append_shared(commit.context_id, commit.messages)
            .await?;
    }
    if let (Some(state), Some(states)) = (commit.state, store.states()) {
        states.save_shared(state).await?;
    }
    if let Some((lock, owner)) = lock {
        // `false`: taken over after the check; the writes are done anyway.
        lock.release(commit.context_id, owner).await?;
    }
    if let (Some(task_id), Some(checkpoints)) = (commit.forget_checkpoint, store.checkpoints()) {
        checkpoints.delete(task_id).await?;
    }
    Ok(())
}

fn no_artifacts() -> StoreError {
    StoreError::Backend {
        message: "artifacts were given to a turn store that takes none".into(),
    }
}

fn no_lock() -> StoreError {
    StoreError::Backend {
        message: "a turn lease was asked for, but the turn store has no turn lock".into(),
    }
}

/// The default [`TurnStore`]: separate stores, called one after the other.
#[derive(Clone)]
pub struct SeparateStores {
    /// The history store.
    pub messages: Arc<dyn MessageStore>,
    /// The agent state store.
    pub states: Option<Arc<dyn AgentStateStore>>,
    /// The turn lock.
    pub lock: Option<Arc<dyn TurnLock>>,
    /// The checkpoint store.
    pub checkpoints: Option<Arc<dyn CheckpointStore>>,
}

impl std::fmt::Debug for SeparateStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeparateStores")
            .field("states", &self.states.is_some())
            .field("lock", &self.lock.is_some())
            .field("checkpoints", &self.checkpoints.is_some())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl TurnStore for SeparateStores {
    fn messages(&self) -> &dyn MessageStore {
        self.messages.as_ref()
    }

    fn states(&self) -> Option<&dyn AgentStateStore> {
        self.states.as_deref()
    }

    fn lock(&self) -> Option<&dyn TurnLock> {
        self.lock.as_deref()
    }

    fn checkpoints(&self) -> Option<&dyn CheckpointStore> {
        self.checkpoints.as_deref()
    }
}
