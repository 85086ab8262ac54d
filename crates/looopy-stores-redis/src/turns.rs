//! [`RedisTurnStore`]: an Agent turn's start and end in one round trip each.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::store::{
    Acquire, AgentState, AgentStateStore, ArtifactStore, ArtifactWrite, BegunTurn, CheckpointStore,
    HistoryMark, LoadedHistory, MessageStore, TurnArtifacts, TurnBegin, TurnBegun, TurnCommit,
    TurnLock, TurnStore, begin_separately, commit_separately,
};
use looopy_core::{Artifact, Message, StoreError};
use redis::{ScriptInvocation, Value};

use crate::artifacts::{meta_json, parts_json, time};
use crate::backend::{RedisBackend, Retry};
use crate::index::score;
use crate::keys::escape;
use crate::messages::new_epoch;
use crate::scripts::{TURN_BEGIN, TURN_COMMIT};
use crate::{
    RedisAgentStateStore, RedisArtifactStore, RedisCheckpointStore, RedisMessageStore,
    RedisTurnLock,
};

/// The [`TurnStore`] of the Redis stores: on one server, a turn's start
/// (take the lease, read the state and the history or only its new tail,
/// save the input) is one Lua script, and so is its end (check the lease,
/// append the messages, store the state, release the lease, delete the
/// checkpoint), so that a turn costs these two round trips and its
/// checkpoints. Given the artifact store ([`RedisTurnStore::with_artifacts`]),
/// the end also writes the artifacts the turn held back, in the same
/// script.
///
/// The scripts name keys of several hash tags (the lease lives with its
/// registry shard, the checkpoint with its task), which a Redis Cluster
/// refuses: on a cluster both operations are done store by store (the
/// trait's default), and the lease check at the end is a read just before
/// the writes rather than part of them.
#[derive(Debug, Clone)]
pub struct RedisTurnStore {
    backend: RedisBackend,
    messages: Arc<RedisMessageStore>,
    states: Arc<RedisAgentStateStore>,
    lock: Arc<RedisTurnLock>,
    checkpoints: Arc<RedisCheckpointStore>,
    artifacts: Option<Arc<RedisArtifactStore>>,
}

impl RedisTurnStore {
    /// The turn store over these stores (all on `backend`).
    pub fn new(
        backend: RedisBackend,
        messages: Arc<RedisMessageStore>,
        states: Arc<RedisAgentStateStore>,
        lock: Arc<RedisTurnLock>,
        checkpoints: Arc<RedisCheckpointStore>,
    ) -> Self {
        RedisTurnStore {
            backend,
            messages,
            states,
            lock,
            checkpoints,
            artifacts: None,
        }
    }

    /// Also takes the turn's artifact writes into its end (an Agent whose
    /// artifact store is `artifacts`, the same allocation, then holds its
    /// streamed artifacts back until the turn ends).
    #[must_use]
    pub fn with_artifacts(mut self, artifacts: Arc<RedisArtifactStore>) -> Self {
        self.artifacts = Some(artifacts);
        self
    }
}

/// Adds the artifact writes to a turn-end call: their keys after the eight
/// fixed ones, their arguments after the nine fixed ones.
fn add_artifacts(
    backend: &RedisBackend,
    call: &mut ScriptInvocation<'_>,
    context_id: &str,
    held: Option<TurnArtifacts<'_>>,
) -> Result<(), StoreError> {
    let keys = backend.keys();
    let writes = held.map_or(&[][..], |h| h.writes);
    call.key(keys.artifacts(context_id));
    call.arg(writes.len())
        .arg(held.map_or("", |h| h.task_id))
        .arg(time(Utc::now()));
    for write in writes {
        let id = write.artifact_id();
        call.key(keys.artifact(context_id, id))
            .key(keys.artifact_parts(context_id, id));
        let (kind, meta, parts) = match write {
            ArtifactWrite::Put(artifact) => ("put", meta_json(artifact)?, &artifact.parts),
            ArtifactWrite::Append { parts, .. } => {
                ("append", meta_json(&Artifact::new(id, Vec::new()))?, parts)
            }
        };
        call.arg(kind)
            .arg(escape(id).as_ref())
            .arg(meta)
            .arg(parts.len());
        for part in parts_json(parts)? {
            call.arg(part);
        }
    }
    Ok(())
}

fn flag(yes: bool) -> &'static str {
    if yes { "1" } else { "0" }
}

fn unexpected(what: &str, reply: &impl std::fmt::Debug) -> StoreError {
    StoreError::Backend {
        message: format!("unexpected reply from the turn {what} script: {reply:?}"),
    }
}

fn text(value: &Value) -> Result<String, StoreError> {
    redis::from_redis_value_ref(value).map_err(|e| StoreError::Serialization {
        message: format!("turn start reply: {e}"),
    })
}

fn decode(values: &[Value]) -> Result<Vec<Message>, StoreError> {
    values
        .iter()
        .map(|v| Ok(serde_json::from_str(&text(v)?)?))
        .collect()
}

