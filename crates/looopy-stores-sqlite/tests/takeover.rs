//! The store calls of a turn taken over from a process that died, in the
//! order a restarted server makes them: the scan finds the stranded lease,
//! the take-over wins it, and then the turn's lease renewal and the
//! reader's check of the cancel flag meet. The renewal's future is polled
//! by the reader of the turn, and the reader may be waiting for its own
//! write while the renewal holds the process's write turn: the reader's
//! write must come back (with an error saying what happened) instead of
//! waiting for ever, and the renewal then completes.

use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use looopy_core::StoreError;
use looopy_core::store::{Acquire, TaskRecordStore, TurnLock};
use looopy_stores_sqlite::{SqliteBackend, SqliteConfig, SqliteTaskRecordStore, SqliteTurnLock};

/// Longer than any wait the store may make here: a call still running
/// after it hangs.
const HANG: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_queued_behind_an_unpolled_renewal_fails_instead_of_hanging() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = SqliteConfig {
        busy_timeout_ms: 500,
        ..SqliteConfig::new(dir.path().join("looopy.db")).with_prune_interval(None)
    };
    let backend = SqliteBackend::open(config).await.expect("open");
    let lock = SqliteTurnLock::new(backend.clone());
    let records = SqliteTaskRecordStore::new(backend.clone());

    // The dead process's lease: its owner stopped renewing it.
    let (ctx, task) = ("ctx-1", "task-1");
    let ttl = Duration::from_millis(50);
    assert_eq!(
        lock.try_acquire(ctx, "dead", Some(task), ttl)
            .await
            .expect("acquire"),
        Acquire::Acquired
    );
    tokio::time::sleep(ttl * 2).await;
    let stranded = lock.stranded(16).await.expect("stranded");
    assert_eq!(stranded.len(), 1, "{stranded:?}");
    let long = Duration::from_secs(30);
    assert!(
        lock.take_over(ctx, task, "rescuer", long)
            .await
            .expect("take over"),
        "the stranded lease is taken over"
    );

    // The resumed turn's renewal starts its write, then is not polled while
    // the reader checks the cancel flag.
    let mut renewal = pin!(lock.renew(ctx, "rescuer", long));
    assert!(
        matches!(futures::poll!(renewal.as_mut()), Poll::Pending),
        "the renewal's write is under way"
    );
    let checked = tokio::time::timeout(HANG, records.take_cancel(task))
        .await
        .expect("a write queued behind an unpolled one must not hang");
    match checked {
        Err(StoreError::Unavailable { message }) => {
            assert!(message.contains("busy_timeout_ms"), "{message}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }

    // Polled again, the renewal completes, and the writes after it pass.
    let renewed = tokio::time::timeout(HANG, renewal)
        .await
        .expect("the renewal completes once polled")
        .expect("renew");
    assert!(renewed, "the rescuer still holds the lease");
    records.request_cancel(task).await.expect("request cancel");
    assert!(records.take_cancel(task).await.expect("take cancel"));
    let lease = lock.lease(ctx).await.expect("lease").expect("held");
    assert_eq!(lease.owner, "rescuer");
    assert_eq!(lease.task_id.as_deref(), Some(task));
}
