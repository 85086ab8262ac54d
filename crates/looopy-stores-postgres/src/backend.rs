//! [`PostgresBackend`]: the connection pool the stores share, the retry
//! rule, the `LISTEN` connection of the event followers and the
//! background prune.
//!
//! Round trips: sqlx pings a connection before the pool lends it and
//! again when it is given back, a round trip each beside the operation's
//! own. The operations of an Agent turn (its start, its end, the
//! checkpoint saves) avoid both: they take their connection with
//! [`PostgresBackend::lend`], which keeps it out of the pool ("parked", at
//! most half the pool) after a success, for the next such operation, and
//! gives it back to the pool after a failure (pinged there, closed when
//! broken). So each of a turn's operations is one round trip. A parked
//! connection is not checked before it is lent again; to keep dead ones
//! from being lent, every parked connection goes back to the pool when an
//! operation fails for want of the server and when the `LISTEN`
//! connection (which waits on the server all the time) is lost, and one
//! parked longer than [`PARKED_FOR`] goes back when next looked for, or
//! by a sweep every [`PARKED_FOR`]. Other operations keep the pool's
//! checks: one that must not be repeated (an append) then never goes to a
//! connection that died while idle.
//!
//! Operations that are safe to repeat (reads, whole replacements,
//! compare-and-set, leases) are tried again while the server cannot be
//! reached, with a growing pause, until the retry budget is spent; then
//! they fail with [`StoreError::Unavailable`]. Appends are tried again only
//! when nothing reached the server (no connection could be had): a batch
//! whose reply was lost may have landed, and must not land twice.

use std::ops::{Deref, DerefMut};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use looopy_core::StoreError;
use sqlx::Postgres;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::config::{PostgresConfig, redacted};
use crate::error::{PostgresError, from_sqlx, is_unavailable, sent_nothing};
use crate::migrate;
use crate::prune::{self, PruneReport};

/// Whether an operation may be sent again after a connection failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Repeating it changes nothing (reads, replacements, compare-and-set).
    Safe,
    /// Repeating it could apply it twice (appends): only when nothing was sent.
    Never,
}

/// Aborts a background task when the backend is dropped.
struct Background(JoinHandle<()>);

impl Drop for Background {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How long a parked connection may wait for its next operation; one
/// parked longer goes back to the pool (which checks it and applies its
/// idle and lifetime limits).
pub(crate) const PARKED_FOR: Duration = Duration::from_secs(30);

/// Connections kept checked out of the pool between the operations that
/// [`PostgresBackend::lend`] serves, with when each was parked (the most
/// recent last).
struct Parked {
    conns: Mutex<Vec<(PoolConnection<Postgres>, Instant)>>,
    cap: usize,
}

impl Parked {
    /// The most recently parked connection still fresh; the stale ones
    /// are given back to the pool.
    fn take(&self) -> Option<PoolConnection<Postgres>> {
        let (fresh, stale) = {
            let Ok(mut conns) = self.conns.lock() else {
                return None;
            };
            let stale = self.stale(&mut conns);
            (conns.pop().map(|(conn, _)| conn), stale)
        };
        drop(stale);
        fresh
    }

    /// Parks `conn`, or gives it back to the pool when enough are parked.
    fn put(&self, conn: PoolConnection<Postgres>) {
        if let Ok(mut conns) = self.conns.lock()
            && conns.len() < self.cap
        {
            conns.push((conn, Instant::now()));
        }
    }

    /// Takes out the connections parked longer than [`PARKED_FOR`].
    fn stale(
        &self,
        conns: &mut Vec<(PoolConnection<Postgres>, Instant)>,
    ) -> Vec<(PoolConnection<Postgres>, Instant)> {
        let fresh_from = conns.partition_point(|(_, at)| at.elapsed() > PARKED_FOR);
        conns.drain(..fresh_from).collect()
    }

    /// Gives every parked connection back to the pool (after a connection
    /// failure: the others may be dead too).
    fn clear(&self) {
        let all = match self.conns.lock() {
            Ok(mut conns) => std::mem::take(&mut *conns),
            Err(_) => return,
        };
        drop(all);
    }

    /// Gives the stale connections back to the pool.
    fn sweep(&self) {
        let stale = match self.conns.lock() {
            Ok(mut conns) => self.stale(&mut conns),
            Err(_) => return,
        };
        drop(stale);
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        let conns = match self.conns.get_mut() {
            Ok(conns) => std::mem::take(conns),
            Err(_) => return,
        };
        // Given back to the pool takes a task; without a runtime, closed.
        if tokio::runtime::Handle::try_current().is_err() {
            for (conn, _) in conns {
                drop(conn.detach());
            }
        }
    }
}

/// A connection lent by [`PostgresBackend::lend`]: parked again by
/// [`Lent::park`] after its operation succeeded, given back to the pool
/// when dropped otherwise.
pub(crate) struct Lent<'a> {
    conn: Option<PoolConnection<Postgres>>,
    parked: &'a Parked,
}

