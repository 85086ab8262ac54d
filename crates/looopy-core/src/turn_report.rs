//! How a turn ended, as its final status event reports it: [`TurnEnd`],
//! [`TurnReport`], and [`StatusMetadata`], the metadata of a status event
//! that carries the report beside free-form entries.
//!
//! On the wire (A2A events, the event logs of the stores) the report stays
//! what clients read: entries of the status event's `metadata` object,
//! `finishReason`, `iterations`, `usage`, `error`, `failedToolCall`,
//! `maxIterationsReached`, `maxToolCallsReached` or `maxDurationReached`
//! when a limit ended the turn, `pendingToolCalls` and `approvalRequests`
//! when it waits for input; for a turn an Agent ran, `turnNumber`, `saved`, and `saveError`,
//! `compaction`, `compactionError` where they apply. In Rust it is a typed
//! field, built once by the turn and read without parsing.

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::approval::ApprovalRequest;
use crate::{TaskState, ToolCall, Usage};

/// Why a turn ended (`finishReason` on the wire; each ending, when it
/// happens and the state it reports: `docs/behaviour.md#termination`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TurnEnd {
    /// The model answered without tool calls.
    Finished,
    /// The done tool ended the turn.
    DoneTool,
    /// `max_iterations` was reached; one last call without tools wrote the answer.
    MaxIterations,
    /// The turn's tool-call limit was reached; one last call without tools
    /// wrote the answer.
    MaxToolCalls,
    /// The turn ran past its wall-time limit and was stopped (`failed`).
    MaxDuration,
    /// A tool call failed and the loop's tool failure mode ends the turn
    /// on a failure (`failed`).
    ToolFailed,
    /// A client tool was called: the client must answer.
    InputRequired,
    /// Cancelled.
    Cancelled,
    /// The model, a store or the configuration failed.
    Error,
}

impl TurnEnd {
    /// The name used on the wire (`finishReason`).
    pub fn as_str(self) -> &'static str {
        match self {
            TurnEnd::Finished => "finished",
            TurnEnd::DoneTool => "done_tool",
            TurnEnd::MaxIterations => "max_iterations",
            TurnEnd::MaxToolCalls => "max_tool_calls",
            TurnEnd::MaxDuration => "max_duration",
            TurnEnd::ToolFailed => "tool_failed",
            TurnEnd::InputRequired => "input_required",
            TurnEnd::Cancelled => "cancelled",
            TurnEnd::Error => "error",
        }
    }

    /// Every ending.
    const ALL: [TurnEnd; 9] = [
        TurnEnd::Finished,
        TurnEnd::DoneTool,
        TurnEnd::MaxIterations,
        TurnEnd::MaxToolCalls,
        TurnEnd::MaxDuration,
        TurnEnd::ToolFailed,
        TurnEnd::InputRequired,
        TurnEnd::Cancelled,
        TurnEnd::Error,
    ];

    /// The ending named `name` on the wire ([`as_str`](Self::as_str)), if
    /// it is one.
    pub fn parse(name: &str) -> Option<TurnEnd> {
        TurnEnd::ALL.into_iter().find(|end| end.as_str() == name)
    }

    /// How a turn whose checkpoint was saved in a final `state` ended, as
    /// a resume reports it again: the inverse of [`state`](Self::state) (a
    /// completed turn is reported [`Finished`](Self::Finished), the
    /// checkpoint does not keep which of the completing ends it was; a
    /// failed one [`Error`](Self::Error)).
    pub fn of_saved_state(state: TaskState) -> TurnEnd {
        match state {
            TaskState::Completed => TurnEnd::Finished,
            TaskState::InputRequired | TaskState::AuthRequired => TurnEnd::InputRequired,
            TaskState::Canceled => TurnEnd::Cancelled,
            _ => TurnEnd::Error,
        }
    }

    /// The task state a turn ending this way reports.
    pub fn state(self) -> TaskState {
        match self {
            TurnEnd::Finished
            | TurnEnd::DoneTool
            | TurnEnd::MaxIterations
            | TurnEnd::MaxToolCalls => TaskState::Completed,
            TurnEnd::InputRequired => TaskState::InputRequired,
            TurnEnd::Cancelled => TaskState::Canceled,
            TurnEnd::Error | TurnEnd::MaxDuration | TurnEnd::ToolFailed => TaskState::Failed,
        }
    }

    /// The wire's flag for a limit that ended the turn, if one did.
    fn limit_flag(self) -> Option<&'static str> {
        match self {
            TurnEnd::MaxIterations => Some(MAX_ITERATIONS_REACHED),
            TurnEnd::MaxToolCalls => Some(MAX_TOOL_CALLS_REACHED),
            TurnEnd::MaxDuration => Some(MAX_DURATION_REACHED),
            _ => None,
        }
    }
}

