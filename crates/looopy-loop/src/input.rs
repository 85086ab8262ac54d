//! What a caller gives one turn besides its history and context:
//! [`TurnInput`], and the calls a person approved ([`ApprovedCalls`]).
//!
//! Per-turn tools (for instance the client tools an A2A message declares)
//! are an input of the turn, like its settings: they are handed to
//! [`AgentLoop::start_turn_with`](crate::AgentLoop::start_turn_with),
//! [`AgentLoop::start_turn_approved`](crate::AgentLoop::start_turn_approved)
//! or [`AgentLoop::resume_with`](crate::AgentLoop::resume_with), and are not
//! part of the [`TurnContext`](looopy_core::TurnContext) that every tool
//! receives.
//!
//! Neither is stored in checkpoints: a provider cannot be saved. Whoever
//! resumes a turn hands its per-turn tools again (an Agent's
//! `resume_turn` takes them in its options; the A2A server reads them
//! again from the turn's stored user message).

use std::sync::Arc;

use looopy_core::ToolProvider;
use looopy_core::store::HistoryMark;

use crate::limits::TurnSettings;

/// The inputs of one turn besides its history and [`TurnContext`]:
/// settings for this turn only, and tools offered for this turn only.
///
/// A [`TurnSettings`] converts into a `TurnInput` without tools, so
/// `start_turn_with(history, cx, settings)` reads as before.
///
/// ```
/// use std::sync::Arc;
/// use looopy_loop::{TurnInput, TurnSettings};
/// # use looopy_core::{ToolProvider, ToolDefinition, ToolCall, ToolResult, ToolError, TurnContext};
/// # struct Extra;
/// # #[async_trait::async_trait]
/// # impl ToolProvider for Extra {
/// #     async fn tools(&self, _: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> { Ok(vec![]) }
/// #     async fn execute(&self, call: &ToolCall, _: &TurnContext) -> ToolResult { ToolResult::text(&call.id, "") }
/// # }
///
/// let input = TurnInput::from(TurnSettings::new().with_max_iterations(3))
///     .with_tools(Arc::new(Extra));
/// assert!(input.tools.is_some());
/// ```
///
/// [`TurnContext`]: looopy_core::TurnContext
#[derive(Debug, Clone, Default)]
pub struct TurnInput {
    /// Settings for this turn only (each field set replaces the loop's).
    pub settings: TurnSettings,
    /// Tools offered in this turn only, beside the loop's own: for
    /// instance the client tools an A2A message declared
    /// (`looopy_tools::ClientTools`). A name clash with the loop's tools
    /// fails the turn, as between any two providers.
    pub tools: Option<Arc<dyn ToolProvider>>,
    /// The history handed to the turn starts with the conversation's
    /// stored history up to this mark: its checkpoints say so
    /// ([`TaskCheckpoint::stored_history`]), so that a store may keep only
    /// what follows. `None` (the default): checkpoints stand alone.
    /// Ignored by a resume (the checkpoint keeps its own).
    ///
    /// [`TaskCheckpoint::stored_history`]: looopy_core::store::TaskCheckpoint::stored_history
    pub stored_history: Option<HistoryMark>,
}

impl TurnInput {
    /// No per-turn settings and no per-turn tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the settings of the turn.
    pub fn with_settings(mut self, settings: TurnSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Says that the turn's history starts with the stored history up to
    /// `mark` (see [`stored_history`](Self::stored_history)).
    pub fn with_stored_history(mut self, mark: HistoryMark) -> Self {
        self.stored_history = Some(mark);
        self
    }

    /// Offers `tools` in this turn only, beside the loop's own.
    pub fn with_tools(mut self, tools: Arc<dyn ToolProvider>) -> Self {
        self.tools = Some(tools);
        self
    }
}

impl From<TurnSettings> for TurnInput {
    fn from(settings: TurnSettings) -> Self {
        TurnInput {
            settings,
            tools: None,
            stored_history: None,
        }
    }
}

/// Tool calls a person approved (or approved with edited arguments) after
/// a turn asked (see [`Approval::Ask`](crate::hooks::Approval::Ask)), or whose tools asked a
/// question the person answered: a new turn runs them before its first
/// model call, appends their results, then `then` (the rest of the
/// person's message, if any), and goes on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApprovedCalls {
    /// The calls to run, with the arguments to run them with.
    pub calls: Vec<looopy_core::ToolCall>,
    /// A message to append after their results.
    pub then: Option<looopy_core::Message>,
    /// Answers to questions these calls' tools asked when they last ran
    /// (see `looopy_core::elicitation`): the turn carries them as a
    /// dependency, for the tools to read when they ask again.
    pub answers: looopy_core::elicitation::ElicitationAnswers,
}
