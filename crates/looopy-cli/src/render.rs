//! Printing a turn's events on a terminal: the answer as it streams to
//! stdout, tool calls and states to stderr.

use std::io::Write;

use looopy_core::{AgentEvent, EventPayload, Part, TaskState};

/// Prints one event; returns the final state when the event ends the turn.
pub fn print_event(
    event: &AgentEvent,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Option<TaskState> {
    match &*event.payload {
        EventPayload::ArtifactUpdate {
            artifact,
            last_chunk,
            ..
        } => {
            for part in &artifact.parts {
                if let Part::Text { text } = part {
                    let _ = write!(out, "{text}");
                }
            }
            if *last_chunk {
                let _ = writeln!(out);
            }
            let _ = out.flush();
        }
        EventPayload::ToolStart { call, arguments } => {
            let _ = writeln!(err, "  → {} {}", call.name, arguments);
        }
        EventPayload::ToolComplete {
            name,
            result,
            outcome,
            duration_ms,
        } => {
            let mut text = result.text_content();
            if text.chars().count() > 200 {
                text = text.chars().take(200).collect::<String>() + "…";
            }
            let _ = writeln!(err, "  ← {name} ({outcome:?}, {duration_ms} ms): {text}");
        }
        EventPayload::StatusUpdate {
            status,
            is_final: true,
            ..
        } => {
            match status.state {
                TaskState::Completed => {}
                state => {
                    let message = status
                        .message
                        .as_ref()
                        .map(|m| m.text())
                        .unwrap_or_default();
                    let _ = writeln!(err, "[{}] {message}", state.as_str());
                }
            }
            return Some(status.state);
        }
        _ => {}
    }
    None
}
