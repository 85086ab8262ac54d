//! Tool calls without results: client tool results coming back, and calls
//! a turn left open.
//!
//! A turn that ends `input-required` leaves the history ending with an
//! assistant message whose client tool calls have no result. The client
//! sends the results in its next message as data parts, in the wire form
//! of `looopy_core::client_tool` (`ClientToolResult`):
//!
//! ```json
//! {"kind": "data", "data": {"toolCallId": "call-1", "result": {"temp": 21}}}
//! {"kind": "data", "data": {"toolCallId": "call-2", "error": "user declined"}}
//! ```
//!
//! (`"result"` with `"isError": true` also reports a failure.) Before the
//! next turn the Agent turns them into tool messages placed right after the
//! open calls, then appends what is left of the user message, so the model
//! continues where it stopped. An open call the client did not answer gets
//! an error result, because a provider refuses a call without a result.
//!
//! The same message answers approvals (`looopy_core::approval`) and the
//! questions tools asked during a call (`looopy_core::elicitation`): an
//! approved call, and a call whose question is answered, run again first
//! in the next turn (`ApprovedCalls`), the answers carried as the turn
//! dependency `ElicitationAnswers`.

use std::collections::HashMap;
use std::sync::Arc;

use looopy_core::approval::{ApprovalDecision, ApprovalRequest, Decision};
use looopy_core::elicitation::{ElicitationAnswer, ElicitationAnswers};
use looopy_core::record::{Decided, DecisionPoint, DecisionStep};
use looopy_core::{
    History, Message, Part, ResultSource, Role, ToolCall, ToolFailure, ToolResult, ToolSignal,
};
use looopy_loop::ApprovedCalls;
use serde_json::Value;

use crate::error::AgentError;

use looopy_core::client_tool;
pub use looopy_core::client_tool::ClientToolResult;

/// The calls of the history's last assistant message that have no result
/// yet, when only tool messages follow that message (the state an
/// `input-required` turn leaves). Empty otherwise.
pub fn open_tool_calls(history: &History) -> Vec<ToolCall> {
    open_calls_in(history.iter())
}

/// [`open_tool_calls`] over any run of messages, newest last.
fn open_calls_in<'a>(messages: impl DoubleEndedIterator<Item = &'a Message>) -> Vec<ToolCall> {
    let mut answered: Vec<&str> = Vec::new();
    for m in messages.rev() {
        match m.role {
            Role::Tool => answered.extend(m.tool_call_id.as_deref()),
            Role::Assistant if !m.tool_calls.is_empty() => {
                return m
                    .tool_calls
                    .iter()
                    .filter(|c| !answered.contains(&c.id.as_str()))
                    .cloned()
                    .collect();
            }
            _ => return Vec::new(),
        }
    }
    Vec::new()
}

/// The error result the Agent writes for a call nobody answered
/// ([`ResultSource::Synthetic`]).
fn synthetic(call: &ToolCall, why: &str) -> Message {
    ToolResult::error(&call.id, why)
        .with_source(ResultSource::Synthetic)
        .into_message()
}

/// What a turn starts with, beside the stored history.
#[derive(Debug, Default)]
pub(crate) struct Input {
    /// Messages appended (and saved) before the loop runs: a result for
    /// every open call that is not to run now, then the rest of the user
    /// message (unless calls run first: then it is in `approved.then`).
    pub(crate) messages: Vec<Message>,
    /// Calls a person approved: the loop runs them first.
    pub(crate) approved: Option<Box<ApprovedCalls>>,
    /// What the person decided about the calls that waited for approval,
    /// for the turn's record.
    pub(crate) decided: Vec<DecisionStep>,
}

/// A person's decision about a waiting call, as the record keeps it.
fn user_decision(call: &ToolCall, decision: Decided, reason: Option<String>) -> DecisionStep {
    DecisionStep {
        by: "user".to_owned(),
        point: DecisionPoint::UserApproval,
        call_id: Some(call.id.clone()),
        tool: Some(call.name.clone()),
        decision,
        reason,
    }
}

