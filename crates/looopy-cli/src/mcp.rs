//! The agent as an MCP server: `looopy mcp` over stdio, and `/mcp` of
//! `looopy serve` over streamable HTTP (docs/mcp.md).
//!
//! Each skill of the agent (`[[agent.skills]]`) is a tool named by its id;
//! an agent without skills has one tool, [`SEND_MESSAGE_TOOL`]. Either runs
//! a turn with the given message; a skill's turn is told which skill was
//! asked for. A session keeps one conversation unless a call names another
//! (`conversation_id`); the result says which conversation it was, so that
//! a client can come back to it, and carries the answer and the artifacts
//! the turn's tools made. The turn's streamed answer and its tool calls
//! arrive as progress notifications when the call asks for them (a
//! `progressToken`): each chunk of the answer's text, and each tool call's
//! start and end, is one notification's message. The client's cancellation
//! cancels the turn.

use std::sync::Arc;

use anyhow::{Context, Result};

use futures::StreamExt;
use looopy_agent::{AgentTemplate, TurnOptions};
use looopy_core::{
    Artifact, AuthContext, EventPayload, Message, Part, TaskState, ToolOutcome, fold_artifact,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use crate::config::{AgentSection, SkillConfig};

/// The name of the tool that runs a turn, the only tool of an agent
/// without skills.
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
    /// The agent's system prompt, which a skill's turn extends.
    system_prompt: Option<String>,
    /// One tool each; none: `send_message` alone.
    skills: Vec<SkillConfig>,
}

