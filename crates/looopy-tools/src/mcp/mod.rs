//! MCP servers as tool providers: [`McpToolProvider`] over stdio
//! ([`StdioServer`]) or streamable HTTP ([`HttpServer`]), on the `rmcp` crate,
//! with the servers' resources and prompts.

mod calls;
mod catalog;
mod content;
mod elicit;
mod http;
#[cfg(feature = "mcp-oauth")]
mod oauth;
mod open_error;
mod references;
mod sampling;
#[cfg(feature = "otel")]
mod trace;
mod transport;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use looopy_core::{
    Part, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult, ToolSignal, TurnContext,
};
use rmcp::RoleClient;
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CancelledNotificationParam,
    ClientRequest, RequestId, RequestParamsMeta, ServerResult,
};
use rmcp::service::Peer;
use rmcp::service::PeerRequestOptions;
use serde_json::Value;
use tokio::sync::Mutex;

pub use catalog::{
    LIST_RESOURCES_TOOL, McpPrompt, McpPromptArgument, McpPromptMessages, McpResource,
    McpResourceTemplate, READ_RESOURCE_TOOL,
};
#[cfg(feature = "mcp-oauth")]
pub use oauth::OAuthClientCredentials;
pub use references::McpReferences;
pub use sampling::{DEFAULT_SAMPLING_MAX_TOKENS, McpRoot, McpSampling};
pub use transport::{HttpServer, McpTransport, StdioServer};

use crate::error::ToolsError;
use calls::Question;
use calls::{Notices, RunningCall};
use transport::{Offers, Session};

/// How long connecting (spawn or HTTP, then the MCP handshake) may take by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The `params._meta` key of a tool call's idempotency key (a string). MCP
/// reserves unprefixed names and prefixes whose second label is `mcp` or
/// `modelcontextprotocol`; this one is prefixed, in reverse DNS notation.
pub const IDEMPOTENCY_KEY_META: &str = "io.looopy/idempotencyKey";

/// How long a call whose server asked the person a question stays paused in
/// this process by default, waiting for the answer; after that it is
/// cancelled, and an answer that comes later runs it again.
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// How long [`McpToolProvider::shutdown`] waits for the session to close.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// The tools of one MCP server.
///
/// The connection is opened on first use (or by [`connect`](Self::connect))
/// and kept. When it breaks (the child died, the HTTP server went away), the
/// call that notices gets an error result saying the server is unavailable,
/// and the next listing or call opens a new one (re-spawning the child).
///
/// Tool names are the server's, behind an optional prefix, with characters
/// other than `[A-Za-z0-9_-]` replaced by `_` and cut to 64 characters;
/// calls are routed back to the server's own name.
///
/// With the feature `otel` (on by default), every call carries the current
/// span's W3C trace context in `params._meta` (`traceparent`, `tracestate`),
/// and over streamable HTTP also as headers of the POST.
///
/// Every call carries its idempotency key in `params._meta` under
/// [`IDEMPOTENCY_KEY_META`]: the call's id
/// ([`TurnContext::idempotency_key`]), the same when a resumed turn runs an
/// interrupted call again, so that a server can recognise a repeat. A tool
/// the server annotates `idempotentHint: true` or `readOnlyHint: true` is
/// listed as idempotent ([`ToolDefinition::idempotent()`]), so that a resumed
/// turn may run its interrupted calls again.
///
/// Results: text stays text, structured content becomes a data part, images
/// and audio become inline file parts; `isError` becomes an error result.
///
/// A server that offers resources also gets two tools of the provider's
/// own, [`LIST_RESOURCES_TOOL`] and [`READ_RESOURCE_TOOL`] (behind the same
/// prefix), through which the model lists and reads them; a server tool of
/// the same name wins. [`without_resource_tools`](Self::without_resource_tools)
/// leaves them out. The library reads resources and prompts directly with
/// [`resources`](Self::resources), [`read_resource`](Self::read_resource),
/// [`prompts`](Self::prompts) and [`prompt`](Self::prompt).
///
/// [`shutdown`](Self::shutdown) closes the session and ends the child
/// (stdin closed, then `SIGTERM`, then kill); dropping the last clone of the
/// provider does the same in the background.
#[derive(Clone)]
pub struct McpToolProvider {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    transport: McpTransport,
    prefix: String,
    connect_timeout: Duration,
    resource_tools: bool,
    offers: Offers,
    elicitation_timeout: Duration,
    state: Mutex<State>,
    /// Exposed name → what runs it, from the last listing.
    names: RwLock<HashMap<String, Target>>,
    /// The last listing and the session (generation) it came from: every
    /// turn asks for the tools, and a session's tools are listed once...
    listed: RwLock<Option<(u64, Vec<ToolDefinition>)>>,
    /// ...unless the server said they changed since
    /// (`notifications/tools/list_changed`); and where progress goes.
    notices: Arc<Notices>,
    /// The calls paused on a question to the person, by conversation and
    /// call id, each with the number it was paused under.
    paused: std::sync::Mutex<HashMap<(Arc<str>, String), Paused>>,
    /// The number of the next pause.
    next_pause: AtomicU64,
}

