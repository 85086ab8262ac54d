//! [`SqliteTaskRecordStore`].

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{TaskRecord, TaskRecordStore};
use sqlx::Row;
use sqlx::sqlite::{SqliteConnection, SqliteRow};

use crate::backend::{SqliteBackend, nanos, now_ms};
use crate::error::Db;

/// A2A task records in the `task_records` table, with their version in a
/// column of their own (what compare-and-put checks, in the same write
/// transaction as the write), and cancel flags in `cancel_flags`.
#[derive(Debug, Clone)]
pub struct SqliteTaskRecordStore {
    backend: SqliteBackend,
}

impl SqliteTaskRecordStore {
    /// The task record store on `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqliteTaskRecordStore { backend }
    }
}

fn decode(row: &SqliteRow) -> Result<TaskRecord, StoreError> {
    let body: &str = row.try_get(0).db("read a task record")?;
    let version: i64 = row.try_get(1).db("read a task record")?;
    let mut record: TaskRecord = serde_json::from_str(body)?;
    record.version = u64::try_from(version).unwrap_or(0);
    Ok(record)
}

async fn stored_version(
    conn: &mut SqliteConnection,
    task_id: &str,
) -> Result<Option<i64>, StoreError> {
    sqlx::query("SELECT version FROM task_records WHERE task_id = ?")
        .bind(task_id)
        .fetch_optional(conn)
        .await
        .db("read a task record's version")?
        .map(|row| row.try_get(0).db("read a task record's version"))
        .transpose()
}

async fn write_in(
    conn: &mut SqliteConnection,
    record: &TaskRecord,
    version: i64,
) -> Result<(), StoreError> {
    let mut stored = record.clone();
    stored.version = u64::try_from(version).unwrap_or(0);
    sqlx::query(
        "INSERT INTO task_records (task_id, context_id, owner, updated_ns, version, touched_ms, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (task_id) DO UPDATE SET context_id = ?2, owner = ?3, updated_ns = ?4,
             version = ?5, touched_ms = ?6, body = ?7",
    )
    .bind(&record.task_id)
    .bind(&record.context_id)
    .bind(record.owner.as_deref())
    .bind(nanos(record.updated_at))
    .bind(version)
    .bind(now_ms())
    .bind(serde_json::to_string(&stored)?)
    .execute(conn)
    .await
    .db("write a task record")?;
    Ok(())
}

#[async_trait]
impl TaskRecordStore for SqliteTaskRecordStore {
    async fn put(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        let version = stored_version(tx.conn(), &record.task_id)
            .await?
            .unwrap_or(0);
        write_in(tx.conn(), record, version + 1).await?;
        tx.commit().await
    }

    async fn compare_and_put(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        let mut tx = self.backend.write().await?;
        let stored = stored_version(tx.conn(), &record.task_id)
            .await?
            .unwrap_or(0);
        if u64::try_from(stored).ok() != Some(record.version) {
            tx.rollback().await?;
            return Ok(false);
        }
        write_in(tx.conn(), record, stored + 1).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        sqlx::query("SELECT body, version FROM task_records WHERE task_id = ?")
            .bind(task_id)
            .fetch_optional(self.backend.pool())
            .await
            .db("read a task record")?
            .as_ref()
            .map(decode)
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
        sqlx::query(
            "SELECT body, version FROM task_records
             WHERE (?1 IS NULL OR owner = ?1) AND (?2 IS NULL OR context_id = ?2)
             ORDER BY updated_ns DESC, task_id ASC LIMIT ?3",
        )
        .bind(owner)
        .bind(context_id)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.backend.pool())
        .await
        .db("list task records")?
        .iter()
        .map(decode)
        .collect()
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        for sql in [
            "DELETE FROM task_records WHERE task_id = ?",
            "DELETE FROM cancel_flags WHERE task_id = ?",
        ] {
            sqlx::query(sql)
                .bind(task_id)
                .execute(tx.conn())
                .await
                .db("delete a task record")?;
        }
        tx.commit().await
    }

    async fn request_cancel(&self, task_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        sqlx::query(
            "INSERT INTO cancel_flags (task_id, raised_ms) VALUES (?1, ?2)
             ON CONFLICT (task_id) DO UPDATE SET raised_ms = ?2",
        )
        .bind(task_id)
        .bind(now_ms())
        .execute(tx.conn())
        .await
        .db("raise a cancel flag")?;
        tx.commit().await
    }

    async fn take_cancel(&self, task_id: &str) -> Result<bool, StoreError> {
        let mut tx = self.backend.write().await?;
        let done = sqlx::query("DELETE FROM cancel_flags WHERE task_id = ?")
            .bind(task_id)
            .execute(tx.conn())
            .await
            .db("take a cancel flag")?
            .rows_affected();
        tx.commit().await?;
        Ok(done > 0)
    }
}
