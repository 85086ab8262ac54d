//! The cross-process turn lease: taken before a turn, renewed in the
//! background while it runs, released at its end.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::TurnLock;
use looopy_core::{CancellationToken, StoreError};
use tokio::task::JoinHandle;

/// A held lease. Dropping it stops the renewals (the lease then expires on
/// its own); [`Lease::release`] gives it back at once.
pub(crate) struct Lease {
    lock: Arc<dyn TurnLock>,
    context_id: Arc<str>,
    owner: String,
    renewer: JoinHandle<()>,
}

impl Lease {
    /// Takes the lease of `context_id` for a new owner token. `Ok(None)`
    /// when another owner holds it. While held it is renewed every third of
    /// `ttl`; if a renewal finds it lost, `on_lost` is cancelled (the turn
    /// must stop: another owner may start one).
    pub(crate) async fn acquire(
        lock: Arc<dyn TurnLock>,
        context_id: Arc<str>,
        ttl: Duration,
        on_lost: CancellationToken,
    ) -> Result<Option<Lease>, StoreError> {
        let owner = uuid::Uuid::new_v4().to_string();
        if !lock.try_acquire(&context_id, &owner, ttl).await? {
            return Ok(None);
        }
        let renewer = tokio::spawn(renew(
            lock.clone(),
            context_id.clone(),
            owner.clone(),
            ttl,
            on_lost,
        ));
        Ok(Some(Lease {
            lock,
            context_id,
            owner,
            renewer,
        }))
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
                tracing::warn!(context_id = %self.context_id, %error, "could not release the turn lease; it expires on its own")
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
    on_lost: CancellationToken,
) {
    let every = (ttl / 3).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(every).await;
        match lock.renew(&context_id, &owner, ttl).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::error!(%context_id, "turn lease lost; cancelling the turn");
                on_lost.cancel();
                return;
            }
            // A transient failure: try again at the next tick (the lease
            // survives until its TTL runs out).
            Err(error) => tracing::warn!(%context_id, %error, "could not renew the turn lease"),
        }
    }
}
