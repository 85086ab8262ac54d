//! Human approval of tool calls: the question a turn asks about a call, and
//! the decision the user sends back.
//!
//! When an approval policy answers "ask", the turn ends `input-required`.
//! Its final message carries a data part listing the questions:
//!
//! ```json
//! {"pendingToolCalls": [...], "approvalRequests": [
//!   {"toolCallId": "call-1", "name": "delete_file", "arguments": {"path": "a.txt"},
//!    "question": "Allow delete_file with {\"path\":\"a.txt\"}?"}
//! ]}
//! ```
//!
//! The requests are also recorded on the assistant message that made the
//! calls, in its typed field [`Message::approval_requests`] (stored as
//! `approvalRequests`; [`ApprovalRequest::record`] sets it), so they are
//! stored with the conversation and outlive the process. The user's next message answers
//! each request with a data part:
//!
//! ```json
//! {"approval": {"toolCallId": "call-1", "decision": "approve"}}
//! {"approval": {"toolCallId": "call-1", "decision": "deny", "reason": "not that file"}}
//! {"approval": {"toolCallId": "call-1", "decision": "edit", "arguments": {"path": "b.txt"}}}
//! ```
//!
//! `looopy-loop` (which asks) and `looopy-agent` (which reads the answers)
//! share these types.

mod request;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Message, Part};
use crate::tool::ToolCall;

pub use request::ApprovalRequest;

/// The key of a decision in a data part (`{"approval": {...}}`).
pub const APPROVAL_PART_KEY: &str = "approval";

/// The metadata key under which messages stored by earlier versions kept
/// their calls' approval requests (now [`Message::approval_requests`]);
/// read only, so that such conversations still resume.
const LEGACY_RECORD_KEY: &str = "looopyApprovalRequests";

impl ApprovalRequest {
    /// Records `requests` on `message` (the assistant message whose calls
    /// they are), replacing any recorded before.
    pub fn record(message: &mut Message, requests: &[ApprovalRequest]) {
        message.approval_requests = requests.to_vec();
        message.metadata.remove(LEGACY_RECORD_KEY);
    }

