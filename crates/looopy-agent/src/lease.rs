//! The cross-process turn lease: taken before a turn (or taken over to
//! recover one), renewed in the background while it runs, released at its
//! end.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::{Acquire, TurnLock};
use looopy_core::{CancellationToken, StoreError};
use tokio::task::JoinHandle;

/// A held lease. Dropping it stops the renewals (the lease then runs out on
/// its own); [`Lease::release`] gives it back at once.
pub(crate) struct Lease {
    lock: Arc<dyn TurnLock>,
    context_id: Arc<str>,
    owner: String,
    /// Fires when a renewal finds the lease taken over by another owner.
    lost: CancellationToken,
    renewer: JoinHandle<()>,
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

    /// A lease `owner` already holds (taken by a turn start), renewed from
    /// now on.
    pub(crate) fn held(
        lock: Arc<dyn TurnLock>,
        context_id: Arc<str>,
        owner: String,
        ttl: Duration,
    ) -> Lease {
        let lost = CancellationToken::new();
        let renewer = tokio::spawn(renew(
            lock.clone(),
            context_id.clone(),
            owner.clone(),
            ttl,
            lost.clone(),
        ));
        Lease {
            lock,
            context_id,
            owner,
            lost,
            renewer,
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

    /// Stops renewing (before a turn's commit releases the lease: a renewal
    /// after it would find the lease gone and report it lost).
    pub(crate) fn stop_renewing(&self) {
        self.renewer.abort();
    }

    /// Stops renewing and gives the lease back.
    pub(crate) async fn release(self) {
        self.renewer.abort();
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

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

async fn renew(
    lock: Arc<dyn TurnLock>,
    context_id: Arc<str>,
    owner: String,
    ttl: Duration,
    lost: CancellationToken,
) {
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
