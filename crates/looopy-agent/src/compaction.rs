//! Compaction: when the stored history passes a configured size, the oldest
//! messages are summarised by the model and replaced, in the store, by one
//! summary message.
//!
//! - The cut keeps the `keep_recent` newest messages and moves back to a
//!   safe point ([`safe_cut_points`]): a tool call and its results are
//!   summarised together or kept together, never split.
//! - Tool calls still waiting for a client result are never summarised.
//! - The model is asked with an [`LlmRequest`] without tools whose only
//!   message is a plain-text transcript of the old messages (so that no
//!   provider sees tool-call structure without tool definitions).
//! - The summary is a `user` message whose metadata, under
//!   [`COMPACTION_KEY`], records how many messages it replaced and stands
//!   for; the sliding window pins it at the head of every request.
//! - A later compaction summarises the earlier summary with the rest.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use looopy_core::cuts::safe_cut_points;
use looopy_core::store::MessageStore;
use looopy_core::{LlmError, LlmProvider, LlmRequest, Message, Part, Role, TurnContext};
use looopy_loop::TurnCompactor;
use serde_json::{Value, json};

use crate::error::AgentError;
use crate::tokens::{SharedCounter, TokenCounter};

/// Metadata key of a summary message (and of compaction records).
pub const COMPACTION_KEY: &str = "compaction";

/// The first words of a summary message's text.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier conversation";

/// The first words of the summary of a turn's older rounds (see
/// [`TurnSummariser`]).
pub const TURN_SUMMARY_PREFIX: &str = "Summary of the earlier steps of this turn";

/// When and how to compact. The default never compacts automatically
/// (the Agent never compacts unless told); [`Agent::compact`](crate::Agent::compact)
/// still works with it.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionConfig {
    /// Compact before a turn when a limit is passed.
    pub auto: bool,
    /// Compact when the history holds more messages than this.
    pub max_messages: Option<usize>,
    /// Compact when the history's estimated tokens (by
    /// [`counter`](Self::counter), the stored messages only: not the system
    /// prompt nor the tool definitions) pass this.
    pub max_tokens: Option<usize>,
    /// Newest messages always kept verbatim. Default 10.
    pub keep_recent: usize,
    /// The system prompt of the summary call.
    pub instructions: Arc<str>,
    /// Token limit of the summary answer.
    pub max_summary_tokens: Option<u32>,
    /// Longest text of one message in the transcript the model summarises;
    /// longer content is cut. Default 4000 characters.
    pub max_chars_per_message: usize,
    /// How tokens are estimated, for `max_tokens` and the report (default
    /// the [`HeuristicCounter`](crate::tokens::HeuristicCounter)).
    pub counter: SharedCounter,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            auto: false,
            max_messages: None,
            max_tokens: None,
            keep_recent: 10,
            instructions: Arc::from(
                "You compress conversations. Summarise the conversation transcript you are \
                 given so that an assistant can continue it without the original: keep the \
                 user's goals and preferences, facts and figures found, decisions made, tool \
                 results that still matter, and open questions. Write plain prose or a short \
                 list. Do not address the user.",
            ),
            max_summary_tokens: None,
            max_chars_per_message: 4000,
            counter: SharedCounter::default(),
        }
    }
}

impl CompactionConfig {
    /// Compacts automatically when the history holds more than `n` messages.
    pub fn after_messages(n: usize) -> Self {
        CompactionConfig {
            auto: true,
            max_messages: Some(n),
            ..Self::default()
        }
    }

    /// Compacts automatically when the history passes about `n` tokens.
    pub fn after_tokens(n: usize) -> Self {
        CompactionConfig {
            auto: true,
            max_tokens: Some(n),
            ..Self::default()
        }
    }

    /// Sets how many of the newest messages are kept verbatim.
    pub fn keep_recent(mut self, n: usize) -> Self {
        self.keep_recent = n;
        self
    }

    /// Sets the instructions of the summary call.
    pub fn instructions(mut self, text: impl Into<Arc<str>>) -> Self {
        self.instructions = text.into();
        self
    }