impl Lent<'_> {
    /// The operation succeeded: the connection waits for the next one.
    pub(crate) fn park(mut self) {
        if let Some(conn) = self.conn.take() {
            self.parked.put(conn);
        }
    }
}

impl Deref for Lent<'_> {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.conn
            .as_deref()
            .expect("a lent connection until parked")
    }
}

impl DerefMut for Lent<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn
            .as_deref_mut()
            .expect("a lent connection until parked")
    }
}

struct Inner {
    pool: PgPool,
    parked: Parked,
    config: PostgresConfig,
    channel: String,
    wakeups: broadcast::Sender<Arc<str>>,
    background: std::sync::Mutex<Vec<Background>>,
}

/// A PostgreSQL pool with the stores' settings, on a migrated schema.
/// Cheap to clone; every store made from one backend shares its
/// connections.
#[derive(Clone)]
pub struct PostgresBackend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("schema", &self.inner.config.schema)
            .field("pool_size", &self.inner.config.pool_size)
            .finish_non_exhaustive()
    }
}

impl PostgresBackend {
    /// Connects, applies the schema's migrations (under an advisory lock,
    /// so that replicas starting together do not race) and starts the
    /// event followers' `LISTEN` and the background prune.
    ///
    /// Fails with [`PostgresError::Unreachable`] when the server does not
    /// answer within the connect timeout, and with
    /// [`PostgresError::SchemaTooNew`] on a database written by a newer
    /// Looopy.
    pub async fn connect(config: PostgresConfig) -> Result<Self, PostgresError> {
        config.validate()?;
        let url = redacted(&config.url);
        let options = PgConnectOptions::from_str(&config.url)
            .map_err(|source| PostgresError::Url {
                url: url.clone(),
                source,
            })?
            .application_name("looopy")
            .options([("search_path", config.schema.as_str())]);
        let pool = PgPoolOptions::new()
            .max_connections(config.pool_size)
            .acquire_timeout(config.connect_timeout())
            .connect_with(options.clone())
            .await
            .map_err(|source| PostgresError::Unreachable {
                url: url.clone(),
                source,
            })?;
        migrate::apply(&pool, &config.schema).await?;
        // The `LISTEN` connection lives in a pool of its own, so that it
        // never takes one of the stores' connections.
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(config.connect_timeout())
            .connect_lazy_with(options);
        let listener = PgListener::connect_with(&listen_pool)
            .await
            .map_err(|source| PostgresError::Unreachable { url, source })?;
        let (wakeups, _) = broadcast::channel(1024);
        let channel = format!("{}_events", config.schema);
        let backend = PostgresBackend {
            inner: Arc::new(Inner {
                pool,
                parked: Parked {
                    conns: Mutex::new(Vec::new()),
                    cap: usize::try_from(config.pool_size / 2).unwrap_or(0),
                },
                channel,
                wakeups,
                config,
                background: std::sync::Mutex::new(Vec::new()),
            }),
        };
        backend.start_listener(listener);
        backend.start_pruning();
        backend.start_sweeping();
        Ok(backend)
    }

