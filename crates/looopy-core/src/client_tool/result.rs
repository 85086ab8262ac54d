//! A client's result for a client tool call, as its next message carries it.

use serde_json::Value;

use crate::message::{Message, Part};

use crate::tool::{ResultSource, ToolResult};

/// A client's result for a client tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientToolResult {
    /// The call this answers.
    pub tool_call_id: String,
    /// The result (a string reaches the model as plain text, anything else
    /// as JSON text), or the error message.
    pub result: Value,
    /// Whether the client reports a failure.
    pub is_error: bool,
}

impl ClientToolResult {
    /// Reads a result from a data part; `None` for any other part.
    pub fn from_part(part: &Part) -> Option<Self> {
        let Part::Data {
            data: Value::Object(data),
        } = part
        else {
            return None;
        };
        let tool_call_id = data.get("toolCallId")?.as_str()?.to_owned();
        if let Some(error) = data.get("error").filter(|e| !e.is_null()) {
            return Some(ClientToolResult {
                tool_call_id,
                result: error.clone(),
                is_error: true,
            });
        }
        let flagged = data.get("isError").and_then(Value::as_bool) == Some(true);
        Some(ClientToolResult {
            tool_call_id,
            result: data.get("result")?.clone(),
            is_error: flagged,
        })
    }

    /// The tool result this stands for, from [`ResultSource::Client`].
    pub fn into_tool_result(self) -> ToolResult {
        let text = match self.result {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let result = if self.is_error {
            ToolResult::error(self.tool_call_id, text)
        } else {
            ToolResult::text(self.tool_call_id, text)
        };
        result.with_source(ResultSource::Client)
    }

    /// The tool message that carries this result in the history.
    pub fn into_message(self) -> Message {
        self.into_tool_result().into_message()
    }
}

/// Splits a client's message into the results it carries, in order, and
/// what is left of it: the other parts, with the message's id and metadata
/// (`None` when it held only results).
pub fn split_results(message: Message) -> (Vec<ClientToolResult>, Option<Message>) {
    let Message {
        message_id,
        role,
        parts,
        tool_calls,
        tool_call_id,
        approval_requests,
        failure,
        source,
        artifact_ids,
        cut_output,
        metadata,
    } = message;
    let mut results = Vec::new();
    let mut rest = Vec::new();
    for part in parts {
        match ClientToolResult::from_part(&part) {
            Some(result) => results.push(result),
            None => rest.push(part),
        }
    }
    let rest = (!rest.is_empty() || results.is_empty()).then(|| {
        let mut m = Message::with_parts(role, rest);
        m.message_id = message_id;
        m.tool_calls = tool_calls;
        m.tool_call_id = tool_call_id;
        m.approval_requests = approval_requests;
        m.failure = failure;
        m.source = source;
        m.artifact_ids = artifact_ids;
        m.cut_output = cut_output;
        m.metadata = metadata;
        m
    });
    (results, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_results_and_errors_and_ignores_other_parts() {
        let ok = ClientToolResult::from_part(&Part::data(
            json!({"toolCallId": "a", "result": {"t": 1}}),
        ))
        .unwrap();
        assert!(!ok.is_error);
        let m = ok.into_message();
        assert_eq!(m.text(), r#"{"t":1}"#);
        assert_eq!(m.source, Some(ResultSource::Client));
        let err = ClientToolResult::from_part(&Part::data(
            json!({"toolCallId": "b", "error": "declined"}),
        ))
        .unwrap();
        assert!(err.is_error);
        assert_eq!(err.into_message().text(), "Error: declined");
        let flagged = ClientToolResult::from_part(&Part::data(
            json!({"toolCallId": "c", "result": "x", "isError": true}),
        ))
        .unwrap();
        assert!(flagged.is_error);
        assert!(ClientToolResult::from_part(&Part::text("hi")).is_none());
        assert!(ClientToolResult::from_part(&Part::data(json!({"result": 1}))).is_none());
    }
}
