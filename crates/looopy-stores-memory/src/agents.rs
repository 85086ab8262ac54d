//! [`MemoryAgentStateStore`].

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{AgentState, AgentStateStore};

use crate::lock;

#[derive(Debug, Default)]
struct Inner {
    states: HashMap<String, AgentState>,
    /// Owner -> the contexts it owns.
    by_owner: HashMap<String, BTreeSet<String>>,
}

impl Inner {
    fn unindex(&mut self, state: &AgentState) {
        if let Some(owner) = &state.owner
            && let Some(contexts) = self.by_owner.get_mut(owner)
        {
            contexts.remove(&state.context_id);
            if contexts.is_empty() {
                self.by_owner.remove(owner);
            }
        }
    }
}

/// Agent lifecycle metadata in memory, indexed by owner.
///
/// [`AgentStateStore::list_by_owner`] costs O(k log k) in the number of
/// contexts of that owner; ties in `last_activity` are broken by context id.
#[derive(Debug, Default)]
pub struct MemoryAgentStateStore {
    inner: Mutex<Inner>,
}

impl MemoryAgentStateStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl AgentStateStore for MemoryAgentStateStore {
    async fn save(&self, state: &AgentState) -> Result<(), StoreError> {
        let state = state.clone();
        let mut inner = lock(&self.inner);
        if let Some(previous) = inner.states.remove(&state.context_id) {
            inner.unindex(&previous);
        }
        if let Some(owner) = &state.owner {
            inner
                .by_owner
                .entry(owner.clone())
                .or_default()
                .insert(state.context_id.clone());
        }
        inner.states.insert(state.context_id.clone(), state);
        Ok(())
    }

    async fn load(&self, context_id: &str) -> Result<Option<AgentState>, StoreError> {
        Ok(lock(&self.inner).states.get(context_id).cloned())
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
        let mut states: Vec<&AgentState> = contexts
            .iter()
            .filter_map(|c| inner.states.get(c))
            .collect();
        states.sort_by(|a, b| {
            (Reverse(a.last_activity), &a.context_id)
                .cmp(&(Reverse(b.last_activity), &b.context_id))
        });
        let states = states.into_iter().take(limit).cloned().collect();
        Ok(states)
    }
}