/// A call paused on a question: what it waits for and the call itself.
struct Paused {
    number: u64,
    question: Question,
    flight: Flight,
}

/// A `tools/call` sent and not yet answered.
struct Flight {
    response: Pin<Box<dyn Future<Output = Result<ServerResult, ServiceError>> + Send>>,
    /// The server's questions during the call.
    questions: tokio::sync::mpsc::UnboundedReceiver<Question>,
    guard: CallGuard,
    abandoned: Abandoned,
    /// The session generation it was sent on.
    generation: u64,
    /// The conversation it was made in.
    context_id: Arc<str>,
}

/// Where a flight got to: the server's answer, or a question.
enum Landed {
    Answer(Result<CallToolResponse, ServiceError>, u64),
    Asked(Flight, Question),
}

impl Flight {
    /// Waits for the answer or for the server's next question.
    async fn fly(mut self) -> Landed {
        tokio::select! {
            answer = &mut self.response => {
                self.abandoned.peer = None;
                let response = answer.and_then(|result| match result {
                    ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
                    ServerResult::InputRequiredResult(result) => {
                        Ok(CallToolResponse::InputRequired(result))
                    }
                    ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
                    _ => Err(ServiceError::UnexpectedResponse),
                });
                Landed::Answer(response, self.generation)
            }
            Some(question) = self.questions.recv() => Landed::Asked(self, question),
        }
    }
}

/// What a listed tool name runs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// The server's tool of this name.
    Server(String),
    /// The provider's own listing of the server's resources.
    ListResources,
    /// The provider's own reading of one of the server's resources.
    ReadResource,
}

#[derive(Default)]
struct State {
    live: Option<Live>,
    generation: u64,
    closed: bool,
}

struct Live {
    session: Session,
    pid: Option<u32>,
    generation: u64,
}

/// What [`McpToolProvider::rebuild`] carries over.
struct Settings {
    name: String,
    transport: McpTransport,
    prefix: String,
    connect_timeout: Duration,
    resource_tools: bool,
    offers: Offers,
    elicitation_timeout: Duration,
}

impl fmt::Debug for McpToolProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolProvider")
            .field("name", &self.shared.name)
            .field("transport", &self.shared.transport)
            .field("prefix", &self.shared.prefix)
            .finish_non_exhaustive()
    }
}

impl McpToolProvider {
    /// A provider for this server; nothing is started yet.
    pub fn new(transport: impl Into<McpTransport>) -> Self {
        let transport = transport.into();
        Self::build(Settings {
            name: transport.default_name(),
            transport,
            prefix: String::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            resource_tools: true,
            offers: Offers::default(),
            elicitation_timeout: DEFAULT_ELICITATION_TIMEOUT,
        })
    }

    fn build(settings: Settings) -> Self {
        McpToolProvider {
            shared: Arc::new(Shared {
                name: settings.name,
                transport: settings.transport,
                prefix: settings.prefix,
                connect_timeout: settings.connect_timeout,
                resource_tools: settings.resource_tools,
                offers: settings.offers,
                elicitation_timeout: settings.elicitation_timeout,
                state: Mutex::new(State::default()),
                names: RwLock::new(HashMap::new()),
                listed: RwLock::new(None),
                notices: Arc::default(),
                paused: std::sync::Mutex::new(HashMap::new()),
                next_pause: AtomicU64::new(0),
            }),
        }
    }

    fn rebuild(self, f: impl FnOnce(&mut Settings)) -> Self {
        let s = &self.shared;
        let mut settings = Settings {
            name: s.name.clone(),
            transport: s.transport.clone(),
            prefix: s.prefix.clone(),
            connect_timeout: s.connect_timeout,
            resource_tools: s.resource_tools,
            offers: s.offers.clone(),
            elicitation_timeout: s.elicitation_timeout,
        };
        f(&mut settings);
        Self::build(settings)
    }

