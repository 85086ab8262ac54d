//! [`PostgresRecordStore`]: execution records, one row per turn of a task,
//! with the conversation and start time in columns of their own (for
//! listings and retention).

use async_trait::async_trait;
use chrono::Utc;
use looopy_core::StoreError;
use looopy_core::record::ExecutionRecord;
use looopy_core::store::{RecordRetention, RecordStore};

use crate::backend::{PostgresBackend, Retry, int, nanos};
use crate::error::bad_json;

fn decode(body: &str) -> Result<ExecutionRecord, StoreError> {
    serde_json::from_str(body).map_err(|e| bad_json("execution record", e))
}

/// A turn number as the `turn` column holds it.
fn turn_column(turn: u64) -> i64 {
    i64::try_from(turn).unwrap_or(i64::MAX)
}

/// Execution records in PostgreSQL, with a [`RecordRetention`] (the default
/// one unless [`with_retention`](Self::with_retention)) applied in the
/// transaction of each `put`: rows past the age are deleted, and so are a
/// conversation's oldest rows past the count.
#[derive(Debug, Clone)]
pub struct PostgresRecordStore {
    backend: PostgresBackend,
    retention: RecordRetention,
}

impl PostgresRecordStore {
    /// The store on `backend`, with the default retention.
    pub fn new(backend: PostgresBackend) -> Self {
        Self::with_retention(backend, RecordRetention::default())
    }

    /// The store on `backend`, keeping records as `retention` says.
    pub fn with_retention(backend: PostgresBackend, retention: RecordRetention) -> Self {
        PostgresRecordStore { backend, retention }
    }

    /// The earliest start (Unix ms) of a record still kept now.
    fn oldest_kept_ms(&self) -> i64 {
        self.retention.oldest_kept_ms(Utc::now())
    }
}

#[async_trait]
impl RecordStore for PostgresRecordStore {
    async fn put(&self, record: &ExecutionRecord) -> Result<(), StoreError> {
        let body = serde_json::to_string(record)?;
        let pool = self.backend.pool();
        let body = &body;
        let retention = self.retention;
        let oldest = self.oldest_kept_ms();
        // Repeating it changes nothing: a replacement, then the retention.
        self.backend
            .run(Retry::Safe, || async move {
                let mut tx = pool.begin().await?;
                sqlx::query(
                    "INSERT INTO execution_records (task_id, turn, context_id, started_ns, started_ms, body)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (task_id, turn) DO UPDATE SET context_id = EXCLUDED.context_id,
                         started_ns = EXCLUDED.started_ns, started_ms = EXCLUDED.started_ms,
                         body = EXCLUDED.body",
                )
                .bind(&record.task_id)
                .bind(turn_column(record.turn()))
                .bind(&record.context_id)
                .bind(nanos(record.started_at))
                .bind(record.started_at.timestamp_millis())
                .bind(body)
                .execute(&mut *tx)
                .await?;
                if retention.max_age.is_some() {
                    sqlx::query("DELETE FROM execution_records WHERE started_ms < $1")
                        .bind(oldest)
                        .execute(&mut *tx)
                        .await?;
                }
                if let Some(max) = retention.max_per_context {
                    sqlx::query(
                        "DELETE FROM execution_records WHERE context_id = $1
                           AND (task_id, turn) NOT IN (
                             SELECT task_id, turn FROM execution_records WHERE context_id = $1
                             ORDER BY started_ns DESC, task_id DESC, turn DESC LIMIT $2)",
                    )
                    .bind(&record.context_id)
                    .bind(int(max))
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await
            })
            .await
    }

    async fn get(&self, task_id: &str) -> Result<Option<ExecutionRecord>, StoreError> {
        let pool = self.backend.pool();
        let oldest = self.oldest_kept_ms();
        let body: Option<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar(
                    "SELECT body FROM execution_records WHERE task_id = $1 AND started_ms >= $2
                     ORDER BY turn DESC LIMIT 1",
                )
                .bind(task_id)
                .bind(oldest)
                .fetch_optional(pool)
                .await
            })
            .await?;
        body.as_deref().map(decode).transpose()
    }

    async fn get_turn(
        &self,
        task_id: &str,
        turn: u64,
    ) -> Result<Option<ExecutionRecord>, StoreError> {
        let pool = self.backend.pool();
        let oldest = self.oldest_kept_ms();
        let body: Option<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar(
                    "SELECT body FROM execution_records WHERE task_id = $1 AND turn = $2
                     AND started_ms >= $3",
                )
                .bind(task_id)
                .bind(turn_column(turn))
                .bind(oldest)
                .fetch_optional(pool)
                .await
            })
            .await?;
        body.as_deref().map(decode).transpose()
    }

    async fn list_task(&self, task_id: &str) -> Result<Vec<ExecutionRecord>, StoreError> {
        let pool = self.backend.pool();
        let oldest = self.oldest_kept_ms();
        let bodies: Vec<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar(
                    "SELECT body FROM execution_records WHERE task_id = $1 AND started_ms >= $2
                     ORDER BY turn ASC",
                )
                .bind(task_id)
                .bind(oldest)
                .fetch_all(pool)
                .await
            })
            .await?;
        bodies.iter().map(|b| decode(b)).collect()
    }

    async fn list(
        &self,
        context_id: &str,
        limit: usize,
    ) -> Result<Vec<ExecutionRecord>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let pool = self.backend.pool();
        let oldest = self.oldest_kept_ms();
        let bodies: Vec<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar(
                    "SELECT body FROM execution_records WHERE context_id = $1 AND started_ms >= $2
                     ORDER BY started_ns DESC, task_id ASC LIMIT $3",
                )
                .bind(context_id)
                .bind(oldest)
                .bind(int(limit))
                .fetch_all(pool)
                .await
            })
            .await?;
        bodies.iter().map(|b| decode(b)).collect()
    }

    async fn delete(&self, task_id: &str) -> Result<bool, StoreError> {
        let pool = self.backend.pool();
        let done = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query("DELETE FROM execution_records WHERE task_id = $1")
                    .bind(task_id)
                    .execute(pool)
                    .await
            })
            .await?;
        Ok(done.rows_affected() > 0)
    }

    fn retention(&self) -> RecordRetention {
        self.retention
    }
}