/// What the user's message says about the open calls.
struct Answers {
    results: HashMap<String, Message>,
    decisions: HashMap<String, Decision>,
    /// Answers to the questions the calls' tools asked, by call.
    elicited: HashMap<String, ElicitationAnswer>,
    rest: Option<Message>,
}

/// Reads client results and approval decisions out of the user message
/// (see the module docs); a lone "yes"/"no" answers a single call waiting
/// for approval.
fn read_answers(
    open: &[ToolCall],
    asked: &[ApprovalRequest],
    user: Option<Message>,
) -> Result<Answers, AgentError> {
    let mut answers = Answers {
        results: HashMap::new(),
        decisions: HashMap::new(),
        elicited: HashMap::new(),
        rest: None,
    };
    let Some(message) = user else {
        return Ok(answers);
    };
    if message.role != Role::User {
        // Only the user answers tool calls.
        answers.rest = Some(message);
        return Ok(answers);
    }
    let (results, left) = client_tool::split_results(message);
    for r in results {
        if !open.iter().any(|c| c.id == r.tool_call_id) {
            return Err(AgentError::UnknownToolCall {
                tool_call_id: r.tool_call_id,
            });
        }
        answers
            .results
            .insert(r.tool_call_id.clone(), r.into_message());
    }
    let (elicited, left) = match left {
        Some(m) => split_elicitations(m)?,
        None => (Vec::new(), None),
    };
    for a in elicited {
        if !open.iter().any(|c| c.id == a.tool_call_id) {
            return Err(AgentError::NotAwaitingAnswer {
                tool_call_id: a.tool_call_id,
            });
        }
        answers.elicited.insert(a.tool_call_id.clone(), a);
    }
    let (decisions, mut left) = match left {
        Some(m) => split_decisions(m)?,
        None => (Vec::new(), None),
    };
    let mut decisions = decisions;
    if decisions.is_empty()
        && let [only] = asked
        && let Some(m) = &left
        && m.parts.iter().all(|p| matches!(p, Part::Text { .. }))
        && let Some(d) = ApprovalDecision::from_text(&only.tool_call_id, &m.text())
    {
        decisions.push(d);
        left = None;
    }
    for d in decisions {
        if !asked.iter().any(|r| r.tool_call_id == d.tool_call_id) {
            return Err(AgentError::NotAwaitingApproval {
                tool_call_id: d.tool_call_id,
            });
        }
        answers.decisions.insert(d.tool_call_id, d.decision);
    }
    answers.rest = left;
    Ok(answers)
}

/// Splits the approval decisions out of a message; `None` for the rest
/// when it held only decisions.
fn split_decisions(
    message: Message,
) -> Result<(Vec<ApprovalDecision>, Option<Message>), AgentError> {
    if !message
        .parts
        .iter()
        .any(|p| ApprovalDecision::from_part(p).is_some())
    {
        return Ok((Vec::new(), Some(message)));
    }
    let mut message = message;
    let mut decisions = Vec::new();
    let mut rest = Vec::new();
    for part in std::mem::take(&mut message.parts) {
        match ApprovalDecision::from_part(&part) {
            Some(d) => decisions.push(d?),
            None => rest.push(part),
        }
    }
    if rest.is_empty() {
        return Ok((decisions, None));
    }
    message.parts = rest;
    Ok((decisions, Some(message)))
}

/// Splits the answers to tools' questions out of a message; `None` for the
/// rest when it held only answers.
fn split_elicitations(
    message: Message,
) -> Result<(Vec<ElicitationAnswer>, Option<Message>), AgentError> {
    if !message
        .parts
        .iter()
        .any(|p| ElicitationAnswer::from_part(p).is_some())
    {
        return Ok((Vec::new(), Some(message)));
    }
    let mut message = message;
    let mut answers = Vec::new();
    let mut rest = Vec::new();
    for part in std::mem::take(&mut message.parts) {
        match ElicitationAnswer::from_part(&part) {
            Some(a) => answers.push(a?),
            None => rest.push(part),
        }
    }
    if rest.is_empty() {
        return Ok((answers, None));
    }
    message.parts = rest;
    Ok((answers, Some(message)))
}

/// The result of a call the person denied, as a denying hook gives it.
fn denied(call: &ToolCall, reason: &str) -> Message {
    ToolResult::failed(
        &call.id,
        ToolFailure::Denied,
        format!("Tool call denied: {reason}"),
    )
    .into_message()
}

