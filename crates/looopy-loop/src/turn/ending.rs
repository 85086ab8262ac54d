//! How a turn's body ended: the [`Ending`] it decides (the wrap-up and the
//! finish are in `finish.rs`).

use std::sync::Arc;

use looopy_core::approval::ApprovalRequest;
use looopy_core::{FailedToolCall, Message, ToolCall, TurnEnd, TurnError};

use crate::hooks::FatalHook;

/// How the loop body ended.
pub(super) struct Ending {
    pub(super) end: TurnEnd,
    /// Shared with the history, the outcome and the final event.
    pub(super) message: Option<Arc<Message>>,
    /// What went wrong, for the report and the `execution-end` event.
    pub(super) error: Option<TurnError>,
    pub(super) failed_tool_call: Option<FailedToolCall>,
    /// The calls an input-required turn waits on, and the questions about
    /// those that wait for approval (the report's).
    pub(super) pending_tool_calls: Vec<ToolCall>,
    pub(super) approval_requests: Vec<ApprovalRequest>,
}

impl Ending {
    pub(super) fn new(end: TurnEnd, message: Option<Arc<Message>>) -> Self {
        Ending {
            end,
            message,
            error: None,
            failed_tool_call: None,
            pending_tool_calls: Vec::new(),
            approval_requests: Vec::new(),
        }
    }

    pub(super) fn failed(message: impl Into<String>, kind: &str) -> Self {
        Ending::failed_as(TurnEnd::Error, message, kind)
    }

    /// A failed end of this kind, with an error of type `kind`.
    pub(super) fn failed_as(end: TurnEnd, message: impl Into<String>, kind: &str) -> Self {
        let text = message.into();
        let mut ending = Ending::new(end, Some(Arc::new(Message::assistant(text.clone()))));
        ending.error = Some(TurnError::new(kind, text));
        ending
    }

    pub(super) fn hook(f: FatalHook) -> Self {
        Ending::failed(f.message, "hook")
    }
}
