//! Delivery, by [`Push`] (the push side of a server): a follower per task
//! turn reads the turn's events from the event log (as a stream does) and
//! hands each one to a bounded queue per webhook; a worker per webhook
//! POSTs what its queue holds, in order, retrying with exponential backoff.
//!
//! Nothing here runs inside a turn: the turn writes its events to the log
//! and never waits on a webhook. A slow webhook only makes its own queue
//! fill up; when it is full the oldest update waiting is dropped (the
//! final one, being the newest, never is).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use looopy_core::CancellationToken;
use looopy_core::store::{PushConfig, PushConfigStore, StoredEvent};
use looopy_core::{EventPayload, TaskStatus};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use tokio::sync::Notify;

use super::settings::PushSettings;
use super::ssrf::{self, GuardedResolver};
use crate::server::progress;
use crate::server::tasks::{Tasks, TurnReader};
use crate::version::ProtocolVersion;
use crate::wire;

/// The header that carries a config's token.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// How often a follower reads the task's configs again (to see ones
/// created or deleted through another server process).
const REFRESH: Duration = Duration::from_secs(1);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The HTTP client of deliveries: no redirects (a redirect could lead to
/// a forbidden address), no proxy (it would resolve names itself), and,
/// unless private webhooks are allowed, the guarded resolver.
fn client(settings: &PushSettings) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(settings.request_timeout)
        .connect_timeout(settings.request_timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("looopy-a2a/", env!("CARGO_PKG_VERSION"), " (push)"));
    if !settings.allow_private_webhooks {
        builder = builder.dns_resolver(GuardedResolver);
    }
    builder.build().map_err(|e| e.to_string())
}

/// Updates waiting for one webhook: at most `capacity`, the oldest dropped
/// first when full.
struct Queue {
    items: Mutex<VecDeque<Value>>,
    notify: Notify,
    closed: AtomicBool,
    capacity: usize,
}

impl Queue {
    fn new(capacity: usize) -> Self {
        Queue {
            items: Mutex::new(VecDeque::new()),
            notify: Notify::new(),
            closed: AtomicBool::new(false),
            capacity: capacity.max(1),
        }
    }

    /// Adds an update; false when an older one had to be dropped for it.
    fn push(&self, item: Value) -> bool {
        let dropped = {
            let mut items = lock(&self.items);
            let dropped = items.len() >= self.capacity && items.pop_front().is_some();
            items.push_back(item);
            dropped
        };
        self.notify.notify_one();
        !dropped
    }

    /// No more updates will come; the worker ends once the queue is empty.
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    async fn pop(&self) -> Option<Value> {
        loop {
            if let Some(item) = lock(&self.items).pop_front() {
                return Some(item);
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            self.notify.notified().await;
        }
    }
}

/// Counts a running worker (until dropped, aborted or not).
struct ActiveWorker(Arc<AtomicUsize>);

impl ActiveWorker {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        ActiveWorker(Arc::clone(count))
    }
}

impl Drop for ActiveWorker {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One webhook of a followed task.
struct Worker {
    config: PushConfig,
    queue: Arc<Queue>,
    handle: tokio::task::JoinHandle<()>,
}

/// The push side of a server: the configs, the HTTP client, the followers.
pub(crate) struct Push {
    /// The configs (read by the methods too).
    pub(super) store: Arc<dyn PushConfigStore>,
    pub(super) settings: PushSettings,
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
    /// The push side of a server whose configs are in `store`, calling
    /// webhooks as `settings` says.
    pub(crate) fn new(store: Arc<dyn PushConfigStore>, settings: PushSettings) -> Self {
        let client = client(&settings);
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
            let followers = lock(&self.followers).len();
            if followers == 0 && self.active.load(Ordering::Acquire) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.stop.cancel();
    }

    /// Starts following a turn's events for the task's webhooks, unless
    /// this process already follows that turn (then the follower reads the
    /// configs again at its next event). `turn`: the log id the turn's
    /// events come after (which turn it is); `from`: where to start reading
    /// (the turn's start, or the last event when a config is created while
    /// the turn runs); `reader`: held until the turn's end is read, when
    /// the turn runs in this process.
    pub(crate) fn watch(
        self: &Arc<Self>,
        tasks: Arc<Tasks>,
        task_id: &str,
        turn: Option<String>,
        from: Option<String>,
        reader: Option<TurnReader>,
    ) {
        let key = (task_id.to_owned(), turn);
        {
            let mut followers = lock(&self.followers);
            if let Some(dirty) = followers.get_mut(&key) {
                *dirty = true;
                return;
            }
            followers.insert(key.clone(), false);
        }
        let push = Arc::clone(self);
        tokio::spawn(async move {
            let stop = push.stop.clone();
            tokio::select! {
                () = push.follow(&tasks, &key, from) => {}
                () = stop.cancelled() => {}
            }
            drop(reader);
            lock(&push.followers).remove(&key);
        });
    }

    /// Tells the followers of a task to read its configs again.
    pub(crate) fn touch(&self, task_id: &str) {
        for ((task, _), dirty) in lock(&self.followers).iter_mut() {
            if task == task_id {
                *dirty = true;
            }
        }
    }

