//! How to reach an MCP server: [`StdioServer`] (a child process) or
//! [`HttpServer`] (streamable HTTP), and the connection itself.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tracing::Instrument;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    ErrorData, FormElicitationCapability, Implementation, ProgressNotificationParam,
    RootsCapabilities, SamplingCapability,
};
#[allow(deprecated)] // sampling and roots, deprecated by SEP-2577 but spoken
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ListRootsResult};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::calls::{Notices, progress_key};
use super::elicit;
use super::open_error::OpenError;
use super::sampling::{self, McpRoot, McpSampling};

/// An MCP server run as a child process, spoken to over its stdin and
/// stdout. Its stderr is forwarded line by line to `tracing` (target
/// `looopy_tools::mcp`, level debug).
#[derive(Clone)]
pub struct StdioServer {
    /// The program.
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// The working directory, when not the current one.
    pub current_dir: Option<PathBuf>,
}

impl StdioServer {
    /// Runs `command` with no arguments.
    pub fn new(command: impl Into<PathBuf>) -> Self {
        StdioServer {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable of the child.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }
}

impl fmt::Debug for StdioServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Environment values may be secrets: show the names only.
        f.debug_struct("StdioServer")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("current_dir", &self.current_dir)
            .finish()
    }
}

/// An MCP server reached over streamable HTTP.
#[derive(Clone)]
pub struct HttpServer {
    /// The endpoint, such as `http://127.0.0.1:8000/mcp`.
    pub url: String,
    /// Headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// A bearer token sent as `Authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// OAuth 2.0 client credentials: the token is fetched from the server's
    /// authorization server instead (see
    /// [`with_oauth_client_credentials`](Self::with_oauth_client_credentials)).
    #[cfg(feature = "mcp-oauth")]
    pub oauth: Option<super::oauth::OAuthClientCredentials>,
}

impl HttpServer {
    /// The server at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        HttpServer {
            url: url.into(),
            headers: Vec::new(),
            bearer_token: None,
            #[cfg(feature = "mcp-oauth")]
            oauth: None,
        }
    }

    /// Adds a header sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `Authorization: Bearer <token>`.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Authorizes with the OAuth 2.0 client credentials grant, for an agent
    /// that runs with no person and no browser. The authorization server is
    /// the one the server names in its protected-resource metadata (RFC
    /// 9728, found as rmcp finds it); the token is fetched before the
    /// session opens, sent as `Authorization: Bearer`, and fetched anew when
    /// it is about to expire or the server refuses it (a 401). A client the
    /// authorization server refuses (a wrong secret) fails to connect with
    /// [`ToolsError::McpAuthRefused`](crate::ToolsError::McpAuthRefused).
    /// Takes the place of [`bearer_token`](Self::bearer_token).
    #[cfg(feature = "mcp-oauth")]
    pub fn with_oauth_client_credentials<I, S>(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        scopes: I,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.oauth = Some(super::oauth::OAuthClientCredentials {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scopes: scopes.into_iter().map(Into::into).collect(),
        });
        self
    }
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may be credentials: show the names only.
        let mut s = f.debug_struct("HttpServer");
        s.field("url", &self.url)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            );
        #[cfg(feature = "mcp-oauth")]
        s.field("oauth", &self.oauth);
        s.finish()
    }
}

/// How to reach an MCP server.
#[derive(Debug, Clone)]
pub enum McpTransport {
    /// A child process over stdio.
    Stdio(StdioServer),
    /// Streamable HTTP.
    Http(HttpServer),
}

impl McpTransport {
    /// A name for messages and logs: the program's file name, or the URL.
    pub(crate) fn default_name(&self) -> String {
        match self {
            McpTransport::Stdio(s) => s
                .command
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| s.command.display().to_string()),
            McpTransport::Http(h) => h.url.clone(),
        }
    }
}

impl From<StdioServer> for McpTransport {
    fn from(server: StdioServer) -> Self {
        McpTransport::Stdio(server)
    }
}

impl From<HttpServer> for McpTransport {
    fn from(server: HttpServer) -> Self {
        McpTransport::Http(server)
    }
}

/// A live client session.
pub(crate) type Session = RunningService<RoleClient, Client>;

/// What a provider lets its servers ask of the client.
#[derive(Clone)]
pub(crate) struct Offers {
    /// Sampling by the agent's model; `None`: refused.
    pub(crate) sampling: Option<McpSampling>,
    /// The roots answered to `roots/list`; none: no `roots` capability.
    pub(crate) roots: Vec<McpRoot>,
    /// Whether a server may ask the person (`elicitation/create`, form
    /// mode): on by default.
    pub(crate) elicitation: bool,
}

