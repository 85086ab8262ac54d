//! The crate's own errors, and how sqlx errors become [`StoreError`]s.

use looopy_core::StoreError;

/// Why the PostgreSQL stores could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The schema name cannot be used.
    #[error(
        "invalid schema `{schema}`: use lower-case letters, digits and `_`, starting with a letter or `_`, at most 40 characters, not `pg_…`"
    )]
    Schema {
        /// The name.
        schema: String,
    },
    /// The pool must hold at least one connection.
    #[error("pool_size must be at least 1")]
    PoolSize,
    /// A prune batch must delete something.
    #[error("prune_batch must be at least 1")]
    PruneBatch,
    /// The URL names another database.
    #[error("`{url}` is not a PostgreSQL URL: it must start with `postgres://` or `postgresql://`")]
    NotPostgres {
        /// The URL, password hidden.
        url: String,
    },
    /// The URL could not be parsed.
    #[error("invalid PostgreSQL URL `{url}`: {source}")]
    Url {
        /// The URL, password hidden.
        url: String,
        /// What was wrong.
        #[source]
        source: sqlx::Error,
    },
    /// The server did not answer.
    #[error(
        "PostgreSQL at `{url}` cannot be reached: {source}; check that the server runs and that the URL, user and password are right"
    )]
    Unreachable {
        /// The URL, password hidden.
        url: String,
        /// The connection error.
        #[source]
        source: sqlx::Error,
    },
    /// The database was written by a newer Looopy: its schema has
    /// migrations this build does not know, so reading it could misread it.
    #[error(
        "the schema `{schema}` is at version {found}, newer than the {supported} this build of Looopy knows; run a Looopy at least as new as the one that wrote it, or point `schema` elsewhere"
    )]
    SchemaTooNew {
        /// The schema.
        schema: String,
        /// The version the database has.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A migration failed (nothing of it was applied).
    #[error("migrating schema `{schema}` to version {version} failed: {source}")]
    Migration {
        /// The schema.
        schema: String,
        /// The migration.
        version: i64,
        /// The database's error.
        #[source]
        source: sqlx::Error,
    },
}

impl From<PostgresError> for StoreError {
    fn from(e: PostgresError) -> Self {
        match &e {
            PostgresError::Unreachable { .. } => StoreError::Unavailable {
                message: e.to_string(),
            },
            PostgresError::Migration { source, .. } if is_unavailable(source) => {
                StoreError::Unavailable {
                    message: e.to_string(),
                }
            }
            _ => StoreError::Backend {
                message: e.to_string(),
            },
        }
    }
}

/// Whether an error means "the server cannot be reached right now" (as
/// opposed to a bug or bad data): worth trying again.
pub(crate) fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // Connection exceptions, shutdown and start-up, too many
            // connections, serialization failures and deadlocks.
            code.starts_with("08")
                || code.starts_with("57P")
                || matches!(code.as_ref(), "53300" | "40001" | "40P01")
        }),
        _ => false,
    }
}

/// Whether nothing of the operation can have reached the server (no
/// connection was had): safe to repeat even a write that must not apply
/// twice.
pub(crate) fn sent_nothing(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => true,
        sqlx::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|code| matches!(code.as_ref(), "57P03" | "53300" | "40001" | "40P01")),
        _ => false,
    }
}

/// A sqlx error as a [`StoreError`].
pub(crate) fn from_sqlx(e: sqlx::Error) -> StoreError {
    if is_unavailable(&e) {
        return StoreError::Unavailable {
            message: format!(
                "PostgreSQL: {e}; check that the server runs and is reachable (the operation was tried again within the retry budget)"
            ),
        };
    }
    match e {
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => StoreError::Serialization {
            message: format!("PostgreSQL: {e}"),
        },
        other => StoreError::Backend {
            message: format!("PostgreSQL: {other}"),
        },
    }
}

/// A stored JSON value that does not read back.
pub(crate) fn bad_json(what: &str, e: serde_json::Error) -> StoreError {
    StoreError::Serialization {
        message: format!("stored {what} could not be read: {e}"),
    }
}
