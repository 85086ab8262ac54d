//! The agent as an MCP server: `looopy mcp` over stdio, and `/mcp` of
//! `looopy serve` over streamable HTTP (docs/mcp.md).
//!
//! One tool, [`SEND_MESSAGE_TOOL`], runs a turn with the given message. A
//! session keeps one conversation unless a call names another
//! (`conversation_id`); the result says which conversation it was, so that
//! a client can come back to it. The turn's streamed answer arrives as
//! progress notifications when the call asks for them (a `progressToken`):
//! each chunk of the answer's text is one notification's message,
//! and the client's cancellation cancels the turn.

use std::sync::Arc;

use anyhow::{Context, Result};

use futures::StreamExt;
use looopy_agent::{AgentTemplate, TurnOptions};
use looopy_core::{AuthContext, EventPayload, Message, Part, TaskState};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

/// The name of the tool that runs a turn.
pub const SEND_MESSAGE_TOOL: &str = "send_message";

/// The principal of calls that carry no credentials: `looopy mcp` over
/// stdio, whose caller is whoever started the process.
pub const LOCAL_PRINCIPAL: &str = "local";

/// The MCP server of one session: its own conversation, the agent's
/// template to run turns with.
#[derive(Clone)]
pub struct AgentMcpServer {
    shared: Arc<Shared>,
    /// The conversation of calls that name none.
    session_context: String,
}

struct Shared {
    template: AgentTemplate,
    name: String,
    description: String,
}

impl AgentMcpServer {
    /// A server for one session, running turns of `template`'s Agents;
    /// `name` and `description` are the agent's (the server's name and
    /// its instructions).
    pub fn new(template: AgentTemplate, name: &str, description: &str) -> Self {
        AgentMcpServer {
            shared: Arc::new(Shared {
                template,
                name: name.to_owned(),
                description: description.to_owned(),
            }),
            session_context: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// Another session of the same agent: a new conversation of its own.
    pub fn new_session(&self) -> Self {
        AgentMcpServer {
            shared: self.shared.clone(),
            session_context: uuid::Uuid::new_v4().to_string(),
        }
    }

    fn tool(&self) -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "What to ask or tell the agent."
                },
                "conversation_id": {
                    "type": "string",
                    "description": "The conversation to continue (a result's conversationId); \
                                    without it, the session's own conversation."
                }
            },
            "required": ["message"],
            "additionalProperties": false
        });
        let Value::Object(schema) = schema else {
            unreachable!("a JSON object literal")
        };
        Tool::new(
            SEND_MESSAGE_TOOL,
            format!(
                "Sends a message to the agent '{}' and returns its answer. {}",
                self.shared.name, self.shared.description
            ),
            schema,
        )
    }

    /// Runs one turn for `call`, streaming its text as progress when the
    /// caller asked for progress.
    async fn send_message(
        &self,
        call: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let arguments = call.arguments.unwrap_or_default();
        // Bad arguments are a result the caller (often a model) reads, as
        // MCP asks of input errors, not a protocol error.
        let refused = |why: &str| Ok(CallToolResult::error(vec![ContentBlock::text(why)]));
        let message = match arguments.get("message") {
            Some(Value::String(m)) if !m.trim().is_empty() => m.clone(),
            _ => return refused("`message` must be a non-empty string"),
        };
        let conversation = match arguments.get("conversation_id") {
            None | Some(Value::Null) => self.session_context.clone(),
            Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
            Some(_) => return refused("`conversation_id` must be a non-empty string"),
        };
        let auth = caller(&context);
        let agent = self
            .shared
            .template
            .agent_owned_by(&conversation, &auth.principal)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let options = TurnOptions::new()
            .with_auth(auth)
            .with_cancel(context.ct.child_token());
        // A conversation busy with another turn, or a store that cannot be
        // read, is the call's failure, with the reason.
        let mut turn = match agent
            .execute_turn_with(Some(Message::user(message)), options)
            .await
        {
            Ok(turn) => turn,
            Err(e) => return refused(&e.to_string()),
        };
        let task_id = turn.task_id().to_owned();
        let progress_token = context.meta.get_progress_token();
        let mut streamed = 0u32;
        while let Some(event) = turn.next().await {
            // The answer streams as chunks of its artifact.
            let (Some(token), EventPayload::ArtifactUpdate { artifact, .. }) =
                (&progress_token, &*event.payload)
            else {
                continue;
            };
            let text: String = artifact.parts.iter().filter_map(Part::as_text).collect();
            if text.is_empty() {
                continue;
            }
            streamed += 1;
            let progress = ProgressNotificationParam::new(token.clone(), f64::from(streamed))
                .with_message(text);
            // A client gone mid-turn is seen by the cancellation.
            let _ = context.peer.notify_progress(progress).await;
        }
        let Some(finished) = turn.summary() else {
            return Err(ErrorData::internal_error(
                "the turn ended without a final status",
                None,
            ));
        };
        let mut content: Vec<ContentBlock> = finished
            .message
            .as_deref()
            .map(|m| m.parts.iter().filter_map(to_content).collect())
            .unwrap_or_default();
        if content.is_empty() {
            content.push(ContentBlock::text(match finished.state {
                TaskState::Completed => "(no answer)".to_owned(),
                state => format!("the turn ended {}", state.as_str()),
            }));
        }
        let failed = matches!(
            finished.state,
            TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        );
        let mut result = if failed {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        let mut structured = Map::new();
        structured.insert("conversationId".into(), Value::String(conversation));
        structured.insert("taskId".into(), Value::String(task_id));
        structured.insert(
            "state".into(),
            Value::String(finished.state.as_str().to_owned()),
        );
        result.structured_content = Some(Value::Object(structured));
        Ok(result)
    }
}

