//! Printing a turn's events on a terminal: the answer as it streams to
//! stdout, tool calls and states to stderr. Tool lines and states carry
//! colours (`anstyle`); callers write them through `anstream::stderr()`,
//! which drops them when stderr is not a terminal or `NO_COLOR` is set.

mod artifact_texts;
mod lines;
mod sub_agent;

use std::io::Write;

pub(crate) use artifact_texts::ArtifactTexts;
use artifact_texts::{TextChange, text_of};
use lines::{BAD, NOTE, failure_label, print_progress_at, tool_end, tool_start};
pub(crate) use sub_agent::{SubAgents, progress_data};

use looopy_a2a::ToolProgress;
use looopy_core::{AgentEvent, EventPayload, TaskState, Usage};

/// The indent of a turn's own tool lines.
const TOOL_LINE_INDENT: &str = "  ";

/// Prints one update of the tool-progress extension: tool calls as they
/// start and end. Usage and trace ids are not printed here (see
/// [`usage_line`]).
pub fn print_progress(progress: &ToolProgress, err: &mut dyn Write) {
    print_progress_at(progress, TOOL_LINE_INDENT, err);
}

/// `tokens: 12 in, 5 out, 17 total`; `None` when it counts nothing.
pub fn usage_line(usage: &Usage) -> Option<String> {
    let (input, output, total) = (usage.input_tokens, usage.output_tokens, usage.total_tokens);
    (input + output + total > 0).then(|| format!("tokens: {input} in, {output} out, {total} total"))
}

/// Prints one event; returns the final state when the event ends the turn.
/// `shown`: the turn's artifacts as printed so far (an artifact sent again
/// whole prints only what was not shown of it).
pub(crate) fn print_event(
    event: &AgentEvent,
    shown: &mut ArtifactTexts,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Option<TaskState> {
    match &*event.payload {
        EventPayload::ArtifactUpdate {
            artifact,
            append,
            last_chunk,
        } => {
            match shown.apply(&artifact.artifact_id, &text_of(&artifact.parts), *append) {
                TextChange::Grew(text) => {
                    let _ = write!(out, "{text}");
                }
                // A terminal cannot take back what it printed: the new
                // text goes on a line of its own.
                TextChange::Replaced(text) => {
                    let _ = write!(out, "\n{text}");
                }
            }
            if *last_chunk {
                let _ = writeln!(out);
            }
            let _ = out.flush();
        }
        EventPayload::ToolStart { call, arguments } => {
            tool_start(err, TOOL_LINE_INDENT, &call.name, &arguments.to_string());
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
            tool_end(err, TOOL_LINE_INDENT, name, how, *duration_ms, &text);
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
                    let style = match state {
                        TaskState::Failed | TaskState::Rejected => BAD,
                        _ => NOTE,
                    };
                    let _ = writeln!(err, "{style}[{}]{style:#} {message}", state.as_str());
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
    use looopy_core::{ToolFailure, ToolOutcome, ToolResult};

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
        print_event(&event, &mut ArtifactTexts::default(), &mut out, &mut err);
        plain(err)
    }

    /// The text without its colours.
    fn plain(bytes: Vec<u8>) -> String {
        anstream::adapter::strip_str(&String::from_utf8(bytes).unwrap()).to_string()
    }

    #[test]
    fn tool_progress_updates_and_usage_are_shown_in_words() {
        let mut err = Vec::new();
        print_progress(
            &ToolProgress::ToolStart {
                call_id: "c1".into(),
                name: "sleep".into(),
                arguments: serde_json::json!({"ms": 5}),
            },
            &mut err,
        );
        print_progress(
            &ToolProgress::ToolComplete {
                call_id: "c1".into(),
                name: "sleep".into(),
                result: "slow".into(),
                truncated: false,
                is_error: true,
                outcome: ToolOutcome::Timeout,
                failure: Some(ToolFailure::Timeout),
                duration_ms: 30,
            },
            &mut err,
        );
        let styled = String::from_utf8(err.clone()).unwrap();
        assert!(
            styled.contains("\u{1b}[31mtimed out"),
            "a failure is red: {styled:?}"
        );
        assert_eq!(
            plain(err),
            "  → sleep {\"ms\":5}\n  ← sleep (timed out, 30 ms): slow\n"
        );
        let usage = Usage {
            input_tokens: 12,
            output_tokens: 5,
            total_tokens: 17,
            ..Usage::default()
        };
        assert_eq!(
            usage_line(&usage).unwrap(),
            "tokens: 12 in, 5 out, 17 total"
        );
        assert_eq!(usage_line(&Usage::default()), None);
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
