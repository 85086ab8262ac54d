//! [`RedisConfig`]: where Redis is and how the stores use it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Settings of the Redis stores. Every field has a default, so a TOML table
/// needs only what differs:
///
/// ```toml
/// url = "redis://10.0.0.5:6379/0"
/// pool_size = 16
/// key_prefix = "myapp"
/// task_ttl_secs = 86400   # checkpoints live a day after their last save (0: forever)
/// ttl_secs = 0            # everything else never expires (the default)
/// ```
///
/// A Redis Cluster is named by some of its nodes instead of `url` (the
/// client learns the others from them):
///
/// ```toml
/// cluster_urls = ["redis://10.0.0.5:7000", "redis://10.0.0.6:7000"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port[/db]` of a single server
    /// (`rediss://` needs this crate's `tls` feature). Not used when
    /// `cluster_urls` is set.
    pub url: String,
    /// Nodes of a Redis Cluster, `redis://[user:password@]host:port` each
    /// (`rediss://` needs the `tls` feature). When not empty, the stores run
    /// on the cluster and `url` is not used; a few nodes suffice, the client
    /// learns the others from them. Clusters have no databases, so no `/db`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cluster_urls: Vec<String>,
    /// Connections kept open (each is multiplexed: many commands in flight).
    pub pool_size: usize,
    /// Every key starts with `<key_prefix>:`; no `{` or `}`.
    pub key_prefix: String,
    /// Lifetime of checkpoints after their last save, in seconds; 0: none.
    pub task_ttl_secs: u64,
    /// Lifetime of every other key after its last write, in seconds; 0: none.
    pub ttl_secs: u64,
    /// Limit on opening a connection, in milliseconds.
    pub connect_timeout_ms: u64,
    /// Limit on waiting for a reply, in milliseconds.
    pub response_timeout_ms: u64,
    /// How long one blocking read of an event follower waits before it asks
    /// again, in milliseconds.
    pub follow_block_ms: u64,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            url: "redis://127.0.0.1:6379".into(),
            cluster_urls: Vec::new(),
            pool_size: 8,
            key_prefix: "looopy".into(),
            task_ttl_secs: 24 * 60 * 60,
            ttl_secs: 0,
            connect_timeout_ms: 2_000,
            response_timeout_ms: 5_000,
            follow_block_ms: 5_000,
        }
    }
}

fn secs(n: u64) -> Option<Duration> {
    (n > 0).then(|| Duration::from_secs(n))
}

impl RedisConfig {
    /// The defaults with another URL.
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            ..Self::default()
        }
    }

    /// The defaults on a Redis Cluster reached through `nodes` (see
    /// [`cluster_urls`](Self::cluster_urls)).
    pub fn cluster<I, S>(nodes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        RedisConfig {
            cluster_urls: nodes.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Whether the stores run on a Redis Cluster (`cluster_urls` is set).
    pub fn is_cluster(&self) -> bool {
        !self.cluster_urls.is_empty()
    }

    /// Sets the key prefix.
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Sets the pool size.
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// Sets the checkpoint lifetime (`None`: forever). Whole seconds; a
    /// shorter non-zero duration counts as one second.
    pub fn with_task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.task_ttl_secs = ttl.map_or(0, |d| d.as_secs().max(1));
        self
    }

    /// Sets the lifetime of every other key (`None`: forever). Whole
    /// seconds; a shorter non-zero duration counts as one second.
    pub fn with_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl_secs = ttl.map_or(0, |d| d.as_secs().max(1));
        self
    }

    /// Sets the connect and response timeouts.
    pub fn with_timeouts(mut self, connect: Duration, response: Duration) -> Self {
        self.connect_timeout_ms = millis(connect);
        self.response_timeout_ms = millis(response);
        self
    }

    /// Sets how long one blocking read of a follower waits.
    pub fn with_follow_block(mut self, block: Duration) -> Self {
        self.follow_block_ms = millis(block);
        self
    }

    /// Checkpoint lifetime.
    pub fn task_ttl(&self) -> Option<Duration> {
        secs(self.task_ttl_secs)
    }

    /// Lifetime of every other key.
    pub fn ttl(&self) -> Option<Duration> {
        secs(self.ttl_secs)
    }

    /// Limit on opening a connection.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms.max(1))
    }

    /// Limit on waiting for a reply.
    pub fn response_timeout(&self) -> Duration {
        Duration::from_millis(self.response_timeout_ms.max(1))
    }

    /// One blocking read of a follower.
    pub fn follow_block(&self) -> Duration {
        Duration::from_millis(self.follow_block_ms.max(1))
    }

    /// Checks what can be checked without connecting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.key_prefix.is_empty() || self.key_prefix.contains(['{', '}']) {
            return Err(ConfigError::KeyPrefix {
                prefix: self.key_prefix.clone(),
            });
        }
        if self.pool_size == 0 {
            return Err(ConfigError::PoolSize);
        }
        if let Some(bad) = self.cluster_urls.iter().find(|u| u.trim().is_empty()) {
            return Err(ConfigError::Connection {
                message: format!("cluster_urls holds an empty URL ({bad:?})"),
            });
        }
        Ok(())
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_toml_table_needs_only_what_differs() {
        let config: RedisConfig = toml::from_str(
            r#"
            url = "redis://example:6380"
            key_prefix = "app"
            task_ttl_secs = 0
            ttl_secs = 3600
            "#,
        )
        .unwrap();
        assert_eq!(config.url, "redis://example:6380");
        assert_eq!(config.key_prefix, "app");
        assert_eq!(config.task_ttl(), None);
        assert_eq!(config.ttl(), Some(Duration::from_secs(3600)));
        assert_eq!(config.pool_size, RedisConfig::default().pool_size);
        assert_eq!(
            RedisConfig::default().task_ttl(),
            Some(Duration::from_secs(86_400))
        );
        assert!(toml::from_str::<RedisConfig>("urll = 'x'").is_err());
        assert!(!config.is_cluster());
    }

    #[test]
    fn a_cluster_is_a_list_of_node_urls() {
        let config: RedisConfig = toml::from_str(
            r#"
            cluster_urls = ["redis://a:7000", "rediss://b:7001"]
            key_prefix = "app"
            "#,
        )
        .unwrap();
        assert!(config.is_cluster());
        assert_eq!(config.cluster_urls, ["redis://a:7000", "rediss://b:7001"]);
        assert_eq!(
            config,
            RedisConfig::cluster(["redis://a:7000", "rediss://b:7001"]).with_key_prefix("app")
        );
        assert!(config.validate().is_ok());
        assert!(RedisConfig::cluster([" "]).validate().is_err());
        // A single server's settings serialize without the empty list.
        let text = toml::to_string(&RedisConfig::default()).unwrap();
        assert!(!text.contains("cluster_urls"), "{text}");
    }

    #[test]
    fn validation_rejects_prefixes_that_break_hash_tags() {
        for bad in ["", "a{b", "a}b"] {
            let err = RedisConfig::default().with_key_prefix(bad).validate();
            assert!(matches!(err, Err(ConfigError::KeyPrefix { .. })), "{bad:?}");
        }
        assert_eq!(
            RedisConfig::default().with_pool_size(0).validate(),
            Err(ConfigError::PoolSize)
        );
        assert!(
            RedisConfig::default()
                .with_key_prefix("a:b")
                .validate()
                .is_ok()
        );
    }
}
