//! [`AgentError`]: why an Agent operation could not run, and [`AgentBusy`].

use looopy_core::{LlmError, StoreError};

/// Who holds the context when an operation is refused as busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyHolder {
    /// This Agent (or a clone of it) is running a turn or a lifecycle
    /// operation (start, pause, compaction...).
    ThisAgent,
    /// The [`TurnLock`](looopy_core::store::TurnLock) lease of the context is
    /// held by another owner (another process, or another Agent for the same
    /// context sharing the lock).
    OtherOwner,
    /// The lease belongs to a turn whose process stopped renewing it (it
    /// died): the turn must be recovered first, with
    /// [`Agent::resume_turn`](crate::Agent::resume_turn) (the A2A server does
    /// this on its own). [`AgentBusy::task_id`] names it.
    StrandedTurn,
}

impl BusyHolder {
    fn describe(self) -> &'static str {
        match self {
            BusyHolder::ThisAgent => "a turn or operation is already running in this agent",
            BusyHolder::OtherOwner => "another owner holds the turn lease of this context",
            BusyHolder::StrandedTurn => {
                "the turn lease belongs to a stranded turn that must be resumed first"
            }
        }
    }
}

/// A turn (or lifecycle operation) was refused because one is already
/// running for the context. Nothing was started and nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("context '{context_id}' is busy: {}", holder.describe())]
pub struct AgentBusy {
    /// The conversation.
    pub context_id: String,
    /// Who holds it.
    pub holder: BusyHolder,
    /// The task of the turn that holds it, when known (always for
    /// [`BusyHolder::StrandedTurn`]).
    pub task_id: Option<String>,
}

/// Why an Agent operation failed.
///
/// Errors of a running turn (model failure, cancellation) are not
/// `AgentError`s: they end the turn with a final `failed` / `canceled` event
/// and the Agent stays usable. `AgentError` covers what prevents an
/// operation from running at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// One turn at a time per context: another turn or operation runs.
    #[error(transparent)]
    Busy(#[from] AgentBusy),
    /// The Agent was shut down; call [`start`](crate::Agent::start) first.
    #[error("agent for context '{context_id}' is shut down; call start() to use it again")]
    ShutDown {
        /// The conversation.
        context_id: String,
    },
    /// The builder was missing something or got contradictory settings.
    #[error("agent configuration error: {0}")]
    Config(String),
    /// A store failed (loading history or state, saving the turn's input,
    /// taking the turn lease).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The model failed during a manual compaction.
    #[error("compaction failed: {0}")]
    Compaction(LlmError),
    /// The user message carries a client tool result for a call that is not
    /// waiting for one.
    #[error("client tool result for unknown or already answered call '{tool_call_id}'")]
    UnknownToolCall {
        /// The id the client quoted.
        tool_call_id: String,
    },
    /// The user message carries an approval decision that does not read as
    /// one (see `looopy_core::approval`).
    #[error("{0}")]
    InvalidApproval(#[from] looopy_core::approval::InvalidDecision),
    /// The user message carries an answer to a tool's question that does
    /// not read as one (see `looopy_core::elicitation`).
    #[error("{0}")]
    InvalidElicitation(#[from] looopy_core::elicitation::InvalidElicitationAnswer),
    /// The user message answers a question of a call that is not waiting.
    #[error("answer for call '{tool_call_id}', whose tool asked no question that is waiting")]
    NotAwaitingAnswer {
        /// The id the user quoted.
        tool_call_id: String,
    },
    /// The user message decides on a call that is not waiting for approval.
    #[error("approval decision for call '{tool_call_id}', which is not waiting for approval")]
    NotAwaitingApproval {
        /// The id the user quoted.
        tool_call_id: String,
    },
    /// A tool provider did not shut down cleanly (the Agent's state was
    /// saved and it is shut down all the same).
    #[error("a tool provider did not shut down cleanly: {0}")]
    Tools(looopy_core::ToolError),
    /// There is nothing for the model to answer: no history, no message.
    #[error("nothing to run: the conversation is empty and no user message was given")]
    EmptyTurn,
}

impl AgentError {
    /// Whether this is [`AgentError::Busy`].
    pub fn is_busy(&self) -> bool {
        matches!(self, AgentError::Busy(_))
    }

    pub(crate) fn busy(context_id: &str, holder: BusyHolder) -> Self {
        AgentError::Busy(AgentBusy {
            context_id: context_id.to_owned(),
            holder,
            task_id: None,
        })
    }
}
