//! Listing task records while other writers add and delete records: a
//! record that nobody touches is always listed.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use looopy_core::store::TaskRecord;
use looopy_core::{TaskState, TaskStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_over_several_pages_keeps_every_record_nobody_touches() {
    let redis = support::redis();
    let config = support::config(redis.url());
    let prefix = config.key_prefix.clone();
    let stores = support::stores(config).await;
    let records = stores.task_records.clone();
    // Older records that nobody touches, then newer ones that a writer
    // deletes and writes again while the listing pages through the index
    // (it reads at most 1,000 entries a page: this takes two).
    let quiet: Vec<TaskRecord> = (0..1_100)
        .map(|i| {
            TaskRecord::new(
                format!("quiet-{i}"),
                "c",
                None,
                TaskStatus::new(TaskState::Completed),
            )
        })
        .collect();
    for record in &quiet {
        records.put(record).await.unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let churn = tokio::spawn({
        let (records, stop) = (records.clone(), stop.clone());
        async move {
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for i in 0..100 {
                    let id = format!("busy-{i}");
                    if round > 0 {
                        records.delete(&id).await.unwrap();
                    }
                    let record =
                        TaskRecord::new(id, "c", None, TaskStatus::new(TaskState::Working));
                    records.put(&record).await.unwrap();
                }
                round += 1;
            }
        }
    });
    for attempt in 0..40 {
        let listed = records.list(None, None, 100_000).await.unwrap();
        let missing: Vec<&str> = quiet
            .iter()
            .filter(|q| !listed.iter().any(|r| r.task_id == q.task_id))
            .map(|q| q.task_id.as_str())
            .collect();
        assert!(missing.is_empty(), "listing {attempt} left out {missing:?}");
    }
    stop.store(true, Ordering::Relaxed);
    churn.await.unwrap();
    support::cleanup(redis.url(), &prefix).await;
}
