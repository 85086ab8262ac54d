//! [`TurnLock`] rules.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::{Acquire, TurnLock};
use tokio::sync::Barrier;

use super::{UniqueIds, join, ok};

const LONG: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_millis(300);
/// Comfortably longer than [`SHORT`].
const PAST_SHORT: Duration = Duration::from_millis(900);
const CONTENDERS: usize = 16;
const ROUNDS: usize = 4;

/// Checks a [`TurnLock`]: exclusivity, re-acquiring by the owner, renew and
/// release by the owner only, expiry (a lease without a task can be taken
/// once expired and its former owner can no longer renew or release it),
/// renew pushing the expiry back, independence of contexts, one winner among
/// concurrent acquirers; and for turn leases: a lease that ran out is
/// stranded (listed, refused to new turns, still renewable by its owner)
/// until exactly one of many concurrent take-overs wins it. Sleeps about
/// four seconds in all.
pub async fn turn_lock(lock: Arc<dyn TurnLock>, ids: &UniqueIds) {
    exclusivity(&*lock, ids).await;
    expiry(&*lock, ids).await;
    renew_extends(&*lock, ids).await;
    contention(Arc::clone(&lock), ids).await;
    stranding(&*lock, ids).await;
    take_over_race(lock, ids).await;
}

/// `try_acquire` without a task, as a yes/no.
async fn acquire(
    lock: &dyn TurnLock,
    ctx: &str,
    owner: &str,
    ttl: Duration,
) -> Result<bool, looopy_core::StoreError> {
    Ok(lock.try_acquire(ctx, owner, None, ttl).await? == Acquire::Acquired)
}

/// Whether `stranded` lists the lease of `task`.
async fn listed(lock: &dyn TurnLock, task: &str) -> bool {
    ok(lock.stranded(10_000).await, "stranded")
        .iter()
        .any(|l| l.task_id.as_deref() == Some(task))
}

async fn stranding(lock: &dyn TurnLock, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    let (dead, next, rescuer) = (ids.next("owner"), ids.next("owner"), ids.next("owner"));
    assert_eq!(
        ok(
            lock.try_acquire(&ctx, &dead, Some(&task), SHORT).await,
            "try_acquire"
        ),
        Acquire::Acquired
    );
    assert!(
        !listed(lock, &task).await,
        "a live turn lease is not stranded"
    );
    assert!(
        !ok(
            lock.take_over(&ctx, &task, &rescuer, LONG).await,
            "take_over"
        ),
        "a live turn lease cannot be taken over"
    );
    tokio::time::sleep(PAST_SHORT).await;
    assert!(
        ok(lock.lease(&ctx).await, "lease").is_some(),
        "a stranded lease is still readable"
    );
    let stranded = ok(lock.stranded(10_000).await, "stranded");
    let lease = stranded
        .iter()
        .find(|l| l.task_id.as_deref() == Some(task.as_str()))
        .unwrap_or_else(|| {
            panic!("conformance: a turn lease that ran out must be listed as stranded")
        });
    assert_eq!(lease.context_id, ctx);
    assert_eq!(lease.owner, dead);
    assert!(lease.expires_at <= chrono::Utc::now() + chrono::Duration::seconds(1));
    assert_eq!(
        ok(
            lock.try_acquire(&ctx, &next, Some("another-task"), LONG)
                .await,
            "try_acquire"
        ),
        Acquire::Stranded {
            task_id: task.clone()
        },
        "a stranded lease must be refused to a new turn, naming its task"
    );
    assert!(
        ok(lock.renew(&ctx, &dead, SHORT).await, "renew"),
        "the owner of a stranded lease nobody took over may still renew it"
    );
    assert!(
        !listed(lock, &task).await,
        "a renewed lease is no longer stranded"
    );
    tokio::time::sleep(PAST_SHORT).await;
    assert!(
        !ok(
            lock.take_over(&ctx, "another-task", &rescuer, LONG).await,
            "take_over"
        ),
        "a take-over must name the lease's task"
    );
    assert!(ok(
        lock.take_over(&ctx, &task, &rescuer, LONG).await,
        "take_over"
    ));
    assert!(
        !listed(lock, &task).await,
        "a lease taken over is live again"
    );
    assert!(
        !ok(lock.renew(&ctx, &dead, LONG).await, "renew"),
        "the former owner cannot renew a lease taken over"
    );
    assert!(
        !ok(lock.release(&ctx, &dead).await, "release"),
        "the former owner cannot release a lease taken over"
    );
    assert_eq!(
        ok(
            lock.try_acquire(&ctx, &next, None, LONG).await,
            "try_acquire"
        ),
        Acquire::Held
    );
    let taken = ok(lock.lease(&ctx).await, "lease").expect("a lease taken over is readable");
    assert_eq!(
        (taken.owner.as_str(), taken.task_id.as_deref()),
        (rescuer.as_str(), Some(task.as_str()))
    );
    assert!(ok(lock.release(&ctx, &rescuer).await, "release"));
    assert!(!listed(lock, &task).await, "a released lease is not listed");
    assert_eq!(
        ok(lock.lease(&ctx).await, "lease"),
        None,
        "a released lease is gone"
    );
    assert!(ok(acquire(lock, &ctx, &next, LONG).await, "try_acquire"));
    assert!(ok(lock.release(&ctx, &next).await, "cleanup release"));
}

