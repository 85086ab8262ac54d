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
//! On a Redis Cluster (`cluster_urls`), the pool holds cluster connections
//! instead (each reaches every master and follows `MOVED` / `ASK`
//! redirections); the stores do not know which mode they run in (see
//! [`Connection`]).
//!
//! Operations that are safe to repeat (reads, whole replacements, leases)
//! are retried once on a fresh connection after a connection failure;
//! appends are not (a batch whose reply was lost may have landed), and
//! report [`StoreError::Unavailable`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use deadpool_redis::{Manager, Pool, Runtime, cluster};
use looopy_core::StoreError;
use redis::cluster::ClusterClientBuilder;
use redis::{AsyncConnectionConfig, Cmd, FromRedisValue, Pipeline, RedisError, ScriptInvocation};
use tokio::sync::Mutex;

use crate::config::RedisConfig;
use crate::connection::Connection;
use crate::error::{ConfigError, breaks_connection, from_pool, from_redis};
use crate::keys::KeyLayout;

/// Whether an operation may be sent again after a connection failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Repeating it changes nothing (reads, replacements, compare-and-set).
    Safe,
    /// Repeating it could apply it twice (appends).
    Never,
}

/// The pool of one server or of a cluster.
enum Pools {
    Single {
        pool: Pool,
        /// For connections outside the pool (boxed: large with TLS).
        client: Box<redis::Client>,
    },
    Cluster(cluster::Pool),
}

/// A connection checked out of the pool.
enum Held {
    Single(deadpool_redis::Connection),
    Cluster(cluster::Connection),
}

impl Held {
    fn connection(&self, config: &RedisConfig) -> Connection {
        match self {
            Held::Single(conn) => Connection::Single((**conn).clone()),
            Held::Cluster(conn) => Connection::Cluster((**conn).clone(), config.response_timeout()),
        }
    }

    /// Takes it out of its pool for good (and so closes it once dropped).
    fn detach(self) {
        match self {
            Held::Single(conn) => drop(deadpool_redis::Connection::take(conn)),
            Held::Cluster(conn) => drop(cluster::Connection::take(conn)),
        }
    }
}

struct Inner {
    pools: Pools,
    slots: Vec<Mutex<Option<Held>>>,
    next: AtomicUsize,
    config: RedisConfig,
    keys: KeyLayout,
    suspects: crate::suspects::Suspects,
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
            .field("cluster", &self.inner.config.is_cluster())
            .finish_non_exhaustive()
    }
}