    /// Estimates tokens with `counter`.
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = SharedCounter::new(counter);
        self
    }

    /// Estimated tokens of `messages`.
    pub fn tokens(&self, messages: &[Message]) -> usize {
        let counter = self.counter.get();
        messages.iter().map(|m| counter.message(m)).sum()
    }

    /// Whether `messages` pass a limit.
    pub fn is_exceeded_by(&self, messages: &[Message]) -> bool {
        self.max_messages.is_some_and(|max| messages.len() > max)
            || self
                .max_tokens
                .is_some_and(|max| self.tokens(messages) > max)
    }
}

/// What one compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionReport {
    /// Stored messages replaced by the summary (positions `range`).
    pub replaced: usize,
    /// Original messages the summary stands for (an earlier summary among
    /// the replaced messages counts for what it stood for).
    pub covered: usize,
    /// The replaced positions in the stored history (always from 0).
    pub range: Range<usize>,
    /// The summary message's id.
    pub summary_message_id: String,
    /// Estimated tokens of the history before.
    pub tokens_before: usize,
    /// Estimated tokens of the history after.
    pub tokens_after: usize,
    /// When it happened.
    pub at: DateTime<Utc>,
}

impl CompactionReport {
    /// The JSON record kept in message and agent-state metadata.
    pub fn to_json(&self) -> Value {
        json!({
            "originalCount": self.replaced,
            "coveredCount": self.covered,
            "range": { "start": self.range.start, "end": self.range.end },
            "summaryMessageId": self.summary_message_id,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "at": self.at.to_rfc3339(),
        })
    }
}

/// Whether a message is a compaction summary.
pub fn is_summary(message: &Message) -> bool {
    message.metadata.contains_key(COMPACTION_KEY)
}

fn covered_by(message: &Message) -> usize {
    message
        .metadata
        .get(COMPACTION_KEY)
        .and_then(|c| c.get("coveredCount"))
        .and_then(Value::as_u64)
        .map_or(1, |n| n as usize)
}

/// Where a compaction of `messages` would cut: messages `..cut` are
/// summarised, `cut..` kept. `None` when there is nothing worth compacting
/// (fewer than two messages before the cut).
///
/// The cut is the latest safe point at or before `len - keep_recent`, and
/// never after an assistant message whose tool calls still wait for results.
pub fn plan_cut(messages: &[Message], keep_recent: usize) -> Option<usize> {
    let mut limit = messages.len().saturating_sub(keep_recent);
    if let Some(open) = open_call_position(messages) {
        limit = limit.min(open);
    }
    let safe = safe_cut_points(messages);
    let cut = (0..=limit).rev().find(|&s| safe[s])?;
    (cut >= 2).then_some(cut)
}

/// Position of the last assistant message with tool calls when one of them
/// has no result after it.
fn open_call_position(messages: &[Message]) -> Option<usize> {
    let (i, m) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::Assistant && !m.tool_calls.is_empty())?;
    let answered = |id: &str| {
        messages[i + 1..]
            .iter()
            .any(|r| r.tool_call_id.as_deref() == Some(id))
    };
    m.tool_calls.iter().any(|c| !answered(&c.id)).then_some(i)
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push_str(" … (cut)");
    out
}

fn content_text(message: &Message) -> String {
    let mut out = String::new();
    for part in &message.parts {
        match part {
            Part::Text { text } => out.push_str(text),
            Part::Data { data } => out.push_str(&data.to_string()),
            Part::File { file } => out.push_str(&format!(
                "[file {}]",
                file.name.as_deref().or(file.uri.as_deref()).unwrap_or("")
            )),
            // A part kind newer than this code: nothing to transcribe.
            _ => {}
        }
    }
    out
}

