//! [`TurnRunner`]: the seam between the A2A server and whatever runs a turn
//! (an Agent, a bare [`AgentLoop`](looopy_loop::AgentLoop), a script in tests).

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use looopy_core::client_tool::ClientTools;
use looopy_core::{AgentEvent, Artifact, AuthContext, CancellationToken, Message, ToolProvider};
use looopy_loop::InternalEvents;
use serde_json::{Map, Value};

/// The events of one turn, each with the [`TurnRequest`]'s task and
/// context ids (the server logs them as they come). The last one should be
/// a `status-update` with `final: true`; the server adds one (`failed`)
/// when the stream ends without. The server reads the stream on the task
/// that drives the turn, so a turn that runs as its stream is polled (the
/// loop's, the Agent's) runs on that task.
pub type TurnEvents = BoxStream<'static, AgentEvent>;

/// What the server asks a [`TurnRunner`] to do: run one turn of a
/// conversation on a new message.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// The A2A task of this turn. A continued task (one that waited for
    /// input) keeps its id across turns.
    pub task_id: Arc<str>,
    /// The conversation. Turns of one context should see each other's
    /// messages (the runner keeps the history).
    pub context_id: Arc<str>,
    /// The client's message (role `User`).
    pub message: Message,
    /// Who sent it: the authenticated principal, with the credential they
    /// presented.
    pub auth: AuthContext,
    /// Fires when the client cancels the task (`CancelTask`, `tasks/cancel`)
    /// or the server shuts down. The turn should end with a `canceled` final
    /// status soon after.
    pub cancel: CancellationToken,
    /// Whether this message answers a task that ended its last turn
    /// `input-required` (or `auth-required`).
    pub continues_task: bool,
    /// For a continued task, the status message its last turn ended with:
    /// the questions it asked (approvals, a tool's elicitation), which a
    /// runner shows again when the answer cannot be read.
    pub asked: Option<Arc<Message>>,
    /// The request's metadata.
    pub metadata: Map<String, Value>,
    /// Whether a client follows the turn's tool progress (its streaming
    /// request activated the tool-progress extension and the server offers
    /// it). When false, nobody reads the turn's internal events: a runner
    /// need not build them (see [`internal_events`](Self::internal_events)).
    pub tool_progress: bool,
}

impl TurnRequest {
    /// The internal events the server reads from this turn: those the
    /// tool-progress updates are made of when a client follows them, else
    /// none.
    pub fn internal_events(&self) -> InternalEvents {
        if self.tool_progress {
            InternalEvents::TOOL_PROGRESS
        } else {
            InternalEvents::NONE
        }
    }

    /// The client tools this message declares, under
    /// `clientTools` in the message's metadata or else the request's: the
    /// model may call them in this turn, which then ends `input-required`
    /// until the client sends the results. `None` when none are declared.
    pub fn client_tools(&self) -> Result<Option<Arc<dyn ToolProvider>>, RunnerError> {
        let invalid = |e| RunnerError::new(format!("invalid clientTools: {e}"));
        let mut tools = ClientTools::from_message(&self.message).map_err(invalid)?;
        if tools.is_empty() {
            tools = ClientTools::from_metadata(&self.metadata).map_err(invalid)?;
        }
        Ok((!tools.is_empty()).then(|| Arc::new(tools) as Arc<dyn ToolProvider>))
    }
}

/// What the server asks a [`TurnRunner`] to do when it recovers a turn
/// whose process died: carry it on from its last checkpoint.
#[derive(Debug, Clone)]
pub struct ResumeRequest {
    /// The task of the stranded turn.
    pub task_id: Arc<str>,
    /// Its conversation.
    pub context_id: Arc<str>,
    /// The principal that owns the task. Credentials are never stored, so
    /// this carries none: tools that need the caller's credential fail
    /// cleanly in a recovered turn.
    pub auth: AuthContext,
    /// Fires when the client cancels the task or the server shuts down.
    pub cancel: CancellationToken,
}

/// Why a turn could not start.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct RunnerError {
    /// What went wrong (recorded as the failed task's status message).
    pub message: String,
}