/// The wire's name ([`TurnEnd::as_str`]), the one table of names.
impl Serialize for TurnEnd {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TurnEnd {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        TurnEnd::parse(&name)
            .ok_or_else(|| D::Error::custom(format!("unknown turn ending `{name}`")))
    }
}

impl std::fmt::Display for TurnEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong in a turn that failed (`error` on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnError {
    /// What failed: `model`, `store`, `hook`, `tool_failed`, `internal` ...
    #[serde(rename = "type")]
    pub kind: String,
    /// What happened, for a person.
    pub message: String,
}

impl TurnError {
    /// An error of this kind.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        TurnError {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// The tool call whose failure ended a turn (`failedToolCall` on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedToolCall {
    /// The tool.
    pub name: String,
    /// The call.
    pub call_id: String,
    /// How it failed ([`ToolFailure::as_str`](crate::ToolFailure::as_str)).
    pub failure: String,
}

/// What an Agent adds to the report of a turn it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTurnReport {
    /// The conversation's turn number (1 for its first).
    pub turn_number: u64,
    /// Whether the turn's messages and the Agent's state were saved.
    pub saved: bool,
    /// Why they were not, when saving failed.
    pub save_error: Option<String>,
    /// The compaction that ran before the turn, as the Agent records it
    /// (`originalCount`, `range`, `summaryMessageId` ...).
    pub compaction: Option<Value>,
    /// Why the compaction before the turn failed, when it did.
    pub compaction_error: Option<String>,
}

/// How a turn ended, carried by its final status event.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    /// Why it ended.
    pub finish_reason: TurnEnd,
    /// Iterations run (model calls that were not a limit's last answer).
    pub iterations: u32,
    /// Tokens used by the whole turn.
    pub usage: Usage,
    /// What went wrong, when the turn failed. Boxed, like the failed call:
    /// most turns have neither, and a kept task holds its final report.
    pub error: Option<Box<TurnError>>,
    /// The call whose failure ended the turn ([`TurnEnd::ToolFailed`]).
    pub failed_tool_call: Option<Box<FailedToolCall>>,
    /// The calls an `input-required` turn waits on: client tool calls for
    /// the client to run and calls waiting for a person's approval
    /// (`pendingToolCalls`).
    pub pending_tool_calls: Vec<ToolCall>,
    /// The questions about the calls that wait for approval
    /// (`approvalRequests`).
    pub approval_requests: Vec<ApprovalRequest>,
    /// What the Agent adds, for a turn an Agent ran.
    pub agent: Option<AgentTurnReport>,
}

impl TurnReport {
    /// A report of a turn that ended this way, with nothing else to say.
    pub fn new(finish_reason: TurnEnd) -> Self {
        TurnReport {
            finish_reason,
            iterations: 0,
            usage: Usage::default(),
            error: None,
            failed_tool_call: None,
            pending_tool_calls: Vec::new(),
            approval_requests: Vec::new(),
            agent: None,
        }
    }

    /// With what went wrong.
    pub fn with_error(mut self, error: TurnError) -> Self {
        self.error = Some(Box::new(error));
        self
    }
}

const FINISH_REASON: &str = "finishReason";
const ITERATIONS: &str = "iterations";
const USAGE: &str = "usage";
const ERROR: &str = "error";
const FAILED_TOOL_CALL: &str = "failedToolCall";
const MAX_ITERATIONS_REACHED: &str = "maxIterationsReached";
const MAX_TOOL_CALLS_REACHED: &str = "maxToolCallsReached";
const MAX_DURATION_REACHED: &str = "maxDurationReached";
const PENDING_TOOL_CALLS: &str = "pendingToolCalls";
const APPROVAL_REQUESTS: &str = crate::approval::REQUESTS_PART_KEY;
const TURN_NUMBER: &str = "turnNumber";
const SAVED: &str = "saved";
const SAVE_ERROR: &str = "saveError";
const COMPACTION: &str = "compaction";
const COMPACTION_ERROR: &str = "compactionError";

/// The metadata of a status event: the turn's [`TurnReport`] on the final
/// event of a turn, and free-form entries (what a runner adds, the
/// tool-progress extension's mark).
///
/// It is one JSON object on the wire: the report's entries (see the module
/// docs), then the free-form ones. Reading one back takes the report out
/// of an object whose `finishReason` names a [`TurnEnd`]; any other object
/// stays free-form entries, whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusMetadata {
    /// How the turn ended (final events of a turn).
    pub report: Option<Box<TurnReport>>,
    /// Everything else.
    pub extra: Map<String, Value>,
}

