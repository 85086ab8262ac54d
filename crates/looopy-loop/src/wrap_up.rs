//! The history of the wrap-up call (the one summary call made when a turn
//! reaches its iteration or tool-call limit), in a form strict providers
//! accept (`docs/behaviour.md#the-wrap-up-call`).
//!
//! That call offers no tools, since the model must answer now. Anthropic
//! (also through LiteLLM) refuses a request whose messages hold tool calls
//! or tool results when it defines no tools, and OpenAI refuses a
//! `tool_choice` without tools. Sending the tool definitions with
//! `tool_choice: "none"` depends on each provider (and each LiteLLM version)
//! honouring "none"; a history in plain text is accepted by every provider.
//! So every tool call becomes a line of the assistant's text and every tool
//! result a user message saying what the tool returned, adjacent messages
//! of the same role are joined (some providers want roles to alternate),
//! and the summary prompt ends the history.

use std::collections::HashMap;

use looopy_core::{History, Message, Part, Role};

/// `history` with its tool calls and results written out as text, followed
/// by `prompt` as a user message. The turn's own history is not changed.
pub(crate) fn plain_history(history: &History, prompt: &str) -> History {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out: Vec<Message> = Vec::with_capacity(history.len() + 1);
    for message in history.iter() {
        for call in &message.tool_calls {
            names.insert(call.id.as_str(), call.name.as_str());
        }
        let flat = match message.role {
            Role::Tool => tool_result(message, &names),
            _ if !message.tool_calls.is_empty() => with_calls(message),
            _ => message.clone(),
        };
        push_joined(&mut out, flat);
    }
    push_joined(&mut out, Message::user(prompt.to_owned()));
    History::from(out)
}

/// An assistant message with each of its calls as a line of text.
fn with_calls(message: &Message) -> Message {
    let mut flat = message.clone();
    for call in std::mem::take(&mut flat.tool_calls) {
        flat.parts.push(Part::text(format!(
            "[called tool `{}` with arguments {}]",
            call.name, call.arguments
        )));
    }
    flat
}

/// A tool result as a user message: which call it answers, then its parts
/// (files stay files).
fn tool_result(message: &Message, names: &HashMap<&str, &str>) -> Message {
    let id = message.tool_call_id.as_deref().unwrap_or("");
    let name = names.get(id).copied().unwrap_or("unknown");
    let status = if message.is_error() { " (failed)" } else { "" };
    let mut parts = vec![Part::text(format!("[result of tool `{name}`{status}]"))];
    parts.extend(message.parts.iter().cloned());
    Message::with_parts(Role::User, parts)
}

/// Appends `message`, joining its parts to the last message's when both
/// have the same role.
fn push_joined(out: &mut Vec<Message>, message: Message) {
    match out.last_mut() {
        Some(last) if last.role == message.role && last.role != Role::System => {
            last.parts.extend(message.parts);
        }
        _ => out.push(message),
    }
}

#[cfg(test)]
mod tests {
    use looopy_core::{ToolCall, ToolResult};

    use super::*;

    #[test]
    fn calls_and_results_become_text_and_roles_alternate() {
        let mut asked = Message::assistant("Let me look.");
        asked.tool_calls = vec![
            ToolCall::new("c1", "weather", r#"{"city":"Paris"}"#),
            ToolCall::new("c2", "time", "{}"),
        ];
        let history = History::from(vec![
            Message::user("weather and time?"),
            asked,
            ToolResult::text("c1", "sunny").into_message(),
            ToolResult::error("c2", "no clock").into_message(),
        ]);
        let flat = plain_history(&history, "Sum up.");
        let roles: Vec<Role> = flat.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
        assert!(flat.iter().all(|m| m.tool_calls.is_empty()));
        assert!(flat.iter().all(|m| m.tool_call_id.is_none()));
        let said = flat.get(1).map(Message::text).unwrap_or_default();
        assert!(said.contains("Let me look."), "{said}");
        assert!(
            said.contains(r#"`weather` with arguments {"city":"Paris"}"#),
            "{said}"
        );
        let results = flat.get(2).map(Message::text).unwrap_or_default();
        assert!(results.contains("`weather`]sunny"), "{results}");
        assert!(results.contains("`time` (failed)]"), "{results}");
        assert!(results.contains("no clock"), "{results}");
        assert!(results.ends_with("Sum up."), "{results}");
        assert_eq!(history.len(), 4, "the turn's history is not changed");
    }
}
