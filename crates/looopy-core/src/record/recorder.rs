//! [`Recorder`]: writes a turn's [`ExecutionRecord`] into a
//! [`RecordStore`] step by step, as the turn runs.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::lock::Mutex;
use serde_json::{Map, Value};

use super::*;
use crate::llm::{LlmError, LlmRequest, LlmResponse};
use crate::store::{RecordStore, StoreError};

/// The header of a record a [`Recorder`] starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    /// The turn's task.
    pub task_id: String,
    /// The conversation.
    pub context_id: String,
    /// The agent.
    pub agent_id: String,
    /// Who asked.
    pub principal: Option<String>,
    /// The turn's number.
    pub turn_number: Option<u64>,
}

/// Writes a turn's record as it runs: each step is added to the record and
/// the record saved, so that what a turn did is kept if its process dies.
/// Clones share the record. A store that fails is logged, never fails the
/// turn.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<RecorderInner>,
}

struct RecorderInner {
    store: Arc<dyn RecordStore>,
    policy: RecordPolicy,
    resumed: bool,
    state: Mutex<RecorderState>,
}

struct RecorderState {
    record: ExecutionRecord,
    /// Whether a resumed turn's earlier record was read.
    loaded: bool,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("resumed", &self.inner.resumed)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder of a turn that starts now. With `resumed`, the turn
    /// carries on one whose process died: its earlier record is read back
    /// on the first write and a [`StepKind::Recovered`] step marks where it
    /// resumed.
    pub fn new(
        store: Arc<dyn RecordStore>,
        policy: RecordPolicy,
        header: RecordHeader,
        resumed: bool,
    ) -> Self {
        let mut record = ExecutionRecord::new(header.task_id, header.context_id, header.agent_id);
        record.principal = header.principal;
        record.turn_number = header.turn_number;
        Recorder {
            inner: Arc::new(RecorderInner {
                store,
                policy,
                resumed,
                state: Mutex::new(RecorderState {
                    record,
                    loaded: !resumed,
                }),
            }),
        }
    }

    /// The policy payloads pass through.
    pub fn policy(&self) -> &RecordPolicy {
        &self.inner.policy
    }

    /// `value` redacted and capped.
    pub fn payload(&self, value: Value) -> Payload {
        self.inner.policy.payload(value)
    }

    /// Saves the record as it is (the turn's start).
    pub async fn begin(&self) {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        self.save(&state.record).await;
    }

    /// Adds a step that started at `started_at` and took `duration`.
    pub async fn step(&self, started_at: DateTime<Utc>, duration: Duration, kind: StepKind) {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        state.record.steps.push(RecordStep {
            started_at,
            duration,
            kind,
        });
        self.save(&state.record).await;
    }

    /// Adds a step of no duration that happens now.
    pub async fn mark(&self, kind: StepKind) {
        self.step(Utc::now(), Duration::ZERO, kind).await;
    }

    /// Adds a model attempt.
    pub async fn model_call(
        &self,
        started_at: DateTime<Utc>,
        duration: Duration,
        call: ModelCall<'_>,
    ) {
        let step = self.model_step(call);
        self.step(started_at, duration, StepKind::ModelCall(Box::new(step)))
            .await;
    }

    /// Adds a tool call.
    pub async fn tool_call(
        &self,
        started_at: DateTime<Utc>,
        duration: Duration,
        call: &ToolCall,
        result: &ToolResult,
    ) {
        let p = &self.inner.policy;
        let result_value = serde_json::to_value(&result.content).unwrap_or(Value::Null);
        let result_payload = match &result.cut_output {
            Some(cut) => Payload::Artifact {
                artifact_id: cut.artifact_id.clone(),
                preview: match p.payload(result_value) {
                    Payload::Inline { value } => value.to_string(),
                    Payload::Truncated { preview, .. } | Payload::Artifact { preview, .. } => {
                        preview
                    }
                },
            },
            None => p.payload(result_value),
        };
        let step = ToolCallStep {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: p.payload(arguments_value(&call.arguments)),
            result: result_payload,
            failure: result.failure,
        };
        self.step(started_at, duration, StepKind::ToolCall(step))
            .await;
    }

    /// Ends the record.
    pub async fn finish(&self, outcome: RecordOutcome) {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        state.record.ended_at = Some(Utc::now());
        state.record.outcome = Some(outcome);
        self.save(&state.record).await;
    }

