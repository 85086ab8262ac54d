//! The Agent's own spans: `agent.turn` around a whole turn (its start, the
//! loop's `invoke_agent` and the save after it) and `agent.initialize`
//! around loading the state. They open whether or not a server is in
//! front: a library user's subscriber sees them as `looopy serve`'s does.

use looopy_core::{TaskState, Usage};
use looopy_loop::TurnEnd;
use tracing::field::Empty;

use crate::error::AgentError;

/// The span of one turn of the conversation `context_id`: the turn's
/// number, final state, end, iterations and token totals are recorded
/// when known ([`record_number`], [`record_end`]).
pub(crate) fn turn_span(context_id: &str, task_id: &str, resumed: bool) -> tracing::Span {
    tracing::info_span!(
        "agent.turn",
        gen_ai.conversation.id = %context_id,
        a2a.task.id = %task_id,
        looopy.turn.number = Empty,
        looopy.turn.resumed = resumed,
        a2a.task.state = Empty,
        looopy.turn.end = Empty,
        looopy.turn.iterations = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        looopy.usage.total_tokens = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    )
}

/// The span of loading the Agent's state, checking its message store and
/// starting its tools (its start, or the first turn's when it was not
/// started).
pub(crate) fn initialize_span(context_id: &str) -> tracing::Span {
    tracing::info_span!(
        "agent.initialize",
        gen_ai.conversation.id = %context_id,
        looopy.agent.state_loaded = Empty,
        looopy.agent.tools_started = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    )
}

/// Notes the turn's number on its span.
pub(crate) fn record_number(span: &tracing::Span, turn_number: u64) {
    span.record("looopy.turn.number", int(turn_number));
}

/// Notes how the turn ended on its span: the state, why, the loop's
/// iterations and the tokens of every model call of the turn.
pub(crate) fn record_end(
    span: &tracing::Span,
    state: TaskState,
    end: TurnEnd,
    iterations: u32,
    usage: &Usage,
) {
    span.record("a2a.task.state", state.as_str());
    span.record("looopy.turn.end", end.as_str());
    span.record("looopy.turn.iterations", i64::from(iterations));
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    span.record("looopy.usage.total_tokens", int(usage.total_tokens));
    if state == TaskState::Failed {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", end.as_str());
    }
}

/// A count as a signed integer: OpenTelemetry's integers are `i64`, and
/// `tracing-opentelemetry` exports an unsigned value as a string.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Notes on a span that what it covers failed with `error`.
pub(crate) fn record_error(span: &tracing::Span, error: &AgentError) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", kind(error));
}

/// The span's `error.type` of an [`AgentError`].
fn kind(error: &AgentError) -> &'static str {
    match error {
        AgentError::Busy(_) => "busy",
        AgentError::ShutDown { .. } => "shut_down",
        AgentError::Config(_) => "configuration",
        AgentError::Store(_) => "store",
        AgentError::Compaction(_) => "compaction",
        AgentError::UnknownToolCall { .. } => "unknown_tool_call",
        AgentError::InvalidApproval(_) => "invalid_approval",
        AgentError::NotAwaitingApproval { .. } => "not_awaiting_approval",
        AgentError::InvalidElicitation(_) => "invalid_elicitation",
        AgentError::NotAwaitingAnswer { .. } => "not_awaiting_answer",
        AgentError::Tools(_) => "tools",
        AgentError::EmptyTurn => "empty_turn",
    }
}