/// The input of the next turn: a result for every open call (the client's,
/// a denial, or an error), the calls a person approved, then the rest of
/// the user message.
///
/// A call waiting for approval that the message does not decide on is
/// denied ("not approved"); one the message decides on but that is not
/// waiting, or a malformed decision, is an error and nothing is saved.
pub(crate) fn prepare_input(history: &History, user: Option<Message>) -> Result<Input, AgentError> {
    let open = open_tool_calls(history);
    // The common case: no open calls and no result or decision parts, so
    // the user message goes in as it came (no copy of its parts).
    let carries_answers = |m: &Message| {
        m.role == Role::User
            && m.parts.iter().any(|p| {
                ClientToolResult::from_part(p).is_some()
                    || ApprovalDecision::from_part(p).is_some()
                    || ElicitationAnswer::from_part(p).is_some()
            })
    };
    if open.is_empty()
        && let Some(message) = user.as_ref()
        && !carries_answers(message)
    {
        return Ok(Input {
            messages: user.into_iter().collect(),
            approved: None,
            decided: Vec::new(),
        });
    }
    let asked = waiting_in(history, &open);
    let mut answers = read_answers(&open, &asked, user)?;
    let mut messages = Vec::with_capacity(open.len() + 1);
    let mut approved = Vec::new();
    let mut elicited = Vec::new();
    let mut decided = Vec::new();
    for call in &open {
        if let Some(result) = answers.results.remove(&call.id) {
            messages.push(result);
            continue;
        }
        if let Some(answer) = answers.elicited.remove(&call.id) {
            // The tool asked during the call: it runs again with the answer.
            approved.push(call.clone());
            elicited.push(answer);
            continue;
        }
        match answers.decisions.remove(&call.id) {
            Some(Decision::Approve) => {
                decided.push(user_decision(call, Decided::Approved, None));
                approved.push(call.clone());
            }
            Some(Decision::Edit { arguments }) => {
                let mut edited = call.clone();
                edited.arguments = Value::Object(arguments).to_string();
                decided.push(user_decision(&edited, Decided::Edited, None));
                approved.push(edited);
            }
            Some(Decision::Deny { reason }) => {
                let reason = reason
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| "the user denied this call".to_owned());
                messages.push(denied(call, &reason));
                decided.push(user_decision(call, Decided::Denied, Some(reason)));
            }
            None if asked.iter().any(|r| r.tool_call_id == call.id) => {
                let reason = "the user did not approve this call";
                messages.push(denied(call, reason));
                decided.push(user_decision(call, Decided::Denied, Some(reason.into())));
            }
            None => messages.push(synthetic(
                call,
                "no result was received for this tool call; continue without it",
            )),
        }
    }
    if approved.is_empty() {
        messages.extend(answers.rest);
        return Ok(Input {
            messages,
            approved: None,
            decided,
        });
    }
    Ok(Input {
        messages,
        decided,
        approved: Some(Box::new(ApprovedCalls {
            calls: approved,
            then: answers.rest,
            answers: ElicitationAnswers(elicited),
        })),
    })
}

/// The calls of the history's last assistant message that wait for a
/// person's approval (see `looopy_core::approval`): open, and asked about.
pub fn pending_approvals(history: &History) -> Vec<ApprovalRequest> {
    waiting_in(history, &open_tool_calls(history))
}

fn waiting_in(history: &History, open: &[ToolCall]) -> Vec<ApprovalRequest> {
    if open.is_empty() {
        return Vec::new();
    }
    history
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(ApprovalRequest::recorded)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| open.iter().any(|c| c.id == r.tool_call_id))
        .collect()
}

