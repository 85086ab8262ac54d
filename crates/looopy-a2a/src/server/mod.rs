//! [`A2aServer`]: serves a [`TurnRunner`] over A2A 1.0 and 0.3 (JSON-RPC +
//! SSE), with the agent card, authentication, detached turns and
//! resubscription from the event log.

mod auth;
mod card;
mod error;
mod extract;
#[cfg(feature = "grpc")]
mod grpc;
mod layers;
mod progress;
mod push;
pub(crate) mod record;
mod records;
mod rest;
mod router;
mod rpc;
mod service;
mod sse;
mod state;
mod tasks;
mod web;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use looopy_core::CancellationToken;
use looopy_core::store::{EventLog, PushConfigStore, Stores, TaskRecordStore, TurnLock};
use tokio::net::TcpListener;

pub use auth::{ANONYMOUS, API_KEY_HEADER, AuthConfig};
pub use card::{AgentCardConfig, AgentSkill};
pub use progress::{EXTENSIONS_HEADER, TOOL_PROGRESS_EXTENSION};
pub use push::{PUSH_TOKEN_HEADER, PushSettings};
pub use rest::REST_PATH;

use crate::runner::TurnRunner;
use crate::version::ProtocolVersion;
use state::ServerState;
use tasks::Tasks;

/// The longest a stopping server waits for webhooks to take the last
/// updates of its turns.
const PUSH_DRAIN: Duration = Duration::from_secs(10);

/// Default limit of a request body: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// Default time between two scans for stranded turns: 10 s. With the
/// Agent's default lease of 30 s, a turn whose process died is resumed
/// elsewhere within 40 s.
pub const DEFAULT_RECOVERY_SCAN: Duration = Duration::from_secs(10);

/// An A2A server for one agent.
///
/// Routes: `POST /` (and `POST /a2a`, `POST /api/a2a`, and the configured
/// [`rpc_path`](A2aServerBuilder::rpc_path)) for JSON-RPC of both protocol
/// versions, chosen by the `A2A-Version` header (none: 0.3);
/// `GET /.well-known/agent-card.json` and `GET /.well-known/agent.json` for
/// the agent card; with [`web_ui`](A2aServerBuilder::web_ui), `GET /` (and
/// `GET /web/*`) for a chat page that talks to the agent over the same
/// endpoint.
///
/// The card offers the [tool-progress extension](TOOL_PROGRESS_EXTENSION)
/// unless [turned off](A2aServerBuilder::tool_progress): streams of requests
/// that activate it (`A2A-Extensions` header) also carry the turn's tool
/// calls, token usage and trace id.
///
/// ```no_run
/// # use std::sync::Arc;
/// # async fn demo(runner: impl looopy_a2a::TurnRunner) -> std::io::Result<()> {
/// use looopy_a2a::{A2aServer, AgentCardConfig, AuthConfig};
/// use looopy_stores_memory::{MemoryEventLog, MemoryTaskRecordStore};
///
/// let server = A2aServer::builder(runner, Arc::new(MemoryEventLog::new()), Arc::new(MemoryTaskRecordStore::new()))
///     .card(AgentCardConfig::new("Helper", "Answers questions"))
///     .auth(AuthConfig::none().bearer("s3cret", "alice"))
///     .build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// server.serve(listener, std::future::pending()).await
/// # }
/// ```
#[derive(Clone)]
pub struct A2aServer {
    state: Arc<ServerState>,
    /// Routes served beside the A2A ones ([`A2aServerBuilder::routes`]).
    routes: Option<axum::Router>,
}