async fn take_over_race(lock: Arc<dyn TurnLock>, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    let dead = ids.next("owner");
    ok(
        lock.try_acquire(&ctx, &dead, Some(&task), SHORT).await,
        "try_acquire",
    );
    tokio::time::sleep(PAST_SHORT).await;
    let rescuers: Vec<String> = (0..CONTENDERS).map(|_| ids.next("owner")).collect();
    let start = Arc::new(Barrier::new(CONTENDERS));
    let tries: Vec<_> = rescuers
        .iter()
        .map(|owner| {
            let (lock, ctx, task, owner) =
                (Arc::clone(&lock), ctx.clone(), task.clone(), owner.clone());
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                ok(lock.take_over(&ctx, &task, &owner, LONG).await, "take_over")
            })
        })
        .collect();
    let mut winners = Vec::new();
    for (owner, attempt) in rescuers.iter().zip(tries) {
        if join(attempt).await {
            winners.push(owner.clone());
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "of {CONTENDERS} concurrent take_over calls exactly one must win"
    );
    assert!(ok(lock.release(&ctx, &winners[0]).await, "cleanup release"));
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
        ok(acquire(lock, &ctx, &a, LONG).await, "try_acquire"),
        "a free lease must be taken"
    );
    assert!(
        !ok(acquire(lock, &ctx, &b, LONG).await, "try_acquire"),
        "a held lease must not be taken by another owner"
    );
    assert!(
        ok(acquire(lock, &ctx, &a, LONG).await, "try_acquire"),
        "the owner may acquire its own lease again"
    );
    assert!(
        ok(acquire(lock, &other_ctx, &b, LONG).await, "try_acquire"),
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
        !ok(acquire(lock, &ctx, &b, LONG).await, "try_acquire"),
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
        ok(acquire(lock, &ctx, &b, LONG).await, "try_acquire"),
        "a released lease can be taken by another owner"
    );
    assert!(ok(lock.release(&ctx, &b).await, "cleanup release"));
    assert!(ok(lock.release(&other_ctx, &b).await, "cleanup release"));
}

async fn expiry(lock: &dyn TurnLock, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let (a, b) = (ids.next("owner"), ids.next("owner"));
    assert!(ok(acquire(lock, &ctx, &a, SHORT).await, "try_acquire"));
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
        ok(acquire(lock, &ctx, &b, LONG).await, "try_acquire"),
        "an expired lease can be taken by another owner"
    );
    assert!(
        !ok(lock.release(&ctx, &a).await, "release"),
        "the former owner cannot release the new owner's lease"
    );
    assert!(
        !ok(acquire(lock, &ctx, &a, LONG).await, "try_acquire"),
        "the new owner holds the lease"
    );
    assert!(ok(lock.release(&ctx, &b).await, "cleanup release"));
}

async fn renew_extends(lock: &dyn TurnLock, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let (a, b) = (ids.next("owner"), ids.next("owner"));
    assert!(ok(acquire(lock, &ctx, &a, SHORT).await, "try_acquire"));
    assert!(
        ok(lock.renew(&ctx, &a, LONG).await, "renew"),
        "the owner may renew"
    );
    tokio::time::sleep(PAST_SHORT).await;
    assert!(
        !ok(acquire(lock, &ctx, &b, LONG).await, "try_acquire"),
        "renew must push the expiry back"
    );

    // Re-acquiring by the owner extends too.
    assert!(ok(lock.release(&ctx, &a).await, "release"));
    assert!(ok(acquire(lock, &ctx, &a, SHORT).await, "try_acquire"));
    assert!(ok(acquire(lock, &ctx, &a, LONG).await, "try_acquire again"));
    tokio::time::sleep(PAST_SHORT).await;
    assert!(
        !ok(acquire(lock, &ctx, &b, LONG).await, "try_acquire"),
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
                    ok(acquire(&*lock, &ctx, &owner, LONG).await, "try_acquire")
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
