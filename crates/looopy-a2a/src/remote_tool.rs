//! [`RemoteAgentTools`]: a remote A2A agent as one tool of a local agent.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use looopy_core::{
    EventPayload, TaskState, ToolCall, ToolDefinition, ToolError, ToolProvider, ToolResult,
    TurnContext,
};
use serde_json::{Value, json};
use tracing::Instrument;

use crate::client::{A2aClient, A2aClientError, A2aStream, Credentials};
use crate::model::SendRequest;
use crate::model::{SendResponse, StreamEvent, TaskSnapshot};
use crate::server::record::fold_artifact;

/// The remote side of one local conversation.
#[derive(Debug, Clone, Default)]
struct RemoteSession {
    context_id: Option<String>,
    /// A remote task waiting for input: the next call answers it.
    pending_task: Option<String>,
}

/// Exposes a remote A2A agent as one tool, `{"message": string}` in, the
/// remote agent's final answer (text) out.
///
/// Calls from one local conversation (context) continue one remote
/// conversation; when the remote agent asks a question (`input-required`),
/// the tool result says so and the next call answers that task. Failures
/// (transport, protocol, a failed or rejected remote task) become error
/// results the model can read. The call runs in a span (`a2a.remote_agent`)
/// whose W3C trace context travels with the request (feature `otel`), so
/// the remote turn joins the local trace. A cancelled local turn cancels the
/// remote task.
pub struct RemoteAgentTools {
    client: A2aClient,
    definition: ToolDefinition,
    forward_credentials: bool,
    sessions: Mutex<HashMap<String, RemoteSession>>,
}

/// A tool name models accept: `[a-zA-Z0-9_-]{1,64}`.
fn tool_name(name: &str) -> String {
    let mut out: String = name
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if out.trim_matches('_').is_empty() {
        out = "remote_agent".into();
    }
    out
}

fn definition(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition::new(
        tool_name(name),
        description,
        json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "What to ask or tell the agent, in plain language."}
            },
            "required": ["message"],
        }),
    )
}

impl RemoteAgentTools {
    /// A tool named `name` (made model-safe) described by `description`.
    pub fn new(client: A2aClient, name: &str, description: &str) -> Self {
        RemoteAgentTools {
            client,
            definition: definition(name, description),
            forward_credentials: false,
            sessions: Mutex::default(),
        }
    }

    /// Reads the agent card and names the tool after the agent; the
    /// description lists its skills. The client adopts the card's version.
    pub async fn from_card(client: A2aClient) -> Result<Self, A2aClientError> {
        let card = client.discover().await?;
        let mut description = format!(
            "Ask the remote agent \"{}\". {}",
            card.name, card.description
        );
        for s in &card.skills {
            description.push_str(&format!("\n- {}: {}", s.name, s.description));
        }
        Ok(Self::new(client, &card.name, description.trim()))
    }

    /// Renames the tool.
    pub fn with_name(mut self, name: &str) -> Self {
        self.definition.name = tool_name(name);
        self
    }

