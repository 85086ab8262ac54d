//! Execution records written by real turns: a tool-using turn with a
//! retried model call and a failed tool call, calls of a tool that does
//! not exist and of one that panicked, a compaction, hook and
//! approval decisions, and a turn recovered after its process died from
//! one of its checkpoints, on the memory and the Redis stores.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use looopy_agent::{Agent, CompactionConfig, TurnOptions};
use looopy_core::approval::{ApprovalDecision, Decision as ApprovalAnswer};
use looopy_core::record::{CheckpointStep, Decided, DecisionPoint, ExecutionRecord, StepKind};
use looopy_core::store::Stores;
use looopy_core::{
    LlmError, LlmResponse, Message, TaskState, ToolCall, ToolDefinition, ToolError, ToolFailure,
    ToolProvider, ToolResult, TurnContext,
};
use looopy_loop::hooks::{Approval, BeforeTool, Hook, HookContext, HookError};
use looopy_loop::layers::RetryPolicy;
use looopy_testkit::ScriptedLlm;
use looopy_tools::{LocalTools, NoArgs, ToolFnError};
use support::{builder, call, turn};

fn kinds(record: &ExecutionRecord) -> Vec<&'static str> {
    record
        .steps
        .iter()
        .map(|s| match &s.kind {
            StepKind::ModelCall(c) if c.error.is_some() => "model-error",
            StepKind::ModelCall(_) => "model",
            StepKind::Retry { .. } => "retry",
            StepKind::Fallback { .. } => "fallback",
            StepKind::ToolCall(c) if c.failure.is_some() => "tool-failed",
            StepKind::ToolCall(_) => "tool",
            StepKind::Compaction { .. } => "compaction",
            StepKind::Recovered { .. } => "recovered",
            StepKind::Decision(_) => "decision",
            StepKind::Checkpoint(_) => "checkpoint",
            _ => "other",
        })
        .collect()
}

/// The steps as `kinds` names them, checkpoints left out.
fn kinds_but_checkpoints(record: &ExecutionRecord) -> Vec<&'static str> {
    kinds(record)
        .into_iter()
        .filter(|k| *k != "checkpoint")
        .collect()
}

fn tools() -> LocalTools {
    LocalTools::new()
        .tool(
            "lookup",
            "Looks up",
            |_: NoArgs, _: TurnContext| async move {
                tokio::time::sleep(Duration::from_millis(15)).await;
                Ok::<_, ToolFnError>("found it")
            },
        )
        .tool("boom", "Fails", |_: NoArgs, _: TurnContext| async move {
            Err::<String, _>(ToolFnError::new("the tool broke"))
        })
}

fn recording(ctx: &str, llm: &ScriptedLlm, stores: &Stores) -> looopy_agent::AgentBuilder {
    builder(ctx, llm, stores)
        .record_store(stores.records.clone().expect("the stores keep records"))
        .configure_loop(|b| {
            b.retry(
                RetryPolicy::default()
                    .with_delays(Duration::from_millis(5), Duration::from_millis(5)),
            )
        })
}

