//! [`SqliteBackend`]: the connection pool on one database file, its schema
//! and what every store shares (the write gate, the event wake-ups, the
//! prune).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{Row, Transaction};
use tokio::sync::{Notify, OwnedMutexGuard};

use crate::config::{Durability, SqliteConfig};
use crate::error::{Db, Kind, OpenError, hint, kind};

/// The embedded migrations, in order: version `n` is the `n`-th. A
/// database records each one it applied in its `schema_version` table.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_initial.sql"),
    include_str!("../migrations/0002_checkpoints_on_history.sql"),
    include_str!("../migrations/0003_execution_records.sql"),
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// One SQLite database shared by every store: a pool of connections, in
/// WAL mode with a busy timeout, on a schema brought to
/// [`SCHEMA_VERSION`] when opened.
///
/// Writes take turns: within the process through one gate (so that they
/// queue without spinning on SQLite's lock), across processes through
/// SQLite's write lock (`BEGIN IMMEDIATE`, waiting up to
/// `busy_timeout_ms`). Reads run beside them on the other connections and
/// see the last commit.
///
/// Clones share the pool. The periodic prune (when
/// [`SqliteConfig::prune_interval_secs`] is set) runs while a clone is
/// alive.
#[derive(Clone)]
pub struct SqliteBackend {
    inner: Arc<Inner>,
}

struct Inner {
    pool: SqlitePool,
    config: SqliteConfig,
    gate: Arc<tokio::sync::Mutex<()>>,
    /// Event followers of this process, by task: whom an append wakes.
    watchers: Mutex<HashMap<String, (Arc<Notify>, usize)>>,
    /// Write transactions committed (see [`SqliteBackend::write_commits`]).
    commits: Arc<AtomicU64>,
}

impl std::fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteBackend")
            .field("path", &self.inner.config.path)
            .finish_non_exhaustive()
    }
}

/// A write transaction (`BEGIN IMMEDIATE`), holding the process's write
/// gate. Dropped without [`commit`](Self::commit), it rolls back.
pub(crate) struct WriteTx {
    tx: Transaction<'static, sqlx::Sqlite>,
    _gate: OwnedMutexGuard<()>,
    commits: Arc<AtomicU64>,
}

impl WriteTx {
    /// The connection, for the statements of the transaction.
    pub(crate) fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }

    /// Commits.
    pub(crate) async fn commit(self) -> Result<(), StoreError> {
        self.tx.commit().await.db("commit")?;
        self.commits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Rolls back and waits for it, so that SQLite's write lock is free
    /// before the next writer passes the gate (a dropped transaction rolls
    /// back too, but after the gate opened).
    pub(crate) async fn rollback(self) -> Result<(), StoreError> {
        self.tx.rollback().await.db("roll back")
    }
}

/// What one [`SqliteBackend::prune`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Checkpoints past `task_ttl_secs`.
    pub checkpoints: u64,
    /// Ended conversations past `ttl_secs` (their messages, artifacts and
    /// state).
    pub conversations: u64,
    /// Task rows past `ttl_secs`: events, records, cancel flags, push
    /// configs, execution records (by their turn's start).
    pub task_rows: u64,
    /// Expired cache entries and free leases that ran out.
    pub expired: u64,
}

impl Pruned {
    /// Rows (or conversations) deleted in all.
    pub fn total(&self) -> u64 {
        self.checkpoints + self.conversations + self.task_rows + self.expired
    }
}