    /// The record so far.
    pub async fn snapshot(&self) -> ExecutionRecord {
        self.inner.state.lock().await.record.clone()
    }

    fn model_step(&self, call: ModelCall<'_>) -> ModelCallStep {
        let p = &self.inner.policy;
        let r = call.request;
        let mut settings = Map::new();
        let mut set = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                settings.insert(k.to_owned(), v);
            }
        };
        set(
            "temperature",
            r.temperature.and_then(|t| serde_json::to_value(t).ok()),
        );
        set("maxTokens", r.max_tokens.map(Value::from));
        set(
            "maxCompletionTokens",
            r.max_completion_tokens.map(Value::from),
        );
        set(
            "toolChoice",
            r.tool_choice
                .as_ref()
                .and_then(|c| serde_json::to_value(c).ok()),
        );
        set("parallelToolCalls", r.parallel_tool_calls.map(Value::from));
        set(
            "responseFormat",
            r.response_format
                .as_ref()
                .and_then(|f| serde_json::to_value(f).ok()),
        );
        let messages: Vec<Value> = r
            .messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
            .collect();
        let request = RecordedRequest {
            system_prompt: r
                .system_prompt
                .as_ref()
                .map(|s| p.payload(Value::String(s.to_string()))),
            messages: p.payload(Value::Array(messages)),
            tools: r.tools.iter().map(|t| t.name.clone()).collect(),
            settings,
        };
        let response = call
            .result
            .and_then(|r| r.ok())
            .map(|resp| RecordedResponse {
                text: p.payload(Value::String(resp.message.text())),
                tool_calls: resp
                    .message
                    .tool_calls
                    .iter()
                    .map(|c| RecordedToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: p.payload(arguments_value(&c.arguments)),
                    })
                    .collect(),
                reasoning: resp
                    .reasoning
                    .as_ref()
                    .map(|t| p.payload(Value::String(t.clone()))),
                finish_reason: serde_json::to_value(&resp.finish_reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                usage: resp.usage,
            });
        let error = call.result.and_then(|r| r.err()).map(RecordedError::from);
        let model = call
            .result
            .and_then(|r| r.ok())
            .and_then(|resp| resp.model.clone())
            .or_else(|| r.model.clone())
            .unwrap_or_else(|| call.model.to_owned());
        ModelCallStep {
            provider: call.provider.to_owned(),
            model,
            streamed: call.streamed,
            request,
            response,
            error,
        }
    }

    async fn load(&self, state: &mut RecorderState) {
        if state.loaded {
            return;
        }
        state.loaded = true;
        match self.inner.store.get(&state.record.task_id).await {
            Ok(Some(earlier)) => {
                let previous_steps = earlier.steps.len();
                let record = &mut state.record;
                record.started_at = earlier.started_at;
                if record.principal.is_none() {
                    record.principal = earlier.principal;
                }
                if record.turn_number.is_none() {
                    record.turn_number = earlier.turn_number;
                }
                let mut steps = earlier.steps;
                steps.append(&mut record.steps);
                record.steps = steps;
                record.steps.push(RecordStep {
                    started_at: Utc::now(),
                    duration: Duration::ZERO,
                    kind: StepKind::Recovered { previous_steps },
                });
            }
            Ok(None) => state.record.steps.push(RecordStep {
                started_at: Utc::now(),
                duration: Duration::ZERO,
                kind: StepKind::Recovered { previous_steps: 0 },
            }),
            Err(e) => warn(&state.record.task_id, &e),
        }
    }

    async fn save(&self, record: &ExecutionRecord) {
        if let Err(e) = self.inner.store.put(record).await {
            warn(&record.task_id, &e);
        }
    }
}

fn warn(task_id: &str, e: &StoreError) {
    tracing::warn!(task_id, error = %e, "the execution record could not be saved");
}

/// A tool call's raw JSON arguments as a value (a string when they are not
/// JSON).
fn arguments_value(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// A model attempt to record.
#[derive(Debug, Clone, Copy)]
pub struct ModelCall<'a> {
    /// The provider's name.
    pub provider: &'a str,
    /// The provider's configured model (the request's or the response's
    /// model wins when set).
    pub model: &'a str,
    /// Whether it was streamed.
    pub streamed: bool,
    /// The request.
    pub request: &'a LlmRequest,
    /// Its result; `None` when it was given up (a stream dropped midway).
    pub result: Option<Result<&'a LlmResponse, &'a LlmError>>,
}
