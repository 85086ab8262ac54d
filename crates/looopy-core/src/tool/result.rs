//! [`ToolResult`]: the result of one tool call, and the tool message it
//! becomes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CutOutput, ResultSource, ToolError, ToolFailure, ToolSignal, legacy};
use crate::message::{Message, Part, Role};
use crate::task::Artifact;

/// The result of one tool call.
///
/// `is_error` (what the model is told) and `failure` (why, for everything
/// else) go together: the constructors set both, and a result read from
/// JSON with only one of them gets the other (`isError` alone reads as
/// [`ToolFailure::Failed`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "ToolResultWire")]
pub struct ToolResult {
    /// The call this answers.
    pub tool_call_id: String,
    /// What the model gets to read.
    pub content: Vec<Part>,
    /// Whether the call failed. The model still sees the content.
    #[serde(default)]
    pub is_error: bool,
    /// A request to the turn (done, input required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<ToolSignal>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// How the call failed; `None` for a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ToolFailure>,
    /// Artifacts the tool made (a chart, a file): an Agent stores each one
    /// in its artifact store and announces it to the client; the history
    /// keeps only their ids ([`Message::artifact_ids`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Who answered the call, when it was not a tool run by the loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ResultSource>,
    /// The output was cut to a preview and stored whole as an artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_output: Option<CutOutput>,
}

/// The JSON form, read leniently: results saved before `failure` existed
/// carry `interrupted: true` instead.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolResultWire {
    tool_call_id: String,
    content: Vec<Part>,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    signal: Option<ToolSignal>,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    failure: Option<ToolFailure>,
    #[serde(default)]
    interrupted: bool,
    #[serde(default)]
    artifacts: Vec<Artifact>,
    #[serde(default)]
    source: Option<ResultSource>,
    #[serde(default)]
    cut_output: Option<CutOutput>,
}

impl From<ToolResultWire> for ToolResult {
    fn from(w: ToolResultWire) -> Self {
        let failure = w
            .failure
            .or(w.interrupted.then_some(ToolFailure::Interrupted));
        let mut metadata = w.metadata;
        let mut artifacts = w.artifacts;
        if artifacts.is_empty() {
            artifacts = legacy_artifacts(&mut metadata);
        }
        let mut source = w.source;
        let mut cut_output = w.cut_output;
        if !metadata.is_empty() {
            source = source.or_else(|| legacy::source(&mut metadata));
            cut_output = cut_output.or_else(|| legacy::cut_output(&mut metadata));
        }
        ToolResult {
            tool_call_id: w.tool_call_id,
            content: w.content,
            is_error: w.is_error,
            signal: w.signal,
            metadata,
            failure,
            artifacts,
            source,
            cut_output,
        }
        .settled()
    }
}

/// The artifacts a result saved before [`ToolResult::artifacts`] existed
/// carries in its metadata (`"artifacts"`, a JSON array of [`Artifact`]),
/// taken out of it; none when that entry is absent or is something else.
fn legacy_artifacts(metadata: &mut Map<String, Value>) -> Vec<Artifact> {
    let Some(items @ Value::Array(_)) = metadata.get("artifacts") else {
        return Vec::new();
    };
    match Vec::<Artifact>::deserialize(items) {
        Ok(artifacts) => {
            metadata.remove("artifacts");
            artifacts
        }
        Err(_) => Vec::new(),
    }
}

