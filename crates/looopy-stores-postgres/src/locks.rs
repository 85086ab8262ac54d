//! [`PostgresTurnLock`]: turn leases, one row a conversation, timed by
//! PostgreSQL's clock so that the replicas' clocks never matter.
//!
//! A lease without a task is free once it ran out; a turn's lease that ran
//! out is stranded: listed by [`stranded`](TurnLock::stranded), refused to
//! new turns, renewable by its owner until a take-over wins it. Each
//! operation is one statement; the row lock it takes makes concurrent
//! acquirers and take-overs queue, and each re-checks the row as the
//! previous one left it, so exactly one wins.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::store::{Acquire, TurnLease, TurnLock};
use sqlx::PgConnection;

use crate::backend::{PostgresBackend, Retry, int, millis};

/// Takes the lease (see [`TurnLock::try_acquire`]); one statement.
pub(crate) async fn acquire(
    conn: &mut PgConnection,
    context_id: &str,
    owner: &str,
    task_id: Option<&str>,
    ttl: Duration,
) -> Result<Acquire, sqlx::Error> {
    // The outer read sees the row as it was before the statement: what
    // refused the caller.
    let (got, held_task, live): (Option<bool>, Option<String>, Option<bool>) = sqlx::query_as(
        "WITH up AS (
            INSERT INTO leases AS l (context_id, owner, task_id, expires_at)
            VALUES ($1, $2, $3, clock_timestamp() + $4::float8 * interval '1 millisecond')
            ON CONFLICT (context_id) DO UPDATE SET owner = EXCLUDED.owner,
                task_id = EXCLUDED.task_id, expires_at = EXCLUDED.expires_at
            WHERE l.owner = EXCLUDED.owner
               OR (l.task_id IS NULL AND l.expires_at <= clock_timestamp())
            RETURNING true AS got
        )
        SELECT (SELECT got FROM up), old.task_id, old.expires_at > clock_timestamp()
        FROM (SELECT 1) AS one LEFT JOIN leases AS old ON old.context_id = $1",
    )
    .bind(context_id)
    .bind(owner)
    .bind(task_id)
    .bind(millis(ttl).max(1))
    .fetch_one(conn)
    .await?;
    Ok(match (got, held_task, live) {
        (Some(true), _, _) => Acquire::Acquired,
        (_, Some(task_id), Some(false)) => Acquire::Stranded { task_id },
        _ => Acquire::Held,
    })
}

/// Gives the lease back for its owner; `true` when released.
pub(crate) async fn release(
    conn: &mut PgConnection,
    context_id: &str,
    owner: &str,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "DELETE FROM leases WHERE context_id = $1 AND owner = $2
           AND (task_id IS NOT NULL OR expires_at > clock_timestamp())",
    )
    .bind(context_id)
    .bind(owner)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}

type LeaseRow = (String, Option<String>, String, DateTime<Utc>);

fn lease(row: LeaseRow) -> TurnLease {
    let (context_id, task_id, owner, expires_at) = row;
    TurnLease {
        context_id,
        task_id,
        owner,
        expires_at,
    }
}

/// Turn leases and the registry of running turns in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresTurnLock {
    backend: PostgresBackend,
}

impl PostgresTurnLock {
    /// The lock on `backend`.
    pub fn new(backend: PostgresBackend) -> Self {
        PostgresTurnLock { backend }
    }
}

#[async_trait]
impl TurnLock for PostgresTurnLock {
    async fn try_acquire(
        &self,
        context_id: &str,
        owner: &str,
        task_id: Option<&str>,
        ttl: Duration,
    ) -> Result<Acquire, StoreError> {
        let pool = self.backend.pool();
        // Repeating is harmless: the same owner takes its own lease again.
        self.backend
            .run(Retry::Safe, || async move {
                let mut conn = pool.acquire().await?;
                acquire(&mut conn, context_id, owner, task_id, ttl).await
            })
            .await
    }

    async fn renew(
        &self,
        context_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let pool = self.backend.pool();
        let ttl = millis(ttl).max(1);
        let done = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query(
                    "UPDATE leases SET expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond'
                     WHERE context_id = $1 AND owner = $2
                       AND (task_id IS NOT NULL OR expires_at > clock_timestamp())",
                )
                .bind(context_id)
                .bind(owner)
                .bind(ttl)
                .execute(pool)
                .await
            })
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn release(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        let pool = self.backend.pool();
        self.backend
            .run(Retry::Safe, || async move {
                let mut conn = pool.acquire().await?;
                release(&mut conn, context_id, owner).await
            })
            .await
    }

    async fn take_over(
        &self,
        context_id: &str,
        task_id: &str,
        new_owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let pool = self.backend.pool();
        let ttl = millis(ttl).max(1);
        // Not repeated: a lost reply of a won take-over would read as lost.
        let done = self
            .backend
            .run(Retry::Never, || async move {
                sqlx::query(
                    "UPDATE leases SET owner = $3,
                         expires_at = clock_timestamp() + $4::float8 * interval '1 millisecond'
                     WHERE context_id = $1 AND task_id = $2 AND expires_at <= clock_timestamp()",
                )
                .bind(context_id)
                .bind(task_id)
                .bind(new_owner)
                .bind(ttl)
                .execute(pool)
                .await
            })
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn stranded(&self, limit: usize) -> Result<Vec<TurnLease>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let pool = self.backend.pool();
        let limit = int(limit);
        let rows: Vec<LeaseRow> = self
            .backend
            .run(Retry::Safe, || async move {
                // Rows a take-over is changing right now are skipped, not
                // waited for: they are no longer stranded.
                sqlx::query_as(
                    "SELECT context_id, task_id, owner, expires_at FROM leases
                     WHERE task_id IS NOT NULL AND expires_at <= clock_timestamp()
                     ORDER BY expires_at LIMIT $1
                     FOR UPDATE SKIP LOCKED",
                )
                .bind(limit)
                .fetch_all(pool)
                .await
            })
            .await?;
        Ok(rows.into_iter().map(lease).collect())
    }

    async fn lease(&self, context_id: &str) -> Result<Option<TurnLease>, StoreError> {
        let pool = self.backend.pool();
        let row: Option<LeaseRow> = self
            .backend
            .run(Retry::Safe, || async move {
                sqlx::query_as(
                    "SELECT context_id, task_id, owner, expires_at FROM leases
                     WHERE context_id = $1 AND (task_id IS NOT NULL OR expires_at > clock_timestamp())",
                )
                .bind(context_id)
                .fetch_optional(pool)
                .await
            })
            .await?;
        Ok(row.map(lease))
    }
}
