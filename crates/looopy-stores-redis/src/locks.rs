//! [`RedisTurnLock`]: a lease per context.

use std::time::Duration;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::TurnLock;
use redis::Script;

use crate::backend::{RedisBackend, Retry};
use crate::scripts::{LOCK_ACQUIRE, LOCK_RELEASE, LOCK_RENEW};

/// Turn leases in Redis: `P:{ctx:C}:lock` holds the owner token with a
/// millisecond expiry (`SET NX PX`). Acquiring again, renewing and releasing
/// are Lua compare-and-set scripts, so only the owner extends or frees a
/// lease, and an expired lease is simply gone: whoever comes next takes it.
/// Leases live on the Redis server's clock, so processes on different
/// machines agree on who holds one.
#[derive(Debug, Clone)]
pub struct RedisTurnLock {
    backend: RedisBackend,
}

impl RedisTurnLock {
    /// Leases on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisTurnLock { backend }
    }

    async fn call(
        &self,
        script: &Script,
        context_id: &str,
        owner: &str,
        ttl: Option<Duration>,
        retry: Retry,
    ) -> Result<bool, StoreError> {
        let mut call = script.prepare_invoke();
        call.key(self.backend.keys().lock(context_id)).arg(owner);
        if let Some(ttl) = ttl {
            call.arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
        }
        let held: i64 = self.backend.script(&call, retry).await?;
        Ok(held == 1)
    }
}

#[async_trait]
impl TurnLock for RedisTurnLock {
    async fn try_acquire(
        &self,
        context_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        // Safe to repeat: a second call by the owner extends its own lease.
        self.call(&LOCK_ACQUIRE, context_id, owner, Some(ttl), Retry::Safe)
            .await
    }

    async fn renew(
        &self,
        context_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.call(&LOCK_RENEW, context_id, owner, Some(ttl), Retry::Safe)
            .await
    }

    async fn release(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        // Not repeated: a lost reply followed by a retry would say "not held".
        self.call(&LOCK_RELEASE, context_id, owner, None, Retry::Never)
            .await
    }
}
