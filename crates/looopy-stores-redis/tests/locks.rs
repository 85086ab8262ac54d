//! Turn leases across processes: two backends with pools of their own stand
//! for two server processes.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use looopy_core::store::Acquire;

const ROUNDS: usize = 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_never_hold_one_context_at_once() {
    let redis = support::redis();
    let config = support::config(redis.url());
    let first = support::stores(config.clone()).await;
    let second = looopy_stores_redis::connect(config).await.unwrap();
    let inside = Arc::new(AtomicUsize::new(0));
    let turns = Arc::new(AtomicUsize::new(0));

    // Each "process" runs workers that loop: take the lease, run a "turn"
    // (checking nobody else is inside), give it back.
    let mut workers = Vec::new();
    for (p, stores) in [first, second].into_iter().enumerate() {
        for w in 0..4 {
            let (locks, inside, turns) = (stores.locks.clone(), inside.clone(), turns.clone());
            workers.push(tokio::spawn(async move {
                let owner = format!("process-{p}-worker-{w}");
                let mut mine = 0;
                while mine < ROUNDS / 4 {
                    if locks
                        .try_acquire("shared-ctx", &owner, None, Duration::from_secs(10))
                        .await
                        .unwrap()
                        == Acquire::Acquired
                    {
                        assert_eq!(
                            inside.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two turns at once"
                        );
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                        turns.fetch_add(1, Ordering::SeqCst);
                        assert!(locks.release("shared-ctx", &owner).await.unwrap());
                        mine += 1;
                    } else {
                        tokio::task::yield_now().await;
                    }
                }
            }));
        }
    }
    for worker in workers {
        worker.await.unwrap();
    }
    assert_eq!(turns.load(Ordering::SeqCst), 8 * (ROUNDS / 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_processs_lease_expires_and_it_cannot_touch_the_next_one() {
    let redis = support::redis();
    let config = support::config(redis.url());
    let dead = support::stores(config.clone()).await;
    let alive = looopy_stores_redis::connect(config).await.unwrap();
    assert!(
        dead.locks
            .try_acquire("ctx", "dead", None, Duration::from_millis(300))
            .await
            .unwrap()
            == Acquire::Acquired
    );
    assert!(
        alive
            .locks
            .try_acquire("ctx", "alive", None, Duration::from_secs(10))
            .await
            .unwrap()
            != Acquire::Acquired
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        alive
            .locks
            .try_acquire("ctx", "alive", None, Duration::from_secs(10))
            .await
            .unwrap()
            == Acquire::Acquired,
        "an expired lease is free"
    );
    assert!(
        !dead
            .locks
            .renew("ctx", "dead", Duration::from_secs(10))
            .await
            .unwrap()
    );
    assert!(!dead.locks.release("ctx", "dead").await.unwrap());
    assert!(alive.locks.release("ctx", "alive").await.unwrap());
}
