//! A tool's question to a person in the middle of a call (MCP's
//! `elicitation/create`), asked as an `input-required` turn.
//!
//! When a tool asks, its call pauses and the turn ends `input-required`.
//! The status message's data part lists the questions beside the waiting
//! calls (see [`input_required_part`](crate::approval::input_required_part)):
//!
//! ```json
//! {"pendingToolCalls": [...], "elicitations": [
//!   {"toolCallId": "call-1", "requestId": "5c1f0e2a9b7d3c44", "tool": "shop_buy",
//!    "server": "shop", "message": "How many?",
//!    "requestedSchema": {"type": "object", "properties": {"quantity": {"type": "integer", "minimum": 1}},
//!                        "required": ["quantity"]}}
//! ]}
//! ```
//!
//! The next message answers each question with a data part, quoting the
//! call and the question:
//!
//! ```json
//! {"elicitation": {"toolCallId": "call-1", "requestId": "5c1f0e2a9b7d3c44",
//!                  "action": "accept", "content": {"quantity": 2}}}
//! ```
//!
//! `action` is `accept` (with `content`), `decline` or `cancel`, as in MCP.
//! The Agent runs the call again with the answer ([`ElicitationAnswers`], a
//! turn dependency): a call still paused in this process goes on where it
//! stopped; otherwise (a restart, another replica) it starts again and the
//! answer is given when the tool asks the same question again, matched by
//! [`ElicitationRequest::request_id`]. Content that does not fit the schema
//! is not sent: the question is asked again with the validation error in
//! [`ElicitationRequest::error`].

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Message, Part};
use crate::tool::ToolResult;

/// The key of an answer in a data part (`{"elicitation": {...}}`).
pub const ELICITATION_PART_KEY: &str = "elicitation";

/// The key of the questions in the data part of an `input-required`
/// message, and of a question in a paused call's result.
pub const ELICITATIONS_PART_KEY: &str = "elicitations";

/// A question a tool asks during a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRequest {
    /// The call that asks.
    pub tool_call_id: String,
    /// Names this question: the same server, message and schema give the
    /// same id, in any process (see [`request_id`](Self::request_id_of)).
    pub request_id: String,
    /// The tool, as the model calls it.
    pub tool: String,
    /// Who asks: the MCP server's name.
    pub server: String,
    /// What the person is asked.
    pub message: String,
    /// The JSON schema of the answer's content: an object of primitive
    /// properties (string, number, integer, boolean, enums), as MCP allows.
    pub requested_schema: Value,
    /// Why the last answer was refused, when it was (the question is asked
    /// again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ElicitationRequest {
    /// The question `message` with its schema, asked by `server` during
    /// the call `tool_call_id` of `tool`.
    pub fn new(
        tool_call_id: impl Into<String>,
        tool: impl Into<String>,
        server: impl Into<String>,
        message: impl Into<String>,
        requested_schema: Value,
    ) -> Self {
        let server = server.into();
        let message = message.into();
        ElicitationRequest {
            tool_call_id: tool_call_id.into(),
            request_id: Self::request_id_of(&server, &message, &requested_schema),
            tool: tool.into(),
            server,
            message,
            requested_schema,
            error: None,
        }
    }

    /// The same question, saying why the last answer was refused.
    pub fn with_error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }

    /// The id of a question: a 64-bit FNV-1a hash, in hex, of the server,
    /// the message and the schema (its keys sorted), so that a call run
    /// again after a restart that asks the same question finds its answer.
    pub fn request_id_of(server: &str, message: &str, schema: &Value) -> String {
        let mut text = String::new();
        text.push_str(server);
        text.push('\0');
        text.push_str(message);
        text.push('\0');
        canonical(schema, &mut text);
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in text.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{hash:016x}")
    }

    /// The data part a paused call's result carries
    /// (`{"elicitations": [this]}`).
    pub fn to_part(&self) -> Part {
        let mut data = Map::new();
        data.insert(
            ELICITATIONS_PART_KEY.into(),
            Value::Array(vec![serde_json::to_value(self).unwrap_or(Value::Null)]),
        );
        Part::data(Value::Object(data))
    }

    /// The questions among a tool result's parts.
    pub fn from_result(result: &ToolResult) -> Vec<Self> {
        result.content.iter().flat_map(Self::in_part).collect()
    }

    /// The questions an `input-required` status message carries; none
    /// when it has none. What a client reads to ask its user.
    pub fn in_message(message: &Message) -> Vec<Self> {
        message.parts.iter().flat_map(Self::in_part).collect()
    }

    fn in_part(part: &Part) -> Vec<Self> {
        match part {
            Part::Data {
                data: Value::Object(data),
            } => data
                .get(ELICITATIONS_PART_KEY)
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Checks `content` against the requested schema: an object whose
    /// required properties are present, with no property the schema does
    /// not name, each of its type, within its enum, length and range. The
    /// error names every property that does not fit.
    ///
    /// A whole number is an integer even when written `3.0`: a client on
    /// protobuf (A2A's gRPC binding, the official SDKs) carries every
    /// number of a data part as a double.
    pub fn validate(&self, content: &Map<String, Value>) -> Result<(), String> {
        validate(&self.requested_schema, content)
    }

    /// `content` as the tool is to receive it: [validated](Self::validate),
    /// with every whole number of an integer property written as an
    /// integer.
    pub fn conform(&self, mut content: Map<String, Value>) -> Result<Map<String, Value>, String> {
        self.validate(&content)?;
        let properties = self.requested_schema.get("properties");
        for (name, value) in &mut content {
            let integer = properties
                .and_then(|p| p.get(name))
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                == Some("integer");
            if integer
                && !(value.is_i64() || value.is_u64())
                && let Some(whole) = value.as_f64()
            {
                // Validated: whole, and within the property's range.
                *value = Value::from(whole as i64);
            }
        }
        Ok(content)
    }
}

/// What the person does with a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationAction {
    /// Answers with the content.
    Accept,
    /// Declines to answer; the tool goes on without it.
    Decline,
    /// Cancels what the tool was doing.
    Cancel,
}

