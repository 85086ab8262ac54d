//! Who is acting and on what: [`AuthContext`] and [`TurnContext`].

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::artifact_view::ConversationArtifacts;
use crate::deps::Deps;
use crate::event_sink::EventSink;
use crate::llm::ResponseFormat;

/// The authenticated principal of a turn, with fresh credentials.
///
/// An Agent lives longer than any token; the caller passes a new
/// `AuthContext` with every turn, and every tool call of that turn
/// sees it. `Debug` never prints the credentials.
#[derive(Clone, Default, PartialEq)]
pub struct AuthContext {
    /// Stable id of who is acting (user id, API key name, agent id).
    pub principal: String,
    /// A credential that tools may forward (for instance a bearer token).
    pub credentials: Option<String>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Other claims.
    pub claims: Map<String, Value>,
}

impl AuthContext {
    /// A principal without credentials.
    pub fn new(principal: impl Into<String>) -> Self {
        AuthContext {
            principal: principal.into(),
            ..Default::default()
        }
    }

    /// Adds a credential.
    pub fn with_credentials(mut self, credentials: impl Into<String>) -> Self {
        self.credentials = Some(credentials.into());
        self
    }
}

impl fmt::Debug for AuthContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthContext")
            .field("principal", &self.principal)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// Everything a provider or tool knows about the turn it serves.
///
/// Cheap to clone. `cancel` fires when the turn is cancelled: long-running
/// work should watch it. The tools a turn offers are not part of it: they
/// are the loop's, plus the per-turn tools its caller hands to the loop
/// (`looopy_loop::TurnInput`).
#[derive(Debug, Clone)]
pub struct TurnContext {
    /// The A2A task of this turn.
    pub task_id: Arc<str>,
    /// The conversation (A2A `contextId`).
    pub context_id: Arc<str>,
    /// The agent running the turn.
    pub agent_id: Arc<str>,
    /// Who is acting, when known.
    pub auth: Option<Arc<AuthContext>>,
    /// Fires when the turn is cancelled.
    pub cancel: CancellationToken,
    /// Caller-supplied metadata.
    pub metadata: Arc<Map<String, Value>>,
    /// The turn's number in its conversation, counting from 1: set by an
    /// Agent on every turn it runs; `None` for a bare loop unless the
    /// caller sets it.
    pub turn_number: Option<u64>,
    /// The shape the turn's final answer must take (structured output), for
    /// a model layer to put on each request that does not set one itself;
    /// `None` for free text.
    pub response_format: Option<Arc<ResponseFormat>>,
    /// The id of the tool call this context was made for, while one tool
    /// call runs: the loop sets it on the context it passes to each
    /// [`ToolProvider::execute`](crate::ToolProvider::execute); it is `None` elsewhere. See
    /// [`TurnContext::idempotency_key`].
    pub call_id: Option<Arc<str>>,
    /// The conversation's artifacts, read-only, for tools to see (an Agent
    /// sets it on every turn; `None` for a bare loop unless the caller sets
    /// it).
    pub artifacts: Option<ConversationArtifacts>,
    /// Adds events to the turn's stream: set by the loop on the context of
    /// each tool call, `None` elsewhere.
    pub events: Option<EventSink>,
    /// Typed application state for tools ([`dep`](Self::dep)): the loop's
    /// (registered on its builder) with this turn's on top, once the turn
    /// runs; what the caller sets here overrides the loop's for the turn.
    pub deps: Deps,
    /// Where the turn's execution record is written: set by an Agent on
    /// every turn when it has a record store; the loop's record layers add
    /// each model and tool call to it. `None`: nothing is recorded.
    pub recorder: Option<crate::record::Recorder>,
}

/// The agent id until one is set, shared rather than allocated per turn.
static DEFAULT_AGENT_ID: std::sync::LazyLock<Arc<str>> =
    std::sync::LazyLock::new(|| Arc::from("agent"));

/// Empty metadata (most turns have none), shared rather than allocated
/// per context.
static NO_METADATA: std::sync::LazyLock<Arc<Map<String, Value>>> =
    std::sync::LazyLock::new(|| Arc::new(Map::new()));

impl TurnContext {
    /// A context with fresh cancellation and no auth.
    pub fn new(task_id: impl Into<Arc<str>>, context_id: impl Into<Arc<str>>) -> Self {
        TurnContext {
            task_id: task_id.into(),
            context_id: context_id.into(),
            agent_id: DEFAULT_AGENT_ID.clone(),
            auth: None,
            cancel: CancellationToken::new(),
            metadata: NO_METADATA.clone(),
            turn_number: None,
            response_format: None,
            call_id: None,
            artifacts: None,
            events: None,
            deps: Deps::default(),
            recorder: None,
        }
    }

    /// Records the turn with `recorder`.
    pub fn with_recorder(mut self, recorder: crate::record::Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Sets the agent id.
    pub fn with_agent_id(mut self, agent_id: impl Into<Arc<str>>) -> Self {
        self.agent_id = agent_id.into();
        self
    }

    /// Sets the principal.
    pub fn with_auth(mut self, auth: AuthContext) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// Uses the given cancellation token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = if metadata.is_empty() {
            NO_METADATA.clone()
        } else {
            Arc::new(metadata)
        };
        self
    }

    /// Sets the turn's number in its conversation.
    pub fn with_turn_number(mut self, turn_number: u64) -> Self {
        self.turn_number = Some(turn_number);
        self
    }

    /// Asks for answers of the given shape (see
    /// [`response_format`](Self::response_format)).
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(Arc::new(format));
        self
    }

    /// Lets a tool add events to the turn.
    pub fn with_events(mut self, events: EventSink) -> Self {
        self.events = Some(events);
        self
    }

    /// Lets tools read the conversation's artifacts.
    pub fn with_artifacts(mut self, artifacts: ConversationArtifacts) -> Self {
        self.artifacts = Some(artifacts);
        self
    }

    /// Gives the turn's tools `value` as the dependency of type `T`,
    /// overriding the loop's of the same type for this turn.
    pub fn with_dep<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.deps = std::mem::take(&mut self.deps).with(value);
        self
    }

    /// Sets the turn's dependencies (they override the loop's).
    pub fn with_deps(mut self, deps: Deps) -> Self {
        self.deps = deps;
        self
    }

    /// The dependency of type `T` (see [`Deps`]): a database pool, a
    /// client, a feature flag given to the loop's or the Agent's builder,
    /// or to this turn. A missing one is [`ToolError::MissingDependency`],
    /// which names the type; `?` in a `LocalTools` tool makes it the call's
    /// failed result.
    ///
    /// [`ToolError::MissingDependency`]: crate::ToolError::MissingDependency
    pub fn dep<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, crate::ToolError> {
        self.deps.require::<T>()
    }

    /// The context of one tool call: this one, with the call's id.
    pub fn with_call_id(mut self, call_id: impl Into<Arc<str>>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    /// A stable key for the tool call being run, for tools with side effects
    /// to recognise a call they already carried out: the call's id, which is
    /// stored in the turn's history and stays the same when a turn is resumed
    /// after a crash and an in-flight call is run again. `None` outside a
    /// tool call.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.call_id.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_credentials() {
        let a = AuthContext::new("alice").with_credentials("s3cret");
        let s = format!("{a:?}");
        assert!(s.contains("alice"));
        assert!(!s.contains("s3cret"));
    }
}