impl Default for Offers {
    fn default() -> Self {
        Offers {
            sampling: None,
            roots: Vec::new(),
            elicitation: true,
        }
    }
}

/// The client side of a session: says who we are and what we offer, marks
/// the tool listing stale when the server announces that its tools changed
/// (`notifications/tools/list_changed`), routes progress, and answers the
/// server's sampling and roots requests.
pub(crate) struct Client {
    config: ClientConfig,
    notices: Arc<Notices>,
    server: String,
    offers: Offers,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    /// The agent's model answers when sampling is allowed; a typed error
    /// otherwise.
    #[allow(deprecated)] // sampling, deprecated by SEP-2577 but spoken
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(policy) = &self.offers.sampling else {
            return Err(sampling::refused(&self.server));
        };
        let token = context.meta.get_progress_token().map(|t| progress_key(&t));
        if policy.needs_approval() {
            let (message, schema) = sampling::approval_question(policy, &self.server, &params);
            let answer = elicit::ask_form(
                &self.notices,
                &self.server,
                token.as_deref(),
                message,
                schema,
                context.ct.clone(),
            )
            .await?;
            let allowed = answer.action == rmcp::model::ElicitationAction::Accept
                && answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("allow"))
                    .and_then(serde_json::Value::as_bool)
                    == Some(true);
            if !allowed {
                return Err(sampling::not_allowed(&self.server));
            }
        }
        let caller = self.notices.caller(token.as_deref());
        sampling::create_message(policy, &self.server, params, caller, context.ct).await
    }

    /// A question for the person: the call that asked pauses and its turn
    /// ends `input-required` (see `looopy_core::elicitation`), or the
    /// answer the turn carries for the call is given at once.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if !self.offers.elicitation {
            return Err(elicit::refused(&self.server));
        }
        let token = context.meta.get_progress_token().map(|t| progress_key(&t));
        elicit::ask(
            &self.notices,
            &self.server,
            token.as_deref(),
            request,
            context.ct,
        )
        .await
    }

    /// The configured roots.
    #[allow(deprecated)] // roots, deprecated by SEP-2577 but spoken
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(
            self.offers.roots.iter().map(McpRoot::to_root).collect(),
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.notices.tools_changed.store(true, Ordering::SeqCst);
    }

    /// A call's progress becomes a `tool-report` event of its turn; a
    /// token of no running call (one that ended) is dropped.
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let token = progress_key(&params.progress_token);
        let routed = self
            .notices
            .calls()
            .iter()
            .find(|c| c.token.as_deref() == Some(&*token))
            .and_then(|c| {
                let sink = c.cx.events.clone()?;
                Some((sink, c.call_id.clone(), c.tool.clone()))
            });
        if let Some((sink, call_id, tool)) = routed {
            sink.emit(looopy_core::EventPayload::ToolReport {
                call_id,
                tool,
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }
}

#[allow(deprecated)] // sampling and roots, deprecated by SEP-2577 but spoken
fn client(notices: &Arc<Notices>, server: &str, offers: &Offers) -> Client {
    let mut capabilities = ClientCapabilities::default();
    if offers.sampling.is_some() {
        capabilities.sampling = Some(SamplingCapability::default());
    }
    if !offers.roots.is_empty() {
        // The roots are fixed for the session: no list_changed.
        capabilities.roots = Some(RootsCapabilities::default());
    }
    if offers.elicitation {
        // Form mode only: a URL is for the person's browser, which an A2A
        // client may not have. Answers are checked against the schema.
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new().with_schema_validation(true)),
        );
    }
    Client {
        config: ClientConfig::new(
            capabilities,
            Implementation::new("looopy", env!("CARGO_PKG_VERSION")),
        ),
        notices: notices.clone(),
        server: server.to_owned(),
        offers: offers.clone(),
    }
}

/// Opens a session: spawns the child or reaches the URL, then runs the MCP
/// handshake. Returns the session and the child's process id. The server's
/// `tools/list_changed` notifications set `tools_changed`.
///
/// The session outlives the turn that happened to open it, and its
/// background tasks keep the span they were started in open for as long as
/// they run: opened inside the turn's span, they would keep `invoke_agent`
/// (and the request above it) from ever ending, so from ever being
/// exported. So a session runs in a root span of its own (`mcp.session`, a
/// trace of its own that ends with the session); each call is traced in its
/// caller's span (`execute_tool`, with `traceparent` in `_meta`).
pub(crate) async fn open(
    transport: &McpTransport,
    server_name: &str,
    notices: &Arc<Notices>,
    offers: &Offers,
) -> Result<(Session, Option<u32>), OpenError> {
    let client = client(notices, server_name, offers);
    let opening = async {
        match transport {
            McpTransport::Stdio(server) => Ok(open_stdio(server, server_name, client).await?),
            McpTransport::Http(server) => open_http(server, client).await.map(|s| (s, None)),
        }
    };
    // `Span::none()` would not do: entering it leaves the turn's span current.
    let session = tracing::info_span!(parent: None, "mcp.session", mcp.server = %server_name);
    opening.instrument(session).await
}