/// The answer to one question, as sent in a data part
/// (`{"elicitation": {...}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationAnswer {
    /// The call that asked.
    pub tool_call_id: String,
    /// The question answered ([`ElicitationRequest::request_id`]).
    pub request_id: String,
    /// What the person did.
    pub action: ElicitationAction,
    /// The answer, for [`ElicitationAction::Accept`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

/// A data part that has an `elicitation` key but does not read as an
/// answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid elicitation answer: {0}")]
pub struct InvalidElicitationAnswer(pub String);

impl ElicitationAnswer {
    /// Accepts `request` with `content`.
    pub fn accept(request: &ElicitationRequest, content: Map<String, Value>) -> Self {
        Self::of(request, ElicitationAction::Accept, Some(content))
    }

    /// Declines `request`.
    pub fn decline(request: &ElicitationRequest) -> Self {
        Self::of(request, ElicitationAction::Decline, None)
    }

    /// Cancels `request`.
    pub fn cancel(request: &ElicitationRequest) -> Self {
        Self::of(request, ElicitationAction::Cancel, None)
    }

    fn of(
        request: &ElicitationRequest,
        action: ElicitationAction,
        content: Option<Map<String, Value>>,
    ) -> Self {
        ElicitationAnswer {
            tool_call_id: request.tool_call_id.clone(),
            request_id: request.request_id.clone(),
            action,
            content,
        }
    }

    /// Reads an answer from a part: `None` for a part that is not one, an
    /// error for one that is but is malformed (no `toolCallId`, an unknown
    /// action, `accept` without an object of content).
    pub fn from_part(part: &Part) -> Option<Result<Self, InvalidElicitationAnswer>> {
        let Part::Data {
            data: Value::Object(data),
        } = part
        else {
            return None;
        };
        let value = data.get(ELICITATION_PART_KEY)?;
        let answer = serde_json::from_value::<ElicitationAnswer>(value.clone())
            .map_err(|e| InvalidElicitationAnswer(e.to_string()));
        Some(answer.and_then(|a| {
            if a.action == ElicitationAction::Accept && a.content.is_none() {
                return Err(InvalidElicitationAnswer(
                    "`accept` needs `content`, an object".into(),
                ));
            }
            Ok(a)
        }))
    }

