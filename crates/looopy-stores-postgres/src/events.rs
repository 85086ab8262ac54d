//! [`PostgresEventLog`]: a task's events one row each, numbered from 1 by
//! a counter row per task; followers wake up on `LISTEN/NOTIFY`.
//!
//! An append is one statement: it bumps the task's counter (which queues
//! concurrent appends of one task), inserts the event under the new number
//! and calls `pg_notify` with the task id, which PostgreSQL delivers when
//! the append commits. The backend's one `LISTEN` connection hands each
//! notification to the followers of this process; a follower reads the
//! log after its cursor when woken, and also every `follow_poll_ms`, so a
//! notification lost while the `LISTEN` connection was down only delays it.

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use looopy_core::store::follow::{FollowBatch, FollowSource, follow, follow_error};
use looopy_core::store::validate::{check_replacement, foreign_event_id};
use looopy_core::store::{EventLog, StoredEvent};
use looopy_core::{AgentEvent, StoreError};
use tokio::sync::broadcast;

use crate::backend::{PostgresBackend, Retry, int};
use crate::error::bad_json;

const ID_FORM: &str = "a decimal event number";

fn parse_id(id: &str) -> Result<i64, StoreError> {
    id.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| foreign_event_id(id, ID_FORM))
}

fn decode(rows: Vec<(i64, String)>) -> Result<Vec<StoredEvent>, StoreError> {
    rows.into_iter()
        .map(|(seq, body)| {
            let event: AgentEvent =
                serde_json::from_str(&body).map_err(|e| bad_json("event", e))?;
            Ok(StoredEvent {
                id: seq.to_string(),
                event: Arc::new(event),
            })
        })
        .collect()
}

/// Event logs in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresEventLog {
    backend: PostgresBackend,
}

impl PostgresEventLog {
    /// The log on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresEventLog { backend }
    }

    async fn read_after(
        &self,
        task_id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let pool = self.backend.pool();
        let rows: Vec<(i64, String)> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_as(
                    "SELECT seq, body FROM events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                )
                .bind(task_id)
                .bind(after)
                .bind(limit)
                .fetch_all(pool)
                .await
            })
            .await?;
        decode(rows)
    }

    /// The log's last event number and whether that event is final.
    async fn last(&self, task_id: &str) -> Result<Option<(i64, bool)>, StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query_as(
                    "SELECT seq, is_final FROM events WHERE task_id = $1 ORDER BY seq DESC LIMIT 1",
                )
                .bind(task_id)
                .fetch_optional(pool)
                .await
            })
            .await
    }
}

