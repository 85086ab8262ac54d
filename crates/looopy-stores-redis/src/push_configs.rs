//! [`RedisPushConfigStore`]: a hash per task.

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{PushConfig, PushConfigStore};

use crate::backend::{RedisBackend, Retry};

/// Push notification configs in Redis: `P:{task:T}:push` is a hash of
/// config id → config JSON, on the task's cluster slot. A `put` is `HSET`
/// and, with a TTL, `PEXPIRE` in one `MULTI`: a task's configs expire
/// together, a TTL after the last one was written.
#[derive(Debug, Clone)]
pub struct RedisPushConfigStore {
    backend: RedisBackend,
}

impl RedisPushConfigStore {
    /// Push configs on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisPushConfigStore { backend }
    }

    fn key(&self, task_id: &str) -> String {
        self.backend.keys().push_configs(task_id)
    }
}

fn decode(json: &str) -> Result<PushConfig, StoreError> {
    Ok(serde_json::from_str(json)?)
}

#[async_trait]
impl PushConfigStore for RedisPushConfigStore {
    async fn put(&self, config: &PushConfig) -> Result<(), StoreError> {
        let key = self.key(&config.task_id);
        let json = serde_json::to_string(config)?;
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HSET")
            .arg(&key)
            .arg(&config.id)
            .arg(json)
            .ignore();
        let ttl = self.backend.ttl_ms();
        if ttl > 0 {
            pipe.cmd("PEXPIRE").arg(&key).arg(ttl).ignore();
        }
        let () = self.backend.pipe(&pipe, Retry::Safe).await?;
        Ok(())
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<PushConfig>, StoreError> {
        let mut hget = redis::cmd("HGET");
        hget.arg(self.key(task_id)).arg(id);
        let json: Option<String> = self.backend.query(&hget, Retry::Safe).await?;
        json.as_deref().map(decode).transpose()
    }

    async fn list(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        let mut hgetall = redis::cmd("HGETALL");
        hgetall.arg(self.key(task_id));
        let mut entries: Vec<(String, String)> = self.backend.query(&hgetall, Retry::Safe).await?;
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        entries.iter().map(|(_, json)| decode(json)).collect()
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut hdel = redis::cmd("HDEL");
        hdel.arg(self.key(task_id)).arg(id);
        let removed: i64 = self.backend.query(&hdel, Retry::Safe).await?;
        Ok(removed > 0)
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), StoreError> {
        let mut del = redis::cmd("DEL");
        del.arg(self.key(task_id));
        let _: i64 = self.backend.query(&del, Retry::Safe).await?;
        Ok(())
    }
}