    fn take_dirty(&self, key: &(String, Option<String>)) -> bool {
        lock(&self.followers)
            .get_mut(key)
            .is_some_and(|dirty| std::mem::replace(dirty, false))
    }

    /// Ends a follower that has nothing to send, unless it was told to look
    /// again meanwhile (a config was just created).
    fn finish_idle(&self, key: &(String, Option<String>)) -> bool {
        let mut followers = lock(&self.followers);
        match followers.get_mut(key) {
            Some(dirty) if *dirty => {
                *dirty = false;
                false
            }
            _ => {
                followers.remove(key);
                true
            }
        }
    }

    /// The task's configs; `None` when the store failed (the caller keeps
    /// what it has: a store hiccup must not stop deliveries).
    async fn configs(&self, task_id: &str) -> Option<Vec<PushConfig>> {
        match self.store.list(task_id).await {
            Ok(configs) => Some(configs),
            Err(error) => {
                tracing::warn!(%error, task_id, "push: could not read the task's configs");
                None
            }
        }
    }

    /// Follows one turn of a task in the log and feeds its webhooks.
    async fn follow(
        self: &Arc<Self>,
        tasks: &Tasks,
        key: &(String, Option<String>),
        from: Option<String>,
    ) {
        let task_id = key.0.as_str();
        let mut configs = loop {
            let configs = self.configs(task_id).await.unwrap_or_default();
            if !configs.is_empty() {
                break configs;
            }
            if self.finish_idle(key) {
                return;
            }
        };
        let mut workers: HashMap<String, Worker> = HashMap::new();
        self.sync(&mut workers, configs.drain(..));
        let mut read_at = Instant::now();
        let mut events = tasks.log.follow(task_id, from);
        while let Some(item) = events.next().await {
            let stored = match item {
                Ok(stored) => stored,
                Err(error) => {
                    tracing::warn!(%error, task_id, "push: could not follow the task's events");
                    break;
                }
            };
            if stored.event.is_internal() || progress::is_progress(&stored.event) {
                continue;
            }
            if self.take_dirty(key) || read_at.elapsed() >= REFRESH {
                if let Some(fresh) = self.configs(task_id).await {
                    self.sync(&mut workers, fresh.into_iter());
                }
                read_at = Instant::now();
            }
            let mut payloads = Payloads::default();
            for worker in workers.values() {
                let version = ProtocolVersion::from_header(Some(&worker.config.protocol_version))
                    .unwrap_or(ProtocolVersion::V1_0);
                if let Some(payload) = payloads.get(version, tasks, &stored).await
                    && !worker.queue.push(payload)
                {
                    tracing::warn!(
                        task_id,
                        config = %worker.config.id,
                        "push: the webhook is behind; its oldest waiting update was dropped"
                    );
                }
            }
            if stored.event.is_final() {
                break;
            }
        }
        for worker in workers.into_values() {
            worker.queue.close();
        }
    }

    /// Starts workers for new configs, replaces those of changed ones and
    /// stops those of deleted ones.
    fn sync(
        self: &Arc<Self>,
        workers: &mut HashMap<String, Worker>,
        configs: impl Iterator<Item = PushConfig>,
    ) {
        let mut seen = HashSet::new();
        for config in configs {
            seen.insert(config.id.clone());
            if workers.get(&config.id).is_some_and(|w| w.config == config) {
                continue;
            }
            let queue = Arc::new(Queue::new(self.settings.queue_capacity));
            let push = Arc::clone(self);
            let (worker_config, worker_queue) = (config.clone(), Arc::clone(&queue));
            let active = ActiveWorker::new(&self.active);
            let handle = tokio::spawn(async move {
                let _active = active;
                let stop = push.stop.clone();
                tokio::select! {
                    () = push.work(&worker_config, &worker_queue) => {}
                    () = stop.cancelled() => {}
                }
            });
            if let Some(old) = workers.insert(
                config.id.clone(),
                Worker {
                    config,
                    queue,
                    handle,
                },
            ) {
                old.handle.abort();
            }
        }
        workers.retain(|id, worker| {
            let keep = seen.contains(id);
            if !keep {
                // Deleted: nothing more is sent to it.
                worker.handle.abort();
            }
            keep
        });
    }

