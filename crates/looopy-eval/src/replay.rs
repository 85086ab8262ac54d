//! Replaying a recorded turn: [`replay`] runs the turn an
//! [`ExecutionRecord`] describes again, with an Agent built from the current
//! configuration (another model, prompt or tool set), and compares what it
//! does with what the record says was done ([`ReplayReport`]).
//!
//! The replay starts from the conversation the turn's first model request
//! carried (the system prompt is the current one) and sends the same user
//! input. The model is called for real; each tool call is answered from the
//! record (the first recorded call of the same tool with the same arguments
//! that no earlier call used), or, with [`ReplayOptions::live_tools`], run.
//! A call the record does not have is answered with a failure saying so and
//! reported as added. The replay runs in a throwaway conversation in memory:
//! nothing is written into the stores of the builder it is given.
//!
//! A regression test: a turn as it ran, recorded, replayed with a new
//! system prompt (the model is scripted here; in a real test it is the
//! model under test).
//!
//! ```
//! use looopy_agent::{Agent, AgentTemplate, TurnOptions};
//! use looopy_core::{LlmResponse, Message};
//! use looopy_eval::replay::{ReplayOptions, replay};
//! use looopy_testkit::ScriptedLlm;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let answer = || ScriptedLlm::new().respond(LlmResponse::text("We open at 9."));
//! let stores = looopy_stores_memory::stores();
//! let agent = Agent::builder("support-1")
//!     .llm(answer())
//!     .stores(&stores)
//!     .system_prompt("You answer questions about the shop.")
//!     .build()?;
//! let turn = agent
//!     .execute_turn_with(Some(Message::user("When do you open?")), TurnOptions::default())
//!     .await?;
//! let task_id = turn.task_id().to_owned();
//! turn.finish().await;
//! let record = agent.record(&task_id).await?.expect("the turn was recorded");
//!
//! let candidate = AgentTemplate::builder()
//!     .llm(answer())
//!     .system_prompt("You answer questions about the shop, briefly.");
//! let report = replay(&record, candidate, &ReplayOptions::default()).await?;
//! assert!(report.is_same(), "{}", report.diff());
//! assert_eq!(report.replayed_answer.as_deref(), Some("We open at 9."));
//! # Ok(())
//! # }
//! ```

use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use looopy_agent::{AgentBuilder, AgentError, TurnOptions};
use looopy_core::record::{
    ExecutionRecord, ModelCallStep, Payload, RecordPolicy, StepKind, ToolCallStep,
};
use looopy_core::store::SeparateStores;
use looopy_core::{History, Message, Part, Role, TaskState, ToolCall, ToolFailure, ToolResult};
use looopy_loop::hooks::{BeforeTool, BeforeTurn, Hook, HookContext, HookError, HookPoints};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a turn is replayed.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Run the tools the model calls instead of answering them from the
    /// record (off by default: a replay has no side effects).
    pub live_tools: bool,
    /// The policy the replayed calls' arguments pass through before they
    /// are matched with the recorded ones (which were redacted and capped by
    /// the recording Agent's policy): the default policy unless the Agent
    /// that recorded the turn had another.
    pub record_policy: RecordPolicy,
}

