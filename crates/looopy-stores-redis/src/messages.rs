//! [`RedisMessageStore`]: one list per context.

use std::ops::Range;

use async_trait::async_trait;
use looopy_core::store::MessageStore;
use looopy_core::store::validate::range_out_of_bounds;
use looopy_core::{Message, StoreError};

use crate::backend::{RedisBackend, Retry};
use crate::scripts::REPLACE_RANGE;

/// Conversation histories in Redis: one list per context
/// (`P:{ctx:C}:messages`), one JSON message per element.
///
/// A batch is appended with a single `RPUSH` carrying every message, so it
/// lands whole and no other batch can come between its messages.
/// `replace_range` is one Lua script (check bounds, then splice).
///
/// Beside the list, `P:{ctx:C}:messages:epoch` names the history: set to a
/// fresh token when the list is created (by the first append), rewritten
/// (`replace_range`) or deleted (`clear`), and left alone by appends. A
/// process that holds the first `n` messages of epoch `E` reads only what
/// follows them while the epoch is still `E` (see `RedisTurnStore`).
#[derive(Debug, Clone)]
pub struct RedisMessageStore {
    backend: RedisBackend,
}

impl RedisMessageStore {
    /// Histories on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisMessageStore { backend }
    }
}

fn encode(messages: &[Message]) -> Result<Vec<String>, StoreError> {
    messages
        .iter()
        .map(|m| serde_json::to_string(m).map_err(StoreError::from))
        .collect()
}

/// A fresh history epoch.
pub(crate) fn new_epoch() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn index(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[async_trait]
impl MessageStore for RedisMessageStore {
    async fn append(&self, context_id: &str, messages: &[Message]) -> Result<(), StoreError> {
        if messages.is_empty() {
            return Ok(());
        }
        let key = self.backend.keys().messages(context_id);
        let encoded = encode(messages)?;
        let epoch_key = self.backend.keys().messages_epoch(context_id);
        let mut pipe = redis::pipe();
        pipe.atomic().rpush(&key, &encoded).ignore();
        pipe.cmd("SET")
            .arg(&epoch_key)
            .arg(new_epoch())
            .arg("NX")
            .ignore();
        let ttl = self.backend.ttl_ms();
        if ttl > 0 {
            let ttl = i64::try_from(ttl).unwrap_or(i64::MAX);
            pipe.pexpire(&key, ttl).ignore();
            pipe.pexpire(&epoch_key, ttl).ignore();
        }
        let () = self.backend.pipe(&pipe, Retry::Never).await?;
        Ok(())
    }

    async fn load_range(
        &self,
        context_id: &str,
        range: Range<usize>,
    ) -> Result<Vec<Message>, StoreError> {
        if range.start >= range.end || range.start > i64::MAX as usize {
            return Ok(Vec::new());
        }
        let key = self.backend.keys().messages(context_id);
        let stop = if range.end > i64::MAX as usize {
            -1
        } else {
            index(range.end) - 1
        };
        let mut cmd = redis::cmd("LRANGE");
        cmd.arg(&key).arg(index(range.start)).arg(stop);
        let raw: Vec<String> = self.backend.query(&cmd, Retry::Safe).await?;
        raw.iter()
            .map(|json| serde_json::from_str(json).map_err(StoreError::from))
            .collect()
    }

    async fn count(&self, context_id: &str) -> Result<usize, StoreError> {
        let mut cmd = redis::cmd("LLEN");
        cmd.arg(self.backend.keys().messages(context_id));
        self.backend.query(&cmd, Retry::Safe).await
    }

    async fn replace_range(
        &self,
        context_id: &str,
        range: Range<usize>,
        replacement: &[Message],
    ) -> Result<(), StoreError> {
        if range.start > range.end {
            return Err(range_out_of_bounds(context_id, &range, "stored"));
        }
        let mut call = REPLACE_RANGE.prepare_invoke();
        call.key(self.backend.keys().messages(context_id))
            .key(self.backend.keys().messages_epoch(context_id))
            .arg(new_epoch())
            .arg(range.start)
            .arg(range.end)
            .arg(self.backend.ttl_ms());
        for json in encode(replacement)? {
            call.arg(json);
        }
        let (done, len): (i64, i64) = self.backend.script(&call, Retry::Never).await?;
        if done == 1 {
            Ok(())
        } else {
            Err(range_out_of_bounds(context_id, &range, len))
        }
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(self.backend.keys().messages(context_id))
            .arg(self.backend.keys().messages_epoch(context_id));
        let _: i64 = self.backend.query(&cmd, Retry::Safe).await?;
        Ok(())
    }
}
