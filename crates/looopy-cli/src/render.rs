//! Printing a turn's events on a terminal: the answer as it streams to
//! stdout, tool calls and states to stderr.

use std::io::Write;

use looopy_core::{AgentEvent, EventPayload, Part, TaskState, ToolFailure};

/// How a failed tool call is shown.
fn failure_label(kind: ToolFailure) -> &'static str {
    match kind {
        ToolFailure::Timeout => "timed out",
        ToolFailure::Denied => "denied",
        ToolFailure::Cancelled => "cancelled",
        ToolFailure::UnknownTool => "unknown tool",
        ToolFailure::BadArguments => "bad arguments",
        ToolFailure::Panicked => "crashed",
        ToolFailure::Interrupted => "interrupted",
        _ => "error",
    }
}

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
            outcome: _,
            duration_ms,
        } => {
            let mut text = result.text_content();
            if text.chars().count() > 200 {
                text = text.chars().take(200).collect::<String>() + "…";
            }
            let how = match result.failure {
                Some(kind) => failure_label(kind),
                None if result.is_error => "error",
                None => "ok",
            };
            let _ = writeln!(err, "  ← {name} ({how}, {duration_ms} ms): {text}");
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

#[cfg(test)]
mod tests {
    use looopy_core::{ToolOutcome, ToolResult};

    use super::*;

    fn shown(result: ToolResult, outcome: ToolOutcome) -> String {
        let event = AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::ToolComplete {
                name: "fetch".into(),
                result,
                outcome,
                duration_ms: 3,
            },
        );
        let (mut out, mut err) = (Vec::new(), Vec::new());
        print_event(&event, &mut out, &mut err);
        String::from_utf8(err).unwrap()
    }

    #[test]
    fn a_failed_tool_call_shows_how_it_failed() {
        let timed_out = ToolResult::failed("1", ToolFailure::Timeout, "too slow");
        assert_eq!(
            shown(timed_out, ToolOutcome::Timeout),
            "  ← fetch (timed out, 3 ms): Error: too slow\n"
        );
        let denied = ToolResult::failed("2", ToolFailure::Denied, "Tool call denied: no");
        assert!(shown(denied, ToolOutcome::Error).contains("(denied, 3 ms)"));
        let ok = ToolResult::text("3", "fine");
        assert_eq!(
            shown(ok, ToolOutcome::Success),
            "  ← fetch (ok, 3 ms): fine\n"
        );
    }
}
