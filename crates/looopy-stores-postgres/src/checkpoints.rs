//! [`PostgresCheckpointStore`]: one row a running task, replaced by each save.
//!
//! A checkpoint that builds on the conversation's stored history
//! ([`TaskCheckpoint::stored_history`]) keeps only the turn's own messages
//! in its row (`messages`; the checkpoint's mark in `body` says how many of
//! the history's first messages go in front of them): a save writes what
//! the turn added, whatever the conversation's length. Its load reads the
//! row, the history's epoch and those first messages in one statement (one
//! snapshot, one round trip) and fails with
//! [`StoreError::HistoryRewritten`] when the history was rewritten since
//! (see [`looopy_core::store::on_history`]).

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::on_history::{self, StoredPrefix};
use looopy_core::store::{CheckpointStore, TaskCheckpoint};

use crate::backend::{PostgresBackend, Retry};
use crate::messages::decode;

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

/// The row, the epoch of the history it builds on and that history's first
/// messages (as many as the checkpoint's mark says; none for a row of
/// schema version 1, whose `body` is the whole checkpoint).
const LOAD: &str = "SELECT c.body, c.messages, h.epoch,
    CASE WHEN c.messages IS NULL THEN NULL ELSE (
        SELECT array_agg(m.body ORDER BY m.seq) FROM messages m
        WHERE m.context_id = c.context_id
          AND m.seq < COALESCE((c.body::jsonb -> 'storedHistory' ->> 'len')::bigint, 0)
    ) END
    FROM checkpoints c LEFT JOIN histories h ON h.context_id = c.context_id
    WHERE c.task_id = $1";

type Loaded = (String, Option<String>, Option<String>, Option<Vec<String>>);

#[async_trait]
impl CheckpointStore for PostgresCheckpointStore {
    async fn save(&self, checkpoint: &TaskCheckpoint) -> Result<(), StoreError> {
        let encoded = on_history::encode(checkpoint)?;
        let backend = &self.backend;
        let (task, ctx) = (&*checkpoint.task_id, &*checkpoint.context_id);
        let (head, messages) = (&encoded.head, &encoded.messages);
        // A turn's operation: on a lent connection (one round trip).
        self.backend
            .run(Retry::Safe, || async move {
                let mut conn = backend.lend().await?;
                sqlx::query(
                    "INSERT INTO checkpoints (task_id, context_id, body, messages)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (task_id) DO UPDATE
                     SET context_id = EXCLUDED.context_id, body = EXCLUDED.body,
                         messages = EXCLUDED.messages, saved_at = now()",
                )
                .bind(task)
                .bind(ctx)
                .bind(head)
                .bind(messages)
                .execute(&mut *conn)
                .await?;
                conn.park();
                Ok(())
            })
            .await?;
        Ok(())
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskCheckpoint>, StoreError> {
        let pool = self.backend.pool();
        let row: Option<Loaded> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_as(LOAD)
                    .bind(task_id)
                    .fetch_optional(pool)
                    .await
            })
            .await?;
        let Some((body, messages, epoch, prefix)) = row else {
            return Ok(None);
        };
        let own = on_history::decode(&body, messages.as_deref())?;
        let prefix = StoredPrefix {
            epoch,
            messages: decode(prefix.unwrap_or_default())?,
        };
        on_history::rebuild(own, prefix).map(Some)
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
