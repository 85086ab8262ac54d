//! [`MemoryTaskRecordStore`]: A2A task records in memory.

use hashbrown::HashSet;
use std::sync::Mutex;

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::listing::first_page;
use looopy_core::store::{TaskRecord, TaskRecordStore};

use crate::lock;
use crate::retention::{MemoryRetention, Retained};

/// A2A task records in memory.
///
/// [`TaskRecordStore::list`] scans every record (O(n log n) in the number of
/// records): fine for tests and single-process servers of modest size. Ties in
/// `updated_at` are broken by task id, so pages are stable. Every write
/// happens under one lock, so `compare_and_put` is atomic; cancel flags are
/// kept in a set of their own (they do not expire; a flag is taken by the
/// running turn or deleted with its record). [`with_retention`](Self::with_retention)
/// drops a record `ttl_secs` after its last write and keeps at most
/// `max_entries` of them, besides those of running turns (submitted or
/// working), which the cap never drops.
#[derive(Debug, Default)]
pub struct MemoryTaskRecordStore {
    /// Boxed: the table keeps some of its slots empty and doubles as it
    /// grows, and a record is large, so held inline the empty slots would
    /// cost about as much as the records.
    records: Mutex<Retained<Box<TaskRecord>>>,
    cancels: Mutex<HashSet<String>>,
}

/// Whether the record's turn is running: its record must outlive the cap.
#[allow(clippy::borrowed_box)] // the table's value type
fn running(record: &Box<TaskRecord>) -> bool {
    !record.status.state.ends_turn()
}

/// Writes `record` in its task's place (its box reused when there is one);
/// returns the record it replaces, to be freed outside the lock.
fn write(records: &mut Retained<Box<TaskRecord>>, record: TaskRecord) -> Option<TaskRecord> {
    match records.get_mut(&record.task_id) {
        Some(stored) => Some(std::mem::replace(&mut **stored, record)),
        None => records
            .insert(record.task_id.clone(), Box::new(record))
            .map(|previous| *previous),
    }
}

impl MemoryTaskRecordStore {
    /// An empty store that keeps every record.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store whose records expire and are capped as `retention` says.
    pub fn with_retention(retention: &MemoryRetention) -> Self {
        MemoryTaskRecordStore {
            records: Mutex::new(
                Retained::new(retention.ttl(), retention.cap()).keep_while(running),
            ),
            cancels: Mutex::default(),
        }
    }

    /// Number of stored records.
    pub fn len(&self) -> usize {
        lock(&self.records).len()
    }

    /// Whether no record is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl TaskRecordStore for MemoryTaskRecordStore {
    async fn put(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let mut record = record.clone();
        let previous = {
            let mut records = lock(&self.records);
            record.version = records.get(&record.task_id).map_or(0, |r| r.version) + 1;
            write(&mut records, record)
        };
        drop(previous); // freed outside the lock
        Ok(())
    }

    async fn compare_and_put(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        let mut record = record.clone();
        let previous = {
            let mut records = lock(&self.records);
            let stored = records.get(&record.task_id).map_or(0, |r| r.version);
            if stored != record.version {
                return Ok(false);
            }
            record.version = stored + 1;
            write(&mut records, record)
        };
        drop(previous); // freed outside the lock
        Ok(true)
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(lock(&self.records).get(task_id).map(|r| (**r).clone()))
    }

    async fn list(
        &self,
        owner: Option<&str>,
        context_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let records = lock(&self.records);
        let found: Vec<&TaskRecord> = records
            .iter()
            .map(|(_, r)| &**r)
            .filter(|r| r.listed_by(owner, context_id))
            .collect();
        Ok(first_page(found, limit).into_iter().cloned().collect())
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let removed = lock(&self.records).remove(task_id);
        drop(removed); // freed outside the lock
        lock(&self.cancels).remove(task_id);
        Ok(())
    }

    async fn request_cancel(&self, task_id: &str) -> Result<(), StoreError> {
        lock(&self.cancels).insert(task_id.to_owned());
        Ok(())
    }

    async fn take_cancel(&self, task_id: &str) -> Result<bool, StoreError> {
        Ok(lock(&self.cancels).remove(task_id))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use chrono::{Duration, Utc};
    use looopy_core::{TaskState, TaskStatus};

    use super::*;

    fn record(task: &str, context: &str, owner: Option<&str>, age_s: i64) -> TaskRecord {
        let at = Utc::now() - Duration::seconds(age_s);
        let mut r = TaskRecord::new(
            task,
            context,
            owner.map(Into::into),
            TaskStatus::new(TaskState::Working),
        );
        r.created_at = at;
        r.updated_at = at;
        r
    }

    #[tokio::test]
    async fn put_get_replace_delete() {
        let store = MemoryTaskRecordStore::new();
        assert!(store.get("t1").await.unwrap().is_none());
        let mut r = record("t1", "c1", Some("alice"), 0);
        store.put(&r).await.unwrap();
        r.version = 1;
        assert_eq!(store.get("t1").await.unwrap().unwrap(), r);
        r.status = TaskStatus::new(TaskState::Completed);
        store.put(&r).await.unwrap();
        assert_eq!(
            store.get("t1").await.unwrap().unwrap().status.state,
            TaskState::Completed
        );
        assert_eq!(store.len(), 1);
        store.delete("t1").await.unwrap();
        assert!(store.get("t1").await.unwrap().is_none());
        assert!(store.is_empty());
    }

    #[tokio::test]
    async fn list_filters_by_owner_and_context_newest_first() {
        let store = MemoryTaskRecordStore::new();
        store
            .put(&record("old", "c1", Some("alice"), 30))
            .await
            .unwrap();
        store
            .put(&record("new", "c1", Some("alice"), 10))
            .await
            .unwrap();
        store
            .put(&record("other-ctx", "c2", Some("alice"), 20))
            .await
            .unwrap();
        store
            .put(&record("bobs", "c1", Some("bob"), 0))
            .await
            .unwrap();
        store.put(&record("nobody", "c1", None, 5)).await.unwrap();

        let ids = |v: Vec<TaskRecord>| v.into_iter().map(|r| r.task_id).collect::<Vec<_>>();
        assert_eq!(
            ids(store.list(Some("alice"), None, 10).await.unwrap()),
            ["new", "other-ctx", "old"]
        );
        assert_eq!(
            ids(store.list(Some("alice"), Some("c1"), 10).await.unwrap()),
            ["new", "old"]
        );
        assert_eq!(
            ids(store.list(Some("alice"), None, 1).await.unwrap()),
            ["new"]
        );
        assert_eq!(
            ids(store.list(None, Some("c1"), 10).await.unwrap()),
            ["bobs", "nobody", "new", "old"]
        );
        assert!(
            store
                .list(Some("carol"), None, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
}
