//! What a model call sent and received, as the OpenTelemetry GenAI
//! semantic conventions write it on the `chat` span
//! (`gen_ai.system_instructions`, `gen_ai.input.messages`,
//! `gen_ai.output.messages`) and on the `execute_tool` span
//! (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`). Off by
//! default: the content is the user's data. Turned on for the process by
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, the variable
//! the OpenTelemetry GenAI instrumentations read.
//!
//! Messages are JSON arrays of `{role, parts}`, each part `{type: "text",
//! content}`, `{type: "tool_call", id, name, arguments}`, `{type:
//! "tool_call_response", id, response}`, `{type: "reasoning", content}`, or
//! `{type: "file", mime_type, name, uri}` (a file's bytes are never
//! written); the output message adds its `finish_reason`.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::History;
use crate::{Message, Part, Role};

/// The variable that turns content capture on.
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// Whether model calls and tool calls record their content on their spans:
/// [`CAPTURE_CONTENT_ENV`] is `true` (or `1`), read once per process.
pub fn capture_content() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var(CAPTURE_CONTENT_ENV).is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
    })
}

/// `gen_ai.system_instructions`: the system prompt as one text part.
pub(crate) fn system_instructions(prompt: &str) -> String {
    json!([{ "type": "text", "content": prompt }]).to_string()
}

/// `gen_ai.input.messages`: the messages sent, oldest first.
pub(crate) fn input_messages(messages: &History) -> String {
    Value::Array(messages.iter().map(message).collect()).to_string()
}

/// `gen_ai.output.messages`: the answer, with its finish reason.
pub(crate) fn output_messages(answer: &Message, finish_reason: &str) -> String {
    let mut out = message(answer);
    if let Value::Object(o) = &mut out {
        o.insert("finish_reason".into(), finish_reason.into());
    }
    Value::Array(vec![out]).to_string()
}

fn message(m: &Message) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut parts: Vec<Value> = Vec::with_capacity(m.parts.len() + m.tool_calls.len());
    if m.role == Role::Tool {
        parts.push(json!({
            "type": "tool_call_response",
            "id": m.tool_call_id,
            "response": m.text(),
        }));
    } else {
        parts.extend(m.parts.iter().filter_map(part));
    }
    parts.extend(m.tool_calls.iter().map(|c| {
        let arguments = serde_json::from_str::<Value>(&c.arguments)
            .unwrap_or_else(|_| Value::String(c.arguments.clone()));
        json!({ "type": "tool_call", "id": c.id, "name": c.name, "arguments": arguments })
    }));
    json!({ "role": role, "parts": parts })
}

fn part(p: &Part) -> Option<Value> {
    Some(match p {
        Part::Text { text } => json!({ "type": "text", "content": text }),
        Part::Data { data } => json!({ "type": "data", "content": data }),
        Part::File { file } => {
            let mut o = Map::new();
            o.insert("type".into(), "file".into());
            for (key, value) in [
                ("mime_type", &file.mime_type),
                ("name", &file.name),
                ("uri", &file.uri),
            ] {
                if let Some(v) = value {
                    o.insert(key.into(), v.as_str().into());
                }
            }
            Value::Object(o)
        }
        Part::Reasoning { reasoning } if !reasoning.text.is_empty() => {
            json!({ "type": "reasoning", "content": reasoning.text })
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileContent;
    use crate::ToolCall;

    #[test]
    fn messages_are_written_in_the_semantic_conventions_shape() {
        let mut asked = Message::assistant("Looking.");
        asked
            .tool_calls
            .push(ToolCall::new("c1", "weather", r#"{"city":"Oslo"}"#));
        let answer = crate::ToolResult::text("c1", "sunny").into_message();
        let file = Message::with_parts(
            Role::User,
            vec![Part::file(FileContent {
                blob: None,
                name: Some("a.png".into()),
                mime_type: Some("image/png".into()),
                uri: None,
                bytes: Some("AAAA".into()),
            })],
        );
        let history = History::from(vec![Message::user("Weather?"), asked, answer, file]);
        let v: Value = serde_json::from_str(&input_messages(&history)).unwrap();
        assert_eq!(
            v,
            json!([
                {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]},
                {"role": "assistant", "parts": [
                    {"type": "text", "content": "Looking."},
                    {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}
                ]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny"}]},
                {"role": "user", "parts": [{"type": "file", "mime_type": "image/png", "name": "a.png"}]}
            ])
        );
        assert!(!input_messages(&history).contains("AAAA"), "no file bytes");
        let out: Value =
            serde_json::from_str(&output_messages(&Message::assistant("Sunny."), "stop")).unwrap();
        assert_eq!(
            out,
            json!([{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}], "finish_reason": "stop"}])
        );
        assert_eq!(
            system_instructions("Be brief."),
            r#"[{"content":"Be brief.","type":"text"}]"#
        );
    }
}
