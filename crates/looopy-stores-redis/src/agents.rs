//! [`RedisAgentStateStore`]: one JSON string per context, a sorted set per
//! owner.

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{AgentState, AgentStateStore};

use crate::backend::{RedisBackend, Retry};
use crate::index::{self, Listing, score};

/// Agent states in Redis: `P:{ctx:C}:agent` holds the state as JSON, and
/// `P:{owner:O}:agents` (score: `last_activity` in µs) indexes an owner's
/// contexts.
///
/// The index lives on the owner's cluster slot, so a save is two steps in
/// one pipelined round trip, `ZADD` to the new owner's index then `SET ...
/// GET` of the state, plus a `ZREM` from the old owner's index when the
/// owner changed. `list_by_owner` checks every listed state's owner, so an
/// entry left behind by a crash between steps is never returned.
#[derive(Debug, Clone)]
pub struct RedisAgentStateStore {
    backend: RedisBackend,
}

impl RedisAgentStateStore {
    /// Agent states on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisAgentStateStore { backend }
    }

    async fn unindex(&self, previous: Option<String>, context_id: &str, keep: Option<&str>) {
        let Some(previous) = previous else { return };
        let owner = match serde_json::from_str::<AgentState>(&previous) {
            Ok(state) => state.owner,
            Err(_) => return,
        };
        let Some(owner) = owner.filter(|o| Some(o.as_str()) != keep) else {
            return;
        };
        let mut zrem = redis::cmd("ZREM");
        zrem.arg(self.backend.keys().owner_agents(&owner))
            .arg(context_id);
        if let Err(error) = self.backend.query::<i64>(&zrem, Retry::Safe).await {
            // Left in the index; listings skip it.
            tracing::debug!(%error, "could not remove a context from its former owner's index");
        }
    }
}

#[async_trait]
impl AgentStateStore for RedisAgentStateStore {
    async fn save(&self, state: &AgentState) -> Result<(), StoreError> {
        let keys = self.backend.keys();
        let json = serde_json::to_string(state)?;
        let ttl = self.backend.ttl_ms();
        let mut pipe = redis::pipe();
        if let Some(owner) = &state.owner {
            let index = keys.owner_agents(owner);
            pipe.zadd(&index, &state.context_id, score(state.last_activity))
                .ignore();
            if ttl > 0 {
                pipe.cmd("PEXPIRE").arg(&index).arg(ttl).ignore();
            }
        }
        let set = pipe.cmd("SET").arg(keys.agent(&state.context_id)).arg(json);
        if ttl > 0 {
            set.arg("PX").arg(ttl);
        }
        set.arg("GET");
        let (previous,): (Option<String>,) = self.backend.pipe(&pipe, Retry::Safe).await?;
        self.unindex(previous, &state.context_id, state.owner.as_deref())
            .await;
        Ok(())
    }

    async fn load(&self, context_id: &str) -> Result<Option<AgentState>, StoreError> {
        let mut get = redis::cmd("GET");
        get.arg(self.backend.keys().agent(context_id));
        let json: Option<String> = self.backend.query(&get, Retry::Safe).await?;
        Ok(json.map(|j| serde_json::from_str(&j)).transpose()?)
    }

    async fn delete(&self, context_id: &str) -> Result<(), StoreError> {
        let mut getdel = redis::cmd("GETDEL");
        getdel.arg(self.backend.keys().agent(context_id));
        let previous: Option<String> = self.backend.query(&getdel, Retry::Safe).await?;
        self.unindex(previous, context_id, None).await;
        Ok(())
    }

    async fn list_by_owner(
        &self,
        owner: &str,
        limit: usize,
    ) -> Result<Vec<AgentState>, StoreError> {
        let keys = self.backend.keys();
        let key_of = |context_id: &str| keys.agent(context_id);
        let accept = |state: &AgentState| state.owner.as_deref() == Some(owner);
        index::list(
            &self.backend,
            Listing {
                index: keys.owner_agents(owner),
                key_of: &key_of,
                accept: &accept,
            },
            limit,
        )
        .await
    }
}
