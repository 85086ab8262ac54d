//! [`PostgresCheckpointStore`]: one row a running task, replaced by each save.

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{CheckpointStore, TaskCheckpoint};

use crate::backend::{PostgresBackend, Retry};
use crate::error::bad_json;

/// Loop checkpoints in PostgreSQL; they go `task_ttl_secs` after their
/// last save (the prune), or when the turn ends.
#[derive(Debug, Clone)]
pub struct PostgresCheckpointStore {
    backend: PostgresBackend,
}

impl PostgresCheckpointStore {
    /// The store on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresCheckpointStore { backend }
    }
}

#[async_trait]
impl CheckpointStore for PostgresCheckpointStore {
    async fn save(&self, checkpoint: &TaskCheckpoint) -> Result<(), StoreError> {
        let body = serde_json::to_string(checkpoint)?;
        let pool = self.backend.pool();
        let (task, ctx, body) = (&*checkpoint.task_id, &*checkpoint.context_id, &body);
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "INSERT INTO checkpoints (task_id, context_id, body) VALUES ($1, $2, $3)
                     ON CONFLICT (task_id) DO UPDATE
                     SET context_id = EXCLUDED.context_id, body = EXCLUDED.body, saved_at = now()",
                )
                .bind(task)
                .bind(ctx)
                .bind(body)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskCheckpoint>, StoreError> {
        let pool = self.backend.pool();
        let body: Option<String> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar("SELECT body FROM checkpoints WHERE task_id = $1")
                    .bind(task_id)
                    .fetch_optional(pool)
                    .await
            })
            .await?;
        body.map(|b| serde_json::from_str(&b).map_err(|e| bad_json("checkpoint", e)))
            .transpose()
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query("DELETE FROM checkpoints WHERE task_id = $1")
                    .bind(task_id)
                    .execute(pool)
                    .await
            })
            .await?;
        Ok(())
    }
}