/// Why a turn could not be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The record has no model call, so neither a conversation nor an input
    /// to start from.
    #[error("the record of task {task_id} has no model call to replay")]
    NoModelCall {
        /// The recorded task.
        task_id: String,
    },
    /// The first model request's messages were not kept whole (cut to a
    /// preview or not JSON messages).
    #[error("the record of task {task_id} did not keep the conversation whole: {reason}")]
    ConversationNotKept {
        /// The recorded task.
        task_id: String,
        /// What is missing.
        reason: String,
    },
    /// The Agent could not be built.
    #[error("the agent could not be built")]
    Agent(#[source] AgentError),
    /// The replayed turn could not start, or its record could not be read.
    #[error("the replayed turn failed")]
    Turn(#[source] AgentError),
    /// The replayed turn ended without a final status, or left no record.
    #[error("the replayed turn {0}")]
    Incomplete(&'static str),
}

/// What a model answered, in the terms a replay compares: the text, the
/// tool calls asked for (by name and arguments; call ids differ between
/// runs) and, for a failed call, the error's kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelAnswer {
    /// The answer text.
    pub text: String,
    /// The tool calls asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<CallSeen>,
    /// The kind of the error, for a call that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ModelAnswer {
    fn of(call: &ModelCallStep) -> Self {
        match (&call.response, &call.error) {
            (Some(r), _) => ModelAnswer {
                text: payload_text(&r.text),
                tool_calls: r
                    .tool_calls
                    .iter()
                    .map(|c| CallSeen {
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })
                    .collect(),
                error: None,
            },
            (None, error) => ModelAnswer {
                text: String::new(),
                tool_calls: Vec::new(),
                error: Some(
                    error
                        .as_ref()
                        .map_or("no answer".to_owned(), |e| e.kind.clone()),
                ),
            },
        }
    }

    /// A one-line view: the text, or the calls, or the error.
    pub fn summary(&self) -> String {
        if let Some(e) = &self.error {
            return format!("failed ({e})");
        }
        let calls: Vec<String> = self
            .tool_calls
            .iter()
            .map(|c| format!("{}({})", c.name, c.arguments.summary(60)))
            .collect();
        let text = format!("{:?}", text_payload(&self.text).summary(100));
        match (self.text.is_empty(), calls.is_empty()) {
            (_, true) => text,
            (true, false) => format!("calls {}", calls.join(", ")),
            (false, false) => format!("{text} and calls {}", calls.join(", ")),
        }
    }
}

/// A tool call by name and arguments (as kept by the record policy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallSeen {
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Payload,
}

impl std::fmt::Display for CallSeen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name, self.arguments.summary(80))
    }
}

/// One model answer of the recorded turn beside the replay's answer at the
/// same position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelStep {
    /// The answer's position among the turn's model answers, from 0.
    pub index: usize,
    /// What the record says the model answered; `None` when the replay
    /// asked the model more often.
    pub recorded: Option<ModelAnswer>,
    /// What the model answered in the replay; `None` when it was asked
    /// fewer times.
    pub replayed: Option<ModelAnswer>,
}

impl ModelStep {
    /// Whether both answered the same.
    pub fn is_same(&self) -> bool {
        self.recorded == self.replayed
    }
}

/// Where a replayed tool call's result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultSource {
    /// The recorded call of the same tool and arguments.
    Record,
    /// The tool ran ([`ReplayOptions::live_tools`]).
    Live,
    /// The record has no such call: it was answered with a failure saying
    /// so.
    NotInRecord,
}

/// A tool call the replay made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayedCall {
    /// The call.
    #[serde(flatten)]
    pub call: CallSeen,
    /// Where its result came from.
    pub source: ResultSource,
}

/// What a replay did beside what the record says: the model answers step
/// by step, the tool calls added and missing, the final answers and states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayReport {
    /// The recorded turn's task.
    pub task_id: String,
    /// The replayed turn's task (in the throwaway conversation).
    pub replay_task_id: String,
    /// Whether the tools ran.
    pub live_tools: bool,
    /// The user input sent again.
    pub input: String,
    /// The model answers, recorded beside replayed, position by position.
    pub model_steps: Vec<ModelStep>,
    /// The position in `model_steps` of the first answer that differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<usize>,
    /// The tool calls of the replay, in order.
    pub tool_calls: Vec<ReplayedCall>,
    /// Calls the replay made that the record does not have (by tool and
    /// arguments, counting repeats).
    pub added_calls: Vec<CallSeen>,
    /// Recorded calls the replay did not make.
    pub missing_calls: Vec<CallSeen>,
    /// The recorded turn's final answer (its last model answer's text).
    pub recorded_answer: Option<String>,
    /// The replayed turn's final answer.
    pub replayed_answer: Option<String>,
    /// How the recorded turn ended; `None` when its record has no end.
    pub recorded_state: Option<TaskState>,
    /// How the replayed turn ended.
    pub replayed_state: TaskState,
}

impl ReplayReport {
    /// Whether the replay did what the record says: the same model answers
    /// in the same order, the same tool calls, and the same end.
    pub fn is_same(&self) -> bool {
        self.first_difference.is_none()
            && self.added_calls.is_empty()
            && self.missing_calls.is_empty()
            && self.recorded_answer == self.replayed_answer
            && self.recorded_state.is_none_or(|s| s == self.replayed_state)
    }