    /// Puts `prefix` before every tool name (for instance `"fs_"`), so that
    /// two servers' tools cannot clash. Call before first use: it makes a new
    /// provider.
    pub fn with_prefix(self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        self.rebuild(|s| s.prefix = prefix)
    }

    /// Names the server in messages and logs.
    pub fn with_name(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.rebuild(|s| s.name = name)
    }

    /// Bounds connecting (spawn or HTTP, then the handshake); 30 s by default.
    pub fn with_connect_timeout(self, timeout: Duration) -> Self {
        self.rebuild(|s| s.connect_timeout = timeout)
    }

    /// Leaves out the two resource tools ([`LIST_RESOURCES_TOOL`],
    /// [`READ_RESOURCE_TOOL`]) that a server with resources otherwise gets;
    /// the library can still read them. Call before first use.
    pub fn without_resource_tools(self) -> Self {
        self.rebuild(|s| s.resource_tools = false)
    }

    /// Lets the server sample the agent's model (`sampling/createMessage`)
    /// as `sampling` says: the client advertises the `sampling` capability,
    /// and the requests made during a call run under its span. Without it,
    /// sampling is off: not advertised, and refused with an error. Call
    /// before first use.
    pub fn with_sampling(self, sampling: McpSampling) -> Self {
        self.rebuild(|s| s.offers.sampling = Some(sampling))
    }

    /// The roots the server may work in, answered to `roots/list`; with
    /// any, the client advertises the `roots` capability. Call before first
    /// use.
    pub fn with_roots(self, roots: impl IntoIterator<Item = McpRoot>) -> Self {
        let roots: Vec<McpRoot> = roots.into_iter().collect();
        self.rebuild(|s| s.offers.roots = roots)
    }

    /// Turns elicitation off: the client does not advertise it, and a
    /// server's `elicitation/create` gets an error. It is on by default: a
    /// question pauses its call and ends the turn `input-required` (see
    /// `looopy_core::elicitation`). Call before first use.
    pub fn without_elicitation(self) -> Self {
        self.rebuild(|s| s.offers.elicitation = false)
    }

    /// How long a call paused on a question waits in this process for the
    /// answer ([`DEFAULT_ELICITATION_TIMEOUT`] by default). After that it is
    /// cancelled; an answer that comes later runs the call again, and the
    /// answer is given when the server asks the same question.
    pub fn with_elicitation_timeout(self, timeout: Duration) -> Self {
        self.rebuild(|s| s.elicitation_timeout = timeout)
    }

    /// The server's name in messages.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Connects now rather than on first use.
    pub async fn connect(&self) -> Result<(), ToolsError> {
        self.peer()
            .await
            .map(|_| ())
            .map_err(|e| self.open_failed(e))
    }

    /// The process id of the running child (stdio servers only).
    pub async fn server_pid(&self) -> Option<u32> {
        let state = self.shared.state.lock().await;
        state.live.as_ref().and_then(|l| l.pid)
    }

    /// Closes the session and ends the child; later calls get an error
    /// result. Waits up to 10 s for the session to close.
    pub async fn shutdown(&self) -> Result<(), ToolsError> {
        self.close(true).await
    }