/// The plain-text transcript of `messages` that the model summarises.
pub fn transcript(messages: &[Message], max_chars_per_message: usize) -> String {
    let mut out = String::new();
    for (i, m) in messages.iter().enumerate() {
        let who = match m.role {
            _ if is_summary(m) => "summary of what came before".to_owned(),
            Role::System => "system".to_owned(),
            Role::User => "user".to_owned(),
            Role::Assistant => "assistant".to_owned(),
            Role::Tool => format!(
                "tool result for {}{}",
                m.tool_call_id.as_deref().unwrap_or("?"),
                if m.is_error() { " (error)" } else { "" }
            ),
        };
        let text = clip(&content_text(m), max_chars_per_message);
        out.push_str(&format!("[{}] {who}: {text}\n", i + 1));
        for call in &m.tool_calls {
            out.push_str(&format!(
                "    -> called {}({}) as {}\n",
                call.name,
                clip(&call.arguments, max_chars_per_message),
                call.id
            ));
        }
    }
    out
}

/// The request that asks the model for a summary of `messages`: no tools,
/// one user message holding the transcript.
pub fn summary_request(messages: &[Message], config: &CompactionConfig) -> LlmRequest {
    let text = format!(
        "Conversation transcript ({} messages):\n\n{}\nWrite the summary now.",
        messages.len(),
        transcript(messages, config.max_chars_per_message)
    );
    LlmRequest {
        system_prompt: Some(config.instructions.clone()),
        messages: vec![Message::user(text)].into(),
        max_tokens: config.max_summary_tokens,
        ..LlmRequest::default()
    }
}

/// Compaction inside a turn: the loop's [`TurnCompactor`], which an Agent
/// with compaction on ([`CompactionConfig::auto`]) gives the loop it
/// builds. When a turn's next request would not fit the model's context
/// window, the loop hands it the turn's older rounds (tool calls with
/// their results) and it asks the model for a summary, as the compaction
/// before a turn does ([`summary_request`], with the same instructions
/// and limits). The summary stands for those rounds in the turn's later
/// requests; the turn's history, and so the store, keeps them all.
#[derive(Debug, Clone)]
pub struct TurnSummariser {
    config: CompactionConfig,
}

impl TurnSummariser {
    /// A summariser with these instructions and limits.
    pub fn new(config: CompactionConfig) -> Self {
        TurnSummariser { config }
    }
}

#[async_trait]
impl TurnCompactor for TurnSummariser {
    async fn summarise(
        &self,
        llm: &dyn LlmProvider,
        messages: &[Message],
        cx: &TurnContext,
    ) -> Result<Message, LlmError> {
        let response = llm
            .call(summary_request(messages, &self.config), cx)
            .await?;
        let text = response.message.text();
        if text.trim().is_empty() {
            return Err(LlmError::MalformedResponse {
                message: "the model returned an empty summary".into(),
            });
        }
        Ok(Message::user(format!(
            "{TURN_SUMMARY_PREFIX} ({} messages):\n\n{}",
            messages.len(),
            text.trim()
        )))
    }
}

/// A compaction that was carried out.
#[derive(Debug, Clone)]
pub(crate) struct Compacted {
    pub(crate) report: CompactionReport,
    /// The history after it (summary first).
    pub(crate) history: Vec<Message>,
}