impl A2aServer {
    /// Starts building a server: the runner that runs turns, the event log
    /// that streams replay, the store of task records. Share the two stores
    /// (Redis) between processes to serve the same tasks from any of them.
    pub fn builder(
        runner: impl TurnRunner,
        events: Arc<dyn EventLog>,
        tasks: Arc<dyn TaskRecordStore>,
    ) -> A2aServerBuilder {
        A2aServerBuilder {
            runner: Arc::new(runner),
            events,
            tasks,
            card: AgentCardConfig::new("Looopy agent", "An agent served by Looopy"),
            auth: AuthConfig::none(),
            rpc_path: "/".into(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            cancel_poll: Duration::from_millis(500),
            cancel_wait: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
            tool_progress: true,
            web_ui: false,
            recovery: None,
            push: None,
            records: None,
            prices: looopy_core::pricing::PriceTable::builtin(),
            recovery_scan: DEFAULT_RECOVERY_SCAN,
            card_default: ProtocolVersion::V1_0,
            routes: None,
        }
    }

    /// [`builder`](Self::builder) on a [`Stores`] bundle: its event log and
    /// task records, and its turn leases for [`recovery`](A2aServerBuilder::recovery)
    /// of the turns a stopped process left. Push notifications stay off
    /// until [`push_notifications`](A2aServerBuilder::push_notifications)
    /// (with `stores.push_configs`).
    pub fn with_stores(runner: impl TurnRunner, stores: &Stores) -> A2aServerBuilder {
        let builder = Self::builder(runner, stores.events.clone(), stores.task_records.clone())
            .recovery(stores.locks.clone());
        match &stores.records {
            Some(records) => builder.execution_records(records.clone()),
            None => builder,
        }
    }

    /// One scan for stranded turns (see [`A2aServerBuilder::recovery`]):
    /// resumes here each one this process wins, and returns how many.
    /// [`A2aServer::serve`] scans on its own; call this when you serve
    /// [`A2aServer::router`] yourself.
    pub async fn recover_stranded(&self) -> Result<usize, looopy_core::StoreError> {
        let resumed = self.state.tasks.recover_stranded().await?;
        // The process that died also followed the turn for its webhooks:
        // this one takes that over from the last event logged (an update
        // the dead process sent just before it died may be sent again).
        if let Some(push) = &self.state.push {
            for turn in &resumed {
                push.watch(
                    Arc::clone(&self.state.tasks),
                    &turn.task_id,
                    turn.turn.clone(),
                    turn.last_event.clone(),
                    self.state.tasks.reader(&turn.task_id),
                );
            }
        }
        Ok(resumed.len())
    }

    /// Scans for stranded turns every interval until shutdown.
    fn spawn_recovery(&self) {
        let this = self.clone();
        let every = self.state.recovery_scan;
        let shutdown = self.state.shutdown.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                match this.recover_stranded().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(turns = n, "resumed stranded turns"),
                    Err(error) => tracing::warn!(%error, "could not scan for stranded turns"),
                }
            }
        });
    }

    /// The routes, to serve yourself or to nest in a larger router. Prefer
    /// [`A2aServer::serve`], which also ends streams and turns on shutdown.
    pub fn router(&self) -> axum::Router {
        let router = router::router(self.state.clone());
        match &self.routes {
            Some(routes) => router.merge(auth::authenticated(routes.clone(), &self.state.auth)),
            None => router,
        }
    }

    /// Serves on `listener` until `shutdown` completes, then shuts down
    /// gracefully: no new connections, open streams end, running turns get
    /// the [`shutdown_grace`](A2aServerBuilder::shutdown_grace) to finish and
    /// are cancelled after it (they record a `canceled` final status); then
    /// the runner releases what it holds ([`TurnRunner::shutdown`]).
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let token = self.state.shutdown.clone();
        let signal = async move {
            shutdown.await;
            token.cancel();
        };
        // Without TCP_NODELAY the first SSE event waits for the client's
        // delayed ACK (about 40 ms); streams must flush every event at once.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "could not set TCP_NODELAY");
            }
        });
        if self.state.tasks.recovers() {
            self.spawn_recovery();
        }
        axum::serve(listener, self.router())
            .with_graceful_shutdown(signal)
            .await?;
        self.state.tasks.shutdown(self.state.shutdown_grace).await;
        if let Some(push) = &self.state.push {
            // The turns' last updates still go out, for a while.
            push.drain(self.state.shutdown_grace.min(PUSH_DRAIN)).await;
        }
        // The turns are over: what the runner holds (its agents' MCP
        // servers, for instance) can go.
        self.state.runner.shutdown().await;
        Ok(())
    }
}

/// Builds an [`A2aServer`].
pub struct A2aServerBuilder {
    runner: Arc<dyn TurnRunner>,
    events: Arc<dyn EventLog>,
    tasks: Arc<dyn TaskRecordStore>,
    card: AgentCardConfig,
    auth: AuthConfig,
    rpc_path: String,
    max_body_bytes: usize,
    cancel_poll: Duration,
    cancel_wait: Duration,
    shutdown_grace: Duration,
    tool_progress: bool,
    web_ui: bool,
    recovery: Option<Arc<dyn TurnLock>>,
    push: Option<(Arc<dyn PushConfigStore>, PushSettings)>,
    records: Option<Arc<dyn looopy_core::store::RecordStore>>,
    prices: looopy_core::pricing::PriceTable,
    recovery_scan: Duration,
    card_default: ProtocolVersion,
    routes: Option<axum::Router>,
}

impl A2aServerBuilder {
    /// Serves `routes` beside the A2A ones (another protocol's endpoint,
    /// for instance), behind the server's [`AuthConfig`]: a request without
    /// valid credentials gets 401 with `WWW-Authenticate: Bearer`, and a
    /// handler finds the caller as an [`AuthContext`](looopy_core::AuthContext)
    /// in the request's extensions. Routes of an earlier call stay.
    pub fn routes(mut self, routes: axum::Router) -> Self {
        self.routes = Some(match self.routes.take() {
            Some(earlier) => earlier.merge(routes),
            None => routes,
        });
        self
    }

    /// Turns push notifications on: the push config methods of both
    /// versions work, a message may carry a config, the card says
    /// `pushNotifications: true`, and each turn's updates are POSTed to
    /// the task's webhooks in the background (see `docs/a2a.md`, "Push
    /// notifications"). `store` keeps the configs: share it between server
    /// processes as the task store is shared. Off by default (the methods
    /// answer -32003).
    pub fn push_notifications(
        mut self,
        store: Arc<dyn PushConfigStore>,
        settings: PushSettings,
    ) -> Self {
        self.push = Some((store, settings));
        self
    }

