//! [`SqliteRecordStore`].

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::StoreError;
use looopy_core::record::ExecutionRecord;
use looopy_core::store::{RecordRetention, RecordStore};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::backend::{SqliteBackend, nanos};
use crate::error::Db;

/// Execution records in the `execution_records` table, one row per turn
/// of a task, with a [`RecordRetention`] (the default one unless
/// [`with_retention`](Self::with_retention)) applied in the write
/// transaction of each `put`: rows past the age are deleted, and so are a
/// conversation's oldest rows past the count.
#[derive(Debug, Clone)]
pub struct SqliteRecordStore {
    backend: SqliteBackend,
    retention: RecordRetention,
}

impl SqliteRecordStore {
    /// The record store on `backend`, with the default retention.
    pub fn new(backend: SqliteBackend) -> Self {
        Self::with_retention(backend, RecordRetention::default())
    }

    /// The record store on `backend`, keeping records as `retention` says.
    pub fn with_retention(backend: SqliteBackend, retention: RecordRetention) -> Self {
        SqliteRecordStore { backend, retention }
    }

    /// The earliest start (Unix ms) of a record still kept now.
    fn oldest_kept_ms(&self) -> i64 {
        self.retention.oldest_kept_ms(Utc::now())
    }
}

/// A turn number as the `turn` column holds it.
fn turn_column(turn: u64) -> i64 {
    i64::try_from(turn).unwrap_or(i64::MAX)
}

fn decode(row: &SqliteRow) -> Result<ExecutionRecord, StoreError> {
    let body: &str = row.try_get(0).db("read an execution record")?;
    Ok(serde_json::from_str(body)?)
}

#[async_trait]
impl RecordStore for SqliteRecordStore {
    async fn put(&self, record: &ExecutionRecord) -> Result<(), StoreError> {
        let body = serde_json::to_string(record)?;
        let mut tx = self.backend.write().await?;
        sqlx::query(
            "INSERT INTO execution_records (task_id, turn, context_id, started_ns, started_ms, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (task_id, turn) DO UPDATE SET context_id = ?3, started_ns = ?4,
                 started_ms = ?5, body = ?6",
        )
        .bind(&record.task_id)
        .bind(turn_column(record.turn()))
        .bind(&record.context_id)
        .bind(nanos(record.started_at))
        .bind(record.started_at.timestamp_millis())
        .bind(body)
        .execute(tx.conn())
        .await
        .db("write an execution record")?;
        if self.retention.max_age.is_some() {
            sqlx::query("DELETE FROM execution_records WHERE started_ms < ?")
                .bind(self.oldest_kept_ms())
                .execute(tx.conn())
                .await
                .db("forget aged execution records")?;
        }
        if let Some(max) = self.retention.max_per_context {
            sqlx::query(
                "DELETE FROM execution_records WHERE context_id = ?1 AND rowid NOT IN (
                     SELECT rowid FROM execution_records WHERE context_id = ?1
                     ORDER BY started_ns DESC, task_id DESC, turn DESC LIMIT ?2)",
            )
            .bind(&record.context_id)
            .bind(i64::try_from(max).unwrap_or(i64::MAX))
            .execute(tx.conn())
            .await
            .db("forget a conversation's oldest execution records")?;
        }
        tx.commit().await
    }

    async fn get(&self, task_id: &str) -> Result<Option<ExecutionRecord>, StoreError> {
        sqlx::query(
            "SELECT body FROM execution_records WHERE task_id = ?1 AND started_ms >= ?2
             ORDER BY turn DESC LIMIT 1",
        )
        .bind(task_id)
        .bind(self.oldest_kept_ms())
        .fetch_optional(self.backend.pool())
        .await
        .db("read an execution record")?
        .as_ref()
        .map(decode)
        .transpose()
    }

    async fn get_turn(
        &self,
        task_id: &str,
        turn: u64,
    ) -> Result<Option<ExecutionRecord>, StoreError> {
        sqlx::query(
            "SELECT body FROM execution_records WHERE task_id = ?1 AND turn = ?2
             AND started_ms >= ?3",
        )
        .bind(task_id)
        .bind(turn_column(turn))
        .bind(self.oldest_kept_ms())
        .fetch_optional(self.backend.pool())
        .await
        .db("read an execution record")?
        .as_ref()
        .map(decode)
        .transpose()
    }

    async fn list_task(&self, task_id: &str) -> Result<Vec<ExecutionRecord>, StoreError> {
        sqlx::query(
            "SELECT body FROM execution_records WHERE task_id = ?1 AND started_ms >= ?2
             ORDER BY turn ASC",
        )
        .bind(task_id)
        .bind(self.oldest_kept_ms())
        .fetch_all(self.backend.pool())
        .await
        .db("list a task's execution records")?
        .iter()
        .map(decode)
        .collect()
    }

    async fn list(
        &self,
        context_id: &str,
        limit: usize,
    ) -> Result<Vec<ExecutionRecord>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        sqlx::query(
            "SELECT body FROM execution_records WHERE context_id = ?1 AND started_ms >= ?2
             ORDER BY started_ns DESC, task_id ASC LIMIT ?3",
        )
        .bind(context_id)
        .bind(self.oldest_kept_ms())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.backend.pool())
        .await
        .db("list execution records")?
        .iter()
        .map(decode)
        .collect()
    }

    async fn delete(&self, task_id: &str) -> Result<bool, StoreError> {
        let mut tx = self.backend.write().await?;
        let done = sqlx::query("DELETE FROM execution_records WHERE task_id = ?")
            .bind(task_id)
            .execute(tx.conn())
            .await
            .db("delete execution records")?
            .rows_affected();
        tx.commit().await?;
        Ok(done > 0)
    }

    fn retention(&self) -> RecordRetention {
        self.retention
    }
}
