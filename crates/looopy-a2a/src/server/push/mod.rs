//! Push notifications: webhooks that receive a task's updates, for clients
//! that do not keep a stream open (A2A 1.0 §3.1.7–3.1.10, §4.3; 0.3
//! `tasks/pushNotificationConfig/*`).
//!
//! - `config.rs`: configs on the wire, both versions;
//! - `methods.rs`: the four methods and configs given with a message;
//! - `delivery.rs`: following a turn's events and POSTing them, with
//!   retries and backoff, off the turn's path;
//! - `ssrf.rs`: which addresses a webhook may reach.

mod config;
mod delivery;
mod methods;
mod ssrf;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use looopy_core::CancellationToken;
use looopy_core::store::PushConfigStore;

pub(crate) use config::{
    ConfigInput, ConfigQuery, decode_create, decode_query, encode, encode_list,
};
pub use delivery::TOKEN_HEADER as PUSH_TOKEN_HEADER;
pub(crate) use methods::{create, delete, get, inline, list, started};

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

/// The push side of a server: the configs, the HTTP client, the followers.
pub(crate) struct Push {
    store: Arc<dyn PushConfigStore>,
    settings: PushSettings,
    client: Result<reqwest::Client, String>,
    /// Followed turns, by task id and the log id the turn starts after;
    /// `true` when the follower should read the task's configs again.
    followers: Mutex<HashMap<(String, Option<String>), bool>>,
    /// Webhook workers running.
    active: Arc<AtomicUsize>,
    /// Ends every follower and worker (after the server's turns ended).
    stop: CancellationToken,
}

impl Push {
    pub(crate) fn new(store: Arc<dyn PushConfigStore>, settings: PushSettings) -> Self {
        let client = delivery::client(&settings);
        if let Err(error) = &client {
            tracing::error!(%error, "push: could not build the HTTP client");
        }
        Push {
            store,
            settings,
            client,
            followers: Mutex::default(),
            active: Arc::default(),
            stop: CancellationToken::new(),
        }
    }

    /// At shutdown, once the turns ended: lets the followers and workers
    /// send what they hold (the turns' last updates) for at most `wait`,
    /// then stops them.
    pub(crate) async fn drain(&self, wait: Duration) {
        let until = Instant::now() + wait;
        while Instant::now() < until {
            let followers = self
                .followers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len();
            if followers == 0 && self.active.load(Ordering::Acquire) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.stop.cancel();
    }
}
