//! The cross-process turn lease: taken before a turn (or taken over to
//! recover one), renewed while the work that holds it runs, released at its
//! end.
//!
//! Renewals run inside the future of the work they cover
//! ([`renewing`]): a turn's driver polls them with the turn, so
//! a lease costs no task of its own (a task per turn, started and aborted,
//! cost a spawn, a timer and two cross-thread wake-ups on every turn). A
//! turn's driver is polled while the turn runs (on the task that reads the
//! turn, which must keep reading: one that stops stops the renewals too,
//! and after the TTL another process may take the stalled turn over; on a
//! task of its own once its reader dropped it).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::{Acquire, TurnLock};
use looopy_core::{Alongside, CancellationToken, StoreError, alongside};

/// A held lease. Dropped without [`Lease::release`], it runs out on its own.
pub(crate) struct Lease {
    lock: Arc<dyn TurnLock>,
    context_id: Arc<str>,
    owner: String,
    ttl: Duration,
    /// Fires when a renewal finds the lease taken over by another owner.
    lost: CancellationToken,
}

impl Lease {
    /// Takes the lease of `context_id` for a new owner token, for the turn
    /// of `task_id` when given. `Err(found)` when not acquired.
    pub(crate) async fn acquire(
        lock: Arc<dyn TurnLock>,
        context_id: Arc<str>,
        task_id: Option<&str>,
        ttl: Duration,
    ) -> Result<Result<Lease, Acquire>, StoreError> {
        let owner = uuid::Uuid::new_v4().to_string();
        match lock.try_acquire(&context_id, &owner, task_id, ttl).await? {
            Acquire::Acquired => Ok(Ok(Self::held(lock, context_id, owner, ttl))),
            other => Ok(Err(other)),
        }
    }

    /// Takes over the stranded lease of `task_id`'s turn. `Ok(None)` when
    /// the lease is not stranded (its owner is alive, another process took
    /// it over first, or the turn ended).
    pub(crate) async fn take_over(
        lock: Arc<dyn TurnLock>,
        context_id: Arc<str>,
        task_id: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, StoreError> {
        let owner = uuid::Uuid::new_v4().to_string();
        if !lock.take_over(&context_id, task_id, &owner, ttl).await? {
            return Ok(None);
        }
        Ok(Some(Self::held(lock, context_id, owner, ttl)))
    }

    /// A lease `owner` already holds (taken by a turn start).
    pub(crate) fn held(
        lock: Arc<dyn TurnLock>,
        context_id: Arc<str>,
        owner: String,
        ttl: Duration,
    ) -> Lease {
        Lease {
            lock,
            context_id,
            owner,
            ttl,
            lost: CancellationToken::new(),
        }
    }

    /// What renews this lease, owned (so that the work it covers may move
    /// the lease).
    pub(crate) fn renewal(&self) -> Renewal {
        Renewal {
            lock: self.lock.clone(),
            context_id: self.context_id.clone(),
            owner: self.owner.clone(),
            ttl: self.ttl,
            lost: self.lost.clone(),
        }
    }

    /// Fires when the lease was lost to another owner: the turn must stop
    /// without writing anything more (the new owner carries it on).
    pub(crate) fn lost(&self) -> CancellationToken {
        self.lost.clone()
    }

    /// The owner token.
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// Gives the lease back.
    pub(crate) async fn release(self) {
        match self.lock.release(&self.context_id, &self.owner).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(context_id = %self.context_id, "turn lease was no longer held at release")
            }
            Err(error) => {
                tracing::warn!(context_id = %self.context_id, %error, "could not release the turn lease; it runs out on its own")
            }
        }
    }
}

/// Renews one lease every third of its TTL (see [`Lease::renewal`]).
pub(crate) struct Renewal {
    lock: Arc<dyn TurnLock>,
    context_id: Arc<str>,
    owner: String,
    ttl: Duration,
    lost: CancellationToken,
}

impl Renewal {
    /// Renews the lease every third of its TTL; returns only when a renewal
    /// found it taken over (and fired [`Lease::lost`]).
    async fn renew(self) {
        let Renewal {
            lock,
            context_id,
            owner,
            ttl,
            lost,
        } = self;
        let every = (ttl / 3).max(Duration::from_millis(10));
        loop {
            tokio::time::sleep(every).await;
            match lock.renew(&context_id, &owner, ttl).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::error!(%context_id, "turn lease taken over by another process; abandoning the turn here");
                    lost.cancel();
                    return;
                }
                // A transient failure: try again at the next tick (the lease
                // stays ours until another process takes it over).
                Err(error) => tracing::warn!(%context_id, %error, "could not renew the turn lease"),
            }
        }
    }
}

/// Runs `work`, renewing `lease` (when there is one) while it runs.
pub(crate) fn renewed<F: Future>(
    lease: Option<&Lease>,
    work: F,
) -> Alongside<F, impl Future<Output = ()>> {
    renewing(lease.map(Lease::renewal), work)
}

/// Runs `work`, renewing the lease (when there is one) every third of its
/// TTL while it runs. A renewal that finds the lease taken over fires
/// [`Lease::lost`] and stops; `work` goes on (it watches `lost` itself).
/// The renewal is taken out of the lease beforehand, so that `work` may
/// move the lease. The work is held once ([`Alongside`]): it is the whole
/// turn, which every running turn holds. The renewal is boxed: only a turn
/// with a lease has one, and in place it would take room in
/// every turn's future.
pub(crate) fn renewing<F: Future>(
    renewal: Option<Renewal>,
    work: F,
) -> Alongside<F, impl Future<Output = ()>> {
    alongside(work, renewal.map(|r| Box::pin(r.renew())))
}
