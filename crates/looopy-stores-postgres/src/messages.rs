//! [`PostgresMessageStore`]: a conversation's history, one row a message.
//!
//! `histories` holds each conversation's length and epoch (the token of
//! [`HistoryMark`](looopy_core::store::HistoryMark), changed by every
//! rewrite); `messages` holds the messages at positions `0..len`. An
//! append is one statement that bumps the length (locking the
//! conversation's row, so that batches queue and never interleave) and
//! inserts the batch after the old length.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::store::MessageStore;
use looopy_core::store::validate::check_replace_range;
use looopy_core::{Message, StoreError};
use sqlx::PgConnection;

use crate::backend::{PostgresBackend, Retry, int, new_epoch, uint};
use crate::error::bad_json;

/// Appends `bodies` (JSON messages) to the history of `context_id`; one
/// statement. Returns the history's length before them.
pub(crate) async fn append_bodies(
    conn: &mut PgConnection,
    context_id: &str,
    bodies: &[String],
) -> Result<i64, sqlx::Error> {
    let n = int(bodies.len());
    sqlx::query_scalar(
        "WITH h AS (
            INSERT INTO histories AS h (context_id, len, epoch) VALUES ($1, $2, $3)
            ON CONFLICT (context_id) DO UPDATE SET len = h.len + EXCLUDED.len, touched_at = now()
            RETURNING len
        ), m AS (
            INSERT INTO messages (context_id, seq, body)
            SELECT $1, (SELECT len FROM h) - $2 + t.ord - 1, t.body
            FROM unnest($4::text[]) WITH ORDINALITY AS t(body, ord)
        )
        SELECT len - $2 FROM h",
    )
    .bind(context_id)
    .bind(n)
    .bind(new_epoch())
    .bind(bodies)
    .fetch_one(conn)
    .await
}

/// Messages `from..to` of `context_id`.
pub(crate) async fn load_bodies(
    conn: &mut PgConnection,
    context_id: &str,
    from: i64,
    to: i64,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT body FROM messages WHERE context_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq",
    )
    .bind(context_id)
    .bind(from)
    .bind(to)
    .fetch_all(conn)
    .await
}

/// JSON of each message.
pub(crate) fn encode<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
) -> Result<Vec<String>, StoreError> {
    messages
        .into_iter()
        .map(|m| serde_json::to_string(m).map_err(StoreError::from))
        .collect()
}

/// Messages from their JSON.
pub(crate) fn decode(bodies: Vec<String>) -> Result<Vec<Message>, StoreError> {
    bodies
        .iter()
        .map(|b| serde_json::from_str(b).map_err(|e| bad_json("message", e)))
        .collect()
}

/// Conversation histories in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresMessageStore {
    backend: PostgresBackend,
}

impl PostgresMessageStore {
    /// The store on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresMessageStore { backend }
    }

    async fn append_json(&self, context_id: &str, bodies: Vec<String>) -> Result<(), StoreError> {
        if bodies.is_empty() {
            return Ok(());
        }
        let pool = self.backend.pool();
        let bodies = &bodies;
        // Not repeated once sent: a batch whose reply was lost may have landed.
        self.backend
            .run(Retry::Never, || async move {
                let mut conn = pool.acquire().await?;
                append_bodies(&mut conn, context_id, bodies).await
            })
            .await?;
        Ok(())
    }
}

#[async_trait]
impl MessageStore for PostgresMessageStore {
    async fn append(&self, context_id: &str, messages: &[Message]) -> Result<(), StoreError> {
        self.append_json(context_id, encode(messages)?).await
    }

    async fn append_shared(
        &self,
        context_id: &str,
        messages: &[Arc<Message>],
    ) -> Result<(), StoreError> {
        self.append_json(context_id, encode(messages.iter().map(|m| &**m))?)
            .await
    }

    async fn load_range(
        &self,
        context_id: &str,
        range: Range<usize>,
    ) -> Result<Vec<Message>, StoreError> {
        if range.start >= range.end {
            return Ok(Vec::new());
        }
        let pool = self.backend.pool();
        let (from, to) = (int(range.start), int(range.end));
        let bodies = self
            .backend
            .run(Retry::Safe, || async move {
                let mut conn = pool.acquire().await?;
                load_bodies(&mut conn, context_id, from, to).await
            })
            .await?;
        decode(bodies)
    }

    async fn count(&self, context_id: &str) -> Result<usize, StoreError> {
        let pool = self.backend.pool();
        let len: Option<i64> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_scalar("SELECT len FROM histories WHERE context_id = $1")
                    .bind(context_id)
                    .fetch_optional(pool)
                    .await
            })
            .await?;
        Ok(len.map_or(0, uint))
    }

    async fn replace_range(
        &self,
        context_id: &str,
        range: Range<usize>,
        replacement: &[Message],
    ) -> Result<(), StoreError> {
        let bodies = encode(replacement)?;
        let pool = self.backend.pool();
        let (bodies, range) = (&bodies, &range);
        self.backend
            .run(Retry::Never, || async move {
                let mut tx = pool.begin().await?;
                // Locks the conversation (made when missing).
                let len: i64 = sqlx::query_scalar(
                    "INSERT INTO histories AS h (context_id, len, epoch) VALUES ($1, 0, $2)
                     ON CONFLICT (context_id) DO UPDATE SET len = h.len RETURNING len",
                )
                .bind(context_id)
                .bind(new_epoch())
                .fetch_one(&mut *tx)
                .await?;
                if let Err(e) = check_replace_range(context_id, range, uint(len)) {
                    tx.rollback().await?;
                    return Ok(Err(e));
                }
                let (start, end) = (int(range.start), int(range.end));
                let shift = int(bodies.len()) - (end - start);
                sqlx::query(
                    "DELETE FROM messages WHERE context_id = $1 AND seq >= $2 AND seq < $3",
                )
                .bind(context_id)
                .bind(start)
                .bind(end)
                .execute(&mut *tx)
                .await?;
                if shift != 0 {
                    // Through negative positions, so that no two rows ever
                    // share one.
                    sqlx::query(
                        "UPDATE messages SET seq = -(seq + $3) - 1 WHERE context_id = $1 AND seq >= $2",
                    )
                    .bind(context_id)
                    .bind(end)
                    .bind(shift)
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query("UPDATE messages SET seq = -seq - 1 WHERE context_id = $1 AND seq < 0")
                        .bind(context_id)
                        .execute(&mut *tx)
                        .await?;
                }
                sqlx::query(
                    "INSERT INTO messages (context_id, seq, body)
                     SELECT $1, $2 + t.ord - 1, t.body FROM unnest($3::text[]) WITH ORDINALITY AS t(body, ord)",
                )
                .bind(context_id)
                .bind(start)
                .bind(bodies)
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "UPDATE histories SET len = len + $2, epoch = $3, touched_at = now() WHERE context_id = $1",
                )
                .bind(context_id)
                .bind(shift)
                .bind(new_epoch())
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(Ok(()))
            })
            .await?
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "WITH m AS (DELETE FROM messages WHERE context_id = $1)
                     DELETE FROM histories WHERE context_id = $1",
                )
                .bind(context_id)
                .execute(pool)
                .await
            })
            .await?;
        Ok(())
    }
}