    /// The data part carrying this answer.
    pub fn to_part(&self) -> Part {
        let mut data = Map::new();
        data.insert(
            ELICITATION_PART_KEY.into(),
            serde_json::to_value(self).unwrap_or(Value::Null),
        );
        Part::data(Value::Object(data))
    }
}

/// The answers a turn carries for the calls it runs again: a turn
/// dependency ([`crate::Deps`]) the Agent adds; a tool that asks reads it
/// (`cx.deps.get::<ElicitationAnswers>()`) before it asks the person.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ElicitationAnswers(pub Vec<ElicitationAnswer>);

impl ElicitationAnswers {
    /// The answer for the call `tool_call_id`, if the turn has one.
    pub fn for_call(&self, tool_call_id: &str) -> Option<&ElicitationAnswer> {
        self.0.iter().find(|a| a.tool_call_id == tool_call_id)
    }
}

/// Writes `value` as JSON with every object's keys sorted.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}:", Value::String(key.clone()));
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// [`ElicitationRequest::validate`].
fn validate(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut problems = Vec::new();
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !content.contains_key(name) {
                problems.push(format!("{name}: is required"));
            }
        }
    }
    for (name, value) in content {
        match properties.get(name) {
            None => problems.push(format!("{name}: is not asked for")),
            Some(property) => {
                if let Err(problem) = check(property, value) {
                    problems.push(format!("{name}: {problem}"));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// One property's value against its schema.
fn check(property: &Value, value: &Value) -> Result<(), String> {
    let allowed = allowed_values(property);
    let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "string" => {
            let Some(text) = value.as_str() else {
                return Err("must be a string".into());
            };
            let chars = text.chars().count() as u64;
            if let Some(min) = property.get("minLength").and_then(Value::as_u64)
                && chars < min
            {
                return Err(format!("must be at least {min} characters"));
            }
            if let Some(max) = property.get("maxLength").and_then(Value::as_u64)
                && chars > max
            {
                return Err(format!("must be at most {max} characters"));
            }
        }
        "number" | "integer" => {
            let Some(number) = value.as_f64() else {
                return Err(if kind == "integer" {
                    "must be an integer".into()
                } else {
                    "must be a number".into()
                });
            };
            if kind == "integer" && (number.fract() != 0.0 || number.abs() > 9.0e15) {
                return Err("must be an integer".into());
            }
            if let Some(min) = property.get("minimum").and_then(Value::as_f64)
                && number < min
            {
                return Err(format!("must be at least {min}"));
            }
            if let Some(max) = property.get("maximum").and_then(Value::as_f64)
                && number > max
            {
                return Err(format!("must be at most {max}"));
            }
        }
        "boolean" if !value.is_boolean() => return Err("must be true or false".into()),
        "array" => {
            let Some(items) = value.as_array() else {
                return Err("must be an array".into());
            };
            let allowed = property
                .get("items")
                .map(allowed_values)
                .unwrap_or_default();
            if !allowed.is_empty()
                && let Some(bad) = items.iter().find(|i| !allowed.contains(i))
            {
                return Err(format!("{bad} is not one of {}", list(&allowed)));
            }
            let count = items.len() as u64;
            if let Some(min) = property.get("minItems").and_then(Value::as_u64)
                && count < min
            {
                return Err(format!("must have at least {min} items"));
            }
            if let Some(max) = property.get("maxItems").and_then(Value::as_u64)
                && count > max
            {
                return Err(format!("must have at most {max} items"));
            }
            return Ok(());
        }
        _ => {}
    }
    if !allowed.is_empty() && !allowed.contains(value) {
        return Err(format!("must be one of {}", list(&allowed)));
    }
    Ok(())
}

/// The values an enum property allows: its `enum`, or the `const` of each
/// of its `oneOf` / `anyOf` (titled enums); none when it is no enum.
fn allowed_values(property: &Value) -> Vec<Value> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return values.clone();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|key| property.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|option| option.get("const").cloned())
        .collect()
}

fn list(values: &[Value]) -> String {
    values
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn order() -> ElicitationRequest {
        ElicitationRequest::new(
            "call-1",
            "shop_buy",
            "shop",
            "How many, and which colour?",
            json!({
                "type": "object",
                "properties": {
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 10},
                    "colour": {"type": "string", "enum": ["red", "green"]},
                    "note": {"type": "string", "maxLength": 5},
                    "gift": {"type": "boolean"}
                },
                "required": ["quantity"]
            }),
        )
    }

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn fitting_content_passes_and_every_misfit_is_named() {
        let request = order();
        assert_eq!(
            request.validate(&object(
                json!({"quantity": 2, "colour": "red", "gift": true})
            )),
            Ok(())
        );
        let error = request
            .validate(&object(json!({
                "quantity": 0, "colour": "blue", "note": "far too long", "extra": 1
            })))
            .unwrap_err();
        for expected in [
            "quantity: must be at least 1",
            "colour: must be one of \"red\", \"green\"",
            "note: must be at most 5 characters",
            "extra: is not asked for",
        ] {
            assert!(error.contains(expected), "{error}");
        }
        let missing = request
            .validate(&object(json!({"gift": "yes"})))
            .unwrap_err();
        assert!(missing.contains("quantity: is required"), "{missing}");
        assert!(missing.contains("gift: must be true or false"), "{missing}");
        let fractional = request
            .validate(&object(json!({"quantity": 1.5})))
            .unwrap_err();
        assert!(fractional.contains("must be an integer"), "{fractional}");
        // A whole double (what protobuf carries) is an integer, sent as one.
        let conformed = request.conform(object(json!({"quantity": 3.0}))).unwrap();
        assert_eq!(conformed["quantity"], json!(3));
        assert!(conformed["quantity"].is_i64());
    }

    #[test]
    fn the_request_id_ignores_key_order_but_not_the_question() {
        let a =
            ElicitationRequest::request_id_of("s", "m", &json!({"a": 1, "b": {"c": 2, "d": 3}}));
        let b =
            ElicitationRequest::request_id_of("s", "m", &json!({"b": {"d": 3, "c": 2}, "a": 1}));
        assert_eq!(a, b);
        assert_eq!(a.len(), 16);
        assert_ne!(
            a,
            ElicitationRequest::request_id_of("s", "m2", &json!({"a": 1}))
        );
        assert_ne!(
            a,
            ElicitationRequest::request_id_of("t", "m", &json!({"a": 1, "b": {"c": 2, "d": 3}}))
        );
    }

    #[test]
    fn answers_and_requests_read_back_from_their_parts() {
        let request = order().with_error("quantity: is required");
        let result = ToolResult {
            content: vec![request.to_part()],
            ..ToolResult::text("call-1", "")
        };
        assert_eq!(
            ElicitationRequest::from_result(&result),
            std::slice::from_ref(&request)
        );
        let answer = ElicitationAnswer::accept(&request, object(json!({"quantity": 3})));
        assert_eq!(
            ElicitationAnswer::from_part(&answer.to_part())
                .unwrap()
                .unwrap(),
            answer
        );
        let declined = Part::data(json!({"elicitation": {
            "toolCallId": "call-1", "requestId": request.request_id, "action": "decline"}}));
        assert_eq!(
            ElicitationAnswer::from_part(&declined)
                .unwrap()
                .unwrap()
                .action,
            ElicitationAction::Decline
        );
        let bare_accept = Part::data(json!({"elicitation": {
            "toolCallId": "call-1", "requestId": "x", "action": "accept"}}));
        assert!(ElicitationAnswer::from_part(&bare_accept).unwrap().is_err());
        let unknown = Part::data(json!({"elicitation": {
            "toolCallId": "call-1", "requestId": "x", "action": "maybe"}}));
        assert!(ElicitationAnswer::from_part(&unknown).unwrap().is_err());
        assert!(ElicitationAnswer::from_part(&Part::text("hi")).is_none());
    }
}
