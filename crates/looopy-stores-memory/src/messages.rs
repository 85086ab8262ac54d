//! [`MemoryMessageStore`].

use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use imbl::Vector;
use looopy_core::store::MessageStore;
use looopy_core::store::validate::check_replace_range;
use looopy_core::{History, Message, StoreError};

use crate::lock;
use crate::retention::{MemoryRetention, Retained};

type Messages = Vector<Arc<Message>>;

/// Conversation histories in memory.
///
/// Each history is a persistent vector of shared messages: appending a batch
/// costs O(batch), replacing a range O(log n + replacement), and reading a
/// range O(range). Every write happens under one lock, so batches are atomic
/// and never interleave. [`new`](Self::new) keeps every conversation;
/// [`with_retention`](Self::with_retention) drops a conversation `ttl_secs`
/// after its last append and keeps at most `max_entries` of them (the least
/// recently used go first).
#[derive(Debug, Default)]
pub struct MemoryMessageStore {
    contexts: Mutex<Retained<Messages>>,
}

impl MemoryMessageStore {
    /// An empty store that keeps every conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose conversations expire and are capped as `retention` says.
    pub fn with_retention(retention: &MemoryRetention) -> Self {
        MemoryMessageStore {
            contexts: Mutex::new(Retained::new(retention.ttl(), retention.cap())),
        }
    }

    /// The whole history of a context as a [`History`] sharing the stored
    /// messages: no message is copied, only pointers (O(n) pointer copies).
    pub fn history(&self, context_id: &str) -> History {
        let messages = lock(&self.contexts)
            .get(context_id)
            .cloned()
            .unwrap_or_default();
        let mut history = History::new();
        for message in messages {
            history.push_shared(message);
        }
        history
    }

    /// Number of contexts with at least one message.
    pub fn context_count(&self) -> usize {
        lock(&self.contexts).len()
    }
}

#[async_trait]
impl MessageStore for MemoryMessageStore {
    async fn append(&self, context_id: &str, messages: &[Message]) -> Result<(), StoreError> {
        // Copy outside the lock; the lock only moves pointers.
        let batch: Vec<Arc<Message>> = messages.iter().cloned().map(Arc::new).collect();
        self.append_shared(context_id, &batch).await
    }

    async fn append_shared(
        &self,
        context_id: &str,
        messages: &[Arc<Message>],
    ) -> Result<(), StoreError> {
        if messages.is_empty() {
            return Ok(());
        }
        let mut contexts = lock(&self.contexts);
        let history = contexts.entry_or_insert_with(context_id, Vector::new);
        history.extend(messages.iter().cloned());
        Ok(())
    }

    async fn load_range(
        &self,
        context_id: &str,
        range: Range<usize>,
    ) -> Result<Vec<Message>, StoreError> {
        let shared: Vec<Arc<Message>> = {
            let mut contexts = lock(&self.contexts);
            let Some(history) = contexts.get(context_id) else {
                return Ok(Vec::new());
            };
            let end = range.end.min(history.len());
            let start = range.start.min(end);
            history
                .focus()
                .narrow(start..end)
                .into_iter()
                .cloned()
                .collect()
        };
        Ok(shared.iter().map(|m| (**m).clone()).collect())
    }

    async fn count(&self, context_id: &str) -> Result<usize, StoreError> {
        Ok(lock(&self.contexts).get(context_id).map_or(0, Vector::len))
    }

    async fn replace_range(
        &self,
        context_id: &str,
        range: Range<usize>,
        replacement: &[Message],
    ) -> Result<(), StoreError> {
        let replacement: Vector<Arc<Message>> = replacement.iter().cloned().map(Arc::new).collect();
        let removed = {
            let mut contexts = lock(&self.contexts);
            let len = contexts.get(context_id).map_or(0, Vector::len);
            check_replace_range(context_id, &range, len)?;
            if range.is_empty() && replacement.is_empty() {
                return Ok(());
            }
            let history = contexts.entry_or_insert_with(context_id, Vector::new);
            let mut tail = history.split_off(range.start);
            let rest = tail.split_off(range.end - range.start);
            history.append(replacement);
            history.append(rest);
            if history.is_empty() {
                contexts.remove(context_id);
            }
            tail
        };
        drop(removed); // freed outside the lock
        Ok(())
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let removed = lock(&self.contexts).remove(context_id);
        drop(removed); // freed outside the lock
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn history_shares_the_stored_messages() {
        let store = MemoryMessageStore::new();
        let batch: Vec<Message> = (0..3).map(|n| Message::user(n.to_string())).collect();
        store.append("c", &batch).await.unwrap();
        let history = store.history("c");
        assert_eq!(history.to_vec(), batch);
        assert!(store.history("missing").is_empty());
        assert_eq!(store.context_count(), 1);
        // Replacing everything with nothing forgets the context.
        store.replace_range("c", 0..3, &[]).await.unwrap();
        assert_eq!(store.context_count(), 0);
        // The history taken before is a snapshot.
        assert_eq!(history.len(), 3);
    }
}
