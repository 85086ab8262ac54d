//! [`MemoryRecordStore`]: execution records in memory.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::StoreError;
use looopy_core::record::ExecutionRecord;
use looopy_core::store::listing::first_page;
use looopy_core::store::{RecordRetention, RecordStore};

use crate::lock;

/// Execution records in memory, by task and turn, with a
/// [`RecordRetention`] (the default one unless
/// [`with_retention`](Self::with_retention)).
#[derive(Debug, Default)]
pub struct MemoryRecordStore {
    retention: RecordRetention,
    records: Mutex<BTreeMap<(String, u64), ExecutionRecord>>,
}

impl MemoryRecordStore {
    /// An empty store with the default retention.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store keeping records as `retention` says.
    pub fn with_retention(retention: RecordRetention) -> Self {
        MemoryRecordStore {
            retention,
            records: Mutex::default(),
        }
    }
}

/// The keys of every turn of `task_id`, in turn order.
fn turns(task_id: &str) -> std::ops::RangeInclusive<(String, u64)> {
    (task_id.to_owned(), 0)..=(task_id.to_owned(), u64::MAX)
}

#[async_trait]
impl RecordStore for MemoryRecordStore {
    async fn put(&self, record: &ExecutionRecord) -> Result<(), StoreError> {
        let now = Utc::now();
        let mut records = lock(&self.records);
        records.insert((record.task_id.clone(), record.turn()), record.clone());
        records.retain(|_, r| !self.retention.expired(r.started_at, now));
        if let Some(max) = self.retention.max_per_context {
            let mut same: Vec<_> = records
                .iter()
                .filter(|(_, r)| r.context_id == record.context_id)
                .map(|(key, r)| (r.started_at, key.clone()))
                .collect();
            if same.len() > max {
                same.sort_by(|a, b| b.cmp(a));
                for (_, key) in same.into_iter().skip(max) {
                    records.remove(&key);
                }
            }
        }
        Ok(())
    }

    async fn get(&self, task_id: &str) -> Result<Option<ExecutionRecord>, StoreError> {
        let now = Utc::now();
        Ok(lock(&self.records)
            .range(turns(task_id))
            .map(|(_, r)| r)
            .rfind(|r| !self.retention.expired(r.started_at, now))
            .cloned())
    }

    async fn get_turn(
        &self,
        task_id: &str,
        turn: u64,
    ) -> Result<Option<ExecutionRecord>, StoreError> {
        let now = Utc::now();
        Ok(lock(&self.records)
            .get(&(task_id.to_owned(), turn))
            .filter(|r| !self.retention.expired(r.started_at, now))
            .cloned())
    }

    async fn list_task(&self, task_id: &str) -> Result<Vec<ExecutionRecord>, StoreError> {
        let now = Utc::now();
        Ok(lock(&self.records)
            .range(turns(task_id))
            .map(|(_, r)| r)
            .filter(|r| !self.retention.expired(r.started_at, now))
            .cloned()
            .collect())
    }

    async fn list(
        &self,
        context_id: &str,
        limit: usize,
    ) -> Result<Vec<ExecutionRecord>, StoreError> {
        let now = Utc::now();
        let records = lock(&self.records);
        let matching: Vec<&ExecutionRecord> = records
            .values()
            .filter(|r| r.context_id == context_id && !self.retention.expired(r.started_at, now))
            .collect();
        Ok(first_page(matching, limit).into_iter().cloned().collect())
    }

    async fn delete(&self, task_id: &str) -> Result<bool, StoreError> {
        let mut records = lock(&self.records);
        let keys: Vec<_> = records
            .range(turns(task_id))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &keys {
            records.remove(key);
        }
        Ok(!keys.is_empty())
    }

    fn retention(&self) -> RecordRetention {
        self.retention
    }
}
