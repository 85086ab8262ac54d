//! [`MemoryTurnLock`].

use hashbrown::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::StoreError;
use looopy_core::store::{Acquire, TurnLease, TurnLock};
use tokio::time::Instant;

use crate::lock;

#[derive(Debug)]
struct Lease {
    owner: String,
    task_id: Option<String>,
    expires: Instant,
}

impl Lease {
    fn expired(&self, now: Instant) -> bool {
        self.expires <= now
    }
}

/// Turn leases in memory (for one process), and their registry.
///
/// Leases expire on [`tokio::time::Instant`], so tests with a paused clock
/// can expire them by advancing time. An expired lease without a task is
/// free: anyone can take it, and its former owner can no longer renew or
/// release it. An expired lease of a turn is stranded until taken over or
/// released (see [`TurnLock`]).
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
            .filter(|lease| !lease.expired(now))
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
        task_id: Option<&str>,
        ttl: Duration,
    ) -> Result<Acquire, StoreError> {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        if let Some(lease) = leases.get(context_id)
            && lease.owner != owner
        {
            if !lease.expired(now) {
                return Ok(Acquire::Held);
            }
            if let Some(task_id) = &lease.task_id {
                return Ok(Acquire::Stranded {
                    task_id: task_id.clone(),
                });
            }
        }
        leases.insert(
            context_id.to_owned(),
            Lease {
                owner: owner.to_owned(),
                task_id: task_id.map(str::to_owned),
                expires: deadline(ttl),
            },
        );
        Ok(Acquire::Acquired)
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
            Some(lease) if lease.task_id.is_none() && lease.expired(now) => {
                leases.remove(context_id);
                Ok(false)
            }
            Some(lease) if lease.owner == owner => {
                lease.expires = deadline(ttl);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        match leases.get(context_id) {
            Some(lease) if lease.task_id.is_none() && lease.expired(now) => {
                leases.remove(context_id);
                Ok(false)
            }
            Some(lease) if lease.owner == owner => {
                leases.remove(context_id);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn take_over(
        &self,
        context_id: &str,
        task_id: &str,
        new_owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        match leases.get_mut(context_id) {
            Some(lease) if lease.expired(now) && lease.task_id.as_deref() == Some(task_id) => {
                lease.owner = new_owner.to_owned();
                lease.expires = deadline(ttl);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn stranded(&self, limit: usize) -> Result<Vec<TurnLease>, StoreError> {
        let now = Instant::now();
        let leases = lock(&self.leases);
        let mut out: Vec<(Instant, TurnLease)> = leases
            .iter()
            .filter(|(_, lease)| lease.expired(now))
            .filter_map(|(context_id, lease)| {
                let task_id = lease.task_id.clone()?;
                Some((
                    lease.expires,
                    TurnLease {
                        context_id: context_id.clone(),
                        task_id: Some(task_id),
                        owner: lease.owner.clone(),
                        expires_at: wall_clock(lease.expires, now),
                    },
                ))
            })
            .collect();
        out.sort_by_key(|(expires, _)| *expires);
        Ok(out.into_iter().take(limit).map(|(_, l)| l).collect())
    }

    async fn lease(&self, context_id: &str) -> Result<Option<TurnLease>, StoreError> {
        let now = Instant::now();
        let leases = lock(&self.leases);
        Ok(leases
            .get(context_id)
            .filter(|lease| lease.task_id.is_some() || !lease.expired(now))
            .map(|lease| TurnLease {
                context_id: context_id.to_owned(),
                task_id: lease.task_id.clone(),
                owner: lease.owner.clone(),
                expires_at: wall_clock(lease.expires, now),
            }))
    }
}

/// The wall-clock time of a tokio instant.
fn wall_clock(at: Instant, now: Instant) -> chrono::DateTime<Utc> {
    let wall = Utc::now();
    if at >= now {
        wall + chrono::Duration::from_std(at - now).unwrap_or(chrono::Duration::MAX)
    } else {
        wall - chrono::Duration::from_std(now - at).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn leases_expire_on_the_tokio_clock() {
        let lock = MemoryTurnLock::new();
        let ttl = Duration::from_secs(60);
        let acquired = |a: Acquire| a == Acquire::Acquired;
        assert!(acquired(
            lock.try_acquire("c", "a", None, ttl).await.unwrap()
        ));
        assert_eq!(lock.holder("c").as_deref(), Some("a"));
        tokio::time::advance(Duration::from_secs(59)).await;
        assert_eq!(
            lock.try_acquire("c", "b", None, ttl).await.unwrap(),
            Acquire::Held
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(lock.holder("c"), None);
        assert!(acquired(
            lock.try_acquire("c", "b", None, ttl).await.unwrap()
        ));
        assert!(!lock.renew("c", "a", ttl).await.unwrap());
        assert_eq!(lock.holder("c").as_deref(), Some("b"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_lease_strands_and_is_taken_over_once() {
        let lock = MemoryTurnLock::new();
        let ttl = Duration::from_secs(30);
        lock.try_acquire("c", "dead", Some("t1"), ttl)
            .await
            .unwrap();
        assert!(lock.stranded(10).await.unwrap().is_empty());
        tokio::time::advance(Duration::from_secs(31)).await;
        let stranded = lock.stranded(10).await.unwrap();
        assert_eq!(stranded.len(), 1);
        assert_eq!(stranded[0].task_id.as_deref(), Some("t1"));
        assert_eq!(
            lock.try_acquire("c", "new", Some("t2"), ttl).await.unwrap(),
            Acquire::Stranded {
                task_id: "t1".into()
            }
        );
        assert!(!lock.take_over("c", "t2", "x", ttl).await.unwrap());
        assert!(lock.take_over("c", "t1", "x", ttl).await.unwrap());
        assert!(!lock.take_over("c", "t1", "y", ttl).await.unwrap());
        assert!(lock.stranded(10).await.unwrap().is_empty());
        assert!(!lock.renew("c", "dead", ttl).await.unwrap());
        assert!(lock.release("c", "x").await.unwrap());
    }

    #[tokio::test]
    async fn a_huge_ttl_does_not_overflow() {
        let lock = MemoryTurnLock::new();
        let max = Duration::MAX;
        assert_eq!(
            lock.try_acquire("c", "a", None, max).await.unwrap(),
            Acquire::Acquired
        );
        assert!(lock.renew("c", "a", max).await.unwrap());
        assert_eq!(
            lock.try_acquire("c", "b", None, max).await.unwrap(),
            Acquire::Held
        );
    }
}
