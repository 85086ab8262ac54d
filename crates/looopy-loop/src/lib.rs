#![forbid(unsafe_code)]
#![doc = include_str!("../README.md")]

mod builder;
mod checkpoint;
mod config;
mod context;
mod error;
mod events;
pub mod hooks;
mod input;
mod interest;
pub mod layers;
mod limits;
mod model_call;
mod parts;
mod pause;
mod queue;
mod resume;
mod stream;
mod telemetry;
pub mod tool_output;
mod tools;
mod turn;
mod wrap_up;

use std::sync::Arc;

use looopy_core::store::CheckpointStore;
use looopy_core::{History, LlmProvider, ToolProvider, TurnContext};

pub use builder::AgentLoopBuilder;
pub use config::{AgentLoopConfig, ToolFailureMode};
pub use context::{CONTEXT_LENGTH, CountedRequests, RequestEstimator, TurnCompactor};
pub use error::LoopError;
pub use events::{is_response_artifact, response_artifact_id};
pub use input::{ApprovedCalls, TurnInput};
pub use interest::InternalEvents;
pub use limits::TurnSettings;
pub use looopy_core::TurnEnd;
pub use stream::{TurnHandle, TurnOutcome, TurnStream};
pub use tools::ToolRegistry;

use crate::events::Emitter;
use crate::parts::LoopParts;
use crate::queue::EventQueue;
use crate::stream::TurnShared;
use crate::turn::Turn;

/// The single-turn engine. Cheap to clone (its parts are one shared
/// allocation, so a clone, and each turn's hold on its loop, is one
/// reference count); one loop serves any number of concurrent turns.
#[derive(Clone)]
pub struct AgentLoop {
    parts: Arc<LoopParts>,
}

impl AgentLoop {
    pub(crate) fn from_parts(parts: LoopParts) -> Self {
        AgentLoop {
            parts: Arc::new(parts),
        }
    }

    /// Starts building a loop around a model.
    pub fn builder(llm: impl LlmProvider + 'static) -> AgentLoopBuilder {
        AgentLoopBuilder::new(Arc::new(llm))
    }

    /// The settings.
    pub fn config(&self) -> &AgentLoopConfig {
        &self.parts.config
    }

    /// The model, wrapped in the loop's model layers (see [`layers`]).
    pub fn llm(&self) -> &Arc<dyn LlmProvider> {
        &self.parts.llm
    }

    /// Where the loop keeps its checkpoints, if anywhere.
    pub fn checkpoint_store(&self) -> Option<&Arc<dyn CheckpointStore>> {
        self.parts.task_store.as_ref()
    }

    /// `model` wrapped in the same model layers as the loop's own (the
    /// retry policy and the custom [`llm_layer`](AgentLoopBuilder::llm_layer)s),
    /// for other calls that should behave alike, such as compaction
    /// summaries made with another model.
    pub fn layer_llm(&self, model: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        self.parts.llm_stack.apply(model)
    }

    /// Starts every tool provider of the loop ([`ToolProvider::start`]: MCP
    /// servers' child processes and handshakes, for instance), all at once.
    /// Each is asked even when another fails; the failures are logged and
    /// the first is returned. A provider that failed to start tries again
    /// on its next use.
    pub async fn start_tools(&self) -> Result<(), looopy_core::ToolError> {
        let results = futures::future::join_all(self.parts.tools.iter().map(|p| p.start())).await;
        let mut first = None;
        for error in results.into_iter().filter_map(Result::err) {
            tracing::warn!(%error, "a tool provider did not start");
            first.get_or_insert(error);
        }
        first.map_or(Ok(()), Err)
    }