    /// Closes the session and ends the child; unless `for_good`, the next
    /// use starts a new one (what [`ToolProvider::shutdown`] does, since
    /// the provider may be shared by agents that go on).
    async fn close(&self, for_good: bool) -> Result<(), ToolsError> {
        let live = {
            let mut state = self.shared.state.lock().await;
            state.closed |= for_good;
            state.live.take()
        };
        let Some(mut live) = live else {
            return Ok(());
        };
        match live.session.close_with_timeout(SHUTDOWN_TIMEOUT).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(self.unavailable("the session did not close in time".into())),
            Err(e) => Err(self.unavailable(format!("closing failed: {e}"))),
        }
    }

    fn unavailable(&self, message: String) -> ToolsError {
        ToolsError::McpUnavailable {
            server: self.shared.name.clone(),
            message,
        }
    }

    /// A session that could not be opened: a refusal of the client's
    /// credentials, or an unavailable server.
    fn open_failed(&self, error: open_error::OpenError) -> ToolsError {
        match error {
            open_error::OpenError::Refused(message) => ToolsError::McpAuthRefused {
                server: self.shared.name.clone(),
                message,
            },
            open_error::OpenError::Unavailable(message) => self.unavailable(message),
        }
    }

    fn unavailable_result(&self, call: &ToolCall, message: String) -> ToolResult {
        let error = ToolError::Unavailable {
            message: format!(
                "MCP server '{}' is unavailable: {message}",
                self.shared.name
            ),
        };
        ToolResult::error(call.id.clone(), error.to_string())
    }

    /// A peer of a live session, opening one when there is none or the last
    /// one broke.
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), open_error::OpenError> {
        let mut state = self.shared.state.lock().await;
        if state.closed {
            return Err(open_error::OpenError::Unavailable(
                "the provider was shut down".into(),
            ));
        }
        if let Some(live) = &state.live {
            if !live.session.is_transport_closed() && !live.session.is_closed() {
                return Ok((live.session.peer().clone(), live.generation));
            }
            tracing::info!(server = %self.shared.name, "MCP session ended; reconnecting");
        }
        // Dropping the old session ends its child.
        state.live = None;
        let opened = tokio::time::timeout(
            self.shared.connect_timeout,
            transport::open(
                &self.shared.transport,
                &self.shared.name,
                &self.shared.notices,
                &self.shared.offers,
            ),
        )
        .await
        .map_err(|_| {
            open_error::OpenError::Unavailable(format!(
                "connecting took over {:?}",
                self.shared.connect_timeout
            ))
        })??;
        let (session, pid) = opened;
        state.generation += 1;
        let generation = state.generation;
        let peer = session.peer().clone();
        state.live = Some(Live {
            session,
            pid,
            generation,
        });
        tracing::debug!(server = %self.shared.name, ?pid, "MCP session opened");
        Ok((peer, generation))
    }

    /// Forgets the session of this generation after a transport failure, so
    /// that the next use reconnects.
    async fn forget(&self, generation: u64) {
        let mut state = self.shared.state.lock().await;
        if state
            .live
            .as_ref()
            .is_some_and(|l| l.generation == generation)
        {
            state.live = None;
        }
    }

    async fn list(&self) -> Result<Vec<ToolDefinition>, ToolError> {
        let (peer, generation) = self
            .peer()
            .await
            .map_err(|message| ToolError::Unavailable {
                message: format!("MCP server '{}': {message}", self.shared.name),
            })?;
        // Cleared before listing, so that a change announced while the
        // listing runs is seen by the next one.
        let changed = self
            .shared
            .notices
            .tools_changed
            .swap(false, Ordering::SeqCst);
        if !changed
            && let Ok(listed) = self.shared.listed.read()
            && let Some((listed_in, definitions)) = listed.as_ref()
            && *listed_in == generation
        {
            return Ok(definitions.clone());
        }
        let tools = match peer.list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                if is_transport_failure(&e) {
                    self.forget(generation).await;
                }
                return Err(ToolError::Unavailable {
                    message: format!(
                        "MCP server '{}': listing tools failed: {e}",
                        self.shared.name
                    ),
                });
            }
        };
        let mut names = HashMap::with_capacity(tools.len());
        let mut definitions = Vec::with_capacity(tools.len());
        for tool in tools {
            let exposed = exposed_name(&self.shared.prefix, &tool.name);
            if let Some(Target::Server(other)) = names.get(&exposed) {
                tracing::warn!(
                    server = %self.shared.name,
                    "tools '{other}' and '{}' both map to '{exposed}'; keeping the first",
                    tool.name
                );
                continue;
            }
            names.insert(exposed.clone(), Target::Server(tool.name.to_string()));
            let idempotent = is_idempotent(&tool);
            definitions.push(
                ToolDefinition::new(
                    exposed,
                    tool.description.map(|d| d.into_owned()).unwrap_or_default(),
                    Value::Object((*tool.input_schema).clone()),
                )
                .idempotent(idempotent),
            );
        }
        let offers_resources = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        if self.shared.resource_tools && offers_resources {
            let list = exposed_name(&self.shared.prefix, LIST_RESOURCES_TOOL);
            let read = exposed_name(&self.shared.prefix, READ_RESOURCE_TOOL);
            let tools = catalog::resource_tools(&self.shared.name, list, read);
            for (tool, target) in tools
                .into_iter()
                .zip([Target::ListResources, Target::ReadResource])
            {
                if names.contains_key(&tool.name) {
                    tracing::warn!(
                        server = %self.shared.name,
                        "the server has a tool '{}'; its resources are not offered as a tool",
                        tool.name
                    );
                    continue;
                }
                names.insert(tool.name.clone(), target);
                definitions.push(tool);
            }
        }
        if let Ok(mut slot) = self.shared.names.write() {
            *slot = names;
        }
        if let Ok(mut slot) = self.shared.listed.write() {
            *slot = Some((generation, definitions.clone()));
        }
        Ok(definitions)
    }

    /// `tools/call` as rmcp's `call_tool_once` sends it (with a
    /// `notifications/cancelled` when dropped before the answer), the
    /// server's progress for it going to `events` as `tool-report`s, until
    /// the answer or the server's first question.
    async fn call_tool(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        call: &ToolCall,
        cx: &TurnContext,
        generation: u64,
    ) -> Landed {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Registered before it is sent: the server may ask for sampling as
        // soon as it has the call. Its progress token routes its progress.
        let (asks, questions) = tokio::sync::mpsc::unbounded_channel();
        let guard = CallGuard::register(&self.shared.notices, call, cx, asks);
        let handle = match peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Landed::Answer(Err(e), generation),
        };
        guard.set_token(calls::progress_key(&handle.progress_token));
        let abandoned = Abandoned {
            peer: Some(peer.clone()),
            id: handle.id.clone(),
        };
        Flight {
            response: Box::pin(handle.await_response()),
            questions,
            guard,
            abandoned,
            generation,
            context_id: cx.context_id.clone(),
        }
        .fly()
        .await
    }

    /// The tool result of where a call got to: its answer, or (the server
    /// asked the person) an `input-required` result with the question,
    /// the call paused until the answer comes.
    async fn land(&self, landed: Landed, call: &ToolCall) -> ToolResult {
        let (answer, generation) = match landed {
            Landed::Asked(flight, question) => return self.pause(flight, question, call),
            Landed::Answer(answer, generation) => (answer, generation),
        };
        match answer {
            Ok(CallToolResponse::Complete(result)) => {
                content::to_tool_result(call.id.clone(), result)
            }
            Ok(_) => ToolResult::error(
                call.id.clone(),
                format!(
                    "MCP server '{}' asked for client input or started a task, which is not supported",
                    self.shared.name
                ),
            ),
            Err(e) if is_transport_failure(&e) => {
                self.forget(generation).await;
                self.unavailable_result(call, e.to_string())
            }
            Err(ServiceError::McpError(e)) => {
                let error = ToolError::Execution {
                    message: e.message.into_owned(),
                };
                ToolResult::error(call.id.clone(), error.to_string())
            }
            Err(e) => ToolResult::error(call.id.clone(), e.to_string()),
        }
    }

    /// Keeps `flight` paused on `question` (for the elicitation timeout)
    /// and returns the `input-required` result that asks it.
    fn pause(&self, flight: Flight, question: Question, call: &ToolCall) -> ToolResult {
        let part = question.request.to_part();
        let key = (flight.context_id.clone(), call.id.clone());
        let number = self.shared.next_pause.fetch_add(1, Ordering::Relaxed);
        let paused = Paused {
            number,
            question,
            flight,
        };
        let earlier = self.paused().insert(key.clone(), paused);
        drop(earlier);
        let shared = Arc::downgrade(&self.shared);
        let timeout = self.shared.elicitation_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let mut paused = shared
                .paused
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if paused.get(&key).is_some_and(|p| p.number == number) {
                // Dropped: the server is told the call is cancelled.
                let expired = paused.remove(&key);
                drop(paused);
                drop(expired);
            }
        });
        ToolResult {
            content: vec![part],
            ..ToolResult::text(call.id.clone(), "")
        }
        .with_signal(ToolSignal::InputRequired)
    }

    /// The paused calls, locked.
    fn paused(&self) -> std::sync::MutexGuard<'_, HashMap<(Arc<str>, String), Paused>> {
        self.shared
            .paused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Goes on with a paused call in the turn `cx`: the answer the turn
    /// carries for its question is sent and the call runs on; without one
    /// (or with content that does not fit), it stays paused and asks again.
    async fn resume(&self, paused: Paused, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        let Paused {
            question, flight, ..
        } = paused;
        flight.guard.move_to(cx);
        let answer = cx
            .deps
            .get::<looopy_core::elicitation::ElicitationAnswers>()
            .and_then(|answers| answers.for_call(&call.id).cloned())
            .filter(|a| a.request_id == question.request.request_id);
        let Some(answer) = answer else {
            return self.pause(flight, question, call);
        };
        flight.guard.answered();
        match elicit::to_result(&answer, &question.request) {
            Ok(result) => {
                // A server that stopped waiting answers the call anyway.
                let _ = question.respond.send(result);
                self.land(flight.fly().await, call).await
            }
            Err(error) => {
                let question = Question {
                    request: question.request.with_error(error),
                    respond: question.respond,
                };
                self.pause(flight, question, call)
            }
        }
    }

    fn target_of(&self, exposed: &str) -> Option<Target> {
        self.shared.names.read().ok()?.get(exposed).cloned()
    }

    async fn call(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        let key = (cx.context_id.clone(), call.id.clone());
        let paused = self.paused().remove(&key);
        if let Some(paused) = paused {
            return self.resume(paused, call, cx).await;
        }
        let idempotency_key = cx.idempotency_key().unwrap_or(&call.id);
        let target = match self.target_of(&call.name) {
            Some(target) => target,
            None => {
                // Not listed yet (or listed before the server changed).
                if let Err(e) = self.list().await {
                    return ToolResult::error(call.id.clone(), e.to_string());
                }
                match self.target_of(&call.name) {
                    Some(target) => target,
                    None => {
                        let error = ToolError::UnknownTool {
                            name: call.name.clone(),
                        };
                        return ToolResult::from_error(call.id.clone(), &error);
                    }
                }
            }
        };
        let original = match target {
            Target::Server(name) => name,
            Target::ListResources => return self.call_list_resources(call).await,
            Target::ReadResource => return self.call_read_resource(call).await,
        };
        let arguments = match parse_object(&call.arguments) {
            Ok(map) => map,
            Err(message) => return invalid_arguments(call, message),
        };
        let (peer, generation) = match self.peer().await {
            Ok(peer) => peer,
            Err(error) => return self.unavailable_result(call, error.to_string()),
        };
        let mut params = CallToolRequestParams::new(original).with_arguments(arguments);
        params.meta_or_default().0.0.insert(
            IDEMPOTENCY_KEY_META.to_owned(),
            Value::String(idempotency_key.to_owned()),
        );
        #[cfg(feature = "otel")]
        trace::inject_current_context(&mut params);
        let landed = self.call_tool(&peer, params, call, cx, generation).await;
        self.land(landed, call).await
    }
}