/// Compacts `history` (whose first `stored` messages are in the store) when
/// there is something to compact: asks the model, then replaces the range in
/// the store. Only stored messages are ever replaced.
pub(crate) async fn compact(
    llm: &dyn LlmProvider,
    store: &dyn MessageStore,
    context_id: &str,
    history: &[Message],
    stored: usize,
    config: &CompactionConfig,
    cx: &TurnContext,
) -> Result<Option<Compacted>, AgentError> {
    let Some(mut cut) = plan_cut(history, config.keep_recent) else {
        return Ok(None);
    };
    if cut > stored {
        let safe = safe_cut_points(history);
        match (0..=stored).rev().find(|&s| safe[s]) {
            Some(s) if s >= 2 => cut = s,
            _ => return Ok(None),
        }
    }
    let old = &history[..cut];
    let tokens_before = config.tokens(history);
    let response = llm
        .call(summary_request(old, config), cx)
        .await
        .map_err(AgentError::Compaction)?;
    let text = response.message.text();
    if text.trim().is_empty() {
        return Err(AgentError::Compaction(LlmError::MalformedResponse {
            message: "the model returned an empty summary".into(),
        }));
    }
    let covered = old.iter().map(covered_by).sum();
    let mut summary = Message::user(format!(
        "{SUMMARY_PREFIX} ({covered} messages):\n\n{}",
        text.trim()
    ));
    let mut report = CompactionReport {
        replaced: cut,
        covered,
        range: 0..cut,
        summary_message_id: summary.message_id.clone(),
        tokens_before,
        tokens_after: 0,
        at: Utc::now(),
    };
    let rest = &history[cut..];
    report.tokens_after = config.counter.get().message(&summary) + config.tokens(rest);
    summary
        .metadata
        .insert(COMPACTION_KEY.into(), report.to_json());
    store
        .replace_range(context_id, 0..cut, std::slice::from_ref(&summary))
        .await?;
    tracing::info!(
        context_id,
        replaced = cut,
        covered,
        tokens_before,
        tokens_after = report.tokens_after,
        "history compacted"
    );
    let mut after = Vec::with_capacity(rest.len() + 1);
    after.push(summary);
    after.extend_from_slice(rest);
    Ok(Some(Compacted {
        report,
        history: after,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use looopy_core::{LlmResponse, ToolCall, ToolResult};

    fn calls(ids: &[&str]) -> Message {
        LlmResponse::tool_calls(
            "",
            ids.iter()
                .map(|id| ToolCall::new(*id, "lookup", r#"{"q":1}"#))
                .collect(),
        )
        .message
    }

    #[test]
    fn cut_keeps_recent_and_moves_back_to_a_safe_point() {
        let h = vec![
            Message::user("1"),
            Message::assistant("2"),
            Message::user("3"),
            calls(&["a", "b"]),
            ToolResult::text("a", "ra").into_message(),
            ToolResult::text("b", "rb").into_message(),
            Message::assistant("done"),
        ];
        // keep 2 would cut at 5 (result b): back to 3, the call.
        assert_eq!(plan_cut(&h, 2), Some(3));
        assert_eq!(plan_cut(&h, 1), Some(6));
        assert_eq!(plan_cut(&h, 6), None, "cut 1 is not worth a summary");
        assert_eq!(plan_cut(&h, 0), Some(7));
    }

    #[test]
    fn open_client_calls_are_never_summarised() {
        let h = vec![
            Message::user("1"),
            Message::assistant("2"),
            Message::user("3"),
            calls(&["a", "b"]),
            ToolResult::text("a", "ra").into_message(),
        ];
        assert_eq!(plan_cut(&h, 0), Some(3));
    }

    #[test]
    fn limits() {
        let h: Vec<Message> = (0..5).map(|i| Message::user(i.to_string())).collect();
        assert!(CompactionConfig::after_messages(4).is_exceeded_by(&h));
        assert!(!CompactionConfig::after_messages(5).is_exceeded_by(&h));
        assert!(CompactionConfig::after_tokens(10).is_exceeded_by(&h));
        assert!(!CompactionConfig::default().is_exceeded_by(&h));
    }

    #[test]
    fn transcript_shows_roles_calls_and_results() {
        let h = vec![
            Message::user("weather?"),
            calls(&["a"]),
            ToolResult::error("a", "down").into_message(),
        ];
        let t = transcript(&h, 100);
        assert!(t.contains("[1] user: weather?"));
        assert!(t.contains("called lookup({\"q\":1}) as a"));
        assert!(t.contains("tool result for a (error): Error: down"));
        let long = transcript(&[Message::user("x".repeat(50))], 10);
        assert!(long.contains("(cut)"));
        let r = summary_request(&h, &CompactionConfig::default());
        assert!(r.tools.is_empty());
        assert_eq!(r.messages.len(), 1);
        assert!(r.system_prompt.is_some());
    }
}
