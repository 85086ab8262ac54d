//! [`PushSettings`]: how a server calls webhooks.

use std::time::Duration;

/// How webhooks are called. The defaults suit public webhooks; a server
/// whose clients' webhooks live on its own network (or a test on
/// 127.0.0.1) turns on [`allow_private_webhooks`](Self::allow_private_webhooks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSettings {
    /// Whether webhooks may be on loopback, private, link-local and other
    /// non-public addresses (default: no; such configs are refused).
    pub allow_private_webhooks: bool,
    /// Attempts per update, the first included (default 5).
    pub max_attempts: u32,
    /// The wait before the second attempt; it doubles each attempt
    /// (default 500 ms), with jitter.
    pub initial_backoff: Duration,
    /// The longest wait between attempts (default 30 s).
    pub max_backoff: Duration,
    /// The limit of one POST, connection included (default 10 s).
    pub request_timeout: Duration,
    /// Updates waiting per webhook; when full, the oldest is dropped
    /// (default 256).
    pub queue_capacity: usize,
    /// Configs per task (default 16); more are refused.
    pub max_configs_per_task: usize,
}

impl Default for PushSettings {
    fn default() -> Self {
        PushSettings {
            allow_private_webhooks: false,
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            request_timeout: Duration::from_secs(10),
            queue_capacity: 256,
            max_configs_per_task: 16,
        }
    }
}

impl PushSettings {
    /// Allows (or refuses, the default) webhooks on non-public addresses.
    pub fn allow_private_webhooks(mut self, allow: bool) -> Self {
        self.allow_private_webhooks = allow;
        self
    }

    /// Attempts per update (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The first wait between attempts and the longest one.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// The limit of one POST.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Updates waiting per webhook (at least 1).
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = capacity.max(1);
        self
    }

    /// Configs per task (at least 1).
    pub fn max_configs_per_task(mut self, max: usize) -> Self {
        self.max_configs_per_task = max.max(1);
        self
    }
}