async fn tool_turn_is_recorded(stores: &Stores, ctx: &str) {
    let llm = ScriptedLlm::new()
        .fail(LlmError::Server {
            status: 503,
            message: "busy".into(),
            retry_after: None,
        })
        .respond(LlmResponse::tool_calls(
            "",
            vec![
                ToolCall::new("l1", "lookup", "{}"),
                ToolCall::new("b1", "boom", "{}"),
            ],
        ))
        .respond(LlmResponse::text("found it, boom broke"));
    let agent = recording(ctx, &llm, stores).tools(tools()).build().unwrap();
    let (_, summary) = turn(&agent, "look it up, Bearer sekrit-token-value").await;
    assert_eq!(summary.state, TaskState::Completed);

    let record = agent.record(&summary.task_id).await.unwrap().unwrap();
    let mut steps = kinds(&record);
    // The two tool calls run in parallel: either may end first.
    steps[3..5].sort_unstable();
    assert_eq!(
        steps,
        [
            "model-error",
            "retry",
            "model",
            "tool",
            "tool-failed",
            "model"
        ]
    );
    assert_eq!(record.outcome.as_ref().unwrap().state, TaskState::Completed);
    assert_eq!(record.turn_number, Some(1));
    let lookup = record.tool_calls().find(|c| c.name == "lookup").unwrap();
    let boom = record.tool_calls().find(|c| c.name == "boom").unwrap();
    assert_eq!(lookup.failure, None);
    assert_eq!(boom.failure, Some(ToolFailure::Failed));
    assert!(boom.result.summary(200).contains("the tool broke"));
    let lookup_step = record
        .steps
        .iter()
        .find(|s| matches!(&s.kind, StepKind::ToolCall(c) if c.name == "lookup"))
        .unwrap();
    assert!(
        lookup_step.duration >= Duration::from_millis(15),
        "{:?}",
        lookup_step.duration
    );
    // Steps start in order, each after the one before ended (tools aside).
    assert!(record.steps[0].started_at <= record.steps[1].started_at);
    assert!(record.steps[2].started_at >= record.steps[1].started_at);
    // The request as sent: the user's words, with the bearer token taken out.
    let first = record.model_calls().next().unwrap();
    let sent = first.request.messages.summary(10_000);
    assert!(sent.contains("look it up"), "{sent}");
    assert!(!sent.contains("sekrit-token-value"), "{sent}");
    let error = first.error.as_ref().unwrap();
    assert!(error.message.contains("busy"), "{error:?}");
    let asked = record.model_calls().nth(1).unwrap();
    let mut offered = asked.request.tools.clone();
    offered.sort();
    assert_eq!(offered, ["boom", "lookup"]);
    assert_eq!(asked.response.as_ref().unwrap().tool_calls.len(), 2);
    assert_eq!(asked.response.as_ref().unwrap().finish_reason, "tool_calls");
    let listed = agent.records(10).await.unwrap();
    assert_eq!(listed.len(), 1);
}

async fn compaction_is_recorded(stores: &Stores, ctx: &str) {
    let llm = ScriptedLlm::new()
        .respond(call("lookup", &["a"]))
        .respond(LlmResponse::text("answer 1"))
        .respond(call("lookup", &["b"]))
        .respond(LlmResponse::text("answer 2"))
        .respond(LlmResponse::text("SUMMARY"))
        .respond(LlmResponse::text("answer 3"));
    let agent = recording(ctx, &llm, stores)
        .tools(tools())
        .compaction(CompactionConfig::after_messages(6).keep_recent(3))
        .build()
        .unwrap();
    turn(&agent, "u1").await;
    turn(&agent, "u2").await;
    let (_, third) = turn(&agent, "u3").await;
    assert!(third.compaction.is_some());
    let record = agent.record(&third.task_id).await.unwrap().unwrap();
    // The summary call, the compaction, the turn's own call.
    assert_eq!(kinds(&record), ["model", "compaction", "model"]);
    assert!(matches!(
        record.steps[1].kind,
        StepKind::Compaction {
            summarized_messages: 5,
            ..
        }
    ));
    assert!(record.steps[1].duration >= record.steps[0].duration);
    assert_eq!(agent.records(10).await.unwrap().len(), 3);
}

/// `explode` panics after a short while.
struct Explodes;

#[async_trait]
impl ToolProvider for Explodes {
    async fn tools(&self, _: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![ToolDefinition::without_parameters(
            "explode", "panics",
        )])
    }
    async fn execute(&self, _: &ToolCall, _: &TurnContext) -> ToolResult {
        tokio::time::sleep(Duration::from_millis(15)).await;
        panic!("the tool blew up")
    }
}