impl ToolResult {
    /// A successful text result.
    pub fn text(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            tool_call_id: tool_call_id.into(),
            content: vec![Part::text(text)],
            is_error: false,
            signal: None,
            metadata: Map::new(),
            failure: None,
            artifacts: Vec::new(),
            source: None,
            cut_output: None,
        }
    }

    /// A successful structured result: the model reads it as JSON text.
    pub fn json(tool_call_id: impl Into<String>, value: &Value) -> Self {
        Self::text(tool_call_id, value.to_string())
    }

    /// A failed call of the given kind. The text the model reads is
    /// prefixed with `Error: ` unless it already is.
    pub fn failed(
        tool_call_id: impl Into<String>,
        kind: ToolFailure,
        message: impl AsRef<str>,
    ) -> Self {
        let message = message.as_ref();
        let text = if message.starts_with("Error:") {
            message.to_owned()
        } else {
            format!("Error: {message}")
        };
        ToolResult {
            is_error: true,
            failure: Some(kind),
            ..Self::text(tool_call_id, text)
        }
    }

    /// A failed call ([`ToolFailure::Failed`]). The text is prefixed with
    /// `Error: ` unless it already is.
    pub fn error(tool_call_id: impl Into<String>, message: impl AsRef<str>) -> Self {
        Self::failed(tool_call_id, ToolFailure::Failed, message)
    }

    /// The result of a call that was in flight when the process running the
    /// turn stopped, and that the resumed turn does not run again because
    /// its tool `tool` is not idempotent: a [`ToolFailure::Interrupted`]
    /// result telling the model that the call may or may not have taken
    /// effect.
    pub fn interrupted(tool_call_id: impl Into<String>, tool: &str) -> Self {
        Self::failed(
            tool_call_id,
            ToolFailure::Interrupted,
            format!(
                "the call was interrupted by a restart and not retried: tool '{tool}' \
                 is not declared idempotent, so running it again could repeat its effects. \
                 It may or may not have taken effect; check before calling it again."
            ),
        )
    }

    /// Makes `is_error` and `failure` agree: an error without a kind
    /// becomes [`ToolFailure::Failed`], a kind without the flag sets it.
    /// The loop does this to every result a provider or hook returns.
    pub fn settled(mut self) -> Self {
        self.settle();
        self
    }

    /// [`settled`](Self::settled) in place.
    pub fn settle(&mut self) {
        if self.is_error && self.failure.is_none() {
            self.failure = Some(ToolFailure::Failed);
        } else if self.failure.is_some() {
            self.is_error = true;
        }
    }

    /// Adds a signal to the turn.
    pub fn with_signal(mut self, signal: ToolSignal) -> Self {
        self.signal = Some(signal);
        self
    }

    /// Marks who answered the call (see [`source`](Self::source)).
    pub fn with_source(mut self, source: ResultSource) -> Self {
        self.source = Some(source);
        self
    }

    /// Adds an artifact the tool made (see [`artifacts`](Self::artifacts)).
    pub fn with_artifact(mut self, artifact: Artifact) -> Self {
        self.artifacts.push(artifact);
        self
    }

    /// The concatenated text of the content's text parts.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            match part {
                Part::Text { text } => out.push_str(text),
                Part::Data { data } => out.push_str(&data.to_string()),
                Part::File { file } => {
                    out.push_str(&format!(
                        "[file {}]",
                        file.name.as_deref().or(file.uri.as_deref()).unwrap_or("")
                    ));
                }
                // A tool's result holds no model reasoning.
                Part::Reasoning { .. } => {}
            }
        }
        out
    }

    /// The tool message that carries this result in the history: its
    /// content and metadata, and in typed fields its failure
    /// ([`Message::failure`]), the ids of its artifacts
    /// ([`Message::artifact_ids`]), who answered ([`Message::source`]) and
    /// where a cut output is stored ([`Message::cut_output`]).
    pub fn into_message(self) -> Message {
        let mut message = Message::with_parts(Role::Tool, self.content);
        message.tool_call_id = Some(self.tool_call_id);
        message.metadata = self.metadata;
        message.artifact_ids = self.artifacts.into_iter().map(|a| a.artifact_id).collect();
        message.failure = if self.is_error {
            Some(self.failure.unwrap_or(ToolFailure::Failed))
        } else {
            self.failure
        };
        message.source = self.source;
        message.cut_output = self.cut_output.map(Box::new);
        message
    }
}

