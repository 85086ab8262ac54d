//! [`PostgresConfig`]: where PostgreSQL is and how the stores use it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::PostgresError;

/// Settings of the PostgreSQL stores. Every field has a default, so a TOML
/// table needs only what differs:
///
/// ```toml
/// url = "postgres://looopy:secret@db.internal:5432/agents"
/// pool_size = 16
/// schema = "looopy"          # every table lives in this schema
/// task_ttl_secs = 86400      # checkpoints go a day after their last save (0: never)
/// ttl_secs = 0               # conversations, task records, events: kept forever (the default)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PostgresConfig {
    /// `postgres://[user[:password]@]host[:port]/database[?sslmode=require]`.
    /// TLS (`sslmode=require` / `verify-full`) goes through rustls.
    pub url: String,
    /// Connections the pool keeps open at most (one more is held by the
    /// event followers' `LISTEN`).
    pub pool_size: u32,
    /// The schema that holds the tables (created when missing). Lower-case
    /// letters, digits and `_`, starting with a letter or `_`, at most 40
    /// characters. Stores in different schemas of one database are apart.
    pub schema: String,
    /// Lifetime of a checkpoint after its last save, in seconds; 0: none.
    pub task_ttl_secs: u64,
    /// Lifetime of a conversation (history, artifacts, agent state), a task
    /// record, an event log and push configs after their last write, in
    /// seconds; 0: none. A conversation whose turn holds its lease is kept.
    pub ttl_secs: u64,
    /// How often the prune of expired rows runs, in seconds; 0: never in
    /// the background (call [`PostgresBackend::prune`](crate::PostgresBackend::prune)).
    pub prune_interval_secs: u64,
    /// Rows (or conversations) one prune statement deletes at most, so that
    /// a prune never holds long locks.
    pub prune_batch: u32,
    /// Limit on opening a connection, in milliseconds.
    pub connect_timeout_ms: u64,
    /// How long an operation is tried again while the server cannot be
    /// reached, in milliseconds, before it fails with
    /// `StoreError::Unavailable`.
    pub retry_budget_ms: u64,
    /// How long an event follower waits for a notification before it reads
    /// the log again anyway, in milliseconds.
    pub follow_poll_ms: u64,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig {
            url: "postgres://postgres@127.0.0.1:5432/postgres".into(),
            pool_size: 8,
            schema: "looopy".into(),
            task_ttl_secs: 24 * 60 * 60,
            ttl_secs: 0,
            prune_interval_secs: 60,
            prune_batch: 500,
            connect_timeout_ms: 3_000,
            retry_budget_ms: 5_000,
            follow_poll_ms: 1_000,
        }
    }
}

fn secs(n: u64) -> Option<Duration> {
    (n > 0).then(|| Duration::from_secs(n))
}

impl PostgresConfig {
    /// The defaults with another URL.
    pub fn new(url: impl Into<String>) -> Self {
        PostgresConfig {
            url: url.into(),
            ..Self::default()
        }
    }

    /// With another schema.
    #[must_use]
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// With another pool size.
    #[must_use]
    pub fn with_pool_size(mut self, pool_size: u32) -> Self {
        self.pool_size = pool_size;
        self
    }

    /// With another retention: checkpoints and everything else, in seconds
    /// (0: kept).
    #[must_use]
    pub fn with_retention(mut self, task_ttl_secs: u64, ttl_secs: u64) -> Self {
        self.task_ttl_secs = task_ttl_secs;
        self.ttl_secs = ttl_secs;
        self
    }

    /// With another retry budget, in milliseconds.
    #[must_use]
    pub fn with_retry_budget_ms(mut self, ms: u64) -> Self {
        self.retry_budget_ms = ms;
        self
    }

    /// With another background prune interval, in seconds (0: none).
    #[must_use]
    pub fn with_prune_interval_secs(mut self, secs: u64) -> Self {
        self.prune_interval_secs = secs;
        self
    }

    /// The checkpoint lifetime.
    pub fn task_ttl(&self) -> Option<Duration> {
        secs(self.task_ttl_secs)
    }

    /// The lifetime of everything else.
    pub fn ttl(&self) -> Option<Duration> {
        secs(self.ttl_secs)
    }

    /// The background prune's interval.
    pub fn prune_interval(&self) -> Option<Duration> {
        secs(self.prune_interval_secs)
    }

    /// The connect limit.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms.max(1))
    }

    /// The retry budget.
    pub fn retry_budget(&self) -> Duration {
        Duration::from_millis(self.retry_budget_ms)
    }

    /// The follower's poll interval.
    pub fn follow_poll(&self) -> Duration {
        Duration::from_millis(self.follow_poll_ms.max(10))
    }

    /// Checks what can be checked without a server.
    pub fn validate(&self) -> Result<(), PostgresError> {
        let s = &self.schema;
        let starts_well = s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
        let rest_well = s
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !starts_well || !rest_well || s.len() > 40 || s.starts_with("pg_") {
            return Err(PostgresError::Schema { schema: s.clone() });
        }
        if !(self.url.starts_with("postgres://") || self.url.starts_with("postgresql://")) {
            return Err(PostgresError::NotPostgres {
                url: redacted(&self.url),
            });
        }
        if self.pool_size == 0 {
            return Err(PostgresError::PoolSize);
        }
        if self.prune_batch == 0 {
            return Err(PostgresError::PruneBatch);
        }
        Ok(())
    }
}

/// The URL with its password hidden, for messages.
pub(crate) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
