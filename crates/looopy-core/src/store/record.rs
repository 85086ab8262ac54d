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

    /// The earliest start, in Unix milliseconds, of a record still kept at
    /// `now`: what a store's query compares its start column with
    /// (`i64::MIN` when records never age out).
    pub fn oldest_kept_ms(&self, now: DateTime<Utc>) -> i64 {
        self.max_age.map_or(i64::MIN, |age| {
            let age = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
            now.timestamp_millis().saturating_sub(age)
        })
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

impl ExecutionRecord {
    /// The turn a [`RecordStore`] keys this record by, beside its task:
    /// its [`turn_number`](ExecutionRecord::turn_number), `0` when it has
    /// none.
    pub fn turn(&self) -> u64 {
        self.turn_number.unwrap_or(0)
    }
}

/// The execution records of turns, one per turn: keyed by task id and
/// [`turn`](ExecutionRecord::turn) (an A2A task runs a turn for each
/// message it is sent, for instance after `input-required`).
///
/// Rules (checked by the conformance suite of `looopy-testkit`):
/// - [`put`](RecordStore::put) creates or replaces the record of its task
///   and turn, atomically, leaving the task's other turns alone, and every
///   field comes back equal from [`get_turn`](RecordStore::get_turn);
/// - [`get`](RecordStore::get) returns the task's latest turn (the highest
///   turn number), [`list_task`](RecordStore::list_task) every turn of the
///   task, oldest (lowest turn number) first;
/// - [`list`](RecordStore::list) returns a conversation's records (one per
///   turn), the most recently started first (ties by task id), at most
///   `limit`;
/// - retention: a record older than the store's
///   [`RecordRetention::max_age`] is never returned, and a `put` that takes a
///   conversation past [`RecordRetention::max_per_context`] records (turns)
///   forgets its oldest records;
/// - [`delete`](RecordStore::delete) forgets every turn of the task;
///   deleting a missing record succeeds.
#[async_trait]
pub trait RecordStore: Send + Sync {
    /// Stores `record`, replacing the one of its task and turn.
    async fn put(&self, record: &ExecutionRecord) -> Result<(), StoreError>;
    /// The record of a task's latest turn.
    async fn get(&self, task_id: &str) -> Result<Option<ExecutionRecord>, StoreError>;
    /// The record of one turn of a task.
    async fn get_turn(
        &self,
        task_id: &str,
        turn: u64,
    ) -> Result<Option<ExecutionRecord>, StoreError>;
    /// The records of every turn of a task, oldest first.
    async fn list_task(&self, task_id: &str) -> Result<Vec<ExecutionRecord>, StoreError>;
    /// A conversation's records, most recently started first.
    async fn list(
        &self,
        context_id: &str,
        limit: usize,
    ) -> Result<Vec<ExecutionRecord>, StoreError>;
    /// Forgets the records of every turn of a task; `Ok(true)` when one
    /// existed.
    async fn delete(&self, task_id: &str) -> Result<bool, StoreError>;
    /// The retention the store applies.
    fn retention(&self) -> RecordRetention;
}
