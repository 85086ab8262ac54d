//! [`SqlitePushConfigStore`].

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{PushConfig, PushConfigStore};
use sqlx::Row;

use crate::backend::{SqliteBackend, now_ms};
use crate::error::Db;

/// Push notification configs in the `push_configs` table, by task and id;
/// the prune drops them `ttl_secs` after their last write, as it does their
/// task's record.
#[derive(Debug, Clone)]
pub struct SqlitePushConfigStore {
    backend: SqliteBackend,
}

impl SqlitePushConfigStore {
    /// The push config store on `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqlitePushConfigStore { backend }
    }
}

fn decode(row: &sqlx::sqlite::SqliteRow) -> Result<PushConfig, StoreError> {
    let body: &str = row.try_get(0).db("read a push config")?;
    Ok(serde_json::from_str(body)?)
}

#[async_trait]
impl PushConfigStore for SqlitePushConfigStore {
    async fn put(&self, config: &PushConfig) -> Result<(), StoreError> {
        let body = serde_json::to_string(config)?;
        let mut tx = self.backend.write().await?;
        sqlx::query(
            "INSERT INTO push_configs (task_id, id, touched_ms, body) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (task_id, id) DO UPDATE SET touched_ms = ?3, body = ?4",
        )
        .bind(&config.task_id)
        .bind(&config.id)
        .bind(now_ms())
        .bind(body)
        .execute(tx.conn())
        .await
        .db("store a push config")?;
        // Every put renews the time of the task's other configs too.
        sqlx::query("UPDATE push_configs SET touched_ms = ? WHERE task_id = ?")
            .bind(now_ms())
            .bind(&config.task_id)
            .execute(tx.conn())
            .await
            .db("store a push config")?;
        tx.commit().await
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<PushConfig>, StoreError> {
        sqlx::query("SELECT body FROM push_configs WHERE task_id = ? AND id = ?")
            .bind(task_id)
            .bind(id)
            .fetch_optional(self.backend.pool())
            .await
            .db("read a push config")?
            .as_ref()
            .map(decode)
            .transpose()
    }

    async fn list(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        sqlx::query("SELECT body FROM push_configs WHERE task_id = ? ORDER BY id")
            .bind(task_id)
            .fetch_all(self.backend.pool())
            .await
            .db("list push configs")?
            .iter()
            .map(decode)
            .collect()
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.backend.write().await?;
        let done = sqlx::query("DELETE FROM push_configs WHERE task_id = ? AND id = ?")
            .bind(task_id)
            .bind(id)
            .execute(tx.conn())
            .await
            .db("delete a push config")?
            .rows_affected();
        tx.commit().await?;
        Ok(done > 0)
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        sqlx::query("DELETE FROM push_configs WHERE task_id = ?")
            .bind(task_id)
            .execute(tx.conn())
            .await
            .db("delete push configs")?;
        tx.commit().await
    }
}
