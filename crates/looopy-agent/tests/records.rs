//! Execution records written by real turns: a tool-using turn with a
//! retried model call and a failed tool call, a compaction, and a turn
//! recovered after its process died, on the memory and the Redis stores.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use looopy_agent::{Agent, CompactionConfig, TurnOptions};
use looopy_core::record::{ExecutionRecord, StepKind};
use looopy_core::store::Stores;
use looopy_core::{
    LlmError, LlmResponse, Message, TaskState, ToolCall, ToolDefinition, ToolError, ToolFailure,
    ToolProvider, ToolResult, TurnContext,
};
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
            _ => "other",
        })
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_are_recorded_in_memory() {
    let stores = looopy_stores_memory::stores();
    tool_turn_is_recorded(&stores, "c-rec-tools").await;
    compaction_is_recorded(&stores, "c-rec-compact").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_are_recorded_in_redis() {
    let prefix = format!("rec-{}", uuid::Uuid::new_v4().simple());
    let stores = support::redis_stores(&prefix).await;
    tool_turn_is_recorded(&stores, "c-rec-tools").await;
    compaction_is_recorded(&stores, "c-rec-compact").await;
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

async fn recovered_turn_is_recorded(stores: Stores) {
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
    assert_eq!(kinds(&record), ["model", "tool", "recovered", "model"]);
    assert!(matches!(
        record.steps[2].kind,
        StepKind::Recovered { previous_steps: 2 }
    ));
    assert_eq!(record.started_at, before.started_at);
    assert_eq!(record.outcome.unwrap().state, TaskState::Completed);
    assert_eq!(tools.fast.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_turn_shows_where_it_resumed_in_memory() {
    recovered_turn_is_recorded(looopy_stores_memory::stores()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_turn_shows_where_it_resumed_in_redis() {
    let prefix = format!("rec-{}", uuid::Uuid::new_v4().simple());
    recovered_turn_is_recorded(support::redis_stores(&prefix).await).await;
}