impl StatusMetadata {
    /// Metadata carrying `report`.
    pub fn report(report: TurnReport) -> Self {
        StatusMetadata {
            report: Some(Box::new(report)),
            extra: Map::new(),
        }
    }

    /// Metadata of free-form entries only.
    pub fn entries(extra: Map<String, Value>) -> Self {
        StatusMetadata {
            report: None,
            extra,
        }
    }

    /// Whether it holds nothing (no report, no entry).
    pub fn is_empty(&self) -> bool {
        self.report.is_none() && self.extra.is_empty()
    }

    /// The one JSON object the wire carries.
    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// Reads the wire's object back (see the type's docs).
    pub fn from_map(mut map: Map<String, Value>) -> Self {
        let Some(finish_reason) = map
            .get(FINISH_REASON)
            .and_then(Value::as_str)
            .and_then(TurnEnd::parse)
        else {
            return StatusMetadata::entries(map);
        };
        let mut take = |key: &str| map.remove(key);
        let report = TurnReport {
            finish_reason,
            iterations: take(ITERATIONS)
                .and_then(|v| v.as_u64())
                .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            usage: take(USAGE)
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
            error: take(ERROR).and_then(|v| serde_json::from_value(v).ok()),
            failed_tool_call: take(FAILED_TOOL_CALL).and_then(|v| serde_json::from_value(v).ok()),
            pending_tool_calls: take_list(&mut map, PENDING_TOOL_CALLS),
            approval_requests: take_list(&mut map, APPROVAL_REQUESTS),
            agent: agent_report(&mut map),
        };
        map.remove(FINISH_REASON);
        if let Some(flag) = finish_reason.limit_flag() {
            map.remove(flag);
        }
        StatusMetadata {
            report: Some(Box::new(report)),
            extra: map,
        }
    }
}

/// The list under `key`, taken out of `map` when it reads as one (an entry
/// that does not stays, free-form).
fn take_list<T: serde::de::DeserializeOwned>(map: &mut Map<String, Value>, key: &str) -> Vec<T> {
    let Some(list) = map.get(key).and_then(|v| Vec::<T>::deserialize(v).ok()) else {
        return Vec::new();
    };
    map.remove(key);
    list
}

/// The Agent's entries, taken out of `map` when it names a turn number.
fn agent_report(map: &mut Map<String, Value>) -> Option<AgentTurnReport> {
    let turn_number = map.get(TURN_NUMBER)?.as_u64()?;
    map.remove(TURN_NUMBER);
    let text = |v: Value| v.as_str().map(str::to_owned);
    Some(AgentTurnReport {
        turn_number,
        saved: map.remove(SAVED).and_then(|v| v.as_bool()).unwrap_or(false),
        save_error: map.remove(SAVE_ERROR).and_then(text),
        compaction: map.remove(COMPACTION),
        compaction_error: map.remove(COMPACTION_ERROR).and_then(text),
    })
}

