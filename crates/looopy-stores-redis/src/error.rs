//! How Redis and pool failures become [`StoreError`]s, and configuration
//! errors.

use deadpool_redis::PoolError;
use looopy_core::StoreError;
use redis::{ErrorKind, RedisError, ServerErrorKind};

/// A [`RedisConfig`](crate::RedisConfig) that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The key prefix is empty or contains `{` or `}` (which would break the
    /// hash tags of every key).
    #[error(
        "invalid key prefix `{prefix}`: it must be non-empty and contain neither `{{` nor `}}`"
    )]
    KeyPrefix {
        /// The prefix.
        prefix: String,
    },
    /// The pool must hold at least one connection.
    #[error("pool_size must be at least 1")]
    PoolSize,
    /// The URL could not be parsed, or the pool could not be built.
    #[error("invalid Redis configuration: {message}")]
    Connection {
        /// What was wrong.
        message: String,
    },
}

impl From<ConfigError> for StoreError {
    fn from(e: ConfigError) -> Self {
        StoreError::Backend {
            message: e.to_string(),
        }
    }
}

/// Whether a Redis error means "the server is not reachable right now"
/// (as opposed to a bug or bad data).
pub(crate) fn is_unavailable(e: &RedisError) -> bool {
    if e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
        || e.is_cluster_error()
    {
        return true;
    }
    matches!(
        e.kind(),
        ErrorKind::Server(ServerErrorKind::BusyLoading)
            | ErrorKind::Server(ServerErrorKind::MasterDown)
            | ErrorKind::Server(ServerErrorKind::ReadOnly)
            | ErrorKind::ClusterConnectionNotFound
    ) || matches!(e.code(), Some("OOM" | "BUSY" | "MISCONF"))
}

/// Whether the connection that returned `e` should be replaced.
pub(crate) fn breaks_connection(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
}

/// A Redis error as a [`StoreError`].
pub(crate) fn from_redis(e: RedisError) -> StoreError {
    if is_unavailable(&e) {
        StoreError::Unavailable {
            message: format!("redis: {e}"),
        }
    } else {
        StoreError::Backend {
            message: format!("redis: {e}"),
        }
    }
}

/// A pool error as a [`StoreError`]: every way of not getting a connection
/// is [`StoreError::Unavailable`].
pub(crate) fn from_pool(e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => from_redis(e),
        other => StoreError::Unavailable {
            message: format!("redis pool: {other}"),
        },
    }
}

/// Stored data that does not parse.
pub(crate) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Serialization {
        message: what.to_string(),
    }
}
