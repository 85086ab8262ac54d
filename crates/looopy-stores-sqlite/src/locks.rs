//! [`SqliteTurnLock`].

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::store::{Acquire, TurnLease, TurnLock};
use sqlx::Row;
use sqlx::sqlite::{SqliteConnection, SqliteRow};

use crate::backend::{SqliteBackend, millis, now_ms};
use crate::error::Db;

/// Turn leases in the `leases` table; the rows with a task are the
/// registry of running turns. Expiry is on the wall clock in Unix
/// milliseconds, which every process on the machine shares. Every change
/// is a write transaction, so of concurrent acquirers or take-overs
/// exactly one wins.
#[derive(Debug, Clone)]
pub struct SqliteTurnLock {
    backend: SqliteBackend,
}

impl SqliteTurnLock {
    /// The turn lock on `backend`.
    pub fn new(backend: SqliteBackend) -> Self {
        SqliteTurnLock { backend }
    }
}

struct Lease {
    owner: String,
    task_id: Option<String>,
    expires_ms: i64,
}

async fn lease_of(
    conn: &mut SqliteConnection,
    context_id: &str,
) -> Result<Option<Lease>, StoreError> {
    sqlx::query("SELECT owner, task_id, expires_ms FROM leases WHERE context_id = ?")
        .bind(context_id)
        .fetch_optional(conn)
        .await
        .db("read a turn lease")?
        .map(|row| {
            Ok(Lease {
                owner: row.try_get(0).db("read a turn lease")?,
                task_id: row.try_get(1).db("read a turn lease")?,
                expires_ms: row.try_get(2).db("read a turn lease")?,
            })
        })
        .transpose()
}

async fn delete_lease(conn: &mut SqliteConnection, context_id: &str) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM leases WHERE context_id = ?")
        .bind(context_id)
        .execute(conn)
        .await
        .db("release a turn lease")?;
    Ok(())
}

fn deadline(now: i64, ttl: Duration) -> i64 {
    now.saturating_add(millis(ttl))
}

/// [`TurnLock::try_acquire`] within the caller's write transaction.
pub(crate) async fn acquire_in(
    conn: &mut SqliteConnection,
    context_id: &str,
    owner: &str,
    task_id: Option<&str>,
    ttl: Duration,
) -> Result<Acquire, StoreError> {
    let now = now_ms();
    if let Some(lease) = lease_of(&mut *conn, context_id).await?
        && lease.owner != owner
    {
        if lease.expires_ms > now {
            return Ok(Acquire::Held);
        }
        if let Some(task_id) = lease.task_id {
            return Ok(Acquire::Stranded { task_id });
        }
    }
    sqlx::query(
        "INSERT INTO leases (context_id, owner, task_id, expires_ms) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (context_id) DO UPDATE SET owner = ?2, task_id = ?3, expires_ms = ?4",
    )
    .bind(context_id)
    .bind(owner)
    .bind(task_id)
    .bind(deadline(now, ttl))
    .execute(conn)
    .await
    .db("take a turn lease")?;
    Ok(Acquire::Acquired)
}

/// [`TurnLock::release`] within the caller's write transaction.
pub(crate) async fn release_in(
    conn: &mut SqliteConnection,
    context_id: &str,
    owner: &str,
) -> Result<bool, StoreError> {
    let now = now_ms();
    match lease_of(&mut *conn, context_id).await? {
        Some(lease) if lease.task_id.is_none() && lease.expires_ms <= now => {
            delete_lease(conn, context_id).await?;
            Ok(false)
        }
        Some(lease) if lease.owner == owner => {
            delete_lease(conn, context_id).await?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// The lease as [`TurnLock::lease`] shows it, read on `conn`.
pub(crate) async fn held_in(
    conn: &mut SqliteConnection,
    context_id: &str,
) -> Result<Option<TurnLease>, StoreError> {
    let now = now_ms();
    Ok(lease_of(conn, context_id)
        .await?
        .filter(|lease| lease.task_id.is_some() || lease.expires_ms > now)
        .map(|lease| TurnLease {
            context_id: context_id.to_owned(),
            task_id: lease.task_id,
            owner: lease.owner,
            expires_at: wall_clock(lease.expires_ms),
        }))
}

fn wall_clock(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn listed(row: &SqliteRow) -> Result<TurnLease, StoreError> {
    let expires: i64 = row.try_get(3).db("list stranded turns")?;
    Ok(TurnLease {
        context_id: row.try_get(0).db("list stranded turns")?,
        owner: row.try_get(1).db("list stranded turns")?,
        task_id: row.try_get(2).db("list stranded turns")?,
        expires_at: wall_clock(expires),
    })
}

#[async_trait]
impl TurnLock for SqliteTurnLock {
    async fn try_acquire(
        &self,
        context_id: &str,
        owner: &str,
        task_id: Option<&str>,
        ttl: Duration,
    ) -> Result<Acquire, StoreError> {
        let mut tx = self.backend.write().await?;
        let found = acquire_in(tx.conn(), context_id, owner, task_id, ttl).await?;
        if found == Acquire::Acquired {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        Ok(found)
    }

    async fn renew(
        &self,
        context_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut tx = self.backend.write().await?;
        let renewed = match lease_of(tx.conn(), context_id).await? {
            Some(lease) if lease.task_id.is_none() && lease.expires_ms <= now => {
                delete_lease(tx.conn(), context_id).await?;
                false
            }
            Some(lease) if lease.owner == owner => {
                sqlx::query("UPDATE leases SET expires_ms = ? WHERE context_id = ?")
                    .bind(deadline(now, ttl))
                    .bind(context_id)
                    .execute(tx.conn())
                    .await
                    .db("renew a turn lease")?;
                true
            }
            _ => {
                tx.rollback().await?;
                return Ok(false);
            }
        };
        tx.commit().await?;
        Ok(renewed)
    }

    async fn release(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        let mut tx = self.backend.write().await?;
        let released = release_in(tx.conn(), context_id, owner).await?;
        tx.commit().await?;
        Ok(released)
    }

    async fn take_over(
        &self,
        context_id: &str,
        task_id: &str,
        new_owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut tx = self.backend.write().await?;
        let taken = sqlx::query(
            "UPDATE leases SET owner = ?1, expires_ms = ?2
             WHERE context_id = ?3 AND task_id = ?4 AND expires_ms <= ?5",
        )
        .bind(new_owner)
        .bind(deadline(now, ttl))
        .bind(context_id)
        .bind(task_id)
        .bind(now)
        .execute(tx.conn())
        .await
        .db("take over a turn")?
        .rows_affected();
        tx.commit().await?;
        Ok(taken == 1)
    }

    async fn stranded(&self, limit: usize) -> Result<Vec<TurnLease>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        sqlx::query(
            "SELECT context_id, owner, task_id, expires_ms FROM leases
             WHERE task_id IS NOT NULL AND expires_ms <= ? ORDER BY expires_ms LIMIT ?",
        )
        .bind(now_ms())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(self.backend.pool())
        .await
        .db("list stranded turns")?
        .iter()
        .map(listed)
        .collect()
    }

    async fn lease(&self, context_id: &str) -> Result<Option<TurnLease>, StoreError> {
        let mut conn = self.backend.pool().acquire().await.db("connect")?;
        held_in(&mut conn, context_id).await
    }
}