impl Serialize for StatusMetadata {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(report) = &self.report {
            map.serialize_entry(FINISH_REASON, &report.finish_reason)?;
            map.serialize_entry(ITERATIONS, &report.iterations)?;
            map.serialize_entry(USAGE, &report.usage)?;
            if let Some(error) = &report.error {
                map.serialize_entry(ERROR, error)?;
            }
            if let Some(call) = &report.failed_tool_call {
                map.serialize_entry(FAILED_TOOL_CALL, call)?;
            }
            if let Some(flag) = report.finish_reason.limit_flag() {
                map.serialize_entry(flag, &true)?;
            }
            if !report.pending_tool_calls.is_empty() {
                map.serialize_entry(PENDING_TOOL_CALLS, &report.pending_tool_calls)?;
            }
            if !report.approval_requests.is_empty() {
                map.serialize_entry(APPROVAL_REQUESTS, &report.approval_requests)?;
            }
            if let Some(agent) = &report.agent {
                map.serialize_entry(TURN_NUMBER, &agent.turn_number)?;
                map.serialize_entry(SAVED, &agent.saved)?;
                if let Some(error) = &agent.save_error {
                    map.serialize_entry(SAVE_ERROR, error)?;
                }
                if let Some(compaction) = &agent.compaction {
                    map.serialize_entry(COMPACTION, compaction)?;
                }
                if let Some(error) = &agent.compaction_error {
                    map.serialize_entry(COMPACTION_ERROR, error)?;
                }
            }
        }
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StatusMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Object(map) => Ok(StatusMetadata::from_map(map)),
            Value::Null => Ok(StatusMetadata::default()),
            other => Err(D::Error::custom(format!(
                "status metadata must be an object, not {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_report_is_the_wire_object_clients_read_and_reads_back_the_same() {
        let mut report = TurnReport::new(TurnEnd::MaxToolCalls);
        report.iterations = 3;
        report.usage.input_tokens = 7;
        report.agent = Some(AgentTurnReport {
            turn_number: 4,
            saved: false,
            save_error: Some("store down".into()),
            compaction: Some(json!({"originalCount": 5})),
            compaction_error: None,
        });
        let mut metadata = StatusMetadata::report(report);
        metadata.extra.insert("note".into(), json!("x"));
        let wire = serde_json::to_value(&metadata).unwrap();
        assert_eq!(wire["finishReason"], "max_tool_calls");
        assert_eq!(wire["iterations"], 3);
        assert_eq!(wire["usage"]["inputTokens"], 7);
        assert_eq!(wire["maxToolCallsReached"], true);
        assert_eq!(wire["note"], "x");
        assert!(wire.get("error").is_none());
        assert_eq!(wire["turnNumber"], 4);
        assert_eq!(wire["saved"], false);
        assert_eq!(wire["saveError"], "store down");
        assert_eq!(wire["compaction"]["originalCount"], 5);
        assert!(wire.get("compactionError").is_none());
        let back: StatusMetadata = serde_json::from_value(wire).unwrap();
        assert_eq!(back, metadata, "the limit flag is read as the report's");
    }

    #[test]
    fn an_object_without_a_known_finish_reason_stays_free_form_entries() {
        let unknown = json!({"finishReason": "from_a_newer_server", "iterations": 2});
        let read: StatusMetadata = serde_json::from_value(unknown.clone()).unwrap();
        assert!(read.report.is_none());
        assert_eq!(Value::Object(read.extra), unknown);
        let failed = json!({"finishReason": "tool_failed",
            "error": {"type": "tool_failed", "message": "boom"},
            "failedToolCall": {"name": "t", "callId": "c", "failure": "error"}});
        let read = StatusMetadata::from_map(failed.as_object().cloned().unwrap());
        let report = read.report.unwrap();
        assert_eq!(
            report.error,
            Some(Box::new(TurnError::new("tool_failed", "boom")))
        );
        assert_eq!(report.failed_tool_call.unwrap().call_id, "c");
        assert!(read.extra.is_empty());
        assert!(serde_json::from_value::<StatusMetadata>(json!([1])).is_err());
    }

    #[test]
    fn the_calls_an_input_required_turn_waits_on_are_typed_and_read_back() {
        let call = ToolCall::new("c1", "rm", r#"{"path":"a"}"#);
        let mut report = TurnReport::new(TurnEnd::InputRequired);
        report.pending_tool_calls = vec![call.clone()];
        report.approval_requests = vec![ApprovalRequest::new(&call, "Allow rm?")];
        let metadata = StatusMetadata::report(report);
        let wire = serde_json::to_value(&metadata).unwrap();
        assert_eq!(wire["pendingToolCalls"][0]["id"], "c1");
        assert_eq!(wire["approvalRequests"][0]["question"], "Allow rm?");
        let back: StatusMetadata = serde_json::from_value(wire).unwrap();
        assert_eq!(back, metadata);
        assert!(back.extra.is_empty());
        // A list that is not one stays a free-form entry.
        let odd = json!({"finishReason": "input_required", "pendingToolCalls": 3});
        let read = StatusMetadata::from_map(odd.as_object().cloned().unwrap());
        assert!(read.report.unwrap().pending_tool_calls.is_empty());
        assert_eq!(read.extra["pendingToolCalls"], 3);
        let plain =
            serde_json::to_value(StatusMetadata::report(TurnReport::new(TurnEnd::Finished)))
                .unwrap();
        assert!(plain.get("pendingToolCalls").is_none(), "{plain}");
    }

    #[test]
    fn every_ending_has_one_wire_name() {
        for end in TurnEnd::ALL {
            assert_eq!(TurnEnd::parse(end.as_str()), Some(end));
            assert_eq!(serde_json::to_value(end).unwrap(), end.as_str());
            assert_eq!(
                serde_json::from_value::<TurnEnd>(end.as_str().into()).unwrap(),
                end
            );
        }
    }

    #[test]
    fn a_resumed_turn_reports_the_state_its_ending_saved() {
        for end in TurnEnd::ALL {
            let again = TurnEnd::of_saved_state(end.state());
            assert_eq!(again.state(), end.state(), "{end:?} resumed as {again:?}");
        }
        // A task state no turn ends in is no clean ending.
        assert_eq!(TurnEnd::of_saved_state(TaskState::Working), TurnEnd::Error);
        assert_eq!(
            TurnEnd::of_saved_state(TaskState::AuthRequired),
            TurnEnd::InputRequired
        );
    }
}
