//! [`ApprovalRequest`]: the question a turn asks about one tool call. A
//! message carries the requests about its calls; how they travel in
//! messages is the parent module's.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::ToolCall;

/// A tool call waiting for a person's approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The call waiting.
    pub tool_call_id: String,
    /// Its tool.
    pub name: String,
    /// Its arguments as JSON (see [`ToolCall::parsed_arguments`]).
    pub arguments: Value,
    /// What the person is asked.
    pub question: String,
}

impl ApprovalRequest {
    /// The request for `call`, asking `question`.
    pub fn new(call: &ToolCall, question: impl Into<String>) -> Self {
        ApprovalRequest {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.parsed_arguments(),
            question: question.into(),
        }
    }
}