/// Resources and prompts.
impl McpToolProvider {
    /// The server's resources, every page of them.
    pub async fn resources(&self) -> Result<Vec<McpResource>, ToolsError> {
        let (peer, generation) = self.peer().await.map_err(|e| self.open_failed(e))?;
        let listed = peer.list_all_resources().await;
        let resources = self.answer(generation, "listing resources", listed).await?;
        Ok(resources.into_iter().map(Into::into).collect())
    }

    /// The server's resource templates, every page of them.
    pub async fn resource_templates(&self) -> Result<Vec<McpResourceTemplate>, ToolsError> {
        let (peer, generation) = self.peer().await.map_err(|e| self.open_failed(e))?;
        let listed = peer.list_all_resource_templates().await;
        let templates = self
            .answer(generation, "listing resource templates", listed)
            .await?;
        Ok(templates.into_iter().map(Into::into).collect())
    }

    /// Reads the resource at `uri`: text contents as text parts, binary
    /// contents as inline file parts (base64, with the URI and media type).
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<Part>, ToolsError> {
        let (peer, generation) = self.peer().await.map_err(|e| self.open_failed(e))?;
        let read = peer.read_resource(catalog::read_params(uri)).await;
        let result = self
            .answer(generation, &format!("reading resource '{uri}'"), read)
            .await?;
        Ok(catalog::resource_parts(result))
    }