    /// Sends a webhook's updates, in order, until its queue is closed and empty.
    async fn work(&self, config: &PushConfig, queue: &Queue) {
        while let Some(payload) = queue.pop().await {
            deliver(&self.client, &self.settings, config, &payload).await;
        }
    }
}

/// The body of one event in each version, made at most once per event.
#[derive(Default)]
struct Payloads {
    v1: Option<Option<Value>>,
    v03: Option<Option<Value>>,
}

impl Payloads {
    /// 1.0: the event as a `StreamResponse` (what a stream would carry).
    /// 0.3: the task, for `task` and `status-update` events only (0.3
    /// webhooks receive the `Task`; artifact chunks are not sent).
    async fn get(
        &mut self,
        v: ProtocolVersion,
        tasks: &Tasks,
        stored: &StoredEvent,
    ) -> Option<Value> {
        match v {
            ProtocolVersion::V1_0 => self
                .v1
                .get_or_insert_with(|| wire::update_result(v, &stored.event).map(|r| r.to_value()))
                .clone(),
            ProtocolVersion::V0_3 => {
                if self.v03.is_none() {
                    self.v03 = Some(task_v03(tasks, stored).await);
                }
                self.v03.clone().flatten()
            }
        }
    }
}

/// The 0.3 `Task` as it is after this event: the stored task with the
/// event's status (the record may not show it yet).
async fn task_v03(tasks: &Tasks, stored: &StoredEvent) -> Option<Value> {
    let status: TaskStatus = match &*stored.event.payload {
        EventPayload::Task { status, .. } | EventPayload::StatusUpdate { status, .. } => {
            status.clone()
        }
        _ => return None,
    };
    let task_id = &*stored.event.task_id;
    let record = match tasks.store.get(task_id).await {
        Ok(Some(record)) => record,
        Ok(None) => return None,
        Err(error) => {
            tracing::warn!(%error, task_id, "push: could not read the task");
            return None;
        }
    };
    match tasks.snapshot(&record, None).await {
        Ok(mut snapshot) => {
            snapshot.status = status;
            Some(wire::encode_task(ProtocolVersion::V0_3, &snapshot))
        }
        Err(error) => {
            tracing::warn!(error = %error.message, task_id, "push: could not read the task");
            None
        }
    }
}

/// The delay before attempt `attempt + 1`: exponential from the initial
/// backoff, capped, with jitter (between half and all of it).
fn backoff(settings: &PushSettings, attempt: u32) -> Duration {
    let base = settings
        .initial_backoff
        .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
        .min(settings.max_backoff);
    let jitter = (uuid::Uuid::new_v4().as_u128() % 1000) as u32;
    base / 2 + (base / 2) * jitter / 1000
}

/// Whether a response status is worth another attempt: server errors,
/// 408 and 429. Other client errors mean the request itself is refused.
fn retryable(status: reqwest::StatusCode) -> bool {
    status.is_server_error()
        || status == reqwest::StatusCode::REQUEST_TIMEOUT
        || status == reqwest::StatusCode::TOO_MANY_REQUESTS
}

/// POSTs one update, retrying; true when the webhook took it (2xx).
pub(super) async fn deliver(
    client: &Result<reqwest::Client, String>,
    settings: &PushSettings,
    config: &PushConfig,
    payload: &Value,
) -> bool {
    let client = match client {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, "push: no HTTP client; nothing is delivered");
            return false;
        }
    };
    // Names are checked as they are resolved; an address in the URL here.
    if !settings.allow_private_webhooks && ssrf::forbidden_literal(&config.url) {
        tracing::warn!(config = %config.id, "push: the webhook's address is not public; not sent");
        return false;
    }
    let body = payload.to_string();
    let attempts = settings.max_attempts.max(1);
    for attempt in 1..=attempts {
        let mut request = client
            .post(&config.url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.clone());
        if let Some(token) = &config.token {
            request = request.header(TOKEN_HEADER, token);
        }
        if let Some(auth) = &config.authentication
            && let (Some(scheme), Some(credentials)) =
                (auth.schemes.first(), auth.credentials.as_deref())
        {
            request = request.header(AUTHORIZATION, format!("{scheme} {credentials}"));
        }
        let outcome = request.send().await;
        let again = match &outcome {
            Ok(response) if response.status().is_success() => return true,
            Ok(response) => retryable(response.status()),
            Err(_) => true,
        };
        let why = match outcome {
            Ok(response) => format!("HTTP {}", response.status()),
            Err(e) => e.to_string(),
        };
        if !again || attempt == attempts {
            tracing::warn!(
                task_id = %config.task_id,
                config = %config.id,
                attempts = attempt,
                %why,
                "push: the update was not delivered"
            );
            return false;
        }
        tracing::debug!(config = %config.id, attempt, %why, "push: delivery failed; retrying");
        tokio::time::sleep(backoff(settings, attempt)).await;
    }
    false
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let settings = PushSettings::default()
            .backoff(Duration::from_millis(100), Duration::from_millis(1000));
        let first = backoff(&settings, 1);
        assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
        let third = backoff(&settings, 3);
        assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
        let late = backoff(&settings, 30);
        assert!(late <= Duration::from_millis(1000) && late >= Duration::from_millis(500));
    }

    #[tokio::test]
    async fn a_full_queue_drops_its_oldest_update() {
        let queue = Queue::new(2);
        assert!(queue.push(Value::from(1)));
        assert!(queue.push(Value::from(2)));
        assert!(!queue.push(Value::from(3)), "the third push drops one");
        queue.close();
        assert_eq!(queue.pop().await, Some(Value::from(2)));
        assert_eq!(queue.pop().await, Some(Value::from(3)));
        assert_eq!(queue.pop().await, None);
    }
}