#[async_trait]
impl TurnStore for RedisTurnStore {
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
        if self.backend.is_cluster() {
            return begin_separately(self, begin).await;
        }
        let keys = self.backend.keys();
        let ctx = begin.context_id;
        let mut call = TURN_BEGIN.prepare_invoke();
        call.key(keys.lock(ctx))
            .key(keys.turn_registry_of(ctx))
            .key(keys.messages(ctx))
            .key(keys.messages_epoch(ctx))
            .key(keys.agent(ctx));
        let (owner, task, ttl) = begin.lease.map_or(("", "", 0), |l| {
            (
                l.owner,
                l.task_id.unwrap_or(""),
                u64::try_from(l.ttl.as_millis()).unwrap_or(u64::MAX).max(1),
            )
        });
        call.arg(flag(begin.lease.is_some()))
            .arg(owner)
            .arg(task)
            .arg(ttl)
            .arg(ctx)
            .arg(flag(begin.load_state))
            .arg(begin.known.map_or("", |k| k.epoch.as_str()))
            .arg(begin.known.map_or(0, |k| k.len))
            .arg(new_epoch())
            .arg(self.backend.ttl_ms());
        // The input goes only with a known history (it is appended only when
        // the stored one is exactly that).
        let sends_input = begin.known.is_some() && !begin.input.is_empty();
        if sends_input {
            for message in begin.input {
                call.arg(serde_json::to_string(message)?);
            }
        }
        // With input, not repeated: after a lost reply the input may be
        // stored, and the caller, told the history changed, would add it
        // again. Without, repeating takes the same owner's lease again and
        // reads again.
        let retry = if sends_input {
            Retry::Never
        } else {
            Retry::Safe
        };
        let reply: Vec<Value> = self.backend.script(&call, retry).await?;
        match reply.as_slice() {
            [Value::Int(0)] => Ok(TurnBegun::Refused(Acquire::Held)),
            [Value::Int(2), task] => Ok(TurnBegun::Refused(Acquire::Stranded {
                task_id: text(task)?,
            })),
            [
                Value::Int(1),
                epoch,
                Value::Int(from),
                Value::Int(len),
                Value::Array(messages),
                Value::Array(state),
                Value::Int(saved),
            ] => {
                let epoch = text(epoch)?;
                let from = usize::try_from(*from).unwrap_or(0);
                let len = usize::try_from(*len).unwrap_or(0);
                let messages = decode(messages)?;
                let state: Option<AgentState> = match state.first() {
                    Some(json) => Some(serde_json::from_str(&text(json)?)?),
                    None => None,
                };
                let mark = HistoryMark { epoch, len };
                let history = if from > 0 {
                    LoadedHistory::Tail { messages, mark }
                } else {
                    LoadedHistory::Whole {
                        messages,
                        mark: Some(mark),
                    }
                };
                Ok(TurnBegun::Begun(Box::new(BegunTurn {
                    state,
                    history,
                    input_saved: *saved == 1,
                })))
            }
            other => Err(unexpected("start", &other)),
        }
    }

    async fn commit_turn(&self, commit: TurnCommit<'_>) -> Result<(), StoreError> {
        if self.backend.is_cluster() {
            return commit_separately(self, commit).await;
        }
        let keys = self.backend.keys();
        let ctx = commit.context_id;
        let owner = commit.state.and_then(|s| s.owner.as_deref());
        let task = commit.forget_checkpoint.unwrap_or("");
        let mut call = TURN_COMMIT.prepare_invoke();
        call.key(keys.lock(ctx))
            .key(keys.turn_registry_of(ctx))
            .key(keys.messages(ctx))
            .key(keys.messages_epoch(ctx))
            .key(keys.agent(ctx))
            .key(owner.map_or_else(|| keys.agent(ctx), |o| keys.owner_agents(o)))
            .key(keys.checkpoint(task))
            .key(keys.checkpoint_messages(task));
        let state = commit.state.map(serde_json::to_string).transpose()?;
        call.arg(flag(commit.lease_owner.is_some()))
            .arg(commit.lease_owner.unwrap_or(""))
            .arg(ctx)
            .arg(state.as_deref().unwrap_or(""))
            .arg(flag(owner.is_some()))
            .arg(commit.state.map_or(0.0, |s| score(s.last_activity)))
            .arg(flag(commit.forget_checkpoint.is_some()))
            .arg(self.backend.ttl_ms())
            .arg(new_epoch());
        add_artifacts(&self.backend, &mut call, ctx, commit.artifacts)?;
        for message in commit.messages {
            call.arg(serde_json::to_string(&**message)?);
        }
        // Not repeated: a lost reply after the append would append twice.
        let done: i64 = self.backend.script(&call, Retry::Never).await?;
        if done == 1 {
            Ok(())
        } else {
            Err(StoreError::LeaseLost {
                context_id: ctx.to_owned(),
            })
        }
    }
}