impl SqliteBackend {
    /// Opens (creating when missing, with its directory) the database of
    /// `config`, applies the migrations it lacks, and starts the periodic
    /// prune. A database of a newer schema is refused
    /// ([`OpenError::NewerSchema`]) and left as it is.
    ///
    /// Call it within a Tokio runtime.
    pub async fn open(config: SqliteConfig) -> Result<Self, OpenError> {
        let path = config.path.clone();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| OpenError::Directory {
                dir: dir.to_owned(),
                source,
            })?;
        }
        let open_error = |source: sqlx::Error| OpenError::Open {
            path: path.clone(),
            hint: hint(&source),
            source,
        };
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match config.durability {
                Durability::Normal => SqliteSynchronous::Normal,
                Durability::Full => SqliteSynchronous::Full,
            })
            .busy_timeout(Duration::from_millis(config.busy_timeout_ms))
            .foreign_keys(false);
        let pool_options = SqlitePoolOptions::new()
            .max_connections(config.pool_size.max(1))
            .min_connections(1)
            .acquire_timeout(Duration::from_millis(config.busy_timeout_ms.max(1_000)));
        // The first connection turns a new file to WAL mode, which takes an
        // exclusive lock SQLite's busy timeout does not wait for: a process
        // that finds another one doing the same gets `SQLITE_BUSY` at once.
        // It tries again, for up to `busy_timeout_ms` in all; once the file
        // is in WAL mode, the pragma takes no lock and the pool's later
        // connections open without this.
        let deadline = tokio::time::Instant::now() + Duration::from_millis(config.busy_timeout_ms);
        let mut pause = Duration::from_millis(5);
        let pool = loop {
            match pool_options.clone().connect_with(options.clone()).await {
                Ok(pool) => break pool,
                Err(error)
                    if kind(&error) == Kind::Busy
                        && tokio::time::Instant::now() + pause < deadline =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(error) => return Err(open_error(error)),
            }
        };
        let backend = SqliteBackend {
            inner: Arc::new(Inner {
                pool,
                config,
                gate: Arc::new(tokio::sync::Mutex::new(())),
                watchers: Mutex::new(HashMap::new()),
                commits: Arc::new(AtomicU64::new(0)),
            }),
        };
        backend.migrate(&path).await?;
        backend.start_prune();
        Ok(backend)
    }

    /// Brings the schema to [`SCHEMA_VERSION`] in one write transaction
    /// (two processes opening one new file at once: the second waits for
    /// the first, then finds nothing to do).
    async fn migrate(&self, path: &Path) -> Result<(), OpenError> {
        let open_error = |source: sqlx::Error| OpenError::Open {
            path: path.to_owned(),
            hint: hint(&source),
            source,
        };
        let gate = Arc::clone(&self.inner.gate).lock_owned().await;
        let mut tx = self
            .inner
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(open_error)?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY NOT NULL, applied_at TEXT NOT NULL)",
        )
        .execute(&mut *tx)
        .await
        .map_err(open_error)?;
        let found: i64 = sqlx::query("SELECT COALESCE(MAX(version), 0) FROM schema_version")
            .fetch_one(&mut *tx)
            .await
            .map_err(open_error)?
            .try_get(0)
            .map_err(open_error)?;
        if found > SCHEMA_VERSION {
            return Err(OpenError::NewerSchema {
                path: path.to_owned(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let version = index as i64 + 1;
            let migration_error = |source| OpenError::Migration {
                path: path.to_owned(),
                version,
                source,
            };
            sqlx::raw_sql(*sql)
                .execute(&mut *tx)
                .await
                .map_err(migration_error)?;
            sqlx::query("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)")
                .bind(version)
                .bind(Utc::now().to_rfc3339())
                .execute(&mut *tx)
                .await
                .map_err(migration_error)?;
        }
        tx.commit().await.map_err(open_error)?;
        drop(gate);
        Ok(())
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &SqliteConfig {
        &self.inner.config
    }

    /// The schema version of the database (what its `schema_version` table
    /// records).
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        sqlx::query("SELECT COALESCE(MAX(version), 0) FROM schema_version")
            .fetch_one(&self.inner.pool)
            .await
            .db("schema version")?
            .try_get(0)
            .db("schema version")
    }

    /// The pool, for reads.
    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.inner.pool
    }

    /// Starts a write transaction.
    ///
    /// The wait for the gate is bounded like the wait for SQLite's lock
    /// (`busy_timeout_ms`): a write of this process whose future is no
    /// longer polled (its caller awaits something else, for instance a
    /// write of its own that queues behind it) holds the gate until it is
    /// polled again, and a wait without a bound would then never end.
    /// Such a write fails with [`StoreError::Unavailable`] instead, which
    /// lets the caller go on (and poll the write that holds the gate).
    pub(crate) async fn write(&self) -> Result<WriteTx, StoreError> {
        let wait = Duration::from_millis(self.inner.config.busy_timeout_ms);
        let gate = tokio::time::timeout(wait, Arc::clone(&self.inner.gate).lock_owned())
            .await
            .map_err(|_| StoreError::Unavailable {
                message: format!(
                    "sqlite begin a write: another write of this process held the write turn for longer than `busy_timeout_ms` ({} ms); a caller must keep polling a store call it started while it waits for another (try again, or raise `busy_timeout_ms`)",
                    self.inner.config.busy_timeout_ms
                ),
            })?;
        let tx = self
            .inner
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .db("begin a write")?;
        Ok(WriteTx {
            tx,
            _gate: gate,
            commits: Arc::clone(&self.inner.commits),
        })
    }

    /// How many write transactions this backend (and its clones) committed
    /// since it was opened: each store write is one, and so is a turn's
    /// start and a turn's end (a figure to watch: what an Agent turn
    /// costs the file's one writer).
    pub fn write_commits(&self) -> u64 {
        self.inner.commits.load(Ordering::Relaxed)
    }

    /// Closes the pool (what is committed is on disk); later operations
    /// fail with [`StoreError::Unavailable`].
    pub async fn close(&self) {
        self.inner.pool.close().await;
    }

    /// Registers an event follower of `task_id`: the returned guard holds
    /// the [`Notify`] that appends to that task wake.
    pub(crate) fn watch(&self, task_id: &str) -> Watch {
        let mut watchers = self
            .inner
            .watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (notify, count) = watchers
            .entry(task_id.to_owned())
            .or_insert_with(|| (Arc::new(Notify::new()), 0));
        *count += 1;
        Watch {
            backend: self.clone(),
            task_id: task_id.to_owned(),
            notify: Arc::clone(notify),
        }
    }

    /// Wakes this process's followers of `task_id`.
    pub(crate) fn wake(&self, task_id: &str) {
        let watchers = self
            .inner
            .watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((notify, _)) = watchers.get(task_id) {
            notify.notify_waiters();
        }
    }

    /// How long a follower waits for a wake-up before it looks again.
    pub(crate) fn follow_poll(&self) -> Duration {
        Duration::from_millis(self.inner.config.follow_poll_ms.max(10))
    }

    fn start_prune(&self) {
        let Some(every) = self.inner.config.prune_interval() else {
            return;
        };
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let backend = SqliteBackend { inner };
                if let Err(error) = backend.prune().await {
                    tracing::warn!(%error, "the prune of expired SQLite rows failed; it runs again at the next interval");
                }
            }
        });
    }

    /// Deletes what expired, in batches of at most `prune_batch` rows per
    /// statement and transaction (other writes get their turn between
    /// them): checkpoints past `task_ttl_secs`; conversations whose last
    /// write is past `ttl_secs` and that no turn holds; task rows past
    /// `ttl_secs`; expired cache entries and free leases that ran out.
    pub async fn prune(&self) -> Result<Pruned, StoreError> {
        self.prune_at(Utc::now()).await
    }

    /// [`prune`](Self::prune) as if the time were `now` (tests).
    pub async fn prune_at(&self, now: DateTime<Utc>) -> Result<Pruned, StoreError> {
        let now_ms = now.timestamp_millis();
        let batch = i64::from(self.inner.config.prune_batch.max(1));
        let mut pruned = Pruned::default();
        if let Some(ttl) = self.inner.config.task_ttl() {
            let cutoff = now_ms - millis(ttl);
            pruned.checkpoints += self
                .prune_loop(
                    "DELETE FROM checkpoints WHERE rowid IN (SELECT rowid FROM checkpoints WHERE saved_ms < ?1 LIMIT ?2)",
                    cutoff,
                    batch,
                )
                .await?;
        }
        if let Some(ttl) = self.inner.config.ttl() {
            let cutoff = now_ms - millis(ttl);
            pruned.conversations += self.prune_conversations(cutoff, batch).await?;
            for sql in [
                "DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE task_id IN (SELECT task_id FROM events GROUP BY task_id HAVING MAX(appended_ms) < ?1) LIMIT ?2)",
                "DELETE FROM task_records WHERE rowid IN (SELECT rowid FROM task_records WHERE touched_ms < ?1 LIMIT ?2)",
                "DELETE FROM cancel_flags WHERE rowid IN (SELECT rowid FROM cancel_flags WHERE raised_ms < ?1 LIMIT ?2)",
                "DELETE FROM push_configs WHERE (task_id, id) IN (SELECT task_id, id FROM push_configs WHERE touched_ms < ?1 LIMIT ?2)",
                "DELETE FROM execution_records WHERE rowid IN (SELECT rowid FROM execution_records WHERE started_ms < ?1 LIMIT ?2)",
            ] {
                pruned.task_rows += self.prune_loop(sql, cutoff, batch).await?;
            }
        }
        for sql in [
            "DELETE FROM cache_entries WHERE key IN (SELECT key FROM cache_entries WHERE expires_ms <= ?1 LIMIT ?2)",
            "DELETE FROM leases WHERE rowid IN (SELECT rowid FROM leases WHERE task_id IS NULL AND expires_ms <= ?1 LIMIT ?2)",
        ] {
            pruned.expired += self.prune_loop(sql, now_ms, batch).await?;
        }
        Ok(pruned)
    }

    /// Runs one bounded delete until it deletes less than a batch.
    async fn prune_loop(
        &self,
        sql: &'static str,
        cutoff: i64,
        batch: i64,
    ) -> Result<u64, StoreError> {
        let mut total = 0;
        loop {
            let mut tx = self.write().await?;
            let done = sqlx::query(sql)
                .bind(cutoff)
                .bind(batch)
                .execute(tx.conn())
                .await
                .db("prune")?
                .rows_affected();
            tx.commit().await?;
            total += done;
            if done < batch as u64 {
                return Ok(total);
            }
            tokio::task::yield_now().await;
        }
    }

    /// Deletes ended conversations whose history, artifacts and state were
    /// last written before `cutoff`, a batch of conversations per
    /// transaction.
    async fn prune_conversations(&self, cutoff: i64, batch: i64) -> Result<u64, StoreError> {
        let mut total = 0;
        loop {
            let mut tx = self.write().await?;
            let contexts: Vec<String> = sqlx::query(
                "SELECT context_id FROM (
                     SELECT context_id, MAX(touched_ms) AS touched FROM (
                         SELECT context_id, touched_ms FROM histories
                         UNION ALL SELECT context_id, touched_ms FROM artifacts
                         UNION ALL SELECT context_id, touched_ms FROM agent_states
                     ) GROUP BY context_id
                 ) WHERE touched < ?1
                   AND context_id NOT IN (SELECT context_id FROM leases)
                 LIMIT ?2",
            )
            .bind(cutoff)
            .bind(batch)
            .fetch_all(tx.conn())
            .await
            .db("prune conversations")?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()
            .db("prune conversations")?;
            for context in &contexts {
                for sql in [
                    "DELETE FROM messages WHERE context_id = ?",
                    "DELETE FROM histories WHERE context_id = ?",
                    "DELETE FROM artifacts WHERE context_id = ?",
                    "DELETE FROM agent_states WHERE context_id = ?",
                ] {
                    sqlx::query(sql)
                        .bind(context)
                        .execute(tx.conn())
                        .await
                        .db("prune conversations")?;
                }
            }
            tx.commit().await?;
            total += contexts.len() as u64;
            if (contexts.len() as i64) < batch {
                return Ok(total);
            }
            tokio::task::yield_now().await;
        }
    }
}

/// A registered event follower (see [`SqliteBackend::watch`]); unregisters
/// when dropped.
pub(crate) struct Watch {
    backend: SqliteBackend,
    task_id: String,
    pub(crate) notify: Arc<Notify>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut watchers = self
            .backend
            .inner
            .watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((_, count)) = watchers.get_mut(&self.task_id) {
            *count -= 1;
            if *count == 0 {
                watchers.remove(&self.task_id);
            }
        }
    }
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The current time in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// A timestamp in Unix nanoseconds, saturating outside 1677..2262.
pub(crate) fn nanos(at: DateTime<Utc>) -> i64 {
    at.timestamp_nanos_opt().unwrap_or(if at.timestamp() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}