    /// The agent card that a card request naming no version (no
    /// `A2A-Version` header or query parameter) gets at
    /// `/.well-known/agent-card.json` (default [`ProtocolVersion::V1_0`]:
    /// the card the 1.0 specification defines for that URI). Set
    /// [`ProtocolVersion::V0_3`] for 0.3 clients that fetch the card without
    /// a version and cannot be pointed at `/.well-known/agent.json`.
    pub fn card_default_version(mut self, version: ProtocolVersion) -> Self {
        self.card_default = version;
        self
    }

    /// Recovers turns whose process died: `lock` is the turn registry the
    /// runner's Agents take their leases in (share it, and every other
    /// store, between the server processes). [`A2aServer::serve`] then
    /// scans it every [`recovery_scan_interval`](Self::recovery_scan_interval)
    /// and resumes each stranded turn through
    /// [`TurnRunner::resume_turn`]; exactly one process resumes a turn.
    pub fn recovery(mut self, lock: Arc<dyn TurnLock>) -> Self {
        self.recovery = Some(lock);
        self
    }

    /// Time between two scans for stranded turns (default
    /// [`DEFAULT_RECOVERY_SCAN`]).
    pub fn recovery_scan_interval(mut self, every: Duration) -> Self {
        self.recovery_scan = every.max(Duration::from_millis(10));
        self
    }

    /// What the agent card says.
    pub fn card(mut self, card: AgentCardConfig) -> Self {
        self.card = card;
        self
    }

    /// Who may call (default: anyone, as [`ANONYMOUS`]).
    pub fn auth(mut self, auth: AuthConfig) -> Self {
        self.auth = auth;
        self
    }

    /// The path of the JSON-RPC endpoint the card advertises (default `/`;
    /// `/`, `/a2a` and `/api/a2a` are always served too).
    pub fn rpc_path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        self.rpc_path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        self
    }

    /// The largest request body accepted (default 1 MiB); larger ones get
    /// HTTP 413 with a JSON-RPC error (-32600).
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// How often a running turn checks its record for a cancel request made
    /// through another server process (default 500 ms).
    pub fn cancel_poll_interval(mut self, every: Duration) -> Self {
        self.cancel_poll = every;
        self
    }

    /// How long `CancelTask` waits for the turn to record its end (default 10 s).
    pub fn cancel_wait(mut self, wait: Duration) -> Self {
        self.cancel_wait = wait;
        self
    }

    /// How long running turns may go on after shutdown began (default 30 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Whether to offer the tool-progress extension
    /// ([`TOOL_PROGRESS_EXTENSION`], default on). Off: the card does not list
    /// it, the header is ignored and no progress updates are logged.
    pub fn tool_progress(mut self, on: bool) -> Self {
        self.tool_progress = on;
        self
    }

    /// Whether to serve the chat page at `GET /` (default off). The page is
    /// compiled into the binary, fetches nothing else from anywhere, and
    /// talks A2A 1.0 to this server with the tool-progress extension (see
    /// `docs/web.md`).
    pub fn web_ui(mut self, on: bool) -> Self {
        self.web_ui = on;
        self
    }

    /// Serves each task's execution record at `GET /v1/tasks/{id}/record`
    /// to the task's own principal (set by
    /// [`A2aServer::with_stores`] when the bundle keeps records; without
    /// one the route answers 404).
    pub fn execution_records(mut self, store: Arc<dyn looopy_core::store::RecordStore>) -> Self {
        self.records = Some(store);
        self
    }

    /// The prices the record route estimates each model call's cost with
    /// (served beside the record as a
    /// [`RecordView`](looopy_core::record::RecordView)); the vendors'
    /// published prices ([`PriceTable::builtin`](looopy_core::pricing::PriceTable::builtin))
    /// by default. A model the table does not know gets no cost.
    pub fn prices(mut self, prices: looopy_core::pricing::PriceTable) -> Self {
        self.prices = prices;
        self
    }

    /// The server.
    pub fn build(mut self) -> A2aServer {
        let shutdown = CancellationToken::new();
        self.card.push_notifications = self.push.is_some();
        let push = self
            .push
            .map(|(store, settings)| Arc::new(push::Push::new(store, settings)));
        A2aServer {
            state: Arc::new(ServerState {
                push,
                records: self.records,
                prices: self.prices,
                runner: self.runner.clone(),
                tasks: Arc::new(Tasks::new(
                    self.runner,
                    self.events,
                    self.tasks,
                    self.cancel_poll,
                    self.cancel_wait,
                    self.tool_progress,
                    self.recovery,
                )),
                card: self.card,
                auth: self.auth,
                rpc_path: self.rpc_path,
                max_body_bytes: self.max_body_bytes,
                shutdown,
                shutdown_grace: self.shutdown_grace,
                tool_progress: self.tool_progress,
                web_ui: self.web_ui,
                recovery_scan: self.recovery_scan,
                card_default: self.card_default,
            }),
            routes: self.routes,
        }
    }
}
