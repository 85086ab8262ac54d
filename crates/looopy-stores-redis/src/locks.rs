//! [`RedisTurnLock`]: a lease per context, and the registry of turns.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::store::{Acquire, TurnLease, TurnLock};
use redis::Value;

use crate::backend::{RedisBackend, Retry};
use crate::keys::TURN_SHARDS;
use crate::scripts::{LOCK_ACQUIRE, LOCK_RELEASE, LOCK_RENEW, LOCK_STRANDED, LOCK_TAKE_OVER};

/// Turn leases in Redis.
///
/// `P:{turns:K}:lease:C` is a hash (`owner`, `task`, `exp`) and
/// `P:{turns:K}:expiry` the registry of shard K: the contexts whose lease
/// belongs to a turn, scored by expiry. Both share a hash tag, so each
/// operation is one Lua script that checks and changes lease and registry
/// together. Expiry is read on the Redis server's clock (`TIME`), so
/// processes on different machines agree on who holds a lease.
///
/// A lease without a task also carries a key expiry: it disappears once it
/// runs out. A turn's lease stays until released or taken over, which is
/// what lets a replica find the turn of a process that died.
#[derive(Debug, Clone)]
pub struct RedisTurnLock {
    backend: RedisBackend,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisTurnLock {
    /// Leases on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisTurnLock { backend }
    }

    /// The lease and registry keys of a context.
    fn keys(&self, context_id: &str) -> (String, String) {
        let keys = self.backend.keys();
        (keys.lock(context_id), keys.turn_registry_of(context_id))
    }

    /// A lease hash as read by `HMGET owner task exp`.
    fn lease_of(
        context_id: String,
        (owner, task, exp): (Option<String>, Option<String>, Option<i64>),
    ) -> Option<TurnLease> {
        Some(TurnLease {
            context_id,
            task_id: task.filter(|t| !t.is_empty()),
            owner: owner?,
            expires_at: DateTime::<Utc>::from_timestamp_millis(exp?).unwrap_or_default(),
        })
    }

    /// The stranded leases of one registry shard.
    async fn stranded_in(&self, shard: u32, limit: usize) -> Result<Vec<TurnLease>, StoreError> {
        let keys = self.backend.keys();
        let mut call = LOCK_STRANDED.prepare_invoke();
        call.key(keys.turn_registry(shard)).arg(limit);
        let found: Vec<(String, f64)> = self.backend.script(&call, Retry::Safe).await?;
        if found.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for (context_id, _) in &found {
            pipe.cmd("HMGET")
                .arg(keys.lock(context_id))
                .arg(&["owner", "task", "exp"]);
        }
        let leases: Vec<(Option<String>, Option<String>, Option<i64>)> =
            self.backend.pipe(&pipe, Retry::Safe).await?;
        Ok(found
            .into_iter()
            .zip(leases)
            .filter_map(|((context_id, _), lease)| Self::lease_of(context_id, lease))
            // Released or renewed between the two reads.
            .filter(|l| l.task_id.is_some())
            .collect())
    }
}

#[async_trait]
impl TurnLock for RedisTurnLock {
    async fn try_acquire(
        &self,
        context_id: &str,
        owner: &str,
        task_id: Option<&str>,
        ttl: Duration,
    ) -> Result<Acquire, StoreError> {
        let (lease, registry) = self.keys(context_id);
        let mut call = LOCK_ACQUIRE.prepare_invoke();
        call.key(lease)
            .key(registry)
            .arg(owner)
            .arg(task_id.unwrap_or(""))
            .arg(millis(ttl))
            .arg(context_id);
        // Safe to repeat: a second call by the owner extends its own lease.
        let reply: Vec<Value> = self.backend.script(&call, Retry::Safe).await?;
        match reply.as_slice() {
            [Value::Int(1)] => Ok(Acquire::Acquired),
            [Value::Int(0)] => Ok(Acquire::Held),
            [Value::Int(2), task] => Ok(Acquire::Stranded {
                task_id: redis::from_redis_value_ref(task).map_err(|e| {
                    StoreError::Serialization {
                        message: format!("turn lease task: {e}"),
                    }
                })?,
            }),
            other => Err(StoreError::Backend {
                message: format!("unexpected reply from the lease script: {other:?}"),
            }),
        }
    }

    async fn renew(
        &self,
        context_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let (lease, registry) = self.keys(context_id);
        let mut call = LOCK_RENEW.prepare_invoke();
        call.key(lease)
            .key(registry)
            .arg(owner)
            .arg(millis(ttl))
            .arg(context_id);
        let held: i64 = self.backend.script(&call, Retry::Safe).await?;
        Ok(held == 1)
    }

    async fn release(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        let (lease, registry) = self.keys(context_id);
        let mut call = LOCK_RELEASE.prepare_invoke();
        call.key(lease).key(registry).arg(owner).arg(context_id);
        // Not repeated: a lost reply followed by a retry would say "not held".
        let released: i64 = self.backend.script(&call, Retry::Never).await?;
        Ok(released == 1)
    }

    async fn take_over(
        &self,
        context_id: &str,
        task_id: &str,
        new_owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let (lease, registry) = self.keys(context_id);
        let mut call = LOCK_TAKE_OVER.prepare_invoke();
        call.key(lease)
            .key(registry)
            .arg(task_id)
            .arg(new_owner)
            .arg(millis(ttl))
            .arg(context_id);
        // Not repeated: a lost reply followed by a retry would say "lost".
        let taken: i64 = self.backend.script(&call, Retry::Never).await?;
        Ok(taken == 1)
    }

    async fn stranded(&self, limit: usize) -> Result<Vec<TurnLease>, StoreError> {
        // The shards are read at once: a scan costs about one round trip,
        // not sixteen (on a cluster each goes to the master of its slot).
        let shards =
            futures::future::try_join_all((0..TURN_SHARDS).map(|s| self.stranded_in(s, limit)))
                .await?;
        let mut out: Vec<TurnLease> = shards.into_iter().flatten().collect();
        out.sort_by_key(|l| l.expires_at);
        out.truncate(limit);
        Ok(out)
    }

    async fn lease(&self, context_id: &str) -> Result<Option<TurnLease>, StoreError> {
        let mut get = redis::cmd("HMGET");
        get.arg(self.backend.keys().lock(context_id))
            .arg(&["owner", "task", "exp"]);
        let fields = self.backend.query(&get, Retry::Safe).await?;
        Ok(Self::lease_of(context_id.to_owned(), fields))
    }
}
