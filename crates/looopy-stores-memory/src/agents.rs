//! [`MemoryAgentStateStore`].

use std::collections::BTreeSet;

use hashbrown::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::listing::first_page;
use looopy_core::store::{AgentState, AgentStateStore};

use crate::lock;
use crate::retention::{MemoryRetention, Retained};

#[derive(Debug, Default)]
struct Inner {
    /// As the Agents shared them (`save_shared`).
    states: Retained<Arc<AgentState>>,
    /// Owner -> the contexts it owns. States that expire or are evicted
    /// leave their id here until the next [`Inner::prune`].
    by_owner: HashMap<String, BTreeSet<String>>,
    /// Context ids in `by_owner`, all owners together.
    indexed: usize,
}

impl Inner {
    fn unindex(&mut self, state: &AgentState) {
        if let Some(owner) = &state.owner
            && let Some(contexts) = self.by_owner.get_mut(owner)
        {
            if contexts.remove(&state.context_id) {
                self.indexed -= 1;
            }
            if contexts.is_empty() {
                self.by_owner.remove(owner);
            }
        }
    }

    /// Drops the ids of states that are gone from the owner index once it
    /// holds twice as many as there are states (amortised O(1) per save).
    fn prune(&mut self) {
        if self.indexed <= 2 * self.states.held() + 64 {
            return;
        }
        let states = &self.states;
        let mut indexed = 0;
        self.by_owner.retain(|_, contexts| {
            contexts.retain(|c| states.peek(c).is_some());
            indexed += contexts.len();
            !contexts.is_empty()
        });
        self.indexed = indexed;
    }
}

/// Agent lifecycle metadata in memory, indexed by owner.
///
/// [`AgentStateStore::list_by_owner`] costs O(k log k) in the number of
/// contexts of that owner; ties in `last_activity` are broken by context id.
/// [`with_retention`](Self::with_retention) drops a state `ttl_secs` after
/// its last save and keeps at most `max_entries` of them.
#[derive(Debug, Default)]
pub struct MemoryAgentStateStore {
    inner: Mutex<Inner>,
}

impl MemoryAgentStateStore {
    /// An empty store that keeps every state.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose states expire and are capped as `retention` says.
    pub fn with_retention(retention: &MemoryRetention) -> Self {
        MemoryAgentStateStore {
            inner: Mutex::new(Inner {
                states: Retained::new(retention.ttl(), retention.cap()),
                ..Inner::default()
            }),
        }
    }
}

#[async_trait]
impl AgentStateStore for MemoryAgentStateStore {
    async fn save(&self, state: &AgentState) -> Result<(), StoreError> {
        self.save_shared(&Arc::new(state.clone())).await
    }

    async fn save_shared(&self, state: &Arc<AgentState>) -> Result<(), StoreError> {
        let mut inner = lock(&self.inner);
        // A live state of the same owner is replaced in place: its key and
        // its place in the owner index stay.
        if let Some(slot) = inner.states.get_mut(&state.context_id)
            && slot.owner == state.owner
        {
            let previous = std::mem::replace(slot, Arc::clone(state));
            drop(inner);
            drop(previous); // freed outside the lock
            return Ok(());
        }
        if let Some(previous) = inner.states.remove(&state.context_id) {
            inner.unindex(&previous);
        }
        if let Some(owner) = &state.owner
            && inner
                .by_owner
                .entry(owner.clone())
                .or_default()
                .insert(state.context_id.clone())
        {
            inner.indexed += 1;
        }
        inner
            .states
            .insert(state.context_id.clone(), Arc::clone(state));
        inner.prune();
        Ok(())
    }

    async fn load(&self, context_id: &str) -> Result<Option<AgentState>, StoreError> {
        Ok(lock(&self.inner)
            .states
            .get(context_id)
            .map(|state| AgentState::clone(state)))
    }

    async fn delete(&self, context_id: &str) -> Result<(), StoreError> {
        let mut inner = lock(&self.inner);
        if let Some(previous) = inner.states.remove(context_id) {
            inner.unindex(&previous);
        }
        Ok(())
    }

    async fn list_by_owner(
        &self,
        owner: &str,
        limit: usize,
    ) -> Result<Vec<AgentState>, StoreError> {
        let inner = lock(&self.inner);
        let Some(contexts) = inner.by_owner.get(owner) else {
            return Ok(Vec::new());
        };
        let states: Vec<&AgentState> = contexts
            .iter()
            .filter_map(|c| inner.states.peek(c).map(|s| &**s))
            // An id left in the index by a state that expired and came back
            // under another owner is not this owner's.
            .filter(|s| s.owner.as_deref() == Some(owner))
            .collect();
        Ok(first_page(states, limit).into_iter().cloned().collect())
    }
}
