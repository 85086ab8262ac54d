//! [`PostgresTaskRecordStore`]: A2A task records, one row each with its
//! version, owner, context and update time in columns of their own (for
//! compare-and-put and listings), and the cancel flags in a table apart.

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{TaskRecord, TaskRecordStore};

use crate::backend::{PostgresBackend, Retry, int, nanos};
use crate::error::bad_json;

fn decode(body: &str, version: i64) -> Result<TaskRecord, StoreError> {
    let mut record: TaskRecord =
        serde_json::from_str(body).map_err(|e| bad_json("task record", e))?;
    record.version = u64::try_from(version).unwrap_or(0);
    Ok(record)
}

/// Task records in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresTaskRecordStore {
    backend: PostgresBackend,
}

impl PostgresTaskRecordStore {
    /// The store on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresTaskRecordStore { backend }
    }
}

#[async_trait]
impl TaskRecordStore for PostgresTaskRecordStore {
    async fn put(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let body = serde_json::to_string(record)?;
        let pool = self.backend.pool();
        let body = &body;
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "INSERT INTO task_records AS r (task_id, context_id, owner, updated_ns, version, body)
                     VALUES ($1, $2, $3, $4, 1, $5)
                     ON CONFLICT (task_id) DO UPDATE SET context_id = EXCLUDED.context_id,
                         owner = EXCLUDED.owner, updated_ns = EXCLUDED.updated_ns,
                         version = r.version + 1, body = EXCLUDED.body, touched_at = now()",
                )
                .bind(&record.task_id)
                .bind(&record.context_id)
                .bind(record.owner.as_deref())
                .bind(nanos(record.updated_at))
                .bind(body)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }

    async fn compare_and_put(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        let body = serde_json::to_string(record)?;
        let pool = self.backend.pool();
        let body = &body;
        let expected = i64::try_from(record.version).unwrap_or(i64::MAX);
        // Not repeated: after a lost reply of a won write, the repeat would
        // find the new version and say another writer came first.
        let done = self
            .backend
            .run(Retry::Never, || async move {
                if expected == 0 {
                    sqlx::query(
                        "INSERT INTO task_records (task_id, context_id, owner, updated_ns, version, body)
                         VALUES ($1, $2, $3, $4, 1, $5) ON CONFLICT (task_id) DO NOTHING",
                    )
                    .bind(&record.task_id)
                    .bind(&record.context_id)
                    .bind(record.owner.as_deref())
                    .bind(nanos(record.updated_at))
                    .bind(body)
                    .execute(pool)
                    .await
                } else {
                    sqlx::query(
                        "UPDATE task_records SET context_id = $2, owner = $3, updated_ns = $4,
                             version = version + 1, body = $5, touched_at = now()
                         WHERE task_id = $1 AND version = $6",
                    )
                    .bind(&record.task_id)
                    .bind(&record.context_id)
                    .bind(record.owner.as_deref())
                    .bind(nanos(record.updated_at))
                    .bind(body)
                    .bind(expected)
                    .execute(pool)
                    .await
                }
            })
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let pool = self.backend.pool();
        let row: Option<(String, i64)> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_as("SELECT body, version FROM task_records WHERE task_id = $1")
                    .bind(task_id)
                    .fetch_optional(pool)
                    .await
            })
            .await?;
        row.map(|(body, version)| decode(&body, version))
            .transpose()
    }

    async fn list(
        &self,
        owner: Option<&str>,
        context_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let pool = self.backend.pool();
        let limit = int(limit);
        let rows: Vec<(String, i64)> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_as(
                    "SELECT body, version FROM task_records
                     WHERE ($1::text IS NULL OR owner = $1) AND ($2::text IS NULL OR context_id = $2)
                     ORDER BY updated_ns DESC, task_id LIMIT $3",
                )
                .bind(owner)
                .bind(context_id)
                .bind(limit)
                .fetch_all(pool)
                .await
            })
            .await?;
        rows.into_iter()
            .map(|(body, version)| decode(&body, version))
            .collect()
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "WITH c AS (DELETE FROM task_cancels WHERE task_id = $1)
                     DELETE FROM task_records WHERE task_id = $1",
                )
                .bind(task_id)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }

    async fn request_cancel(&self, task_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "INSERT INTO task_cancels (task_id) VALUES ($1)
                     ON CONFLICT (task_id) DO UPDATE SET raised_at = now()",
                )
                .bind(task_id)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }

    async fn take_cancel(&self, task_id: &str) -> Result<bool, StoreError> {
        let pool = self.backend.pool();
        // Not repeated: a lost reply would take the request and say no.
        let done = self
            .backend
            .run(Retry::Never, || async move {
                sqlx::query("DELETE FROM task_cancels WHERE task_id = $1")
                    .bind(task_id)
                    .execute(pool)
                    .await
            })
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