    /// The server's prompts, every page of them; none when the server
    /// declares no `prompts` capability (it is not asked).
    pub async fn prompts(&self) -> Result<Vec<McpPrompt>, ToolsError> {
        let (peer, generation) = self.peer().await.map_err(|e| self.open_failed(e))?;
        if peer
            .peer_info()
            .is_none_or(|info| info.capabilities.prompts.is_none())
        {
            return Ok(Vec::new());
        }
        let listed = peer.list_all_prompts().await;
        let prompts = self.answer(generation, "listing prompts", listed).await?;
        Ok(prompts.into_iter().map(Into::into).collect())
    }

    /// The prompt `name` filled in with `arguments`: the messages to start a
    /// turn from (for instance as the turn's input, or its history).
    pub async fn prompt<K, V>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<McpPromptMessages, ToolsError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let arguments: serde_json::Map<String, Value> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), Value::String(v.into())))
            .collect();
        let (peer, generation) = self.peer().await.map_err(|e| self.open_failed(e))?;
        let got = peer
            .get_prompt(catalog::prompt_params(name, arguments))
            .await;
        let result = self
            .answer(generation, &format!("getting prompt '{name}'"), got)
            .await?;
        Ok(McpPromptMessages::from_result(result))
    }

    /// The value of a request's answer, or the error it means: a broken
    /// transport forgets the session (the next use reconnects).
    async fn answer<T>(
        &self,
        generation: u64,
        what: &str,
        result: Result<T, ServiceError>,
    ) -> Result<T, ToolsError> {
        match result {
            Ok(value) => Ok(value),
            Err(e) if is_transport_failure(&e) => {
                self.forget(generation).await;
                Err(self.unavailable(format!("{what} failed: {e}")))
            }
            Err(ServiceError::McpError(e)) => Err(ToolsError::McpRequest {
                server: self.shared.name.clone(),
                message: format!("{what}: {}", e.message),
            }),
            Err(e) => Err(ToolsError::McpRequest {
                server: self.shared.name.clone(),
                message: format!("{what}: {e}"),
            }),
        }
    }

    /// The listing tool: the resources, then the templates (a server that
    /// refuses to list templates has none).
    async fn call_list_resources(&self, call: &ToolCall) -> ToolResult {
        let resources = match self.resources().await {
            Ok(resources) => resources,
            Err(e) => return failed_result(call, &e),
        };
        let templates = match self.resource_templates().await {
            Ok(templates) => templates,
            Err(ToolsError::McpRequest { .. }) => Vec::new(),
            Err(e) => return failed_result(call, &e),
        };
        catalog::listing_result(call, &resources, &templates)
    }

    /// The reading tool: the resource's contents as the result's parts.
    async fn call_read_resource(&self, call: &ToolCall) -> ToolResult {
        let uri = parse_object(&call.arguments).and_then(|arguments| match arguments.get("uri") {
            Some(Value::String(uri)) if !uri.is_empty() => Ok(uri.clone()),
            _ => Err("`uri` must be a non-empty string".to_owned()),
        });
        let uri = match uri {
            Ok(uri) => uri,
            Err(message) => return invalid_arguments(call, message),
        };
        match self.read_resource(&uri).await {
            Ok(parts) => {
                let mut result = ToolResult::text(call.id.clone(), "");
                result.content = parts;
                result
            }
            Err(e) => failed_result(call, &e),
        }
    }
}