impl RunnerError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        RunnerError {
            message: message.into(),
        }
    }
}

/// Runs turns for the A2A server.
///
/// The server calls [`TurnRunner::run_turn`] once per accepted message and
/// drains the returned stream on a task of its own (the turn goes on when
/// the client disconnects), appending the public events to the event log.
/// Implementations: [`LoopRunner`](crate::LoopRunner) (an `AgentLoop` plus a
/// message store), an adapter around the `looopy-agent` Agent, or a scripted
/// runner in tests.
#[async_trait]
pub trait TurnRunner: Send + Sync + 'static {
    /// Starts a turn and returns its events.
    async fn run_turn(&self, request: TurnRequest) -> Result<TurnEvents, RunnerError>;

    /// Answers a message with a message of its own instead of a task (A2A's
    /// direct `Message` reply: no task is created and nothing is logged).
    /// Asked for each message that names no task, before a task is created;
    /// `context_id` is the message's conversation (a new one when it named
    /// none). `Ok(None)`, the default: run a turn.
    async fn reply(
        &self,
        context_id: &str,
        message: &Message,
        auth: &AuthContext,
    ) -> Result<Option<Message>, RunnerError> {
        let _ = (context_id, message, auth);
        Ok(None)
    }

    /// Releases what the runner holds (its agents' tool providers: MCP
    /// servers' child processes, for instance). The server calls it once
    /// its graceful stop is over: no new turns, running ones ended or
    /// cancelled. The default does nothing.
    async fn shutdown(&self) {}

    /// Carries on a turn whose process died, from its last checkpoint, and
    /// returns the rest of its events. `Ok(None)` when this runner cannot
    /// resume turns (the default) or another process took the turn over
    /// first: exactly one process resumes a stranded turn.
    async fn resume_turn(&self, request: ResumeRequest) -> Result<Option<TurnEvents>, RunnerError> {
        let _ = request;
        Ok(None)
    }

    /// The messages of a conversation as the runner keeps them, oldest
    /// first (`owner`: the principal that owns it). The server shows a
    /// task's share of them as its history: from each message that started
    /// one of its turns up to the next user message that started none.
    /// `Ok(None)` when this runner keeps no history (the default): tasks then
    /// show none.
    async fn messages(
        &self,
        context_id: &str,
        owner: &str,
    ) -> Result<Option<Vec<Message>>, RunnerError> {
        let _ = (context_id, owner);
        Ok(None)
    }

    /// The artifacts a task made, as the runner keeps them (every chunk
    /// appended), oldest first. `Ok(None)` when this runner keeps no
    /// artifacts (the default): the server then folds them from the task's
    /// `artifact-update` events in the event log.
    async fn artifacts(
        &self,
        context_id: &str,
        task_id: &str,
        owner: &str,
    ) -> Result<Option<Vec<Artifact>>, RunnerError> {
        let _ = (context_id, task_id, owner);
        Ok(None)
    }
}

#[async_trait]
impl<R: TurnRunner + ?Sized> TurnRunner for Arc<R> {
    async fn run_turn(&self, request: TurnRequest) -> Result<TurnEvents, RunnerError> {
        (**self).run_turn(request).await
    }

    async fn reply(
        &self,
        context_id: &str,
        message: &Message,
        auth: &AuthContext,
    ) -> Result<Option<Message>, RunnerError> {
        (**self).reply(context_id, message, auth).await
    }

    async fn resume_turn(&self, request: ResumeRequest) -> Result<Option<TurnEvents>, RunnerError> {
        (**self).resume_turn(request).await
    }

    async fn shutdown(&self) {
        (**self).shutdown().await
    }

    async fn messages(
        &self,
        context_id: &str,
        owner: &str,
    ) -> Result<Option<Vec<Message>>, RunnerError> {
        (**self).messages(context_id, owner).await
    }

    async fn artifacts(
        &self,
        context_id: &str,
        task_id: &str,
        owner: &str,
    ) -> Result<Option<Vec<Artifact>>, RunnerError> {
        (**self).artifacts(context_id, task_id, owner).await
    }
}
