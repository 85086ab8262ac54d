//! [`SqliteCheckpointStore`].

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{CheckpointStore, TaskCheckpoint};
use sqlx::Row;
use sqlx::sqlite::SqliteConnection;

use crate::backend::{SqliteBackend, now_ms};
use crate::error::Db;

/// Loop checkpoints in the `checkpoints` table, one row per task,
/// replaced at each save; the prune drops them `task_ttl_secs` after their
/// last save.
#[derive(Debug, Clone)]
pub struct SqliteCheckpointStore {
    backend: SqliteBackend,
}

impl SqliteCheckpointStore {
    /// The checkpoint store on `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqliteCheckpointStore { backend }
    }
}

/// Deletes a task's checkpoint within the caller's transaction.
pub(crate) async fn delete_in(
    conn: &mut SqliteConnection,
    task_id: &str,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM checkpoints WHERE task_id = ?")
        .bind(task_id)
        .execute(conn)
        .await
        .db("delete a checkpoint")?;
    Ok(())
}

#[async_trait]
impl CheckpointStore for SqliteCheckpointStore {
    async fn save(&self, checkpoint: &TaskCheckpoint) -> Result<(), StoreError> {
        let body = serde_json::to_string(checkpoint)?;
        let mut tx = self.backend.write().await?;
        sqlx::query(
            "INSERT INTO checkpoints (task_id, context_id, saved_ms, body) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (task_id) DO UPDATE SET context_id = ?2, saved_ms = ?3, body = ?4",
        )
        .bind(&*checkpoint.task_id)
        .bind(&*checkpoint.context_id)
        .bind(now_ms())
        .bind(body)
        .execute(tx.conn())
        .await
        .db("save a checkpoint")?;
        tx.commit().await
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskCheckpoint>, StoreError> {
        let row = sqlx::query("SELECT body FROM checkpoints WHERE task_id = ?")
            .bind(task_id)
            .fetch_optional(self.backend.pool())
            .await
            .db("load a checkpoint")?;
        match row {
            Some(row) => {
                let body: &str = row.try_get(0).db("load a checkpoint")?;
                Ok(Some(serde_json::from_str(body)?))
            }
            None => Ok(None),
        }
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        delete_in(tx.conn(), task_id).await?;
        tx.commit().await
    }
}