impl ToolResult {
    /// The failed result of a call that ended with `error`: its message for
    /// the model, its [`ToolError::failure`] kind.
    pub fn from_error(tool_call_id: impl Into<String>, error: &ToolError) -> Self {
        ToolResult::failed(tool_call_id, error.failure(), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_results_are_prefixed_once_and_marked() {
        let r = ToolResult::error("c", "boom");
        assert_eq!(r.text_content(), "Error: boom");
        assert_eq!(
            ToolResult::error("c", "Error: x").text_content(),
            "Error: x"
        );
        let m = r.into_message();
        assert_eq!(m.role, Role::Tool);
        assert_eq!(m.tool_call_id.as_deref(), Some("c"));
        assert!(m.is_error());
    }

    #[test]
    fn an_interrupted_result_is_an_error_marked_interrupted() {
        let r = ToolResult::interrupted("c1", "send_mail");
        assert!(r.is_error);
        assert_eq!(r.failure, Some(ToolFailure::Interrupted));
        let text = r.text_content();
        assert!(
            text.starts_with("Error: the call was interrupted by a restart and not retried"),
            "{text}"
        );
        assert!(text.contains("'send_mail'"), "{text}");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["failure"], "interrupted");
        assert!(
            serde_json::to_value(ToolResult::text("c", "x"))
                .unwrap()
                .get("failure")
                .is_none()
        );
        let m = r.into_message();
        assert!(m.is_error());
        assert_eq!(m.failure, Some(ToolFailure::Interrupted));
        let stored = serde_json::to_value(&m).unwrap();
        assert_eq!(stored["failure"], "interrupted");
        assert!(stored.get("metadata").is_none(), "{stored}");
        assert_eq!(m.tool_failure(), Some(ToolFailure::Interrupted));
    }

    #[test]
    fn failure_kinds_round_trip_and_agree_with_is_error() {
        for kind in [
            ToolFailure::Timeout,
            ToolFailure::Denied,
            ToolFailure::Cancelled,
            ToolFailure::UnknownTool,
            ToolFailure::BadArguments,
            ToolFailure::Panicked,
            ToolFailure::Interrupted,
            ToolFailure::Failed,
        ] {
            let r = ToolResult::failed("c", kind, "no");
            assert!(r.is_error);
            let v = serde_json::to_value(&r).unwrap();
            assert_eq!(v["failure"], kind.as_str());
            assert_eq!(serde_json::from_value::<ToolResult>(v).unwrap(), r);
            assert_eq!(ToolFailure::parse(kind.as_str()), Some(kind));
            assert_eq!(r.into_message().tool_failure(), Some(kind));
        }
        assert_eq!(ToolFailure::UnknownTool.as_str(), "unknown_tool");
        assert_eq!(ToolFailure::parse("nope"), None);
        assert_eq!(
            ToolResult::error("c", "x").failure,
            Some(ToolFailure::Failed)
        );
        assert_eq!(ToolResult::text("c", "x").failure, None);
    }

    #[test]
    fn older_json_reads_with_a_kind() {
        let old_interrupted: ToolResult = serde_json::from_value(serde_json::json!({
            "toolCallId": "c", "content": [], "isError": true, "interrupted": true
        }))
        .unwrap();
        assert_eq!(old_interrupted.failure, Some(ToolFailure::Interrupted));
        let old_error: ToolResult = serde_json::from_value(serde_json::json!({
            "toolCallId": "c", "content": [], "isError": true
        }))
        .unwrap();
        assert_eq!(old_error.failure, Some(ToolFailure::Failed));
        let ok: ToolResult =
            serde_json::from_value(serde_json::json!({"toolCallId": "c", "content": []})).unwrap();
        assert!(!ok.is_error && ok.failure.is_none());
        // Stored tool messages of before: the failure in the metadata.
        let old = |metadata: Value| -> Message {
            serde_json::from_value(serde_json::json!({
                "role": "tool", "toolCallId": "c", "metadata": metadata
            }))
            .unwrap()
        };
        let m = old(serde_json::json!({"isError": true, "interrupted": true}));
        assert_eq!(m.tool_failure(), Some(ToolFailure::Interrupted));
        assert!(m.metadata.is_empty(), "{:?}", m.metadata);
        let m = old(serde_json::json!({"isError": true, "mine": 1}));
        assert_eq!(m.tool_failure(), Some(ToolFailure::Failed));
        assert_eq!(m.metadata["mine"], 1, "the user's own entries stay");
        let m = old(serde_json::json!({"isError": true, "failure": "timeout"}));
        assert_eq!(m.tool_failure(), Some(ToolFailure::Timeout));
        let m = old(serde_json::json!({"isError": false}));
        assert_eq!(m.tool_failure(), None);
        // A user message keeps such keys: they were never reserved there.
        let user: Message = serde_json::from_value(serde_json::json!({
            "role": "user", "metadata": {"isError": true}
        }))
        .unwrap();
        assert!(!user.is_error());
        assert_eq!(user.metadata["isError"], true);
    }

    #[test]
    fn a_results_artifacts_become_ids_in_its_message() {
        let r = ToolResult::text("c", "made a chart")
            .with_artifact(Artifact::new("chart-1", vec![Part::text("svg")]))
            .with_artifact(Artifact::new("chart-2", vec![]));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["artifacts"][1]["artifactId"], "chart-2");
        assert_eq!(serde_json::from_value::<ToolResult>(v).unwrap(), r);
        let m = r.into_message();
        assert_eq!(m.role, Role::Tool);
        assert_eq!(m.artifact_ids, ["chart-1", "chart-2"]);
        assert!(m.metadata.is_empty());
        let stored = serde_json::to_value(&m).unwrap();
        assert_eq!(
            stored["artifactIds"],
            serde_json::json!(["chart-1", "chart-2"])
        );
        assert_eq!(serde_json::from_value::<Message>(stored).unwrap(), m);
        let plain = ToolResult::text("c", "x").into_message();
        assert!(plain.artifact_ids.is_empty());
        // A tool message stored with the ids in its metadata.
        let old: Message = serde_json::from_value(serde_json::json!({
            "role": "tool", "toolCallId": "c", "metadata": {"artifactIds": ["a1"]}
        }))
        .unwrap();
        assert_eq!(old.artifact_ids, ["a1"]);
        assert!(old.metadata.is_empty());
    }

