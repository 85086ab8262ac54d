//! [`SqliteEventLog`].

use std::pin::pin;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use looopy_core::store::follow::{FollowBatch, FollowSource, follow, follow_error};
use looopy_core::store::validate::{check_replacement, foreign_event_id};
use looopy_core::store::{EventLog, StoredEvent};
use looopy_core::{AgentEvent, StoreError};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use crate::backend::{SqliteBackend, Watch, now_ms};
use crate::error::Db;

/// How many events a follower reads per query.
const FOLLOW_BATCH: i64 = 256;

/// Event logs in the `events` table. Ids are the decimal row ids of one
/// sequence for every task that is never reused, so they grow in append
/// order within each task, also after its log was deleted.
///
/// A follower reads what is stored after its cursor, then waits: an append
/// in this process wakes it at once; an append by another process on the
/// same file is seen at its next look, at most `follow_poll_ms` later.
#[derive(Debug, Clone)]
pub struct SqliteEventLog {
    backend: SqliteBackend,
}

impl SqliteEventLog {
    /// The event log on `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqliteEventLog { backend }
    }
}

fn parse_id(id: &str) -> Result<i64, StoreError> {
    id.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| foreign_event_id(id, "the SQLite log's ids are decimal numbers"))
}

fn decode(row: &SqliteRow) -> Result<(i64, StoredEvent), StoreError> {
    let seq: i64 = row.try_get(0).db("read events")?;
    let body: &str = row.try_get(1).db("read events")?;
    let event: AgentEvent = serde_json::from_str(body)?;
    Ok((
        seq,
        StoredEvent {
            id: seq.to_string(),
            event: Arc::new(event),
        },
    ))
}

impl SqliteEventLog {
    async fn after(
        &self,
        task_id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<(i64, StoredEvent)>, StoreError> {
        sqlx::query(
            "SELECT seq, body FROM events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        )
        .bind(task_id)
        .bind(after)
        .bind(limit)
        .fetch_all(self.backend.pool())
        .await
        .db("read events")?
        .iter()
        .map(decode)
        .collect()
    }
}

struct Follow<'a> {
    log: &'a SqliteEventLog,
    task_id: &'a str,
    watch: Watch,
    cursor: i64,
    read_any: bool,
}

impl Follow<'_> {
    async fn fill(&mut self) -> Result<FollowBatch, StoreError> {
        let found = self
            .log
            .after(self.task_id, self.cursor, FOLLOW_BATCH)
            .await?;
        if let Some((last, _)) = found.last() {
            self.cursor = *last;
            self.read_any = true;
            return Ok(FollowBatch {
                events: found.into_iter().map(|(_, e)| e).collect(),
                ended: false,
            });
        }
        let last = sqlx::query(
            "SELECT seq, is_final FROM events WHERE task_id = ? ORDER BY seq DESC LIMIT 1",
        )
        .bind(self.task_id)
        .fetch_optional(self.log.backend.pool())
        .await
        .db("read events")?;
        match last {
            None if self.read_any => Err(StoreError::NotFound {
                what: format!(
                    "the events of task `{}`: its log was dropped (retention or deletion) before the stream reached its end",
                    self.task_id
                ),
            }),
            None => Ok(FollowBatch::default()),
            Some(row) => {
                let seq: i64 = row.try_get(0).db("read events")?;
                let is_final: bool = row.try_get(1).db("read events")?;
                // An event appended since the first read is fetched next time.
                Ok(FollowBatch {
                    events: Vec::new(),
                    ended: is_final && seq <= self.cursor,
                })
            }
        }
    }
}

