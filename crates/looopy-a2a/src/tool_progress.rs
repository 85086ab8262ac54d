//! [`ToolProgress`]: what one update of the tool-progress extension says,
//! the one type the server builds (from a turn's internal events) and
//! clients read (`looopy chat`, the web page).
//!
//! On the wire it is the data part of a `working` status update marked by
//! [`TOOL_PROGRESS_EXTENSION`](crate::TOOL_PROGRESS_EXTENSION): a JSON
//! object whose `event` names the variant, with the variant's fields in
//! camelCase. `docs/tool-progress.schema.json` is its JSON Schema; a test
//! keeps that file and this type equal, field by field.

use looopy_core::{AgentEvent, ToolFailure, ToolOutcome, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One update of the tool-progress extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "event",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum ToolProgress {
    /// The first update of a turn: its trace id.
    TurnStart {
        /// The turn's trace id (W3C, 32 hex digits).
        trace_id: String,
        /// Made up by the server because no OpenTelemetry trace is
        /// recorded: a trace viewer finds nothing under it.
        trace_id_generated: bool,
    },
    /// The model started writing a tool call (streaming only).
    ToolCallBegin {
        /// The call's id as the model sent it (may be empty).
        call_id: String,
        /// The tool.
        name: String,
        /// Position of the call in the model's answer.
        index: usize,
    },
    /// A piece of a call's arguments as the model writes them (streaming
    /// only); the pieces of one call, joined, are its arguments.
    ToolCallDelta {
        /// The call's id as the model sent it.
        call_id: String,
        /// The tool.
        name: String,
        /// Position of the call in the model's answer.
        index: usize,
        /// The next piece of the arguments' JSON text.
        delta: String,
    },
    /// A tool call starts.
    ToolStart {
        /// The call.
        call_id: String,
        /// The tool.
        name: String,
        /// Its arguments as JSON; `{"_truncated": text}` when their JSON is
        /// longer than the extension sends.
        arguments: Value,
    },
    /// A tool call ended.
    ToolComplete {
        /// The call.
        call_id: String,
        /// The tool.
        name: String,
        /// The result's text, clipped.
        result: String,
        /// Whether `result` was clipped.
        truncated: bool,
        /// Whether the call failed.
        is_error: bool,
        /// How it ended.
        outcome: ToolOutcome,
        /// How it failed (`timeout`, `denied`, ...); `null` for a success.
        failure: Option<ToolFailure>,
        /// Wall time in milliseconds.
        duration_ms: u64,
    },
    /// An event of the agent a tool called (a remote A2A agent).
    SubAgent {
        /// `<this turn's task id>/<the remote task id>`.
        path: String,
        /// The tool that called it.
        name: String,
        /// The tool call.
        call_id: String,
        /// The called agent's event, in Looopy's event form.
        update: Box<AgentEvent>,
    },
    /// A running tool said how far it got.
    ToolReport {
        /// The call.
        call_id: String,
        /// The tool.
        name: String,
        /// How far it got, in the tool's own units.
        progress: f64,
        /// The progress at which it is done, when the tool knows.
        total: Option<f64>,
        /// What it is doing, for people.
        message: Option<String>,
    },
    /// Token usage after a model call.
    Usage {
        /// This call.
        call: Usage,
        /// The turn so far.
        total: Usage,
    },
    /// An update of a kind newer than this code: a client skips it.
    #[serde(other)]
    Unknown,
}

impl ToolProgress {
    /// The update's `event` name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            ToolProgress::TurnStart { .. } => "turn-start",
            ToolProgress::ToolCallBegin { .. } => "tool-call-begin",
            ToolProgress::ToolCallDelta { .. } => "tool-call-delta",
            ToolProgress::ToolStart { .. } => "tool-start",
            ToolProgress::ToolComplete { .. } => "tool-complete",
            ToolProgress::SubAgent { .. } => "sub-agent",
            ToolProgress::ToolReport { .. } => "tool-report",
            ToolProgress::Usage { .. } => "usage",
            ToolProgress::Unknown => "unknown",
        }
    }

    /// Reads an update from its data part; `None` when it is none.
    pub fn from_data(data: &Value) -> Option<ToolProgress> {
        ToolProgress::deserialize(data).ok()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeSet;

    use looopy_core::{EventPayload, TaskState, TaskStatus};
    use serde_json::json;

    use super::*;

    /// One update of each kind.
    fn every_kind() -> Vec<ToolProgress> {
        vec![
            ToolProgress::TurnStart {
                trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
                trace_id_generated: false,
            },
            ToolProgress::ToolCallBegin {
                call_id: "c1".into(),
                name: "sleep".into(),
                index: 0,
            },
            ToolProgress::ToolCallDelta {
                call_id: "c1".into(),
                name: "sleep".into(),
                index: 0,
                delta: "{\"ms\":".into(),
            },
            ToolProgress::ToolStart {
                call_id: "c1".into(),
                name: "sleep".into(),
                arguments: json!({"ms": 5}),
            },
            ToolProgress::ToolComplete {
                call_id: "c1".into(),
                name: "sleep".into(),
                result: "slept".into(),
                truncated: false,
                is_error: true,
                outcome: ToolOutcome::Timeout,
                failure: Some(ToolFailure::Timeout),
                duration_ms: 7,
            },
            ToolProgress::SubAgent {
                path: "t/r1".into(),
                name: "ask".into(),
                call_id: "c2".into(),
                update: Box::new(AgentEvent::new(
                    "r1".into(),
                    "rc".into(),
                    EventPayload::StatusUpdate {
                        status: TaskStatus::new(TaskState::Working),
                        is_final: false,
                        metadata: Default::default(),
                    },
                )),
            },
            ToolProgress::ToolReport {
                call_id: "c3".into(),
                name: "crawl".into(),
                progress: 2.0,
                total: Some(5.0),
                message: Some("page 2 of 5".into()),
            },
            ToolProgress::Usage {
                call: Usage::default(),
                total: Usage::default(),
            },
        ]
    }

    #[test]
    fn every_update_reads_back_and_names_its_event() {
        for update in every_kind() {
            let wire = serde_json::to_value(&update).unwrap();
            assert_eq!(wire["event"], update.name(), "{wire}");
            assert_eq!(ToolProgress::from_data(&wire), Some(update));
        }
        let newer = ToolProgress::from_data(&json!({"event": "tool-thinking", "x": 1}));
        assert_eq!(newer, Some(ToolProgress::Unknown));
        assert_eq!(ToolProgress::from_data(&json!({"x": 1})), None);
    }

    #[test]
    fn a_success_says_its_failure_is_null() {
        let done = ToolProgress::ToolComplete {
            call_id: "c".into(),
            name: "t".into(),
            result: String::new(),
            truncated: false,
            is_error: false,
            outcome: ToolOutcome::Success,
            failure: None,
            duration_ms: 0,
        };
        let wire = serde_json::to_value(&done).unwrap();
        assert_eq!(wire["failure"], Value::Null);
        assert_eq!(wire["outcome"], "success");
    }

    /// `docs/tool-progress.schema.json` lists, for each `event`, exactly
    /// the fields this type writes, all required.
    #[test]
    fn the_documented_schema_matches_the_type() {
        let schema: Value =
            serde_json::from_str(include_str!("../../../docs/tool-progress.schema.json")).unwrap();
        let variants = schema["oneOf"].as_array().unwrap();
        let kinds = every_kind();
        assert_eq!(variants.len(), kinds.len(), "one schema per kind");
        for update in kinds {
            let wire = serde_json::to_value(&update).unwrap();
            let written: BTreeSet<&str> = wire
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            let variant = variants
                .iter()
                .find(|v| v["properties"]["event"]["const"] == update.name())
                .unwrap_or_else(|| panic!("no schema for {}", update.name()));
            let documented: BTreeSet<&str> = variant["properties"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(written, documented, "{}", update.name());
            let required: BTreeSet<&str> = variant["required"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(required, documented, "{}: all required", update.name());
            assert_eq!(variant["additionalProperties"], false, "{}", update.name());
        }
    }
}