    /// The requests recorded on `message` (none when it has none). A
    /// message stored before the requests became a field of the message
    /// carried them in its metadata: they are read from there when the
    /// field is empty.
    pub fn recorded(message: &Message) -> Vec<ApprovalRequest> {
        if !message.approval_requests.is_empty() {
            return message.approval_requests.clone();
        }
        message
            .metadata
            .get(LEGACY_RECORD_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }
}

/// The key of the requests in the data part of an `input-required` message.
pub const REQUESTS_PART_KEY: &str = "approvalRequests";

/// The key of the waiting calls in the data part of an `input-required`
/// message.
pub const PENDING_CALLS_PART_KEY: &str = "pendingToolCalls";

/// The data part of an `input-required` status message: the calls waiting
/// (`pendingToolCalls`), the questions about those that wait for approval
/// (`approvalRequests`) and the questions their tools ask
/// (`elicitations`, see [`crate::elicitation`]), each written when it is
/// not empty. The one place that shape is built;
/// [`ApprovalRequest::in_message`] and
/// [`ElicitationRequest::in_message`](crate::elicitation::ElicitationRequest::in_message)
/// read it.
pub fn input_required_part(
    pending: &[ToolCall],
    requests: &[ApprovalRequest],
    elicitations: &[crate::elicitation::ElicitationRequest],
) -> Part {
    let mut data = Map::new();
    if !pending.is_empty() {
        data.insert(
            PENDING_CALLS_PART_KEY.into(),
            serde_json::to_value(pending).unwrap_or(Value::Null),
        );
    }
    if !requests.is_empty() {
        data.insert(
            REQUESTS_PART_KEY.into(),
            serde_json::to_value(requests).unwrap_or(Value::Null),
        );
    }
    if !elicitations.is_empty() {
        data.insert(
            crate::elicitation::ELICITATIONS_PART_KEY.into(),
            serde_json::to_value(elicitations).unwrap_or(Value::Null),
        );
    }
    Part::data(Value::Object(data))
}

impl ApprovalRequest {
    /// The requests an `input-required` status message carries (in its data
    /// part's `approvalRequests`); none when it has none. What a client
    /// reads to ask its user.
    pub fn in_message(message: &Message) -> Vec<ApprovalRequest> {
        message
            .parts
            .iter()
            .find_map(|p| match p {
                Part::Data {
                    data: Value::Object(data),
                } => data.get(REQUESTS_PART_KEY),
                _ => None,
            })
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }
}

/// What the person decided about one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "lowercase")]
pub enum Decision {
    /// Run the call with its arguments.
    Approve,
    /// Do not run it; the model reads a denied result (with the reason, if
    /// any).
    Deny {
        /// Why, shown to the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Run the call with these arguments instead (a JSON object).
    Edit {
        /// The new arguments.
        arguments: Map<String, Value>,
    },
}

/// A decision about one call, as sent in a data part
/// (`{"approval": {"toolCallId": ..., "decision": ...}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    /// The call decided on.
    pub tool_call_id: String,
    /// The decision.
    #[serde(flatten)]
    pub decision: Decision,
}

/// A data part that has an `approval` key but does not read as a decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid approval decision: {0}")]
pub struct InvalidDecision(pub String);

impl ApprovalDecision {
    /// Reads a decision from a part: `None` for a part that is not an
    /// approval, an error for one that is but is malformed (unknown
    /// decision, missing `toolCallId`, `edit` without an object of
    /// arguments).
    pub fn from_part(part: &Part) -> Option<Result<Self, InvalidDecision>> {
        let Part::Data {
            data: Value::Object(data),
        } = part
        else {
            return None;
        };
        let value = data.get(APPROVAL_PART_KEY)?;
        Some(
            serde_json::from_value::<ApprovalDecision>(value.clone())
                .map_err(|e| InvalidDecision(e.to_string())),
        )
    }

    /// The data part carrying this decision.
    pub fn to_part(&self) -> Part {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        let mut data = Map::new();
        data.insert(APPROVAL_PART_KEY.into(), value);
        Part::data(Value::Object(data))
    }

