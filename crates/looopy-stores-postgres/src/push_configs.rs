//! [`PostgresPushConfigStore`]: one row a webhook of a task.

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{PushConfig, PushConfigStore};

use crate::backend::{PostgresBackend, Retry};
use crate::error::bad_json;

/// A2A push notification configs in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresPushConfigStore {
    backend: PostgresBackend,
}

impl PostgresPushConfigStore {
    /// The store on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresPushConfigStore { backend }
    }
}

fn decode(body: &str) -> Result<PushConfig, StoreError> {
    serde_json::from_str(body).map_err(|e| bad_json("push config", e))
}

#[async_trait]
impl PushConfigStore for PostgresPushConfigStore {
    async fn put(&self, config: &PushConfig) -> Result<(), StoreError> {
        let body = serde_json::to_string(config)?;
        let pool = self.backend.pool();
        let body = &body;
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "INSERT INTO push_configs (task_id, id, body) VALUES ($1, $2, $3)
                     ON CONFLICT (task_id, id) DO UPDATE SET body = EXCLUDED.body, touched_at = now()",
                )
                .bind(&config.task_id)
                .bind(&config.id)
                .bind(body)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<PushConfig>, StoreError> {
        let pool = self.backend.pool();
        let body: Option<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar("SELECT body FROM push_configs WHERE task_id = $1 AND id = $2")
                    .bind(task_id)
                    .bind(id)
                    .fetch_optional(pool)
                    .await
            })
            .await?;
        body.as_deref().map(decode).transpose()
    }

    async fn list(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        let pool = self.backend.pool();
        let bodies: Vec<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar("SELECT body FROM push_configs WHERE task_id = $1 ORDER BY id")
                    .bind(task_id)
                    .fetch_all(pool)
                    .await
            })
            .await?;
        bodies.iter().map(|b| decode(b)).collect()
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let pool = self.backend.pool();
        let done = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query("DELETE FROM push_configs WHERE task_id = $1 AND id = $2")
                    .bind(task_id)
                    .bind(id)
                    .execute(pool)
                    .await
            })
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query("DELETE FROM push_configs WHERE task_id = $1")
                    .bind(task_id)
                    .execute(pool)
                    .await
            })
            .await?;
        Ok(())
    }
}