/// The error result of a call whose arguments are not what its tool takes.
fn invalid_arguments(call: &ToolCall, message: String) -> ToolResult {
    let error = ToolError::InvalidArguments {
        tool: call.name.clone(),
        message,
    };
    ToolResult::from_error(call.id.clone(), &error)
}

/// The error result of a resource tool whose request failed.
fn failed_result(call: &ToolCall, error: &ToolsError) -> ToolResult {
    let error = match error {
        ToolsError::McpUnavailable { .. } => ToolError::Unavailable {
            message: error.to_string(),
        },
        _ => ToolError::Execution {
            message: error.to_string(),
        },
    };
    ToolResult::from_error(call.id.clone(), &error)
}

#[async_trait]
impl ToolProvider for McpToolProvider {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        self.list().await
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        tokio::select! {
            // Dropping the call sends the server a cancellation.
            () = cx.cancel.cancelled() => {
                ToolResult::from_error(call.id.clone(), &ToolError::Cancelled)
            }
            result = self.call(call, cx) => result,
        }
    }

    /// Connects (spawns the child, or opens the HTTP session) now; a
    /// provider already connected does nothing.
    async fn start(&self) -> Result<(), ToolError> {
        self.connect().await.map_err(|e| ToolError::Unavailable {
            message: e.to_string(),
        })
    }

    /// Ends the child process (or the HTTP session) now; a later call
    /// starts a new one. [`McpToolProvider::shutdown`] ends it for good.
    async fn shutdown(&self) -> Result<(), ToolError> {
        self.close(false).await.map_err(|e| ToolError::Unavailable {
            message: e.to_string(),
        })
    }
}

/// Tells the server that a call dropped before its answer is abandoned.
struct Abandoned {
    /// `None` once the answer came.
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let (Some(peer), Ok(runtime)) = (self.peer.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let id = self.id.clone();
        runtime.spawn(async move {
            let reason = Some("the call was cancelled".to_owned());
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                .await;
        });
    }
}

/// A running call in [`Notices::calls`], removed when the call ends (or is
/// dropped, cancelled).
struct CallGuard {
    notices: Arc<Notices>,
    id: u64,
}