impl AgentMcpServer {
    /// A server for one session, running turns of `template`'s Agents as
    /// `agent` describes them: its name and description (the server's
    /// name and instructions), its skills (the tools) and the system
    /// prompt a skill's turn extends.
    pub fn new(template: AgentTemplate, agent: &AgentSection) -> Self {
        AgentMcpServer {
            shared: Arc::new(Shared {
                template,
                name: agent.name.clone(),
                description: agent.description.clone(),
                system_prompt: agent.system_prompt.clone(),
                skills: agent.skills.clone(),
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

    /// The tools: one per skill, else `send_message`.
    fn tools(&self) -> Vec<Tool> {
        let shared = &self.shared;
        if shared.skills.is_empty() {
            return vec![Tool::new(
                SEND_MESSAGE_TOOL,
                format!(
                    "Sends a message to the agent '{}' and returns its answer. {}",
                    shared.name, shared.description
                ),
                message_schema(),
            )];
        }
        shared
            .skills
            .iter()
            .map(|skill| {
                Tool::new(
                    skill.id.clone(),
                    skill.description.clone(),
                    message_schema(),
                )
                .with_title(skill.name())
            })
            .collect()
    }

    /// What the tool `name` runs: `Some(None)` for `send_message` of an
    /// agent without skills, `Some(Some(skill))` for a skill's tool, `None`
    /// for a tool the server does not have.
    fn tool_named(&self, name: &str) -> Option<Option<&SkillConfig>> {
        let skills = &self.shared.skills;
        if skills.is_empty() {
            return (name == SEND_MESSAGE_TOOL).then_some(None);
        }
        skills.iter().find(|s| s.id == name).map(Some)
    }

    /// The system prompt of a turn of `skill`: the agent's, then a line
    /// naming the skill asked for.
    fn skill_prompt(&self, skill: &SkillConfig) -> String {
        let asked = format!(
            "The caller asked for the skill '{}': {}",
            skill.name(),
            skill.description
        );
        match self.shared.system_prompt.as_deref() {
            Some(prompt) if !prompt.trim().is_empty() => format!("{prompt}\n\n{asked}"),
            _ => asked,
        }
    }

    /// Runs one turn for `call` (told of `skill`, for a skill's tool),
    /// sending its text and tool calls as progress when the caller asked
    /// for progress.
    async fn send_message(
        &self,
        call: CallToolRequestParams,
        skill: Option<&SkillConfig>,
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
        let mut options = TurnOptions::new()
            .with_auth(auth)
            .with_cancel(context.ct.child_token());
        if let Some(skill) = skill {
            options = options.with_system_prompt(self.skill_prompt(skill));
        }
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
        let mut progress = Progress {
            token: context.meta.get_progress_token(),
            peer: &context.peer,
            sent: 0,
        };
        // What the turn's tools made; the model's own text is the answer.
        let mut artifacts: Vec<Artifact> = Vec::new();
        while let Some(event) = turn.next().await {
            match &*event.payload {
                EventPayload::ArtifactUpdate {
                    artifact, append, ..
                } if !looopy_loop::is_response_artifact(&task_id, &artifact.artifact_id) => {
                    fold_artifact(&mut artifacts, artifact, *append);
                }
                // The answer streams as chunks of its artifact.
                EventPayload::ArtifactUpdate { artifact, .. } => {
                    let text: String = artifact.parts.iter().filter_map(Part::as_text).collect();
                    progress.send(text).await;
                }
                EventPayload::ToolStart { call, .. } => {
                    progress.send(format!("calling tool {}", call.name)).await;
                }
                EventPayload::ToolComplete {
                    name,
                    outcome,
                    duration_ms,
                    ..
                } => {
                    let how = match outcome {
                        ToolOutcome::Success => format!("done in {duration_ms} ms"),
                        ToolOutcome::Timeout => "timed out".to_owned(),
                        _ => "failed".to_owned(),
                    };
                    progress.send(format!("tool {name} {how}")).await;
                }
                _ => {}
            }
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
        content.extend(
            artifacts
                .iter()
                .flat_map(|a| a.parts.iter().filter_map(to_content)),
        );
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
        if !artifacts.is_empty() {
            let listed = artifacts.iter().map(artifact_entry).collect();
            structured.insert("artifacts".into(), Value::Array(listed));
        }
        result.structured_content = Some(Value::Object(structured));
        Ok(result)
    }
}

/// The arguments of every tool: the message, and the conversation to
/// continue.
fn message_schema() -> Map<String, Value> {
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
    schema
}

/// What `structuredContent.artifacts` says of an artifact whose parts are
/// in the content: its id, name and description, and how many parts.
fn artifact_entry(artifact: &Artifact) -> Value {
    let mut entry = json!({
        "artifactId": artifact.artifact_id,
        "parts": artifact.parts.iter().filter(|p| to_content(p).is_some()).count(),
    });
    if let Some(name) = &artifact.name {
        entry["name"] = json!(name);
    }
    if let Some(description) = &artifact.description {
        entry["description"] = json!(description);
    }
    entry
}

/// The progress notifications of one call: none when it sent no
/// `progressToken`.
struct Progress<'a> {
    token: Option<ProgressToken>,
    peer: &'a Peer<RoleServer>,
    sent: u32,
}

impl Progress<'_> {
    /// Sends `message` as the next notification (an empty one is not sent).
    async fn send(&mut self, message: String) {
        let Some(token) = &self.token else {
            return;
        };
        if message.is_empty() {
            return;
        }
        self.sent += 1;
        let progress = ProgressNotificationParam::new(token.clone(), f64::from(self.sent))
            .with_message(message);
        // A client gone mid-turn is seen by the cancellation.
        let _ = self.peer.notify_progress(progress).await;
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
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(skill) = self.tool_named(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool '{}'", request.name),
                None,
            ));
        };
        self.send_message(request, skill, context)
            .await
            .map(CallToolResponse::Complete)
    }
}

/// Serves the agent of `app` over MCP on stdin and stdout until the client
/// closes stdin (one session, one conversation unless calls name others).
pub async fn serve_stdio(app: &crate::app::App) -> Result<()> {
    use rmcp::ServiceExt;
    let server = AgentMcpServer::new(app.agent_template()?, &app.config.agent);
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use looopy_core::FileContent;

    use super::*;

    fn file(mime: &str, uri: Option<&str>, bytes: Option<&str>) -> Part {
        Part::file(FileContent {
            blob: None,
            name: None,
            mime_type: Some(mime.to_owned()),
            uri: uri.map(str::to_owned),
            bytes: bytes.map(str::to_owned),
        })
    }

    #[test]
    fn parts_become_text_images_and_embedded_blobs() {
        let cases = [
            (
                Part::text("hello"),
                json!({"type": "text", "text": "hello"}),
            ),
            (
                file("image/png", None, Some("iVBO")),
                json!({"type": "image", "data": "iVBO", "mimeType": "image/png"}),
            ),
            (
                file("application/pdf", Some("file:///r.pdf"), Some("JVBE")),
                json!({"type": "resource", "resource":
                    {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "JVBE"}}),
            ),
            (
                file("application/pdf", None, Some("JVBE")),
                json!({"type": "resource", "resource":
                    {"uri": "looopy:file", "mimeType": "application/pdf", "blob": "JVBE"}}),
            ),
            (
                file("text/csv", Some("https://example.com/a.csv"), None),
                json!({"type": "text", "text": "https://example.com/a.csv"}),
            ),
            (
                Part::data(json!({"total": 3})),
                json!({"type": "text", "text": r#"{"total":3}"#}),
            ),
        ];
        for (part, expected) in cases {
            let content = serde_json::to_value(to_content(&part)).unwrap();
            assert_eq!(content, expected, "{part:?}");
        }
    }
}
