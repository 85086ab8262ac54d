//! [`RecordStore`]: the execution records of turns, with retention.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::StoreError;
use crate::record::ExecutionRecord;

/// How long execution records are kept: on by default, for 7 days and at
/// most 200 records per conversation (the most recently started kept).
/// `None` lifts a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RecordRetention {
    /// The longest a record is kept after its turn started.
    #[serde(with = "secs")]
    pub max_age: Option<Duration>,
    /// The most records kept per conversation.
    pub max_per_context: Option<usize>,
}

impl Default for RecordRetention {
    fn default() -> Self {
        RecordRetention {
            max_age: Some(Duration::from_secs(7 * 24 * 3600)),
            max_per_context: Some(200),
        }
    }
}

impl RecordRetention {
    /// Keeps every record forever.
    pub fn unlimited() -> Self {
        RecordRetention {
            max_age: None,
            max_per_context: None,
        }
    }

    /// Whether a record that started at `started_at` has aged out at `now`.
    pub fn expired(&self, started_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
        self.max_age.is_some_and(|age| {
            (now - started_at)
                .to_std()
                .is_ok_and(|elapsed| elapsed > age)
        })
    }
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_secs))
    }
}

/// The execution records of turns, keyed by task id (one turn per task).
///
/// Rules (checked by the conformance suite of `looopy-testkit`):
/// - [`put`](RecordStore::put) creates or replaces the record of its task,
///   atomically, and every field comes back equal from
///   [`get`](RecordStore::get);
/// - [`list`](RecordStore::list) returns a conversation's records, the most
///   recently started first (ties by task id), at most `limit`;
/// - retention: a record older than the store's
///   [`RecordRetention::max_age`] is never returned, and a `put` that takes a
///   conversation past [`RecordRetention::max_per_context`] forgets its
///   oldest records;
/// - deleting a missing record succeeds.
#[async_trait]
pub trait RecordStore: Send + Sync {
    /// Stores `record`, replacing the one of its task.
    async fn put(&self, record: &ExecutionRecord) -> Result<(), StoreError>;
    /// The record of a task.
    async fn get(&self, task_id: &str) -> Result<Option<ExecutionRecord>, StoreError>;
    /// A conversation's records, most recently started first.
    async fn list(
        &self,
        context_id: &str,
        limit: usize,
    ) -> Result<Vec<ExecutionRecord>, StoreError>;
    /// Forgets a record; `Ok(true)` when it existed.
    async fn delete(&self, task_id: &str) -> Result<bool, StoreError>;
    /// The retention the store applies.
    fn retention(&self) -> RecordRetention;
}