impl CallGuard {
    /// Registers `call`, running in the current span, of the turn `cx`;
    /// the server's questions during it go to `asks`.
    fn register(
        notices: &Arc<Notices>,
        call: &ToolCall,
        cx: &TurnContext,
        asks: tokio::sync::mpsc::UnboundedSender<Question>,
    ) -> Self {
        let id = notices.next_call.fetch_add(1, Ordering::Relaxed);
        let running = RunningCall {
            id,
            token: None,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            span: tracing::Span::current(),
            cx: cx.clone(),
            asks,
            answered: false,
        };
        notices.calls().push(running);
        CallGuard {
            notices: notices.clone(),
            id,
        }
    }

    /// Changes the registered call with `f`.
    fn update(&self, f: impl FnOnce(&mut RunningCall)) {
        if let Some(call) = self.notices.calls().iter_mut().find(|c| c.id == self.id) {
            f(call);
        }
    }

    /// Notes the call's progress token, once sent.
    fn set_token(&self, token: String) {
        self.update(|call| call.token = Some(token));
    }

    /// A paused call goes on in the turn `cx`, in the current span: its
    /// progress and questions belong to that turn now.
    fn move_to(&self, cx: &TurnContext) {
        self.update(|call| {
            call.cx = cx.clone();
            call.span = tracing::Span::current();
        });
    }

    /// The answer the turn carries for the call was given.
    fn answered(&self) {
        self.update(|call| call.answered = true);
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.notices.calls().retain(|c| c.id != self.id);
    }
}

/// The arguments as a JSON object; empty arguments read as `{}`.
fn parse_object(arguments: &str) -> Result<serde_json::Map<String, Value>, String> {
    if arguments.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("the arguments must be a JSON object".into()),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}

/// Whether the server says that running the tool again has no further
/// effect: `idempotentHint: true`, or `readOnlyHint: true` (a tool without
/// effects is idempotent; MCP reads `idempotentHint` only for tools that are
/// not read-only).
fn is_idempotent(tool: &rmcp::model::Tool) -> bool {
    tool.annotations
        .as_ref()
        .is_some_and(|a| a.idempotent_hint == Some(true) || a.read_only_hint == Some(true))
}

fn is_transport_failure(error: &ServiceError) -> bool {
    matches!(
        error,
        ServiceError::TransportSend(_) | ServiceError::TransportClosed
    )
}

/// The name the model sees: prefix + the server's name, with characters
/// other than `[A-Za-z0-9_-]` replaced by `_`, at most 64 characters.
pub fn exposed_name(prefix: &str, name: &str) -> String {
    prefix
        .chars()
        .chain(name.chars())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_names_are_prefixed_and_sanitized() {
        assert_eq!(exposed_name("fs_", "read_file"), "fs_read_file");
        assert_eq!(exposed_name("", "a.b/c d"), "a_b_c_d");
        assert_eq!(exposed_name("p_", &"x".repeat(100)).len(), 64);
    }

    #[test]
    fn idempotent_and_read_only_hints_make_a_tool_idempotent() {
        use rmcp::model::{Tool, ToolAnnotations};
        let tool = |annotations: Option<ToolAnnotations>| {
            let mut t = Tool::new("t", "d", serde_json::Map::new());
            t.annotations = annotations;
            t
        };
        assert!(!is_idempotent(&tool(None)));
        assert!(!is_idempotent(&tool(Some(ToolAnnotations::new()))));
        assert!(!is_idempotent(&tool(Some(
            ToolAnnotations::new().idempotent(false)
        ))));
        assert!(is_idempotent(&tool(Some(
            ToolAnnotations::new().idempotent(true)
        ))));
        assert!(is_idempotent(&tool(Some(
            ToolAnnotations::new().read_only(true)
        ))));
        assert!(!is_idempotent(&tool(Some(
            ToolAnnotations::new().read_only(false).destructive(false)
        ))));
    }

    #[test]
    fn the_idempotency_key_is_a_valid_prefixed_meta_key() {
        let (prefix, name) = IDEMPOTENCY_KEY_META.split_once('/').unwrap();
        let labels: Vec<&str> = prefix.split('.').collect();
        assert!(labels.iter().all(|l| {
            l.starts_with(|c: char| c.is_ascii_alphabetic())
                && l.ends_with(|c: char| c.is_ascii_alphanumeric())
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        }));
        assert!(!matches!(
            labels.get(1),
            Some(&"mcp" | &"modelcontextprotocol")
        ));
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric()));
    }
}
