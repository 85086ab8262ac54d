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
/// the record saved before the step's call returns, so that what a turn did
/// is kept if its process dies. A step added with
/// [`checkpoint`](Self::checkpoint) is kept with the next step saved: for
/// a checkpoint in this process's memory, which dies with the process
/// (a checkpoint in a store of its own is a step like any). Clones share
/// the record. A store that fails is logged, never
/// fails the turn.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<RecorderInner>,
}

struct RecorderInner {
    store: Arc<dyn RecordStore>,
    policy: RecordPolicy,
    resumed: bool,
    state: Mutex<RecorderState>,
    /// Steps not saved yet, in the order they ended.
    pending: std::sync::Mutex<Pending>,
}

struct RecorderState {
    record: ExecutionRecord,
    /// Whether a resumed turn's earlier record was read.
    loaded: bool,
    /// How many steps were queued when the last save took them.
    saved: u64,
}

#[derive(Default)]
struct Pending {
    steps: Vec<RecordStep>,
    /// Steps queued so far.
    pushed: u64,
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
                    saved: 0,
                }),
                pending: std::sync::Mutex::new(Pending::default()),
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

    /// Saves the record as it is (the turn's start). A resumed turn's
    /// recorder saves nothing yet: its first write reads the record the
    /// dead process wrote back (see [`recovered`](Self::recovered)).
    pub async fn begin(&self) {
        if self.inner.resumed {
            return;
        }
        let mut state = self.inner.state.lock().await;
        self.save_pending(&mut state).await;
    }

    /// Marks where a resumed turn carried on: reads the record the dead
    /// process wrote and adds a [`StepKind::Recovered`] step naming the
    /// checkpoint `from` it resumed from. Only the first write of a
    /// resumed recorder marks the resume; a later call does nothing.
    pub async fn recovered(&self, from: CheckpointStep) {
        let mut state = self.inner.state.lock().await;
        if state.loaded {
            return;
        }
        self.load(&mut state, Some(from)).await;
        self.save_pending(&mut state).await;
    }

    /// Adds a step that started at `started_at` and took `duration`, and
    /// returns once it is saved. Steps that end while a save runs (the
    /// calls of one response, run in parallel) are saved together by the
    /// next save.
    pub async fn step(&self, started_at: DateTime<Utc>, duration: Duration, kind: StepKind) {
        let seq = self.push(RecordStep {
            started_at,
            duration,
            kind,
        });
        let mut state = self.inner.state.lock().await;
        if state.saved >= seq {
            // A save that began after this step ended took it along.
            return;
        }
        self.load(&mut state, None).await;
        self.save_pending(&mut state).await;
    }

    /// Adds a checkpoint save that started at `started_at` and took
    /// `duration`, saved with the next step (see the type's docs). Does
    /// not wait: a checkpoint saved in place calls it from where it saved.
    pub fn checkpoint(&self, started_at: DateTime<Utc>, duration: Duration, saved: CheckpointStep) {
        self.push(RecordStep {
            started_at,
            duration,
            kind: StepKind::Checkpoint(saved),
        });
    }

    /// Queues a step for the next save; returns its number.
    fn push(&self, step: RecordStep) -> u64 {
        let mut pending = self
            .inner
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pending.steps.push(step);
        pending.pushed += 1;
        pending.pushed
    }

    /// Adds a decision about a tool call, made from `started_at` for
    /// `duration`.
    pub async fn decision(
        &self,
        started_at: DateTime<Utc>,
        duration: Duration,
        decision: DecisionStep,
    ) {
        self.step(started_at, duration, StepKind::Decision(decision))
            .await;
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
        let attempt = self.attempt(call.request, call.streamed);
        self.attempt_ended(
            started_at,
            duration,
            (call.provider, call.model),
            attempt,
            call.result,
        )
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
        self.load(&mut state, None).await;
        state.record.ended_at = Some(Utc::now());
        state.record.outcome = Some(outcome);
        self.save_pending(&mut state).await;
    }

    /// The record so far, with the steps not saved yet.
    pub async fn snapshot(&self) -> ExecutionRecord {
        let mut record = self.inner.state.lock().await.record.clone();
        record.steps.extend(
            self.inner
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .steps
                .iter()
                .cloned(),
        );
        record
    }

    /// Moves the queued steps into the record and saves it.
    async fn save_pending(&self, state: &mut RecorderState) {
        {
            let mut pending = self
                .inner
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state.record.steps.append(&mut pending.steps);
            state.saved = pending.pushed;
        }
        self.save(&state.record).await;
    }

    /// The request of a model attempt about to be sent, as the record
    /// keeps it: taken before the call, so that the request itself moves
    /// on to the model (see [`attempt_ended`](Self::attempt_ended)).
    pub fn attempt(&self, request: &LlmRequest, streamed: bool) -> Attempt {
        let p = &self.inner.policy;
        let r = request;
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
        Attempt {
            request: RecordedRequest {
                system_prompt: r
                    .system_prompt
                    .as_ref()
                    .map(|s| p.payload(Value::String(s.to_string()))),
                messages: p.payload(Value::Array(messages)),
                tools: r.tools.iter().map(|t| t.name.clone()).collect(),
                settings,
            },
            model: r.model.clone(),
            streamed,
        }
    }

    /// Adds a model attempt whose request [`attempt`](Self::attempt) took:
    /// `provider` and its configured `model` (the request's or the
    /// response's model wins when set), and its result (`None` when it
    /// was given up, a stream dropped midway).
    pub async fn attempt_ended(
        &self,
        started_at: DateTime<Utc>,
        duration: Duration,
        (provider, model): (&str, &str),
        attempt: Attempt,
        result: Option<Result<&LlmResponse, &LlmError>>,
    ) {
        let step = self.model_step(provider, model, attempt, result);
        self.step(started_at, duration, StepKind::ModelCall(Box::new(step)))
            .await;
    }

    fn model_step(
        &self,
        provider: &str,
        configured: &str,
        attempt: Attempt,
        result: Option<Result<&LlmResponse, &LlmError>>,
    ) -> ModelCallStep {
        let p = &self.inner.policy;
        let response = result.and_then(|r| r.ok()).map(|resp| RecordedResponse {
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
        let error = result.and_then(|r| r.err()).map(RecordedError::from);
        let model = result
            .and_then(|r| r.ok())
            .and_then(|resp| resp.model.clone())
            .or(attempt.model)
            .unwrap_or_else(|| configured.to_owned());
        ModelCallStep {
            provider: provider.to_owned(),
            model,
            streamed: attempt.streamed,
            request: attempt.request,
            response,
            error,
        }
    }

    async fn load(&self, state: &mut RecorderState, from: Option<CheckpointStep>) {
        if state.loaded {
            return;
        }
        state.loaded = true;
        // A resumed turn continues its own turn's record: the task's latest
        // record is an earlier turn's when this one died before its first save.
        let task_id = &state.record.task_id;
        let earlier = match state.record.turn_number {
            Some(turn) => self.inner.store.get_turn(task_id, turn).await,
            None => self.inner.store.get(task_id).await,
        };
        match earlier {
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
                    kind: StepKind::Recovered {
                        previous_steps,
                        from,
                    },
                });
            }
            Ok(None) => state.record.steps.push(RecordStep {
                started_at: Utc::now(),
                duration: Duration::ZERO,
                kind: StepKind::Recovered {
                    previous_steps: 0,
                    from,
                },
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

/// A model attempt under way, its request recorded
/// ([`Recorder::attempt`]).
#[derive(Debug, Clone)]
pub struct Attempt {
    request: RecordedRequest,
    /// The request's model, when it named one.
    model: Option<String>,
    streamed: bool,
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