    /// Shuts every tool provider of the loop down
    /// ([`ToolProvider::shutdown`]: MCP servers' child processes end, for
    /// instance). Each is asked even when another fails; the failures are
    /// logged and the first is returned. Providers start again on their
    /// next use.
    pub async fn shutdown_tools(&self) -> Result<(), looopy_core::ToolError> {
        let results =
            futures::future::join_all(self.parts.tools.iter().map(|p| p.shutdown())).await;
        let mut first = None;
        for error in results.into_iter().filter_map(Result::err) {
            tracing::warn!(%error, "a tool provider did not shut down cleanly");
            first.get_or_insert(error);
        }
        first.map_or(Ok(()), Err)
    }

    /// A turn's context as the loop runs it: the loop's agent id, and the
    /// loop's dependencies with the turn's own on top.
    fn turn_context(&self, cx: TurnContext) -> TurnContext {
        let deps = self.parts.deps.overridden_by(&cx.deps);
        cx.with_agent_id(self.parts.config.agent_id.clone())
            .with_deps(deps)
    }

    /// The loop's dependencies for tools (see [`AgentLoopBuilder::dep`]).
    pub fn deps(&self) -> &looopy_core::Deps {
        &self.parts.deps
    }

    /// The turn's event queue and the emitter that fills it. The set of
    /// internal events is taken out of `settings`: it is fixed when the
    /// turn starts, and left in it would make the settings non-empty (the
    /// turn would copy the loop's configuration to apply them).
    fn channel(&self, cx: &TurnContext, settings: &mut TurnSettings) -> (Emitter, Arc<EventQueue>) {
        let queue = Arc::new(EventQueue::default());
        let wanted = settings.internal_events.take().unwrap_or_default();
        (
            Emitter::new(
                queue.clone(),
                cx.task_id.clone(),
                cx.context_id.clone(),
                wanted,
            ),
            queue,
        )
    }

    /// Runs one turn over `messages` (the history the Agent loaded, ending
    /// with the new user message). The turn's task id, context, principal and
    /// cancellation come from `cx`; its agent id is this loop's.
    pub fn start_turn(&self, messages: History, cx: TurnContext) -> TurnStream {
        self.start_turn_with(messages, cx, TurnInput::new())
    }

    /// [`start_turn`](Self::start_turn) with inputs for this turn only
    /// ([`TurnInput`]): settings (system prompt, limits, tool failure mode),
    /// each field set replacing the loop's value, and tools offered beside
    /// the loop's own. A [`TurnSettings`] alone converts into a
    /// [`TurnInput`] without tools.
    pub fn start_turn_with(
        &self,
        messages: History,
        cx: TurnContext,
        input: impl Into<TurnInput>,
    ) -> TurnStream {
        self.start(messages, cx, input.into(), None)
    }

    /// [`start_turn_with`](Self::start_turn_with) that first runs the
    /// calls a person approved (see [`ApprovedCalls`]). `messages` ends with
    /// the assistant message that made them and the results of its other
    /// calls; the approval hooks do not run again for these calls (the
    /// `before_tool` and `after_tool` hooks do).
    pub fn start_turn_approved(
        &self,
        messages: History,
        cx: TurnContext,
        input: impl Into<TurnInput>,
        approved: ApprovedCalls,
    ) -> TurnStream {
        self.start(messages, cx, input.into(), Some(approved))
    }

    /// Starts a turn: from the model's next answer, or (with `approved`)
    /// from running the calls a person approved.
    fn start(
        &self,
        messages: History,
        cx: TurnContext,
        mut input: TurnInput,
        approved: Option<ApprovedCalls>,
    ) -> TurnStream {
        let cx = self.turn_context(cx);
        let (emit, rx) = self.channel(&cx, &mut input.settings);
        let shared = Arc::new(TurnShared::default());
        let mut turn = Turn::start(
            self.parts.clone(),
            cx,
            emit,
            shared.clone(),
            messages.clone(),
            input,
        );
        if let Some(approved) = approved {
            turn = turn.with_approved(approved);
        }
        TurnStream::new(Box::pin(turn.run(false)), rx, shared, messages)
    }
}
