//! [`SqliteMessageStore`].

use std::borrow::Borrow;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use looopy_core::store::MessageStore;
use looopy_core::store::validate::check_replace_range;
use looopy_core::{Message, StoreError};
use sqlx::Row;
use sqlx::sqlite::SqliteConnection;

use crate::backend::{SqliteBackend, now_ms};
use crate::error::Db;

/// Conversation histories in the `messages` table, with each history's
/// length and epoch in `histories` (see
/// [`HistoryMark`](looopy_core::store::HistoryMark): a new epoch at every
/// rewrite or clear).
#[derive(Debug, Clone)]
pub struct SqliteMessageStore {
    backend: SqliteBackend,
}

impl SqliteMessageStore {
    /// The history store on `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqliteMessageStore { backend }
    }
}

/// A fresh history epoch.
pub(crate) fn new_epoch() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A history's epoch and length, when it has a row.
pub(crate) async fn history_of(
    conn: &mut SqliteConnection,
    context_id: &str,
) -> Result<Option<(String, usize)>, StoreError> {
    let row = sqlx::query("SELECT epoch, len FROM histories WHERE context_id = ?")
        .bind(context_id)
        .fetch_optional(conn)
        .await
        .db("read a history's length")?;
    row.map(|row| {
        let epoch: String = row.try_get(0).db("read a history's epoch")?;
        let len: i64 = row.try_get(1).db("read a history's length")?;
        Ok((epoch, usize::try_from(len).unwrap_or(0)))
    })
    .transpose()
}

/// The history's epoch, giving it a row (and an epoch) when it has none.
pub(crate) async fn ensure_history(
    conn: &mut SqliteConnection,
    context_id: &str,
) -> Result<(String, usize), StoreError> {
    if let Some(found) = history_of(&mut *conn, context_id).await? {
        return Ok(found);
    }
    let epoch = new_epoch();
    sqlx::query("INSERT INTO histories (context_id, epoch, len, touched_ms) VALUES (?, ?, 0, ?)")
        .bind(context_id)
        .bind(&epoch)
        .bind(now_ms())
        .execute(conn)
        .await
        .db("start a history")?;
    Ok((epoch, 0))
}

/// Appends `messages` (serialized) to the history, within the caller's
/// transaction.
pub(crate) async fn append_in<M: Borrow<Message> + Sync>(
    conn: &mut SqliteConnection,
    context_id: &str,
    messages: &[M],
) -> Result<(), StoreError> {
    let (_, len) = ensure_history(&mut *conn, context_id).await?;
    let mut seq = len as i64;
    for message in messages {
        let body = serde_json::to_string(message.borrow())?;
        sqlx::query("INSERT INTO messages (context_id, seq, body) VALUES (?, ?, ?)")
            .bind(context_id)
            .bind(seq)
            .bind(body)
            .execute(&mut *conn)
            .await
            .db("append a message")?;
        seq += 1;
    }
    sqlx::query("UPDATE histories SET len = ?, touched_ms = ? WHERE context_id = ?")
        .bind(seq)
        .bind(now_ms())
        .bind(context_id)
        .execute(conn)
        .await
        .db("append messages")?;
    Ok(())
}

/// Messages `from..to` of the history, in order.
pub(crate) async fn load_in(
    conn: &mut SqliteConnection,
    context_id: &str,
    from: usize,
    to: usize,
) -> Result<Vec<Message>, StoreError> {
    let rows = sqlx::query(
        "SELECT body FROM messages WHERE context_id = ? AND seq >= ? AND seq < ? ORDER BY seq",
    )
    .bind(context_id)
    .bind(i64::try_from(from).unwrap_or(i64::MAX))
    .bind(i64::try_from(to).unwrap_or(i64::MAX))
    .fetch_all(conn)
    .await
    .db("load messages")?;
    rows.iter()
        .map(|row| {
            let body: &str = row.try_get(0).db("load messages")?;
            Ok(serde_json::from_str(body)?)
        })
        .collect()
}

#[async_trait]
impl MessageStore for SqliteMessageStore {
    async fn append(&self, context_id: &str, messages: &[Message]) -> Result<(), StoreError> {
        if messages.is_empty() {
            return Ok(());
        }
        let mut tx = self.backend.write().await?;
        append_in(tx.conn(), context_id, messages).await?;
        tx.commit().await
    }

    async fn append_shared(
        &self,
        context_id: &str,
        messages: &[Arc<Message>],
    ) -> Result<(), StoreError> {
        if messages.is_empty() {
            return Ok(());
        }
        let mut tx = self.backend.write().await?;
        append_in(tx.conn(), context_id, messages).await?;
        tx.commit().await
    }

    async fn load_range(
        &self,
        context_id: &str,
        range: Range<usize>,
    ) -> Result<Vec<Message>, StoreError> {
        if range.start >= range.end {
            return Ok(Vec::new());
        }
        let mut conn = self.backend.pool().acquire().await.db("connect")?;
        load_in(&mut conn, context_id, range.start, range.end).await
    }

    async fn count(&self, context_id: &str) -> Result<usize, StoreError> {
        let mut conn = self.backend.pool().acquire().await.db("connect")?;
        Ok(history_of(&mut conn, context_id)
            .await?
            .map_or(0, |(_, len)| len))
    }

    async fn replace_range(
        &self,
        context_id: &str,
        range: Range<usize>,
        replacement: &[Message],
    ) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        let len = history_of(tx.conn(), context_id)
            .await?
            .map_or(0, |(_, len)| len);
        check_replace_range(context_id, &range, len)?;
        let tail = load_in(tx.conn(), context_id, range.end, usize::MAX).await?;
        sqlx::query("DELETE FROM messages WHERE context_id = ? AND seq >= ?")
            .bind(context_id)
            .bind(range.start as i64)
            .execute(tx.conn())
            .await
            .db("replace messages")?;
        let mut seq = range.start as i64;
        for message in replacement.iter().chain(&tail) {
            sqlx::query("INSERT INTO messages (context_id, seq, body) VALUES (?, ?, ?)")
                .bind(context_id)
                .bind(seq)
                .bind(serde_json::to_string(message)?)
                .execute(tx.conn())
                .await
                .db("replace messages")?;
            seq += 1;
        }
        // Any rewrite gives the history a new epoch (a turn that holds the
        // old one reads it whole again).
        sqlx::query(
            "INSERT INTO histories (context_id, epoch, len, touched_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (context_id) DO UPDATE SET epoch = ?2, len = ?3, touched_ms = ?4",
        )
        .bind(context_id)
        .bind(new_epoch())
        .bind(seq)
        .bind(now_ms())
        .execute(tx.conn())
        .await
        .db("replace messages")?;
        tx.commit().await
    }

    async fn clear(&self, context_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        clear_in(tx.conn(), context_id).await?;
        tx.commit().await
    }
}

/// Deletes a history (its next append starts a new epoch).
pub(crate) async fn clear_in(
    conn: &mut SqliteConnection,
    context_id: &str,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM messages WHERE context_id = ?")
        .bind(context_id)
        .execute(&mut *conn)
        .await
        .db("clear a history")?;
    sqlx::query("DELETE FROM histories WHERE context_id = ?")
        .bind(context_id)
        .execute(conn)
        .await
        .db("clear a history")?;
    Ok(())
}
