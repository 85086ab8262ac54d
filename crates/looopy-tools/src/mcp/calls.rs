//! The calls running on a provider's sessions, as the session's handler
//! sees them: where a server's progress notifications and its requests made
//! during a call (sampling, a question) go. Shared by the provider, which
//! registers each call, and the handler of its sessions.

use std::sync::atomic::AtomicBool;

use rmcp::model::{ElicitResult, NumberOrString};
use tokio::sync::oneshot;

use looopy_core::elicitation::ElicitationRequest;

use super::sampling::Caller;

/// A question on its way from the handler to the call that asked it.
pub(crate) struct Question {
    /// What is asked, of which call.
    pub(crate) request: ElicitationRequest,
    /// Where the answer goes: the server's request waits on it.
    pub(crate) respond: oneshot::Sender<ElicitResult>,
}

/// What servers tell the client between and during calls, shared by a
/// provider and the handlers of its sessions.
#[derive(Default)]
pub(crate) struct Notices {
    /// Set by `notifications/tools/list_changed`.
    pub(crate) tools_changed: AtomicBool,
    /// The running tool calls, oldest first: where a call's progress
    /// notifications go (its turn's events), and what a server's request
    /// made during one of them (sampling) is made for.
    pub(crate) calls: std::sync::Mutex<Vec<RunningCall>>,
    /// The id of the next [`RunningCall`].
    pub(crate) next_call: std::sync::atomic::AtomicU64,
}

/// A running tool call, registered before it is sent.
pub(crate) struct RunningCall {
    /// Unique within the provider.
    pub(crate) id: u64,
    /// Its progress token, once sent.
    pub(crate) token: Option<String>,
    /// The model's id of the call.
    pub(crate) call_id: String,
    /// The tool's name as the model calls it.
    pub(crate) tool: String,
    /// The span it runs in (`execute_tool`).
    pub(crate) span: tracing::Span,
    /// Its turn's context (the one it runs in now: a paused call goes on
    /// in the turn that answers it).
    pub(crate) cx: looopy_core::TurnContext,
    /// Where the server's questions (`elicitation/create`) go: to the call,
    /// which pauses.
    pub(crate) asks: tokio::sync::mpsc::UnboundedSender<Question>,
    /// Whether the answer the turn carries for this call was given: it
    /// answers one question, once.
    pub(crate) answered: bool,
}

impl Notices {
    /// The running calls, locked.
    pub(crate) fn calls(&self) -> std::sync::MutexGuard<'_, Vec<RunningCall>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The call a server's request is made for: the one whose progress
    /// token the request carries in `_meta`, else the only one running.
    pub(crate) fn caller(&self, token: Option<&str>) -> Option<Caller> {
        self.with_caller(token, |call| Caller {
            span: call.span.clone(),
            cx: call.cx.clone(),
        })
    }

    /// Runs `f` on the call a server's request is made for (see
    /// [`caller`](Self::caller)); `None` when no call is.
    pub(crate) fn with_caller<T>(
        &self,
        token: Option<&str>,
        f: impl FnOnce(&mut RunningCall) -> T,
    ) -> Option<T> {
        let mut calls = self.calls();
        let by_token = token.and_then(|t| calls.iter().position(|c| c.token.as_deref() == Some(t)));
        let index = match (by_token, calls.len()) {
            (Some(index), _) => index,
            (None, 1) => 0,
            _ => return None,
        };
        Some(f(&mut calls[index]))
    }
}

/// A progress token as [`RunningCall::token`] keeps it.
pub(crate) fn progress_key(token: &rmcp::model::ProgressToken) -> String {
    match &token.0 {
        NumberOrString::String(s) => s.to_string(),
        NumberOrString::Number(n) => n.to_string(),
    }
}
