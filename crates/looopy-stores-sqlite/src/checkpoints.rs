//! [`SqliteCheckpointStore`].
//!
//! A checkpoint that builds on the conversation's stored history
//! ([`TaskCheckpoint::stored_history`]) keeps only the turn's own messages
//! in its row (`messages`; the checkpoint's mark in `body` says how many of
//! the history's first messages go in front of them): a save writes what the turn added,
//! whatever the conversation's length. Its load reads the row, the
//! history's epoch and those first messages in one read transaction (one
//! snapshot) and fails with
//! [`StoreError::HistoryRewritten`] when the history was rewritten since
//! (see [`looopy_core::store::on_history`]).

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::on_history::{self, StoredPrefix};
use looopy_core::store::{CheckpointStore, TaskCheckpoint};
use sqlx::Row;
use sqlx::sqlite::SqliteConnection;

use crate::backend::{SqliteBackend, now_ms};
use crate::error::Db;
use crate::messages::load_in;

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
        let encoded = on_history::encode(checkpoint)?;
        let mut tx = self.backend.write().await?;
        sqlx::query(
            "INSERT INTO checkpoints (task_id, context_id, saved_ms, body, messages)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (task_id) DO UPDATE
             SET context_id = ?2, saved_ms = ?3, body = ?4, messages = ?5",
        )
        .bind(&*checkpoint.task_id)
        .bind(&*checkpoint.context_id)
        .bind(now_ms())
        .bind(encoded.head)
        .bind(encoded.messages)
        .execute(tx.conn())
        .await
        .db("save a checkpoint")?;
        tx.commit().await
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskCheckpoint>, StoreError> {
        // One read transaction: the row and the history it builds on are
        // read from one snapshot.
        let mut tx = self.backend.pool().begin().await.db("load a checkpoint")?;
        let row = sqlx::query(
            "SELECT c.body, c.messages, h.epoch FROM checkpoints c
             LEFT JOIN histories h ON h.context_id = c.context_id WHERE c.task_id = ?",
        )
        .bind(task_id)
        .fetch_optional(&mut *tx)
        .await
        .db("load a checkpoint")?;
        let Some(row) = row else {
            return Ok(None);
        };
        let body: &str = row.try_get(0).db("load a checkpoint")?;
        let messages: Option<&str> = row.try_get(1).db("load a checkpoint")?;
        let epoch: Option<String> = row.try_get(2).db("load a checkpoint")?;
        let own = on_history::decode(body, messages)?;
        let base = on_history::prefix_len(&own);
        let prefix = if base == 0 {
            StoredPrefix::default()
        } else {
            StoredPrefix {
                epoch,
                messages: load_in(&mut tx, &own.context_id, 0, base).await?,
            }
        };
        tx.commit().await.db("load a checkpoint")?;
        on_history::rebuild(own, prefix).map(Some)
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        delete_in(tx.conn(), task_id).await?;
        tx.commit().await
    }
}