    /// The first model answer that differs, recorded beside replayed.
    pub fn first_different_step(&self) -> Option<&ModelStep> {
        self.first_difference.and_then(|i| self.model_steps.get(i))
    }

    /// The report as readable text: a line per model answer (`=` same, `!`
    /// different), the tool calls added and missing, and the final answers
    /// when they differ.
    pub fn diff(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let tools = if self.live_tools {
            "live tools"
        } else {
            "tool results from the record"
        };
        let _ = writeln!(
            out,
            "replay of task {} as {} ({tools})",
            self.task_id, self.replay_task_id
        );
        let _ = writeln!(out, "input: {}", text_payload(&self.input).summary(100));
        let none = || "(none)".to_owned();
        for step in &self.model_steps {
            let recorded = step
                .recorded
                .as_ref()
                .map_or_else(none, ModelAnswer::summary);
            if step.is_same() {
                let _ = writeln!(out, "= model step {}: {recorded}", step.index + 1);
            } else {
                let replayed = step
                    .replayed
                    .as_ref()
                    .map_or_else(none, ModelAnswer::summary);
                let _ = writeln!(out, "! model step {} differs", step.index + 1);
                let _ = writeln!(out, "    recorded: {recorded}");
                let _ = writeln!(out, "    replayed: {replayed}");
            }
        }
        for call in &self.added_calls {
            let _ = writeln!(out, "+ tool call not in the record: {call}");
        }
        for call in &self.missing_calls {
            let _ = writeln!(out, "- recorded tool call not made: {call}");
        }
        if self.recorded_answer != self.replayed_answer {
            let _ = writeln!(out, "final answer differs");
            let show = |a: &Option<String>| {
                a.as_deref()
                    .map_or_else(none, |t| text_payload(t).summary(200))
            };
            let _ = writeln!(out, "    recorded: {}", show(&self.recorded_answer));
            let _ = writeln!(out, "    replayed: {}", show(&self.replayed_answer));
        }
        if let Some(state) = self.recorded_state
            && state != self.replayed_state
        {
            let _ = writeln!(
                out,
                "ended {} (recorded: {})",
                self.replayed_state.as_str(),
                state.as_str()
            );
        }
        let _ = writeln!(
            out,
            "{}",
            if self.is_same() {
                "no difference".to_owned()
            } else {
                match self.first_difference {
                    Some(i) => format!("differs from model step {}", i + 1),
                    None => "differs".to_owned(),
                }
            }
        );
        out
    }
}

/// Replays the turn of `record` with the Agent `agent` builds (its model,
/// system prompt, tools, hooks and limits; its stores are replaced by a
/// throwaway set in memory), and compares the two.
///
/// The replay starts from the messages the record's first model request
/// carried, the last of them the input. Model calls before a compaction
/// step (the summary's) are not compared.
pub async fn replay(
    record: &ExecutionRecord,
    agent: AgentBuilder,
    options: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let recorded = RecordedTurn::read(record)?;
    let recorded_calls: Vec<ToolCallStep> = recorded.tool_calls.clone();
    let hook = Arc::new(ReplayHook {
        history: History::from(recorded.messages.clone()),
        live: options.live_tools,
        policy: options.record_policy.clone(),
        state: Mutex::new(HookState {
            unused: recorded_calls.iter().cloned().map(Some).collect(),
            calls: Vec::new(),
        }),
    });
    let memory = looopy_stores_memory::stores();
    let turns = SeparateStores {
        messages: memory.messages.clone(),
        states: Some(memory.agents.clone()),
        lock: Some(memory.locks.clone()),
        checkpoints: None,
    };
    let shared: Arc<dyn Hook> = hook.clone();
    let context_id = format!("replay-{}", uuid::Uuid::new_v4());
    let agent = agent
        .stores(&memory)
        .turn_store(Arc::new(turns))
        .without_checkpoints()
        .configure_loop(move |l| l.hook_shared(shared))
        .template()
        .and_then(|t| t.agent(&context_id))
        .map_err(ReplayError::Agent)?;

    let turn = agent
        .execute_turn_with(
            Some(Message::user(recorded.input.clone())),
            TurnOptions::default(),
        )
        .await
        .map_err(ReplayError::Turn)?;
    let replay_task_id = turn.task_id().to_owned();
    let finished = turn
        .finish()
        .await
        .ok_or(ReplayError::Incomplete("ended without a final status"))?;
    let new_record = agent
        .record(&replay_task_id)
        .await
        .map_err(ReplayError::Turn)?
        .ok_or(ReplayError::Incomplete("left no execution record"))?;
    let replayed = RecordedTurn::answers(&new_record);

    let len = recorded.answers.len().max(replayed.len());
    let model_steps: Vec<ModelStep> = (0..len)
        .map(|index| ModelStep {
            index,
            recorded: recorded.answers.get(index).cloned(),
            replayed: replayed.get(index).cloned(),
        })
        .collect();
    let first_difference = model_steps.iter().position(|s| !s.is_same());
    let calls = hook.lock().calls.clone();
    let (added_calls, missing_calls) = added_and_missing(&recorded_calls, &calls);
    let last_text = |answers: &[ModelAnswer]| {
        answers
            .last()
            .filter(|a| a.error.is_none())
            .map(|a| a.text.clone())
    };
    Ok(ReplayReport {
        task_id: record.task_id.clone(),
        replay_task_id,
        live_tools: options.live_tools,
        input: recorded.input,
        model_steps,
        first_difference,
        tool_calls: calls,
        added_calls,
        missing_calls,
        recorded_answer: last_text(&recorded.answers),
        replayed_answer: last_text(&replayed),
        recorded_state: record.outcome.as_ref().map(|o| o.state),
        replayed_state: finished.state,
    })
}