#[async_trait]
impl FollowSource for Follow<'_> {
    async fn next_batch(&mut self) -> Result<FollowBatch, StoreError> {
        loop {
            let notify = Arc::clone(&self.watch.notify);
            let mut notified = pin!(notify.notified());
            // Registered before looking, so an append after the look wakes us.
            notified.as_mut().enable();
            let batch = self.fill().await?;
            if !batch.events.is_empty() || batch.ended {
                return Ok(batch);
            }
            let poll = self.log.backend.follow_poll();
            let _ = tokio::time::timeout(poll, notified).await;
        }
    }
}

#[async_trait]
impl EventLog for SqliteEventLog {
    async fn append(&self, task_id: &str, event: Arc<AgentEvent>) -> Result<String, StoreError> {
        let body = serde_json::to_string(&*event)?;
        let mut tx = self.backend.write().await?;
        let seq = sqlx::query(
            "INSERT INTO events (task_id, is_final, appended_ms, body) VALUES (?, ?, ?, ?)",
        )
        .bind(task_id)
        .bind(event.is_final())
        .bind(now_ms())
        .bind(body)
        .execute(tx.conn())
        .await
        .db("append an event")?
        .last_insert_rowid();
        tx.commit().await?;
        self.backend.wake(task_id);
        Ok(seq.to_string())
    }

    async fn read(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let after = after.map(parse_id).transpose()?.unwrap_or(0);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Ok(self
            .after(task_id, after, limit)
            .await?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    fn follow<'a>(
        &'a self,
        task_id: &'a str,
        after: Option<String>,
    ) -> BoxStream<'a, Result<StoredEvent, StoreError>> {
        let cursor = match after.as_deref().map(parse_id).transpose() {
            Ok(cursor) => cursor.unwrap_or(0),
            Err(error) => return follow_error(error),
        };
        follow(Follow {
            log: self,
            task_id,
            watch: self.backend.watch(task_id),
            cursor,
            read_any: false,
        })
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let mut tx = self.backend.write().await?;
        sqlx::query("DELETE FROM events WHERE task_id = ?")
            .bind(task_id)
            .execute(tx.conn())
            .await
            .db("delete events")?;
        tx.commit().await?;
        self.backend.wake(task_id);
        Ok(())
    }

    async fn replace_entries(
        &self,
        task_id: &str,
        last: &str,
        remove: &[String],
        put: Vec<StoredEvent>,
    ) -> Result<bool, StoreError> {
        check_replacement(remove, &put)?;
        let last = parse_id(last)?;
        let remove: Vec<i64> = remove
            .iter()
            .map(|id| parse_id(id))
            .collect::<Result<_, _>>()?;
        let mut tx = self.backend.write().await?;
        let stored_last: Option<i64> = sqlx::query("SELECT MAX(seq) FROM events WHERE task_id = ?")
            .bind(task_id)
            .fetch_one(tx.conn())
            .await
            .db("replace events")?
            .try_get(0)
            .db("replace events")?;
        if stored_last != Some(last) {
            tx.rollback().await?;
            return Ok(false);
        }
        let mut appended_ms = std::collections::HashMap::new();
        for seq in &remove {
            if let Some(row) = sqlx::query(
                "DELETE FROM events WHERE task_id = ? AND seq = ? AND seq < ? RETURNING appended_ms",
            )
            .bind(task_id)
            .bind(seq)
            .bind(last)
            .fetch_optional(tx.conn())
            .await
            .db("replace events")?
            {
                let at: i64 = row.try_get(0).db("replace events")?;
                appended_ms.insert(*seq, at);
            }
        }
        for event in &put {
            let seq = parse_id(&event.id)?;
            // A place the log no longer held is skipped.
            let Some(at) = appended_ms.get(&seq) else {
                continue;
            };
            sqlx::query(
                "INSERT INTO events (seq, task_id, is_final, appended_ms, body) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(seq)
            .bind(task_id)
            .bind(event.event.is_final())
            .bind(at)
            .bind(serde_json::to_string(&*event.event)?)
            .execute(tx.conn())
            .await
            .db("replace events")?;
        }
        tx.commit().await?;
        Ok(true)
    }
}
