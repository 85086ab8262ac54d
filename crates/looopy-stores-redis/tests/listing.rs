//! Listing task records while other writers add and delete records: a
//! record that nobody touches is always listed, also when many records
//! share one update time.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_of_one_update_time_are_all_listed_while_a_writer_adds_more_of_it() {
    let redis = support::redis();
    let config = support::config(redis.url());
    let prefix = config.key_prefix.clone();
    let stores = support::stores(config).await;
    let records = stores.task_records.clone();
    let at = chrono::Utc::now();
    let of_time = move |id: String| {
        let mut record = TaskRecord::new(id, "c", None, TaskStatus::new(TaskState::Completed));
        record.created_at = at;
        record.updated_at = at;
        record
    };
    // More records of one time than a page holds; the writer's ids sort
    // before them in the index, so each of its entries lands ahead of them.
    let quiet: Vec<TaskRecord> = (0..1_100).map(|i| of_time(format!("m-{i:04}"))).collect();
    for record in &quiet {
        records.put(record).await.unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn({
        let (records, stop) = (records.clone(), stop.clone());
        async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                records.put(&of_time(format!("z-{n:08}"))).await.unwrap();
                n += 1;
            }
            n
        }
    });
    for attempt in 0..20 {
        let listed = records.list(None, None, 100_000).await.unwrap();
        let missing = quiet
            .iter()
            .filter(|q| !listed.iter().any(|r| r.task_id == q.task_id))
            .count();
        assert_eq!(missing, 0, "listing {attempt} left out {missing} records");
        let mut ids: Vec<&str> = listed.iter().map(|r| r.task_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(
            ids.len(),
            listed.len(),
            "listing {attempt} repeated a record"
        );
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.await.unwrap();
    assert!(written > 0, "the writer wrote while the listings ran");
    support::cleanup(redis.url(), &prefix).await;
}
