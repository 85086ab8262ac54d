//! [`TurnLock`] rules.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::TurnLock;
use tokio::sync::Barrier;

use super::{UniqueIds, join, ok};

const LONG: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_millis(300);
/// Comfortably longer than [`SHORT`].
const PAST_SHORT: Duration = Duration::from_millis(900);
const CONTENDERS: usize = 16;
const ROUNDS: usize = 4;

/// Checks a [`TurnLock`]: exclusivity, re-acquiring by the owner, renew and
/// release by the owner only, expiry (a lease can be taken once expired and
/// its former owner can no longer renew or release it), renew pushing the
/// expiry back, independence of contexts, one winner among concurrent
/// acquirers. Sleeps about two seconds in all.
pub async fn turn_lock(lock: Arc<dyn TurnLock>, ids: &UniqueIds) {
    exclusivity(&*lock, ids).await;
    expiry(&*lock, ids).await;
    renew_extends(&*lock, ids).await;
    contention(lock, ids).await;
}

async fn exclusivity(lock: &dyn TurnLock, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let other_ctx = ids.next("ctx");
    let (a, b) = (ids.next("owner"), ids.next("owner"));

    assert!(
        !ok(lock.renew(&ctx, &a, LONG).await, "renew"),
        "renew of a free lease must say false"
    );
    assert!(
        !ok(lock.release(&ctx, &a).await, "release"),
        "release of a free lease must say false"
    );

    assert!(
        ok(lock.try_acquire(&ctx, &a, LONG).await, "try_acquire"),
        "a free lease must be taken"
    );
    assert!(
        !ok(lock.try_acquire(&ctx, &b, LONG).await, "try_acquire"),
        "a held lease must not be taken by another owner"
    );
    assert!(
        ok(lock.try_acquire(&ctx, &a, LONG).await, "try_acquire"),
        "the owner may acquire its own lease again"
    );
    assert!(
        ok(lock.try_acquire(&other_ctx, &b, LONG).await, "try_acquire"),
        "leases of different contexts are independent"
    );

    assert!(
        !ok(lock.renew(&ctx, &b, LONG).await, "renew"),
        "only the owner may renew"
    );
    assert!(
        !ok(lock.release(&ctx, &b).await, "release"),
        "only the owner may release"
    );
    assert!(
        !ok(lock.try_acquire(&ctx, &b, LONG).await, "try_acquire"),
        "a failed release by another owner must leave the lease held"
    );
    assert!(
        ok(lock.renew(&ctx, &a, LONG).await, "renew"),
        "the owner may renew"
    );

    assert!(
        ok(lock.release(&ctx, &a).await, "release"),
        "the owner may release"
    );
    assert!(
        !ok(lock.release(&ctx, &a).await, "release"),
        "a released lease is not held"
    );
    assert!(
        !ok(lock.renew(&ctx, &a, LONG).await, "renew"),
        "a released lease cannot be renewed"
    );
    assert!(
        ok(lock.try_acquire(&ctx, &b, LONG).await, "try_acquire"),
        "a released lease can be taken by another owner"
    );
    assert!(ok(lock.release(&ctx, &b).await, "cleanup release"));
    assert!(ok(lock.release(&other_ctx, &b).await, "cleanup release"));
}

async fn expiry(lock: &dyn TurnLock, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let (a, b) = (ids.next("owner"), ids.next("owner"));
    assert!(ok(lock.try_acquire(&ctx, &a, SHORT).await, "try_acquire"));
    tokio::time::sleep(PAST_SHORT).await;
    assert!(
        !ok(lock.renew(&ctx, &a, LONG).await, "renew"),
        "an expired lease cannot be renewed"
    );
    assert!(
        !ok(lock.release(&ctx, &a).await, "release"),
        "an expired lease cannot be released"
    );
    assert!(
        ok(lock.try_acquire(&ctx, &b, LONG).await, "try_acquire"),
        "an expired lease can be taken by another owner"
    );
    assert!(
        !ok(lock.release(&ctx, &a).await, "release"),
        "the former owner cannot release the new owner's lease"
    );
    assert!(
        !ok(lock.try_acquire(&ctx, &a, LONG).await, "try_acquire"),
        "the new owner holds the lease"
    );
    assert!(ok(lock.release(&ctx, &b).await, "cleanup release"));
}

async fn renew_extends(lock: &dyn TurnLock, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let (a, b) = (ids.next("owner"), ids.next("owner"));
    assert!(ok(lock.try_acquire(&ctx, &a, SHORT).await, "try_acquire"));
    assert!(
        ok(lock.renew(&ctx, &a, LONG).await, "renew"),
        "the owner may renew"
    );
    tokio::time::sleep(PAST_SHORT).await;
    assert!(
        !ok(lock.try_acquire(&ctx, &b, LONG).await, "try_acquire"),
        "renew must push the expiry back"
    );

    // Re-acquiring by the owner extends too.
    assert!(ok(lock.release(&ctx, &a).await, "release"));
    assert!(ok(lock.try_acquire(&ctx, &a, SHORT).await, "try_acquire"));
    assert!(ok(
        lock.try_acquire(&ctx, &a, LONG).await,
        "try_acquire again"
    ));
    tokio::time::sleep(PAST_SHORT).await;
    assert!(
        !ok(lock.try_acquire(&ctx, &b, LONG).await, "try_acquire"),
        "the owner acquiring again must push the expiry back"
    );
    assert!(ok(lock.release(&ctx, &a).await, "cleanup release"));
}

async fn contention(lock: Arc<dyn TurnLock>, ids: &UniqueIds) {
    for _round in 0..ROUNDS {
        let ctx = ids.next("ctx");
        let owners: Vec<String> = (0..CONTENDERS).map(|_| ids.next("owner")).collect();
        let start = Arc::new(Barrier::new(CONTENDERS));
        let tries: Vec<_> = owners
            .iter()
            .map(|owner| {
                let (lock, ctx, owner) = (Arc::clone(&lock), ctx.clone(), owner.clone());
                let start = Arc::clone(&start);
                tokio::spawn(async move {
                    start.wait().await;
                    ok(lock.try_acquire(&ctx, &owner, LONG).await, "try_acquire")
                })
            })
            .collect();
        let mut winners = Vec::new();
        for (owner, attempt) in owners.iter().zip(tries) {
            if join(attempt).await {
                winners.push(owner);
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "of {CONTENDERS} concurrent try_acquire calls exactly one must win"
        );
        for owner in &owners {
            let released = ok(lock.release(&ctx, owner).await, "release");
            assert_eq!(
                released,
                owner == winners[0],
                "only the winner of a contended lease holds it"
            );
        }
    }
}
