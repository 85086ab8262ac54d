//! [`RedisBackend`]: the connection pool the stores share.
//!
//! deadpool-redis opens the connections (with the connect timeout) and
//! bounds their number. Its connections are multiplexed (any number of
//! commands in flight on one socket), and checking one out of the pool costs
//! a `PING` round trip, so the backend keeps up to `pool_size` of them
//! checked out and hands commands to them in turn: an operation costs its
//! own round trips and no more. A connection that fails at the connection
//! level is detached from the pool (and so closed); when one fails, all are
//! dropped, since they usually fail together (the server went away), and
//! the next command checks fresh ones out of the pool, which reconnects.
//!
//! Operations that are safe to repeat (reads, whole replacements, leases)
//! are retried once on a fresh connection after a connection failure;
//! appends are not (a batch whose reply was lost may have landed), and
//! report [`StoreError::Unavailable`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use deadpool_redis::{Manager, Pool, Runtime};
use looopy_core::StoreError;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, FromRedisValue, Pipeline, RedisError, ScriptInvocation};
use tokio::sync::Mutex;

use crate::config::RedisConfig;
use crate::error::{ConfigError, breaks_connection, from_create_pool, from_pool, from_redis};
use crate::keys::KeyLayout;

/// Whether an operation may be sent again after a connection failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Repeating it changes nothing (reads, replacements, compare-and-set).
    Safe,
    /// Repeating it could apply it twice (appends).
    Never,
}

struct Inner {
    pool: Pool,
    slots: Vec<Mutex<Option<deadpool_redis::Connection>>>,
    next: AtomicUsize,
    client: redis::Client,
    config: RedisConfig,
    keys: KeyLayout,
}

/// A Redis connection pool with the stores' settings. Cheap to clone; every
/// store made from one backend shares its connections.
#[derive(Clone)]
pub struct RedisBackend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("key_prefix", &self.inner.config.key_prefix)
            .field("pool_size", &self.inner.config.pool_size)
            .finish_non_exhaustive()
    }
}

impl RedisBackend {
    /// A backend for `config`; connects lazily (nothing is sent yet).
    pub fn new(config: RedisConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let bad_url = |e: RedisError| ConfigError::Connection {
            message: format!("{}: {e}", config.url),
        };
        let manager = Manager::new_with_config(config.url.as_str(), connection_config(&config))
            .map_err(bad_url)?;
        let client = redis::Client::open(config.url.as_str()).map_err(bad_url)?;
        let pool = Pool::builder(manager)
            .max_size(config.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(config.connect_timeout()))
            .create_timeout(Some(config.connect_timeout()))
            .recycle_timeout(Some(config.response_timeout()))
            .build()
            .map_err(|e| from_create_pool(deadpool_redis::CreatePoolError::Build(e)))?;
        let slots = (0..config.pool_size).map(|_| Mutex::new(None)).collect();
        Ok(RedisBackend {
            inner: Arc::new(Inner {
                pool,
                slots,
                next: AtomicUsize::new(0),
                client,
                keys: KeyLayout::new(config.key_prefix.clone()),
                config,
            }),
        })
    }

    /// A backend for `config` that answered a `PING`.
    pub async fn connect(config: RedisConfig) -> Result<Self, StoreError> {
        let backend = Self::new(config)?;
        backend.ping().await?;
        Ok(backend)
    }

    /// Sends `PING`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let _: String = self.query(&redis::cmd("PING"), Retry::Safe).await?;
        Ok(())
    }

    /// The settings.
    pub fn config(&self) -> &RedisConfig {
        &self.inner.config
    }

    /// The key names.
    pub fn keys(&self) -> &KeyLayout {
        &self.inner.keys
    }

    /// A connection of its own, outside the pool, whose replies may take
    /// `extra` longer than the response timeout (for blocking reads).
    pub(crate) async fn dedicated(
        &self,
        extra: std::time::Duration,
    ) -> Result<MultiplexedConnection, StoreError> {
        let config = connection_config(&self.inner.config)
            .set_response_timeout(Some(self.inner.config.response_timeout() + extra));
        self.inner
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(from_redis)
    }

    /// A connection from the next slot, checked out of the pool when the
    /// slot is empty.
    async fn connection(&self) -> Result<MultiplexedConnection, StoreError> {
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed) % self.inner.slots.len();
        let mut slot = self.inner.slots[n].lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok((**conn).clone());
        }
        let conn = self.inner.pool.get().await.map_err(from_pool)?;
        let multiplexed = (*conn).clone();
        *slot = Some(conn);
        Ok(multiplexed)
    }

    /// Forgets every held connection (after a connection failure).
    async fn drop_connections(&self) {
        for slot in &self.inner.slots {
            if let Some(conn) = slot.lock().await.take() {
                // Detached from the pool, so that it is not handed out again.
                drop(deadpool_redis::Connection::take(conn));
            }
        }
    }

    async fn run<T, F, Fut>(&self, retry: Retry, mut op: F) -> Result<T, StoreError>
    where
        F: FnMut(MultiplexedConnection) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let conn = self.connection().await?;
            match op(conn).await {
                Ok(value) => return Ok(value),
                Err(e) if breaks_connection(&e) => {
                    self.drop_connections().await;
                    if retry == Retry::Never || attempts >= 2 {
                        return Err(from_redis(e));
                    }
                    tracing::debug!(error = %e, "redis connection failed; retrying once");
                }
                Err(e) => return Err(from_redis(e)),
            }
        }
    }

    /// Runs one command.
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        retry: Retry,
    ) -> Result<T, StoreError> {
        self.run(
            retry,
            |mut conn| async move { cmd.query_async(&mut conn).await },
        )
        .await
    }

    /// Runs a pipeline (atomic when built with `.atomic()`): one round trip.
    pub(crate) async fn pipe<T: FromRedisValue>(
        &self,
        pipe: &Pipeline,
        retry: Retry,
    ) -> Result<T, StoreError> {
        self.run(retry, |mut conn| async move {
            pipe.query_async(&mut conn).await
        })
        .await
    }

    /// Runs a script (`EVALSHA`, loading it first when the server lacks it).
    pub(crate) async fn script<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
        retry: Retry,
    ) -> Result<T, StoreError> {
        self.run(retry, |mut conn| async move {
            invocation.invoke_async(&mut conn).await
        })
        .await
    }

    /// A TTL in milliseconds for scripts (0: none).
    pub(crate) fn ttl_ms(&self) -> u64 {
        ttl_ms(self.inner.config.ttl())
    }

    /// The checkpoint TTL in milliseconds (0: none).
    pub(crate) fn task_ttl_ms(&self) -> u64 {
        ttl_ms(self.inner.config.task_ttl())
    }
}

fn ttl_ms(ttl: Option<std::time::Duration>) -> u64 {
    ttl.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn connection_config(config: &RedisConfig) -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(config.connect_timeout()))
        .set_response_timeout(Some(config.response_timeout()))
}