/// Calls the registry answers itself (a tool that does not exist, a tool
/// that panicked) are tool-call steps like any failed call.
async fn unknown_and_panicking_calls_are_recorded(stores: &Stores, ctx: &str) {
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::tool_calls(
            "",
            vec![
                ToolCall::new("u1", "no_such_tool", r#"{"path":"notes.txt"}"#),
                ToolCall::new("p1", "explode", "{}"),
            ],
        ))
        .respond(LlmResponse::text("neither worked"));
    let agent = recording(ctx, &llm, stores)
        .tools(Explodes)
        .build()
        .unwrap();
    let (_, summary) = turn(&agent, "try both").await;
    assert_eq!(summary.state, TaskState::Completed);

    let record = agent.record(&summary.task_id).await.unwrap().unwrap();
    assert_eq!(
        kinds_but_checkpoints(&record),
        ["model", "tool-failed", "tool-failed", "model"]
    );
    let step = |id: &str| {
        record
            .steps
            .iter()
            .find_map(|s| match &s.kind {
                StepKind::ToolCall(c) if c.call_id == id => Some((s, c)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no tool-call step for {id}: {record:?}"))
    };
    let (unknown_step, unknown) = step("u1");
    assert_eq!(unknown.name, "no_such_tool");
    assert_eq!(unknown.failure, Some(ToolFailure::UnknownTool));
    assert_eq!(
        unknown.arguments.value(),
        Some(&serde_json::json!({"path": "notes.txt"}))
    );
    assert!(
        unknown.result.summary(200).contains("no_such_tool"),
        "{:?}",
        unknown.result
    );
    let (panic_step, panicked) = step("p1");
    assert_eq!(panicked.failure, Some(ToolFailure::Panicked));
    assert!(
        panicked.result.summary(200).contains("the tool blew up"),
        "{:?}",
        panicked.result
    );
    assert!(
        panic_step.duration >= Duration::from_millis(15),
        "{:?}",
        panic_step.duration
    );
    // Both ran after the model asked for them and before it answered (a
    // millisecond's slack: start times are wall-clock, durations not).
    let (asked, answered) = (&record.steps[0], record.steps.last().unwrap());
    let slack = Duration::from_millis(1);
    for s in [unknown_step, panic_step] {
        assert!(s.started_at + slack >= asked.started_at + asked.duration);
        assert!(s.started_at + s.duration <= answered.started_at + slack);
    }
    // On the wire: the typed failure.
    let wire = serde_json::to_value(unknown_step).unwrap();
    assert_eq!(wire["type"], "tool-call");
    assert_eq!(wire["failure"], "unknown_tool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_are_recorded_in_memory() {
    let stores = looopy_stores_memory::stores();
    tool_turn_is_recorded(&stores, "c-rec-tools").await;
    compaction_is_recorded(&stores, "c-rec-compact").await;
    unknown_and_panicking_calls_are_recorded(&stores, "c-rec-unknown").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_are_recorded_in_redis() {
    let prefix = format!("rec-{}", uuid::Uuid::new_v4().simple());
    let stores = support::redis_stores(&prefix).await;
    tool_turn_is_recorded(&stores, "c-rec-tools").await;
    compaction_is_recorded(&stores, "c-rec-compact").await;
    unknown_and_panicking_calls_are_recorded(&stores, "c-rec-unknown").await;
}

#[tokio::test]
async fn an_agent_without_a_record_store_records_nothing() {
    let stores = looopy_stores_memory::stores();
    let llm = ScriptedLlm::new().respond(LlmResponse::text("hi"));
    let agent = builder("c-norec", &llm, &stores).build().unwrap();
    let (_, s) = turn(&agent, "hello").await;
    assert_eq!(agent.record(&s.task_id).await.unwrap(), None);
    let records = stores.records.as_ref().unwrap();
    assert_eq!(records.get(&s.task_id).await.unwrap(), None);
}

const TTL: Duration = Duration::from_millis(300);

/// `fast` answers at once; `hang` never does.
#[derive(Default)]
struct Tools {
    fast: AtomicUsize,
}

#[async_trait]
impl ToolProvider for Tools {
    async fn tools(&self, _: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(vec![
            ToolDefinition::without_parameters("fast", "answers at once"),
            ToolDefinition::without_parameters("hang", "never answers"),
        ])
    }
    async fn execute(&self, call: &ToolCall, _: &TurnContext) -> ToolResult {
        if call.name == "fast" {
            self.fast.fetch_add(1, Ordering::SeqCst);
            return ToolResult::text(&call.id, "fast result");
        }
        std::future::pending().await
    }
}

fn crash_agent(llm: &ScriptedLlm, stores: &Stores, tools: Arc<Tools>) -> Agent {
    recording("c-rec-crash", llm, stores)
        .tools(tools)
        .task_store(stores.checkpoints.clone())
        .turn_lock(stores.locks.clone())
        .lock_ttl(TTL)
        .build()
        .unwrap()
}

/// `in_memory`: the stores are this process's memory, whose checkpoints
/// are recorded with the turn's next step (they could not outlive it).
async fn recovered_turn_is_recorded(stores: Stores, in_memory: bool) {
    let tools = Arc::new(Tools::default());
    // A "process" of its own: a runtime shut down mid-tool, as by SIGKILL.
    let task_id = {
        let (stores, tools) = (stores.clone(), tools.clone());
        std::thread::spawn(move || {
            let llm = ScriptedLlm::new().respond(LlmResponse::tool_calls(
                "",
                vec![
                    ToolCall::new("call-fast", "fast", "{}"),
                    ToolCall::new("call-hang", "hang", "{}"),
                ],
            ));
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let task_id = runtime.block_on(async {
                let a = crash_agent(&llm, &stores, tools);
                let t = a
                    .execute_turn_with(
                        Some(Message::user("do both")),
                        TurnOptions::new().keep_running_on_drop(true),
                    )
                    .await
                    .unwrap();
                let task_id = t.task_id().to_owned();
                drop(t);
                for _ in 0..500 {
                    if let Some(c) = stores.checkpoints.load(&task_id).await.unwrap()
                        && c.completed_tool_results
                            .iter()
                            .any(|r| r.tool_call_id == "call-fast")
                        && a.record(&task_id)
                            .await
                            .unwrap()
                            .is_some_and(|r| r.tool_calls().count() == 1)
                    {
                        return task_id;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                panic!("the fast call never reached the checkpoint and the record");
            });
            runtime.shutdown_background();
            task_id
        })
        .join()
        .unwrap()
    };
    tokio::time::sleep(TTL * 2).await;
    let llm = ScriptedLlm::new().respond(LlmResponse::text("all done"));
    let b = crash_agent(&llm, &stores, tools.clone());
    let before = b.record(&task_id).await.unwrap().unwrap();
    assert_eq!(
        before.outcome, None,
        "the dead process never ended the record"
    );
    let summary = b
        .resume_turn(&task_id, TurnOptions::new())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(summary.state, TaskState::Completed);
    let record = b.record(&task_id).await.unwrap().unwrap();
    assert_eq!(
        kinds_but_checkpoints(&record),
        ["model", "tool", "recovered", "model"]
    );
    let at = kinds(&record)
        .iter()
        .position(|k| *k == "recovered")
        .unwrap();
    let StepKind::Recovered {
        previous_steps,
        from: Some(from),
    } = record.steps[at].kind
    else {
        panic!(
            "the recovered step names its checkpoint: {:?}",
            record.steps[at]
        );
    };
    assert_eq!(previous_steps, at);
    // It resumed from the checkpoint with the fast call's result: the
    // user message and the calls, before any result message.
    assert_eq!((from.iteration, from.messages), (1, 2));
    let saves = |steps: &[looopy_core::record::RecordStep]| -> Vec<CheckpointStep> {
        steps
            .iter()
            .filter_map(|s| match s.kind {
                StepKind::Checkpoint(c) => Some(c),
                _ => None,
            })
            .collect()
    };
    let before_resume = saves(&record.steps[..at]);
    // The dead process's saves are on record: before the first model
    // call (the user message), after it, and (in a store that outlives the process, where
    // each save is written at once) the one the resume read.
    assert!(before_resume.len() >= 2, "{before_resume:?}");
    assert_eq!(
        before_resume[0],
        CheckpointStep {
            iteration: 1,
            messages: 1
        },
        "{before_resume:?}"
    );
    if !in_memory {
        assert_eq!(before_resume.last(), Some(&from));
    }
    // The resumed turn saves its own, the last one at its end.
    let after_resume = saves(&record.steps[at..]);
    assert!(
        after_resume
            .last()
            .is_some_and(|c| c.messages > from.messages),
        "{after_resume:?}"
    );
    assert_eq!(record.started_at, before.started_at);
    assert_eq!(record.outcome.unwrap().state, TaskState::Completed);
    assert_eq!(tools.fast.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_turn_shows_where_it_resumed_in_memory() {
    recovered_turn_is_recorded(looopy_stores_memory::stores(), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_turn_shows_where_it_resumed_in_redis() {
    let prefix = format!("rec-{}", uuid::Uuid::new_v4().simple());
    recovered_turn_is_recorded(support::redis_stores(&prefix).await, false).await;
}

/// `lookup`, `blocked` and `delete_file`: each answers with its call id
/// and arguments.
struct Guarded;

#[async_trait]
impl ToolProvider for Guarded {
    async fn tools(&self, _: &TurnContext) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(["lookup", "blocked", "delete_file"]
            .into_iter()
            .map(|n| ToolDefinition::without_parameters(n, n))
            .collect())
    }
    async fn execute(&self, call: &ToolCall, _: &TurnContext) -> ToolResult {
        ToolResult::text(&call.id, format!("{} ran with {}", call.id, call.arguments))
    }
}

/// Denies `blocked`, rewrites the arguments of `lookup`.
struct Guard;

#[async_trait]
impl Hook for Guard {
    fn name(&self) -> &str {
        "guard"
    }
    async fn approve_tool(&self, _: &HookContext, call: &ToolCall) -> Result<Approval, HookError> {
        Ok(if call.name == "blocked" {
            Approval::deny("blocked by policy")
        } else {
            Approval::Allow
        })
    }
    async fn before_tool(
        &self,
        _: &HookContext,
        call: &mut ToolCall,
    ) -> Result<BeforeTool, HookError> {
        if call.name == "lookup" {
            call.arguments = r#"{"q":"rewritten"}"#.into();
        }
        Ok(BeforeTool::Continue)
    }
}

/// Each step as `kind:who:what:call`, for the order of decisions among
/// the calls.
fn steps(record: &ExecutionRecord) -> Vec<String> {
    record
        .steps
        .iter()
        .filter_map(|s| match &s.kind {
            StepKind::ModelCall(_) => Some("model".to_owned()),
            StepKind::ToolCall(c) => Some(format!("tool:{}", c.call_id)),
            StepKind::Decision(d) => Some(name_of(d)),
            _ => None,
        })
        .collect()
}

async fn decisions_are_recorded(stores: &Stores, ctx: &str) {
    let one =
        |id: &str, name: &str| LlmResponse::tool_calls("", vec![ToolCall::new(id, name, "{}")]);
    let llm = ScriptedLlm::new()
        .respond(one("l1", "lookup"))
        .respond(one("x1", "blocked"))
        .respond(one("d1", "delete_file"))
        .respond(one("d2", "delete_file"))
        .respond(LlmResponse::text("done"));
    let agent = recording(ctx, &llm, stores)
        .tools(Guarded)
        .require_approval(["delete_file"])
        .configure_loop(|b| b.hook(Guard))
        .build()
        .unwrap();

    let (_, first) = turn(&agent, "tidy up").await;
    assert_eq!(first.state, TaskState::InputRequired);
    let record = agent.record(&first.task_id).await.unwrap().unwrap();
    assert_eq!(
        steps(&record),
        [
            "model",
            "require-approval:allowed:l1",
            "guard:allowed:l1",
            "guard:modified:l1",
            "tool:l1",
            "model",
            "require-approval:allowed:x1",
            "guard:denied:x1",
            "model",
            "require-approval:asked:d1",
        ]
    );
    let decision = |at: &str| {
        record
            .steps
            .iter()
            .find_map(|s| match &s.kind {
                StepKind::Decision(d) if name_of(d) == at => Some((s, d.clone())),
                _ => None,
            })
            .unwrap()
    };
    let (_, denied) = decision("guard:denied:x1");
    assert_eq!(denied.point, DecisionPoint::ApproveTool);
    assert_eq!(denied.tool.as_deref(), Some("blocked"));
    assert_eq!(denied.reason.as_deref(), Some("blocked by policy"));
    let (modified_step, modified) = decision("guard:modified:l1");
    assert_eq!(modified.point, DecisionPoint::BeforeTool);
    let (_, asked) = decision("require-approval:asked:d1");
    assert!(asked.reason.unwrap().contains("delete_file"));
    // The tool ran with the arguments the hook gave, after the decision.
    let lookup = record.tool_calls().next().unwrap();
    assert_eq!(
        lookup.arguments.value(),
        Some(&serde_json::json!({"q": "rewritten"}))
    );
    let lookup_step = record
        .steps
        .iter()
        .find(|s| matches!(&s.kind, StepKind::ToolCall(_)))
        .unwrap();
    assert!(modified_step.started_at <= lookup_step.started_at);

    // The person approves d1: the decision opens the next turn's record,
    // then the call runs; the model asks for d2, which waits again.
    let approve = ApprovalDecision {
        tool_call_id: "d1".into(),
        decision: ApprovalAnswer::Approve,
    };
    let (_, second) = answer(&agent, &approve).await;
    assert_eq!(second.state, TaskState::InputRequired);
    let record = agent.record(&second.task_id).await.unwrap().unwrap();
    assert_eq!(
        steps(&record),
        [
            "user:approved:d1",
            "tool:d1",
            "model",
            "require-approval:asked:d2"
        ]
    );
    let StepKind::Decision(approved) = &record.steps[0].kind else {
        unreachable!()
    };
    assert_eq!(approved.point, DecisionPoint::UserApproval);
    assert_eq!(approved.decision, Decided::Approved);
    assert_eq!(approved.tool.as_deref(), Some("delete_file"));

    // The person denies d2, with a reason.
    let deny = ApprovalDecision {
        tool_call_id: "d2".into(),
        decision: ApprovalAnswer::Deny {
            reason: Some("keep it".into()),
        },
    };
    let (_, third) = answer(&agent, &deny).await;
    assert_eq!(third.state, TaskState::Completed);
    let record = agent.record(&third.task_id).await.unwrap().unwrap();
    assert_eq!(steps(&record), ["user:denied:d2", "model"]);
    let StepKind::Decision(denied) = &record.steps[0].kind else {
        unreachable!()
    };
    assert_eq!(denied.reason.as_deref(), Some("keep it"));
    // On the wire: a `decision` step with its point and what was decided.
    let wire = serde_json::to_value(&record.steps[0]).unwrap();
    assert_eq!(wire["type"], "decision");
    assert_eq!(wire["point"], "user-approval");
    assert_eq!(wire["decision"], "denied");
    assert_eq!(wire["callId"], "d2");
}

fn name_of(d: &looopy_core::record::DecisionStep) -> String {
    format!(
        "{}:{}:{}",
        d.by,
        d.decision,
        d.call_id.as_deref().unwrap_or("-")
    )
}

/// Runs a turn whose message is one approval decision.
async fn answer(
    agent: &Agent,
    decision: &ApprovalDecision,
) -> (Vec<looopy_core::AgentEvent>, looopy_agent::FinishedTurn) {
    let message = Message::with_parts(looopy_core::Role::User, vec![decision.to_part()]);
    let t = agent.execute_turn(Some(message), None).await.unwrap();
    let (events, summary) = t.collect_all().await;
    (events, summary.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_are_recorded_in_memory() {
    decisions_are_recorded(&looopy_stores_memory::stores(), "c-rec-decide").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_are_recorded_in_redis() {
    let prefix = format!("rec-{}", uuid::Uuid::new_v4().simple());
    decisions_are_recorded(&support::redis_stores(&prefix).await, "c-rec-decide").await;
}
