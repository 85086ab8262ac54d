//! The events of an agent a tool called (`internal:sub-agent` updates of
//! the tool-progress extension), shown indented under the calling tool's
//! line: the called agent's state and status text as they change, its own
//! tool calls (when it reports them), and its answer, shortened, once it is
//! whole.

use std::collections::HashMap;
use std::io::Write;

use looopy_a2a::{TOOL_PROGRESS_EXTENSION, ToolProgress};
use looopy_core::{AgentEvent, EventPayload, Part, TaskState};

use super::artifact_texts::{ArtifactTexts, text_of};
use super::lines::{BAD, DIM, NOTE, OK, clip, print_progress_at};

/// The indent of a called agent's lines (under `  → tool`).
const INDENT: &str = "    ";
/// The indent of the called agent's own tool calls.
const TOOL_INDENT: &str = "      ";

/// What was shown of one call's agent so far.
#[derive(Debug, Default)]
struct CalledAgent {
    /// The last state shown.
    state: Option<TaskState>,
    /// The last status text shown.
    status: String,
    /// Its answer so far, by artifact id, in arrival order.
    answer: ArtifactTexts,
}

/// The agents called in one turn, by tool call id.
#[derive(Debug, Default)]
pub(crate) struct SubAgents {
    calls: HashMap<String, CalledAgent>,
}

/// The update a tool-progress status update carries in its data part, if
/// `event` is one.
pub(crate) fn progress_data(event: &AgentEvent) -> Option<ToolProgress> {
    let EventPayload::StatusUpdate {
        status,
        is_final: false,
        metadata,
    } = &*event.payload
    else {
        return None;
    };
    if !metadata.extra.contains_key(TOOL_PROGRESS_EXTENSION) {
        return None;
    }
    status.message.as_ref()?.parts.iter().find_map(|p| match p {
        Part::Data { data } => ToolProgress::from_data(data),
        _ => None,
    })
}

impl SubAgents {
    /// Shows one `sub-agent` update: `update`, the event of the agent
    /// that tool call `call_id` called.
    pub(crate) fn show(&mut self, call_id: &str, update: &AgentEvent, err: &mut dyn Write) {
        let called = self.calls.entry(call_id.to_owned()).or_default();
        if let Some(progress) = progress_data(update) {
            // The called agent's own tool calls; its usage and trace ids
            // are its own business.
            print_progress_at(&progress, TOOL_INDENT, err);
            return;
        }
        match &*update.payload {
            EventPayload::StatusUpdate {
                status, is_final, ..
            } => {
                let text = status
                    .message
                    .as_ref()
                    .map(|m| m.text())
                    .unwrap_or_default();
                let changed = called.state != Some(status.state)
                    || (!text.is_empty() && text != called.status);
                if *is_final {
                    let answer = called.answer.text();
                    if !answer.trim().is_empty() {
                        let _ = writeln!(err, "{INDENT}{DIM}│ {}{DIM:#}", clip(&answer));
                    }
                }
                if changed {
                    let style = match status.state {
                        TaskState::Completed => OK,
                        TaskState::Failed | TaskState::Rejected => BAD,
                        TaskState::Working | TaskState::Submitted => DIM,
                        _ => NOTE,
                    };
                    let mut line = format!("{INDENT}{style}[{}]{style:#}", status.state.as_str());
                    // A final message repeats the answer shown above.
                    let repeats_answer = *is_final && text == called.answer.text();
                    if !text.is_empty() && !repeats_answer {
                        line.push_str(&format!(" {}", clip(&text)));
                    }
                    let _ = writeln!(err, "{line}");
                    called.state = Some(status.state);
                    called.status = text;
                }
            }
            EventPayload::ArtifactUpdate {
                artifact, append, ..
            } => {
                called
                    .answer
                    .apply(&artifact.artifact_id, &text_of(&artifact.parts), *append);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use looopy_core::{Artifact, Message, Role, TaskStatus};

    use super::*;

    fn sub_agent(payload: EventPayload) -> AgentEvent {
        AgentEvent::new("remote".into(), "rc".into(), payload)
    }

    fn status(state: TaskState, text: Option<&str>, is_final: bool) -> EventPayload {
        let mut status = TaskStatus::new(state);
        if let Some(text) = text {
            status = status.with_message(Message::new(Role::Assistant, text));
        }
        EventPayload::StatusUpdate {
            status,
            is_final,
            metadata: looopy_core::StatusMetadata::default(),
        }
    }

    fn chunk(text: &str, append: bool) -> EventPayload {
        EventPayload::ArtifactUpdate {
            artifact: Artifact::new("a1", vec![Part::text(text)]),
            append,
            last_chunk: false,
        }
    }

    #[test]
    fn states_show_once_and_the_answer_shows_whole_at_the_end() {
        let mut shown = SubAgents::default();
        let mut err = Vec::new();
        for payload in [
            status(TaskState::Working, None, false),
            status(TaskState::Working, None, false),
            status(TaskState::Working, Some("looking it up"), false),
            chunk("Sunny ", false),
            chunk("all day.", true),
            status(TaskState::Completed, Some("Sunny all day."), true),
        ] {
            shown.show("c1", &sub_agent(payload), &mut err);
        }
        let text = anstream::adapter::strip_str(&String::from_utf8(err).unwrap()).to_string();
        assert_eq!(
            text,
            "    [working]\n    [working] looking it up\n    │ Sunny all day.\n    [completed]\n"
        );
    }
}