    #[test]
    fn who_answered_and_a_cut_output_are_typed_and_old_marks_read_back() {
        let cut = CutOutput {
            artifact_id: "out-1".into(),
            original_chars: 9000,
        };
        let mut r = ToolResult::text("c", "preview").with_source(ResultSource::Client);
        r.cut_output = Some(cut.clone());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["source"], "client");
        assert_eq!(v["cutOutput"]["artifactId"], "out-1");
        assert_eq!(serde_json::from_value::<ToolResult>(v).unwrap(), r);
        let m = r.into_message();
        assert_eq!(m.source, Some(ResultSource::Client));
        assert_eq!(m.cut_output.as_deref(), Some(&cut));
        let stored = serde_json::to_value(&m).unwrap();
        assert_eq!(stored["cutOutput"]["originalChars"], 9000);
        assert_eq!(serde_json::from_value::<Message>(stored).unwrap(), m);
        // The metadata marks of before.
        let old: Message = serde_json::from_value(serde_json::json!({
            "role": "tool", "toolCallId": "c", "metadata": {
                "isError": true, "syntheticResult": true,
                "outputArtifactId": "out-2", "originalChars": 12
            }
        }))
        .unwrap();
        assert_eq!(old.source, Some(ResultSource::Synthetic));
        assert_eq!(old.cut_output.map(|c| c.original_chars), Some(12));
        assert!(old.metadata.is_empty());
        let old: ToolResult = serde_json::from_value(serde_json::json!({
            "toolCallId": "c", "content": [], "metadata": {"clientTool": true}
        }))
        .unwrap();
        assert_eq!(old.source, Some(ResultSource::Client));
        assert!(old.metadata.is_empty());
    }

    #[test]
    fn a_result_saved_with_artifacts_in_its_metadata_reads_them_typed() {
        let old = serde_json::json!({
            "toolCallId": "c", "content": [{"kind": "text", "text": "ok"}],
            "metadata": {"artifacts": [{"artifactId": "a1", "parts": []}], "other": 1}
        });
        let r: ToolResult = serde_json::from_value(old).unwrap();
        assert_eq!(r.artifacts.len(), 1);
        assert_eq!(r.artifacts[0].artifact_id, "a1");
        assert!(!r.metadata.contains_key("artifacts"));
        assert_eq!(r.metadata["other"], 1);
        // Metadata named so that is not artifacts stays where it was.
        let other = serde_json::json!({
            "toolCallId": "c", "content": [], "metadata": {"artifacts": [1, 2]}
        });
        let r: ToolResult = serde_json::from_value(other).unwrap();
        assert!(r.artifacts.is_empty());
        assert_eq!(r.metadata["artifacts"], serde_json::json!([1, 2]));
    }
}
