//! [`MemoryTurnLock`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::TurnLock;
use tokio::time::Instant;

use crate::lock;

#[derive(Debug)]
struct Lease {
    owner: String,
    expires: Instant,
}

/// Turn leases in memory (for one process).
///
/// Leases expire on [`tokio::time::Instant`], so tests with a paused clock
/// can expire them by advancing time. An expired lease counts as free: anyone
/// can take it, and its former owner can no longer renew or release it.
#[derive(Debug, Default)]
pub struct MemoryTurnLock {
    leases: Mutex<HashMap<String, Lease>>,
}

impl MemoryTurnLock {
    /// No lease held.
    pub fn new() -> Self {
        Self::default()
    }

    /// The owner of a context's lease, when held and not expired.
    pub fn holder(&self, context_id: &str) -> Option<String> {
        let now = Instant::now();
        lock(&self.leases)
            .get(context_id)
            .filter(|lease| lease.expires > now)
            .map(|lease| lease.owner.clone())
    }
}

fn deadline(ttl: Duration) -> Instant {
    let now = Instant::now();
    // A TTL too large to represent never expires in practice.
    now.checked_add(ttl)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

#[async_trait]
impl TurnLock for MemoryTurnLock {
    async fn try_acquire(
        &self,
        context_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        match leases.get_mut(context_id) {
            Some(lease) if lease.expires > now && lease.owner != owner => Ok(false),
            Some(lease) => {
                lease.owner = owner.to_owned();
                lease.expires = deadline(ttl);
                Ok(true)
            }
            None => {
                leases.insert(
                    context_id.to_owned(),
                    Lease {
                        owner: owner.to_owned(),
                        expires: deadline(ttl),
                    },
                );
                Ok(true)
            }
        }
    }

    async fn renew(
        &self,
        context_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        match leases.get_mut(context_id) {
            Some(lease) if lease.owner == owner && lease.expires > now => {
                lease.expires = deadline(ttl);
                Ok(true)
            }
            Some(lease) if lease.expires <= now => {
                leases.remove(context_id);
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    async fn release(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        match leases.get(context_id) {
            Some(lease) if lease.owner == owner => {
                let held = lease.expires > now;
                leases.remove(context_id);
                Ok(held)
            }
            Some(lease) if lease.expires <= now => {
                leases.remove(context_id);
                Ok(false)
            }
            _ => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn leases_expire_on_the_tokio_clock() {
        let lock = MemoryTurnLock::new();
        let ttl = Duration::from_secs(60);
        assert!(lock.try_acquire("c", "a", ttl).await.unwrap());
        assert_eq!(lock.holder("c").as_deref(), Some("a"));
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(!lock.try_acquire("c", "b", ttl).await.unwrap());
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(lock.holder("c"), None);
        assert!(lock.try_acquire("c", "b", ttl).await.unwrap());
        assert!(!lock.renew("c", "a", ttl).await.unwrap());
        assert_eq!(lock.holder("c").as_deref(), Some("b"));
    }

    #[tokio::test]
    async fn a_huge_ttl_does_not_overflow() {
        let lock = MemoryTurnLock::new();
        assert!(lock.try_acquire("c", "a", Duration::MAX).await.unwrap());
        assert!(lock.renew("c", "a", Duration::MAX).await.unwrap());
        assert!(!lock.try_acquire("c", "b", Duration::MAX).await.unwrap());
    }
}