impl RedisBackend {
    /// A backend for `config`; connects lazily (nothing is sent yet).
    pub fn new(config: RedisConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let pools = if config.is_cluster() {
            cluster_pool(&config)?
        } else {
            single_pool(&config)?
        };
        let slots = (0..config.pool_size).map(|_| Mutex::new(None)).collect();
        Ok(RedisBackend {
            inner: Arc::new(Inner {
                pools,
                slots,
                next: AtomicUsize::new(0),
                keys: KeyLayout::new(config.key_prefix.clone()),
                config,
                suspects: crate::suspects::Suspects::default(),
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

    /// The index entries listings found without a value.
    pub(crate) fn suspects(&self) -> &crate::suspects::Suspects {
        &self.inner.suspects
    }

    /// The key names.
    pub fn keys(&self) -> &KeyLayout {
        &self.inner.keys
    }

    /// Whether the backend runs on a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.inner.config.is_cluster()
    }

    /// A connection of its own, outside the pool, whose replies may take
    /// `extra` longer than the response timeout (for blocking reads). On a
    /// cluster this is a cluster connection of its own (it opens a socket to
    /// each master it sends to).
    pub(crate) async fn dedicated(&self, extra: Duration) -> Result<Connection, StoreError> {
        let config = &self.inner.config;
        let limit = config.response_timeout() + extra;
        match &self.inner.pools {
            Pools::Single { client, .. } => {
                let settings = connection_config(config).set_response_timeout(Some(limit));
                client
                    .get_multiplexed_async_connection_with_config(&settings)
                    .await
                    .map(Connection::Single)
                    .map_err(from_redis)
            }
            Pools::Cluster(_) => {
                let client =
                    ClusterClientBuilder::new(config.cluster_urls.iter().map(String::as_str))
                        .connection_timeout(config.connect_timeout())
                        .response_timeout(limit)
                        .build()
                        .map_err(from_redis)?;
                let conn = tokio::time::timeout(
                    config.connect_timeout() + config.response_timeout(),
                    client.get_async_connection(),
                )
                .await
                .map_err(|_| StoreError::Unavailable {
                    message: "redis cluster: no connection in time".into(),
                })?
                .map_err(from_redis)?;
                Ok(Connection::Cluster(conn, limit))
            }
        }
    }

    /// A connection from the next slot, checked out of the pool when the
    /// slot is empty.
    async fn connection(&self) -> Result<Connection, StoreError> {
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed) % self.inner.slots.len();
        let mut slot = self.inner.slots[n].lock().await;
        if let Some(held) = slot.as_ref() {
            return Ok(held.connection(&self.inner.config));
        }
        let held = match &self.inner.pools {
            Pools::Single { pool, .. } => Held::Single(pool.get().await.map_err(from_pool)?),
            Pools::Cluster(pool) => Held::Cluster(pool.get().await.map_err(from_pool)?),
        };
        let conn = held.connection(&self.inner.config);
        *slot = Some(held);
        Ok(conn)
    }

    /// Forgets every held connection (after a connection failure).
    async fn drop_connections(&self) {
        for slot in &self.inner.slots {
            if let Some(held) = slot.lock().await.take() {
                // Detached from the pool, so that it is not handed out again.
                held.detach();
            }
        }
    }

    async fn run<T, F, Fut>(&self, retry: Retry, mut op: F) -> Result<T, StoreError>
    where
        F: FnMut(Connection) -> Fut,
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

fn bad_url(url: &str, e: RedisError) -> ConfigError {
    ConfigError::Connection {
        message: format!("{url}: {e}"),
    }
}

fn single_pool(config: &RedisConfig) -> Result<Pools, ConfigError> {
    let url = config.url.as_str();
    let manager =
        Manager::new_with_config(url, connection_config(config)).map_err(|e| bad_url(url, e))?;
    let client = redis::Client::open(url).map_err(|e| bad_url(url, e))?;
    let pool = Pool::builder(manager)
        .max_size(config.pool_size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(config.connect_timeout()))
        .create_timeout(Some(config.connect_timeout()))
        .recycle_timeout(Some(config.response_timeout()))
        .build()
        .map_err(|e| ConfigError::Connection {
            message: e.to_string(),
        })?;
    Ok(Pools::Single {
        pool,
        client: Box::new(client),
    })
}

/// deadpool-redis' cluster manager takes no timeouts: the pool bounds
/// opening a connection, [`Connection`] bounds waiting for each reply.
fn cluster_pool(config: &RedisConfig) -> Result<Pools, ConfigError> {
    let urls = config.cluster_urls.iter().map(String::as_str).collect();
    let manager = cluster::Manager::new(urls, false)
        .map_err(|e| bad_url(&config.cluster_urls.join(","), e))?;
    // Opening a cluster connection asks a node for the slots, then connects
    // to the masters.
    let open = config.connect_timeout() + config.response_timeout();
    let pool = cluster::Pool::builder(manager)
        .max_size(config.pool_size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(open))
        .create_timeout(Some(open))
        .recycle_timeout(Some(config.response_timeout()))
        .build()
        .map_err(|e| ConfigError::Connection {
            message: e.to_string(),
        })?;
    Ok(Pools::Cluster(pool))
}

fn connection_config(config: &RedisConfig) -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(config.connect_timeout()))
        .set_response_timeout(Some(config.response_timeout()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn rediss_urls_need_the_tls_feature() {
        let single = RedisBackend::new(RedisConfig::new("rediss://localhost:6380"));
        let cluster = RedisBackend::new(RedisConfig::cluster([
            "rediss://localhost:7000",
            "rediss://localhost:7001",
        ]));
        if cfg!(feature = "tls") {
            assert!(single.is_ok(), "{single:?}");
            assert!(cluster.is_ok_and(|b| b.is_cluster()));
        } else {
            assert!(
                matches!(single, Err(ConfigError::Connection { .. })),
                "{single:?}"
            );
            assert!(cluster.is_err());
        }
        assert!(RedisBackend::new(RedisConfig::new("redis://localhost:6379")).is_ok());
    }
}