/// What a replay reads of a record.
struct RecordedTurn {
    /// The first model request's messages.
    messages: Vec<Message>,
    /// The text of the last user message among them.
    input: String,
    answers: Vec<ModelAnswer>,
    tool_calls: Vec<ToolCallStep>,
}

impl RecordedTurn {
    fn read(record: &ExecutionRecord) -> Result<Self, ReplayError> {
        let steps = Self::turn_steps(record);
        let first = steps
            .iter()
            .find_map(|k| match k {
                StepKind::ModelCall(c) => Some(c),
                _ => None,
            })
            .ok_or_else(|| ReplayError::NoModelCall {
                task_id: record.task_id.clone(),
            })?;
        let not_kept = |reason: String| ReplayError::ConversationNotKept {
            task_id: record.task_id.clone(),
            reason,
        };
        let value = first.request.messages.value().ok_or_else(|| {
            not_kept("its first model request's messages were cut to a preview".into())
        })?;
        let messages: Vec<Message> = serde_json::from_value(value.clone())
            .map_err(|e| not_kept(format!("its messages are not messages: {e}")))?;
        let input = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(Message::text)
            .ok_or_else(|| not_kept("its first model request has no user message".into()))?;
        let tool_calls = steps
            .iter()
            .filter_map(|k| match k {
                StepKind::ToolCall(c) => Some(c.clone()),
                _ => None,
            })
            .collect();
        Ok(RecordedTurn {
            messages,
            input,
            answers: Self::answers(record),
            tool_calls,
        })
    }

    /// The steps of the turn itself: those after its last compaction.
    fn turn_steps(record: &ExecutionRecord) -> Vec<&StepKind> {
        let from = record
            .steps
            .iter()
            .rposition(|s| matches!(s.kind, StepKind::Compaction { .. }))
            .map_or(0, |i| i + 1);
        record.steps[from..].iter().map(|s| &s.kind).collect()
    }

    /// The model answers of the turn: every answered call, and a failed
    /// call when it is the last (the turn ended on it); failed attempts
    /// that were retried or fell back are not answers.
    fn answers(record: &ExecutionRecord) -> Vec<ModelAnswer> {
        let calls: Vec<&ModelCallStep> = Self::turn_steps(record)
            .into_iter()
            .filter_map(|k| match k {
                StepKind::ModelCall(c) => Some(&**c),
                _ => None,
            })
            .collect();
        let last = calls.len().saturating_sub(1);
        calls
            .iter()
            .enumerate()
            .filter(|(i, c)| c.response.is_some() || *i == last)
            .map(|(_, c)| ModelAnswer::of(c))
            .collect()
    }
}

