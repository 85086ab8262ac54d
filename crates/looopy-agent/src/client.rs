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

use std::collections::HashMap;

use looopy_core::{History, Message, Role, ToolCall, ToolResult, ToolSignal};
use serde_json::Value;

use crate::error::AgentError;

use looopy_core::client_tool;
pub use looopy_core::client_tool::{CLIENT_TOOL_MARK, ClientToolResult};

/// Metadata key marking results the Agent made up for calls that never got
/// one (cancelled turn, client that did not answer).
pub const SYNTHETIC_RESULT_KEY: &str = "syntheticResult";

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

fn synthetic(call: &ToolCall, why: &str) -> Message {
    let mut result = ToolResult::error(&call.id, why);
    result
        .metadata
        .insert(SYNTHETIC_RESULT_KEY.into(), Value::Bool(true));
    result.into_message()
}

/// The messages to append before the loop runs: a result for every open
/// call (the client's, or an error), then the rest of the user message.
pub(crate) fn prepare_input(
    history: &History,
    user: Option<Message>,
) -> Result<Vec<Message>, AgentError> {
    let open = open_tool_calls(history);
    let mut given: HashMap<String, Message> = HashMap::new();
    let mut rest = None;
    // The common case: no open calls and no result parts, so the user
    // message goes in as it came (no copy of its parts).
    let carries_results = |m: &Message| {
        m.role == Role::User
            && m.parts
                .iter()
                .any(|p| ClientToolResult::from_part(p).is_some())
    };
    if open.is_empty()
        && let Some(message) = user.as_ref()
        && !carries_results(message)
    {
        return Ok(user.into_iter().collect());
    }
    if let Some(message) = user {
        // Only the user answers client tool calls.
        let (results, left) = if message.role == Role::User {
            client_tool::split_results(message)
        } else {
            (Vec::new(), Some(message))
        };
        for r in results {
            if !open.iter().any(|c| c.id == r.tool_call_id) {
                return Err(AgentError::UnknownToolCall {
                    tool_call_id: r.tool_call_id,
                });
            }
            given.insert(r.tool_call_id.clone(), r.into_message());
        }
        rest = left;
    }
    let mut out: Vec<Message> = open
        .iter()
        .map(|call| {
            given.remove(&call.id).unwrap_or_else(|| {
                synthetic(
                    call,
                    "no result was received for this tool call; continue without it",
                )
            })
        })
        .collect();
    out.extend(rest);
    Ok(out)
}

/// Closes the calls a turn left open (cancelled, failed): results the
/// turn's tools returned (seen in `tool-complete` events) are added in the
/// model's order, the others get an error result saying `why`.
pub(crate) fn close_open_calls(produced: &mut Vec<Message>, finished: &[ToolResult], why: &str) {
    let open = open_calls_in(produced.iter());
    for call in open {
        let done = finished.iter().rev().find(|r| {
            r.tool_call_id == call.id && !matches!(r.signal, Some(ToolSignal::InputRequired))
        });
        produced.push(match done {
            Some(r) => r.clone().into_message(),
            None => synthetic(&call, why),
        });
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
        let out = prepare_input(&waiting(), Some(user)).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].tool_call_id.as_deref(), Some("b"));
        assert_eq!(out[0].text(), r#"{"ok":true}"#);
        assert_eq!(out[0].metadata[CLIENT_TOOL_MARK], true);
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
        let out = prepare_input(&waiting(), Some(user)).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].text(), "x");
        assert!(out[1].is_error());
    }

    #[test]
    fn unanswered_calls_get_an_error_and_unknown_ids_are_refused() {
        let out = prepare_input(&waiting(), Some(Message::user("never mind"))).unwrap();
        assert_eq!(out.len(), 3);
        assert!(out[0].is_error() && out[1].is_error());
        assert_eq!(out[0].metadata[SYNTHETIC_RESULT_KEY], true);
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
        let none = prepare_input(&History::from(vec![Message::user("a")]), None).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn close_uses_finished_results_then_errors() {
        let mut produced = vec![
            LlmResponse::tool_calls(
                "",
                vec![ToolCall::new("x", "t", "{}"), ToolCall::new("y", "t", "{}")],
            )
            .message,
        ];
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