async fn open_stdio(
    server: &StdioServer,
    server_name: &str,
    client: Client,
) -> Result<(Session, Option<u32>), String> {
    let mut command = tokio::process::Command::new(&server.command);
    command
        .args(&server.args)
        .envs(server.env.iter().map(|(k, v)| (k, v)))
        // A fallback: rmcp kills the child when the session ends; this
        // kills it even when no runtime is left to run that cleanup.
        .kill_on_drop(true);
    if let Some(dir) = &server.current_dir {
        command.current_dir(dir);
    }
    let (child, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", server.command.display()))?;
    let pid = child.id();
    if let Some(stderr) = stderr {
        let name = server_name.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "looopy_tools::mcp", server = %name, "{line}");
            }
        });
    }
    let session = client
        .serve(child)
        .await
        .map_err(|e| format!("handshake failed: {e}"))?;
    Ok((session, pid))
}

async fn open_http(server: &HttpServer, client: Client) -> Result<Session, OpenError> {
    let mut headers = HashMap::new();
    for (name, value) in &server.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("invalid header name '{name}': {e}"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| format!("invalid value for header '{name}': {e}"))?;
        headers.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
        .custom_headers(headers)
        .reinit_on_expired_session(true);
    #[cfg(feature = "mcp-oauth")]
    if let Some(credentials) = &server.oauth {
        let tokens = super::oauth::TokenSource::discover(&server.url, credentials).await?;
        tokens.first().await?;
        let http = super::oauth::OAuthHttpClient::new(base_client()?, tokens);
        return serve(
            client,
            StreamableHttpClientTransport::with_client(http, config),
        )
        .await;
    }
    if let Some(token) = &server.bearer_token {
        config = config.auth_header(token.clone());
    }
    serve(
        client,
        StreamableHttpClientTransport::with_client(base_client()?, config),
    )
    .await
}

/// The HTTP client of every streamable HTTP session, below the OAuth layer:
/// with `otel`, one that sends the trace context as headers.
#[cfg(feature = "otel")]
fn base_client() -> Result<super::trace::TracingHttpClient, String> {
    super::trace::TracingHttpClient::new()
}

/// The HTTP client of every streamable HTTP session, below the OAuth layer.
#[cfg(not(feature = "otel"))]
fn base_client() -> Result<reqwest::Client, String> {
    super::http::http_client()
}

/// Runs the handshake over `transport`.
async fn serve<C>(
    client: Client,
    transport: StreamableHttpClientTransport<C>,
) -> Result<Session, OpenError>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient + Send + Sync,
{
    client
        .serve(transport)
        .await
        .map_err(|e| OpenError::Unavailable(format!("handshake failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::super::calls::RunningCall;
    use super::*;

    fn running(notices: &Notices, id: u64, token: Option<&str>, task: &str) {
        let call = RunningCall {
            id,
            token: token.map(str::to_owned),
            call_id: format!("call-{id}"),
            tool: "t".into(),
            span: tracing::Span::none(),
            cx: looopy_core::TurnContext::new(task, "c"),
            asks: tokio::sync::mpsc::unbounded_channel().0,
            answered: false,
        };
        notices.calls().push(call);
    }

    fn caller_task(notices: &Notices, token: Option<&str>) -> Option<String> {
        notices.caller(token).map(|c| c.cx.task_id.to_string())
    }

    #[test]
    fn a_request_belongs_to_the_call_of_its_token_else_to_the_only_call() {
        let notices = Notices::default();
        assert_eq!(caller_task(&notices, None), None, "no call runs");
        running(&notices, 1, Some("7"), "first");
        assert_eq!(caller_task(&notices, None).as_deref(), Some("first"));
        assert_eq!(caller_task(&notices, Some("99")).as_deref(), Some("first"));
        running(&notices, 2, Some("8"), "second");
        assert_eq!(caller_task(&notices, Some("8")).as_deref(), Some("second"));
        assert_eq!(caller_task(&notices, Some("7")).as_deref(), Some("first"));
        assert_eq!(
            caller_task(&notices, None),
            None,
            "two run: neither is guessed"
        );
    }
}