/// The calls in `replayed` that `recorded` does not have, and the reverse,
/// matched by tool and arguments, each recorded call once.
fn added_and_missing(
    recorded: &[ToolCallStep],
    replayed: &[ReplayedCall],
) -> (Vec<CallSeen>, Vec<CallSeen>) {
    let mut missing: Vec<CallSeen> = recorded
        .iter()
        .map(|c| CallSeen {
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        })
        .collect();
    let mut added = Vec::new();
    for call in replayed {
        match missing.iter().position(|m| *m == call.call) {
            Some(i) => {
                missing.remove(i);
            }
            None => added.push(call.call.clone()),
        }
    }
    (added, missing)
}

/// The hook a replay adds to the Agent's loop: the recorded conversation
/// before the turn, and the recorded result of each tool call.
struct ReplayHook {
    history: History,
    live: bool,
    policy: RecordPolicy,
    state: Mutex<HookState>,
}

struct HookState {
    /// The recorded calls no replayed call has used yet.
    unused: Vec<Option<ToolCallStep>>,
    calls: Vec<ReplayedCall>,
}

impl ReplayHook {
    fn lock(&self) -> MutexGuard<'_, HookState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl Hook for ReplayHook {
    fn name(&self) -> &str {
        "replay"
    }

    fn points(&self) -> HookPoints {
        HookPoints::BEFORE_TURN | HookPoints::BEFORE_TOOL
    }

    async fn before_turn(
        &self,
        _cx: &HookContext,
        _history: &History,
    ) -> Result<BeforeTurn, HookError> {
        Ok(BeforeTurn::unchanged().with_history(self.history.clone()))
    }

    async fn before_tool(
        &self,
        _cx: &HookContext,
        call: &mut ToolCall,
    ) -> Result<BeforeTool, HookError> {
        let seen = CallSeen {
            name: call.name.clone(),
            arguments: self.policy.payload(arguments_value(&call.arguments)),
        };
        let mut state = self.lock();
        // The first recorded call of the same tool and arguments that no
        // earlier call used.
        let used = state
            .unused
            .iter_mut()
            .find(|c| {
                c.as_ref()
                    .is_some_and(|c| c.name == seen.name && c.arguments == seen.arguments)
            })
            .and_then(Option::take);
        let (source, answer) = match (self.live, used) {
            // The comparison says whether the record had it.
            (true, _) => (ResultSource::Live, BeforeTool::Continue),
            (false, Some(step)) => (
                ResultSource::Record,
                BeforeTool::Skip(recorded_result(&call.id, &step)),
            ),
            (false, None) => (
                ResultSource::NotInRecord,
                BeforeTool::Skip(not_in_record(call)),
            ),
        };
        state.calls.push(ReplayedCall { call: seen, source });
        Ok(answer)
    }
}

/// The result a call the record does not have gets.
fn not_in_record(call: &ToolCall) -> ToolResult {
    ToolResult::failed(
        call.id.clone(),
        ToolFailure::Failed,
        format!(
            "Replay: the record has no call of '{}' with these arguments, so it has no result for it.",
            call.name
        ),
    )
}

/// A recorded call's result, as the tool gave it (its content, its
/// failure); a result kept as a preview gives the preview as text.
fn recorded_result(call_id: &str, step: &ToolCallStep) -> ToolResult {
    let content: Vec<Part> = match &step.result {
        Payload::Inline { value } => serde_json::from_value(value.clone())
            .unwrap_or_else(|_| vec![Part::text(payload_text(&step.result))]),
        Payload::Truncated { preview, .. } | Payload::Artifact { preview, .. } => {
            vec![Part::text(preview.clone())]
        }
    };
    let mut result = ToolResult::text(call_id, "");
    result.content = content;
    result.failure = step.failure;
    result.is_error = step.failure.is_some();
    result
}

/// A call's raw arguments as a value, as the recorder keeps them.
fn arguments_value(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// A text payload's text (a preview for a cut one).
fn payload_text(payload: &Payload) -> String {
    match payload {
        Payload::Inline {
            value: Value::String(s),
        } => s.clone(),
        Payload::Inline { value } => value.to_string(),
        Payload::Truncated { preview, .. } | Payload::Artifact { preview, .. } => preview.clone(),
    }
}

fn text_payload(text: &str) -> Payload {
    Payload::Inline {
        value: Value::String(text.to_owned()),
    }
}