/// Closes the calls a turn left open (cancelled, failed): results the
/// turn's tools returned (seen in `tool-complete` events) are added in the
/// model's order, the others get an error result saying `why`.
pub(crate) fn close_open_calls(
    produced: &mut Vec<Arc<Message>>,
    finished: &[ToolResult],
    why: &str,
) {
    let open = open_calls_in(produced.iter().map(|m| &**m));
    for call in open {
        let done = finished.iter().rev().find(|r| {
            r.tool_call_id == call.id && !matches!(r.signal, Some(ToolSignal::InputRequired))
        });
        produced.push(Arc::new(match done {
            Some(r) => r.clone().into_message(),
            None => synthetic(&call, why),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::{LlmResponse, Part};
    use serde_json::json;

    fn waiting() -> History {
        History::from(vec![
            Message::user("q"),
            LlmResponse::tool_calls(
                "",
                vec![
                    ToolCall::new("a", "server", "{}"),
                    ToolCall::new("b", "client", "{}"),
                    ToolCall::new("c", "client", "{}"),
                ],
            )
            .message,
            ToolResult::text("a", "done").into_message(),
        ])
    }

    #[test]
    fn finds_open_calls_only_at_the_end() {
        let h = waiting();
        let open: Vec<String> = open_tool_calls(&h).into_iter().map(|c| c.id).collect();
        assert_eq!(open, vec!["b", "c"]);
        let mut later = h.clone();
        later.push(Message::assistant("x"));
        assert!(open_tool_calls(&later).is_empty());
        assert!(open_tool_calls(&History::new()).is_empty());
    }

    #[test]
    fn client_results_become_tool_messages_in_call_order() {
        let user = Message::with_parts(
            Role::User,
            vec![
                Part::data(json!({"toolCallId": "c", "error": "declined"})),
                Part::text("and then?"),
                Part::data(json!({"toolCallId": "b", "result": {"ok": true}})),
            ],
        );
        let out = prepare_input(&waiting(), Some(user)).unwrap().messages;
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].tool_call_id.as_deref(), Some("b"));
        assert_eq!(out[0].text(), r#"{"ok":true}"#);
        assert_eq!(out[0].source, Some(ResultSource::Client));
        assert_eq!(out[1].tool_call_id.as_deref(), Some("c"));
        assert!(out[1].is_error());
        assert_eq!(out[2].role, Role::User);
        assert_eq!(out[2].text(), "and then?");
    }

    #[test]
    fn a_message_of_only_results_adds_no_user_message() {
        let user = Message::with_parts(
            Role::User,
            vec![
                Part::data(json!({"toolCallId": "b", "result": "x"})),
                Part::data(json!({"toolCallId": "c", "result": "y", "isError": true})),
            ],
        );
        let out = prepare_input(&waiting(), Some(user)).unwrap().messages;
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].text(), "x");
        assert!(out[1].is_error());
    }

    #[test]
    fn unanswered_calls_get_an_error_and_unknown_ids_are_refused() {
        let out = prepare_input(&waiting(), Some(Message::user("never mind")))
            .unwrap()
            .messages;
        assert_eq!(out.len(), 3);
        assert!(out[0].is_error() && out[1].is_error());
        assert_eq!(out[0].source, Some(ResultSource::Synthetic));
        let bad = Message::with_parts(
            Role::User,
            vec![Part::data(json!({"toolCallId": "zz", "result": 1}))],
        );
        let e = prepare_input(&waiting(), Some(bad)).unwrap_err();
        assert_eq!(
            e,
            AgentError::UnknownToolCall {
                tool_call_id: "zz".into()
            }
        );
        let none = prepare_input(&History::from(vec![Message::user("a")]), None)
            .unwrap()
            .messages;
        assert!(none.is_empty());
    }

    #[test]
    fn close_uses_finished_results_then_errors() {
        let mut produced: Vec<Arc<Message>> = vec![Arc::new(
            LlmResponse::tool_calls(
                "",
                vec![ToolCall::new("x", "t", "{}"), ToolCall::new("y", "t", "{}")],
            )
            .message,
        )];
        close_open_calls(&mut produced, &[ToolResult::text("y", "fine")], "cancelled");
        assert_eq!(produced.len(), 3);
        assert_eq!(produced[1].tool_call_id.as_deref(), Some("x"));
        assert!(produced[1].is_error());
        assert!(produced[1].text().contains("cancelled"));
        assert_eq!(produced[2].text(), "fine");
        let before = produced.len();
        close_open_calls(&mut produced, &[], "again");
        assert_eq!(produced.len(), before, "nothing left open");
    }
}