#[async_trait]
impl EventLog for PostgresEventLog {
    async fn append(&self, task_id: &str, event: Arc<AgentEvent>) -> Result<String, StoreError> {
        let body = serde_json::to_string(&*event)?;
        let pool = self.backend.pool();
        let (body, is_final, channel) = (&body, event.is_final(), self.backend.channel());
        // Not repeated once sent: the event may have landed.
        let seq: i64 = self
            .backend
            .run(Retry::Never, || async move {
                sqlx::query_scalar(
                    "WITH c AS (
                        INSERT INTO event_logs AS c (task_id, last_seq) VALUES ($1, 1)
                        ON CONFLICT (task_id) DO UPDATE SET last_seq = c.last_seq + 1, touched_at = now()
                        RETURNING last_seq
                    ), e AS (
                        INSERT INTO events (task_id, seq, is_final, body)
                        SELECT $1, last_seq, $2, $3 FROM c
                        RETURNING seq
                    )
                    SELECT seq FROM e, LATERAL (SELECT pg_notify($4, $1)) AS n",
                )
                .bind(task_id)
                .bind(is_final)
                .bind(body)
                .bind(channel)
                .fetch_one(pool)
                .await
            })
            .await?;
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
        self.read_after(task_id, after, int(limit)).await
    }

    fn follow<'a>(
        &'a self,
        task_id: &'a str,
        after: Option<String>,
    ) -> BoxStream<'a, Result<StoredEvent, StoreError>> {
        let cursor = match after.as_deref().map(parse_id).transpose() {
            Ok(cursor) => cursor.unwrap_or(0),
            Err(e) => return follow_error(e),
        };
        // Subscribed before the first read: no append after it is missed.
        let wakeups = self.backend.wakeups();
        follow(Follower {
            log: self,
            task_id,
            cursor,
            wakeups,
            idle: false,
        })
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "WITH e AS (DELETE FROM events WHERE task_id = $1)
                     DELETE FROM event_logs WHERE task_id = $1",
                )
                .bind(task_id)
                .execute(pool)
                .await
            })
            .await?;
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
        let mut put_seqs = Vec::with_capacity(put.len());
        let mut put_final = Vec::with_capacity(put.len());
        let mut put_bodies = Vec::with_capacity(put.len());
        for event in &put {
            put_seqs.push(parse_id(&event.id)?);
            put_final.push(event.event.is_final());
            put_bodies.push(serde_json::to_string(&*event.event)?);
        }
        let pool = self.backend.pool();
        let (remove, put_seqs, put_final, put_bodies) =
            (&remove, &put_seqs, &put_final, &put_bodies);
        self.backend
            .run(Retry::Safe, || async move {
                let mut tx = pool.begin().await?;
                // Locks the log: no append slips in between the check and
                // the rewrite.
                let current: Option<i64> = sqlx::query_scalar(
                    "SELECT last_seq FROM event_logs WHERE task_id = $1 FOR UPDATE",
                )
                .bind(task_id)
                .fetch_optional(&mut *tx)
                .await?;
                if current != Some(last) {
                    tx.rollback().await?;
                    return Ok(false);
                }
                // Only entries the log still holds take a `put` event.
                let kept: Vec<i64> = sqlx::query_scalar(
                    "DELETE FROM events WHERE task_id = $1 AND seq = ANY($2) AND seq < $3 RETURNING seq",
                )
                .bind(task_id)
                .bind(remove)
                .bind(last)
                .fetch_all(&mut *tx)
                .await?;
                sqlx::query(
                    "INSERT INTO events (task_id, seq, is_final, body)
                     SELECT $1, t.seq, t.fin, t.body
                     FROM unnest($2::bigint[], $3::bool[], $4::text[]) AS t(seq, fin, body)
                     WHERE t.seq = ANY($5)",
                )
                .bind(task_id)
                .bind(put_seqs)
                .bind(put_final)
                .bind(put_bodies)
                .bind(&kept)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(true)
            })
            .await
    }
}

/// What a follower of one task holds between reads.
struct Follower<'a> {
    log: &'a PostgresEventLog,
    task_id: &'a str,
    cursor: i64,
    wakeups: broadcast::Receiver<Arc<str>>,
    /// The last read found nothing new: wait before the next.
    idle: bool,
}

impl Follower<'_> {
    /// Waits for a notification of this task (or a lost one), at most the
    /// poll interval.
    async fn wait(&mut self) {
        let poll = self.log.backend.config().follow_poll();
        let task_id = self.task_id;
        let wakeups = &mut self.wakeups;
        let _ = tokio::time::timeout(poll, async {
            loop {
                match wakeups.recv().await {
                    Ok(task) if &*task == task_id || task.is_empty() => return,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => return,
                    // The backend is gone: the poll interval paces reads.
                    Err(broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await;
                    }
                }
            }
        })
        .await;
    }
}

#[async_trait]
impl FollowSource for Follower<'_> {
    async fn next_batch(&mut self) -> Result<FollowBatch, StoreError> {
        if self.idle {
            self.wait().await;
        }
        let events = self.log.read_after(self.task_id, self.cursor, 512).await?;
        self.idle = events.is_empty();
        if let Some(last) = events.last() {
            self.cursor = parse_id(&last.id)?;
            return Ok(FollowBatch {
                events,
                ended: false,
            });
        }
        let ended = self
            .log
            .last(self.task_id)
            .await?
            .is_some_and(|(seq, is_final)| is_final && seq <= self.cursor);
        Ok(FollowBatch {
            events: Vec::new(),
            ended,
        })
    }
}