    /// Sends the local caller's credential (the turn's `AuthContext`) as the
    /// bearer token instead of the client's own.
    pub fn forward_credentials(mut self, yes: bool) -> Self {
        self.forward_credentials = yes;
        self
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, RemoteSession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn client_for(&self, cx: &TurnContext) -> A2aClient {
        match (
            self.forward_credentials,
            cx.auth.as_ref().and_then(|a| a.credentials.clone()),
        ) {
            (true, Some(token)) => self
                .client
                .with_credentials(Some(Credentials::Bearer(token))),
            _ => self.client.clone(),
        }
    }

    /// Sends the message and follows the remote turn to its end.
    async fn ask(
        &self,
        client: &A2aClient,
        request: SendRequest,
        cx: &TurnContext,
    ) -> Result<TaskSnapshot, String> {
        let mut events = match client.stream(&request).await {
            Ok(events) => events,
            // Agents without streaming: a blocking send.
            Err(A2aClientError::Rpc(e)) if e.code == a2a::error_code::UNSUPPORTED_OPERATION => {
                return match client.send(&request).await.map_err(|e| e.to_string())? {
                    SendResponse::Task(t) => Ok(t),
                    SendResponse::Message(m) => Ok(message_task(m.message, m.context_id)),
                };
            }
            Err(e) => return Err(e.to_string()),
        };
        let mut task: Option<TaskSnapshot> = None;
        loop {
            let item = tokio::select! {
                biased;
                () = cx.cancel.cancelled() => {
                    // The remote task exists once the request is accepted,
                    // even when its id (the stream's first event) is not
                    // read yet: read it, so that the task is cancelled too
                    // rather than left running there.
                    let id = match &task {
                        Some(t) => Some(t.id.clone()),
                        None => first_task_id(&mut events).await,
                    };
                    if let Some(id) = id {
                        let _ = client.cancel_task(&id).await;
                    }
                    return Err("cancelled".into());
                }
                item = events.next() => item,
            };
            let Some(item) = item else { break };
            match item.map_err(|e| e.to_string())?.event {
                StreamEvent::Task(t) => task = Some(t),
                StreamEvent::Message(m) => return Ok(message_task(m.message, m.context_id)),
                StreamEvent::Update(e) => {
                    let Some(t) = task.as_mut() else {
                        return Err("the remote agent's stream did not start with a task".into());
                    };
                    if let Some(sink) = &cx.events {
                        sink.emit(EventPayload::SubAgent {
                            path: format!("{}/{}", cx.task_id, t.id),
                            tool: self.definition.name.clone(),
                            call_id: cx.call_id.as_deref().unwrap_or("").to_owned(),
                            event: Box::new(e.clone()),
                        });
                    }
                    match *e.payload {
                        EventPayload::StatusUpdate {
                            status, is_final, ..
                        } => {
                            t.status = status;
                            if is_final {
                                break;
                            }
                        }
                        EventPayload::ArtifactUpdate {
                            artifact, append, ..
                        } => {
                            fold_artifact(&mut t.artifacts, &artifact, append);
                        }
                        _ => {}
                    }
                }
            }
        }
        task.ok_or_else(|| "the remote agent sent nothing".into())
    }
}

/// How long a cancelled call waits for the remote task's id.
const TASK_ID_WAIT: Duration = Duration::from_secs(5);

/// The id of the remote task a stream opens with (its first event), when
/// it comes within [`TASK_ID_WAIT`].
async fn first_task_id(events: &mut A2aStream) -> Option<String> {
    let first = tokio::time::timeout(TASK_ID_WAIT, events.next()).await;
    match first {
        Ok(Some(Ok(item))) => match item.event {
            StreamEvent::Task(t) => Some(t.id),
            _ => None,
        },
        _ => None,
    }
}

/// A direct message answer, as a completed task.
fn message_task(message: looopy_core::Message, context_id: Option<String>) -> TaskSnapshot {
    TaskSnapshot {
        id: String::new(),
        context_id: context_id.unwrap_or_default(),
        status: looopy_core::TaskStatus::new(TaskState::Completed).with_message(message),
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: serde_json::Map::new(),
    }
}

#[async_trait]
impl ToolProvider for RemoteAgentTools {
    async fn tools(&self, _cx: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![self.definition.clone()])
    }

    async fn execute(&self, call: &ToolCall, cx: &TurnContext) -> ToolResult {
        if call.name != self.definition.name {
            return ToolResult::error(
                &call.id,
                ToolError::UnknownTool {
                    name: call.name.clone(),
                }
                .to_string(),
            );
        }
        let message = match call
            .parsed_arguments()
            .get("message")
            .and_then(Value::as_str)
        {
            Some(m) if !m.trim().is_empty() => m.to_owned(),
            _ => {
                return ToolResult::error(
                    &call.id,
                    format!(
                        "{} expects {{\"message\": \"<text>\"}}",
                        self.definition.name
                    ),
                );
            }
        };
        let session = self
            .sessions()
            .get(&*cx.context_id)
            .cloned()
            .unwrap_or_default();
        let mut request = SendRequest::text(message);
        request.context_id = session.context_id.clone();
        request.task_id = session.pending_task.clone();
        let span = tracing::info_span!(
            "a2a.remote_agent",
            "gen_ai.tool.name" = %self.definition.name,
            "a2a.task.id" = tracing::field::Empty,
            "a2a.task.state" = tracing::field::Empty,
        );
        let client = self.client_for(cx);
        let outcome = self
            .ask(&client, request, cx)
            .instrument(span.clone())
            .await;
        let task = match outcome {
            Ok(t) => t,
            Err(e) => {
                return ToolResult::error(
                    &call.id,
                    format!("the remote agent could not be reached: {e}"),
                );
            }
        };
        span.record("a2a.task.id", task.id.as_str());
        span.record("a2a.task.state", task.status.state.as_str());
        let state = task.status.state;
        self.sessions().insert(
            cx.context_id.to_string(),
            RemoteSession {
                context_id: (!task.context_id.is_empty()).then(|| task.context_id.clone()),
                pending_task: matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
                    .then(|| task.id.clone()),
            },
        );
        let answer = task.answer_text();
        match state {
            TaskState::Completed => ToolResult::text(&call.id, answer),
            TaskState::InputRequired | TaskState::AuthRequired => ToolResult::text(
                &call.id,
                format!(
                    "{answer}\n[The remote agent needs more input: call this tool again with the answer.]"
                ),
            ),
            other => ToolResult::error(
                &call.id,
                if answer.is_empty() {
                    format!("the remote task ended {}", other.as_str())
                } else {
                    format!("the remote task ended {}: {answer}", other.as_str())
                },
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_model_safe() {
        assert_eq!(tool_name("Weather Agent v2"), "weather_agent_v2");
        assert_eq!(tool_name("   "), "remote_agent");
        assert_eq!(tool_name(&"x".repeat(100)).len(), 64);
    }
}
