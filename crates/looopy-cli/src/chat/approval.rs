//! Tool calls waiting for the user's approval: `looopy chat` asks y/n for
//! each at the prompt and sends the decisions as the typed data parts of
//! `looopy_core::approval`.

use looopy_core::approval::{ApprovalDecision, ApprovalRequest, Decision};
use looopy_core::{Message, Role};

use super::input::{Input, LineReader};

/// Reads `y`/`yes` or `n`/`no` (any case); `None` for anything else.
pub(crate) fn yes_or_no(line: &str) -> Option<bool> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(true),
        "n" | "no" => Some(false),
        _ => None,
    }
}

/// Asks about each request until it gets y or n; the message carrying the
/// decisions, or `None` when the user left (Ctrl-C, Ctrl-D).
pub(crate) async fn ask(reader: &LineReader, requests: &[ApprovalRequest]) -> Option<Message> {
    let mut parts = Vec::with_capacity(requests.len());
    for request in requests {
        // The question itself was shown with the turn's end.
        let prompt = format!("approve {}? [y/n] ", request.name);
        let approve = loop {
            match reader.read(&prompt).await {
                Input::Line(line) => match yes_or_no(&line) {
                    Some(answer) => break answer,
                    None => eprintln!("(answer y or n)"),
                },
                Input::Interrupted | Input::Eof => return None,
            }
        };
        let decision = if approve {
            Decision::Approve
        } else {
            Decision::Deny { reason: None }
        };
        parts.push(
            ApprovalDecision {
                tool_call_id: request.tool_call_id.clone(),
                decision,
            }
            .to_part(),
        );
    }
    Some(Message::with_parts(Role::User, parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_yes_and_no_are_answers() {
        assert_eq!(yes_or_no(" Y "), Some(true));
        assert_eq!(yes_or_no("yes"), Some(true));
        assert_eq!(yes_or_no("NO"), Some(false));
        assert_eq!(yes_or_no("n"), Some(false));
        assert_eq!(yes_or_no("maybe"), None);
        assert_eq!(yes_or_no(""), None);
    }
}