    /// A connection for one operation of an Agent turn: a parked one when
    /// there is one, else one from the pool (see the module docs).
    pub(crate) async fn lend(&self) -> Result<Lent<'_>, sqlx::Error> {
        let conn = match self.inner.parked.take() {
            Some(conn) => conn,
            None => self.inner.pool.acquire().await?,
        };
        Ok(Lent {
            conn: Some(conn),
            parked: &self.inner.parked,
        })
    }

    /// The settings.
    pub fn config(&self) -> &PostgresConfig {
        &self.inner.config
    }

    /// The pool (for what the stores do not cover: reporting, backups).
    /// Up to half its connections may be parked for a turn's operations,
    /// kept out of it between them; they go back to it within a minute of
    /// their last use, or when the backend is dropped.
    pub fn pool(&self) -> &PgPool {
        &self.inner.pool
    }

    /// The notification channel of the event logs.
    pub(crate) fn channel(&self) -> &str {
        &self.inner.channel
    }

    /// Wake-ups of event followers: the id of each task an event was
    /// appended to (or `""` after the `LISTEN` connection came back, when
    /// notifications may have been missed).
    pub(crate) fn wakeups(&self) -> broadcast::Receiver<Arc<str>> {
        self.inner.wakeups.subscribe()
    }

    /// Deletes what outlived its retention, in bounded batches (what the
    /// background prune does every `prune_interval_secs`).
    pub async fn prune(&self) -> Result<PruneReport, StoreError> {
        let mut report = PruneReport::default();
        for step in prune::steps(self.task_ttl_ms(), self.ttl_ms()) {
            *(step.count)(&mut report) = self.delete_in_batches(step.sql, step.age_ms).await?;
        }
        Ok(report)
    }

    /// Deletes in batches with `sql` (bound to the age in milliseconds and
    /// the batch size) until a batch deletes less than a whole one, at most
    /// [`prune::MAX_BATCHES`] batches.
    async fn delete_in_batches(&self, sql: &'static str, age_ms: i64) -> Result<u64, StoreError> {
        let pool = self.pool();
        let batch = i64::from(self.inner.config.prune_batch);
        let mut deleted = 0;
        for _ in 0..prune::MAX_BATCHES {
            let done = self
                .run(Retry::Safe, || async move {
                    sqlx::query(sql)
                        .bind(age_ms)
                        .bind(batch)
                        .execute(pool)
                        .await
                })
                .await?
                .rows_affected();
            deleted += done;
            if done < u64::try_from(batch).unwrap_or(u64::MAX) {
                break;
            }
        }
        Ok(deleted)
    }

    fn keep(&self, task: JoinHandle<()>) {
        if let Ok(mut tasks) = self.inner.background.lock() {
            tasks.push(Background(task));
        }
    }

    fn start_listener(&self, mut listener: PgListener) {
        // A lost connection is reported at once, taken again here.
        listener.eager_reconnect(false);
        let wakeups = self.inner.wakeups.clone();
        let channel = self.inner.channel.clone();
        let weak = Arc::downgrade(&self.inner);
        // The `LISTEN` connection waits on the server all the time: when it
        // is lost, the server (or the way to it) went away, and the parked
        // connections are likely dead too.
        let lost = move || {
            if let Some(inner) = weak.upgrade() {
                inner.parked.clear();
            }
        };
        let task = tokio::spawn(async move {
            let mut listening = false;
            // Lost and not taken again yet.
            let mut dropped = false;
            loop {
                if !listening {
                    match listener.listen(&channel).await {
                        Ok(()) => listening = true,
                        Err(e) => {
                            tracing::warn!(error = %e, "postgres LISTEN failed; event followers poll until it works");
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            continue;
                        }
                    }
                }
                if dropped {
                    // Connects again, listening on the channel as before.
                    match listener.listen_all(std::iter::empty::<&str>()).await {
                        Ok(()) => {
                            dropped = false;
                            // What was sent meanwhile is lost.
                            let _ = wakeups.send(Arc::from(""));
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "postgres LISTEN connection lost; retrying");
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            continue;
                        }
                    }
                }
                match listener.try_recv().await {
                    Ok(Some(note)) => {
                        let _ = wakeups.send(Arc::from(note.payload()));
                    }
                    Ok(None) => {
                        lost();
                        dropped = true;
                    }
                    Err(e) => {
                        lost();
                        tracing::debug!(error = %e, "postgres LISTEN connection failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
        });
        self.keep(task);
    }

    fn start_pruning(&self) {
        let Some(every) = self.inner.config.prune_interval() else {
            return;
        };
        // The task holds no backend: a dropped backend stops it.
        let weak = Arc::downgrade(&self.inner);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let backend = PostgresBackend { inner };
                if let Err(e) = backend.prune().await {
                    tracing::warn!(error = %e, "postgres prune failed; trying again later");
                }
            }
        });
        self.keep(task);
    }

    fn start_sweeping(&self) {
        if self.inner.parked.cap == 0 {
            return;
        }
        // The task holds no backend: a dropped backend stops it.
        let weak = Arc::downgrade(&self.inner);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(PARKED_FOR);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                inner.parked.sweep();
            }
        });
        self.keep(task);
    }

    /// Runs `op`, trying again after a connection failure as `retry` allows
    /// within the retry budget.
    pub(crate) async fn run<T, F, Fut>(&self, retry: Retry, mut op: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, sqlx::Error>>,
    {
        let started = Instant::now();
        let budget = self.inner.config.retry_budget();
        let mut pause = Duration::from_millis(50);
        loop {
            match op().await {
                Ok(value) => return Ok(value),
                Err(e) => {
                    if is_unavailable(&e) {
                        self.inner.parked.clear();
                    }
                    let again = match retry {
                        Retry::Safe => is_unavailable(&e),
                        Retry::Never => sent_nothing(&e),
                    };
                    if !again || started.elapsed() + pause > budget {
                        return Err(from_sqlx(e));
                    }
                    tracing::debug!(error = %e, "postgres operation failed; trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// A checkpoint lifetime for queries, in milliseconds (0: none).
    pub(crate) fn task_ttl_ms(&self) -> i64 {
        ms(self.inner.config.task_ttl())
    }

    /// The lifetime of everything else, in milliseconds (0: none).
    pub(crate) fn ttl_ms(&self) -> i64 {
        ms(self.inner.config.ttl())
    }
}

fn ms(d: Option<Duration>) -> i64 {
    d.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A `Duration` in milliseconds for SQL.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A count or position for SQL.
pub(crate) fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A position read from SQL.
pub(crate) fn uint(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// A timestamp as the nanoseconds the listing columns hold.
pub(crate) fn nanos(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp_nanos_opt().unwrap_or(i64::MAX)
}

/// A fresh history epoch.
pub(crate) fn new_epoch() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