    /// The plain-text answer to a single pending call: `yes`/`y`/`approve`
    /// approves it, `no`/`n`/`deny` denies it (any case, surrounding blanks
    /// and a final `.` or `!` ignored). `None` for any other text.
    pub fn from_text(tool_call_id: &str, text: &str) -> Option<Self> {
        let word = text
            .trim()
            .trim_end_matches(['.', '!'])
            .to_ascii_lowercase();
        let decision = match word.as_str() {
            "yes" | "y" | "approve" | "approved" | "ok" => Decision::Approve,
            "no" | "n" | "deny" | "denied" => Decision::Deny { reason: None },
            _ => return None,
        };
        Some(ApprovalDecision {
            tool_call_id: tool_call_id.to_owned(),
            decision,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decisions_read_from_their_wire_shape() {
        let approve = ApprovalDecision::from_part(&Part::data(
            json!({"approval": {"toolCallId": "a", "decision": "approve"}}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(approve.decision, Decision::Approve);
        let edit = ApprovalDecision::from_part(&Part::data(json!({"approval": {
            "toolCallId": "a", "decision": "edit", "arguments": {"path": "b"}}})))
        .unwrap()
        .unwrap();
        assert_eq!(
            edit.decision,
            Decision::Edit {
                arguments: json!({"path": "b"}).as_object().unwrap().clone()
            }
        );
        let deny = ApprovalDecision::from_part(&Part::data(
            json!({"approval": {"toolCallId": "a", "decision": "deny", "reason": "no"}}),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            deny.decision,
            Decision::Deny {
                reason: Some("no".into())
            }
        );
        assert_eq!(
            ApprovalDecision::from_part(&deny.to_part())
                .unwrap()
                .unwrap(),
            deny
        );
    }

    #[test]
    fn malformed_decisions_are_errors_and_other_parts_are_not_decisions() {
        for bad in [
            json!({"approval": {"toolCallId": "a", "decision": "maybe"}}),
            json!({"approval": {"decision": "approve"}}),
            json!({"approval": {"toolCallId": "a", "decision": "edit", "arguments": [1]}}),
            json!({"approval": "yes"}),
        ] {
            let read = ApprovalDecision::from_part(&Part::data(bad.clone())).unwrap();
            assert!(read.is_err(), "{bad} was accepted");
        }
        assert!(ApprovalDecision::from_part(&Part::text("yes")).is_none());
        assert!(
            ApprovalDecision::from_part(&Part::data(json!({"toolCallId": "a", "result": 1})))
                .is_none()
        );
    }

    #[test]
    fn plain_yes_and_no_answer_one_call() {
        let yes = ApprovalDecision::from_text("c", " Yes. ").unwrap();
        assert_eq!(yes.decision, Decision::Approve);
        let no = ApprovalDecision::from_text("c", "NO").unwrap();
        assert_eq!(no.decision, Decision::Deny { reason: None });
        assert!(ApprovalDecision::from_text("c", "yes, but use b.txt").is_none());
    }

    #[test]
    fn clients_read_the_requests_of_a_status_message() {
        let call = ToolCall::new("c1", "delete_file", "{}");
        let request = ApprovalRequest::new(&call, "sure?");
        let message = Message::with_parts(
            crate::message::Role::Assistant,
            vec![
                Part::text("sure?"),
                Part::data(json!({"pendingToolCalls": [], "approvalRequests": [request.clone()]})),
            ],
        );
        assert_eq!(ApprovalRequest::in_message(&message), vec![request]);
        assert!(ApprovalRequest::in_message(&Message::assistant("hi")).is_empty());
    }

    #[test]
    fn requests_are_recorded_on_the_message() {
        let call = ToolCall::new("c1", "delete_file", r#"{"path":"a"}"#);
        let mut m = Message::assistant("");
        assert!(ApprovalRequest::recorded(&m).is_empty());
        let request = ApprovalRequest::new(&call, "sure?");
        ApprovalRequest::record(&mut m, std::slice::from_ref(&request));
        let stored = serde_json::to_value(&m).unwrap();
        assert_eq!(stored["approvalRequests"][0]["toolCallId"], "c1");
        assert_eq!(stored["approvalRequests"][0]["name"], "delete_file");
        assert!(
            stored.get("metadata").is_none(),
            "no metadata key: {stored}"
        );
        let back: Message = serde_json::from_value(stored).unwrap();
        assert_eq!(back.approval_requests, vec![request.clone()]);
        assert!(back.metadata.is_empty());
        assert_eq!(ApprovalRequest::recorded(&back), vec![request]);
        ApprovalRequest::record(&mut m, &[]);
        assert!(ApprovalRequest::recorded(&m).is_empty());
        let plain = serde_json::to_value(&m).unwrap();
        assert!(plain.get("approvalRequests").is_none(), "{plain}");
    }

    #[test]
    fn requests_stored_in_the_old_metadata_key_are_still_read() {
        let stored = json!({
            "messageId": "m1", "role": "assistant", "parts": [],
            "metadata": {"looopyApprovalRequests": [{"toolCallId": "c9", "name": "rm",
                "arguments": {}, "question": "sure?"}]}
        });
        let m: Message = serde_json::from_value(stored).unwrap();
        assert!(m.approval_requests.is_empty());
        assert_eq!(ApprovalRequest::recorded(&m)[0].tool_call_id, "c9");
        let mut rewritten = m.clone();
        ApprovalRequest::record(&mut rewritten, &ApprovalRequest::recorded(&m));
        assert!(rewritten.metadata.is_empty());
        assert_eq!(rewritten.approval_requests[0].tool_call_id, "c9");
    }
}