/// Who calls: the principal the HTTP layer authenticated (on `/mcp` of
/// `looopy serve`), else [`LOCAL_PRINCIPAL`].
fn caller(context: &RequestContext<RoleServer>) -> AuthContext {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<AuthContext>())
        .cloned()
        .unwrap_or_else(|| AuthContext::new(LOCAL_PRINCIPAL))
}

/// An answer's part as MCP content: text as text, images as images, other
/// inline files as embedded blobs, files by URI as embedded resources'
/// links, data as its JSON text.
fn to_content(part: &Part) -> Option<ContentBlock> {
    match part {
        Part::Text { text } => Some(ContentBlock::text(text.clone())),
        Part::File { file } => {
            let mime = file.mime_type.clone();
            match (&file.bytes, &file.uri) {
                (Some(bytes), _) if mime.as_deref().is_some_and(|m| m.starts_with("image/")) => {
                    Some(ContentBlock::image(bytes.clone(), mime.unwrap_or_default()))
                }
                (Some(bytes), uri) => Some(ContentBlock::resource(
                    ResourceContents::BlobResourceContents {
                        uri: uri.clone().unwrap_or_else(|| "looopy:file".to_owned()),
                        mime_type: mime,
                        blob: bytes.clone(),
                        meta: None,
                    },
                )),
                (None, Some(uri)) => Some(ContentBlock::text(uri.clone())),
                (None, None) => None,
            }
        }
        Part::Data { data } => Some(ContentBlock::text(data.to_string())),
        _ => None,
    }
}

impl ServerHandler for AgentMcpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.shared.name.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.shared.description.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != SEND_MESSAGE_TOOL {
            return Err(ErrorData::invalid_params(
                format!("unknown tool '{}'", request.name),
                None,
            ));
        }
        self.send_message(request, context)
            .await
            .map(CallToolResponse::Complete)
    }
}

/// Serves the agent of `app` over MCP on stdin and stdout until the client
/// closes stdin (one session, one conversation unless calls name others).
pub async fn serve_stdio(app: &crate::app::App) -> Result<()> {
    use rmcp::ServiceExt;
    let server = AgentMcpServer::new(
        app.agent_template()?,
        &app.config.agent.name,
        &app.config.agent.description,
    );
    let running = server
        .serve(rmcp::transport::io::stdio())
        .await
        .context("starting the MCP session on stdio")?;
    running.waiting().await.context("serving MCP on stdio")?;
    Ok(())
}

/// The `/mcp` endpoint of `looopy serve`: MCP over streamable HTTP, a
/// session (and so a conversation) per MCP session, ended when `shutdown`
/// is cancelled. Mounted behind the A2A server's authentication.
pub fn http_routes(
    server: AgentMcpServer,
    shutdown: looopy_core::CancellationToken,
    public_url: &str,
    max_body_bytes: usize,
) -> axum::Router {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = shutdown;
    config.max_request_body_bytes = max_body_bytes;
    // Loopback hosts are allowed by default (against DNS rebinding); the
    // server's public URL names its own.
    if let Some(authority) = public_url.split_once("://").map(|(_, rest)| rest) {
        let authority = authority.split('/').next().unwrap_or(authority);
        config.allowed_hosts.push(authority.to_owned());
        if let Some((host, _port)) = authority.rsplit_once(':') {
            config.allowed_hosts.push(host.to_owned());
        }
    }
    let service = StreamableHttpService::new(
        move || Ok(server.new_session()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new().nest_service(MCP_PATH, service)
}

/// Where `looopy serve` serves MCP.
pub const MCP_PATH: &str = "/mcp";
