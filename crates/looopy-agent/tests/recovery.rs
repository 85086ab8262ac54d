//! Recovering a turn whose process died: the stranded lease, `resume_turn`,
//! exactly one winner among recoverers, completed tool calls not run again.
//!
//! A "process" is a tokio runtime of its own: shutting it down drops every
//! task it ran (the turn, the lease renewer) without releasing anything,
//! as a SIGKILL would; the stores outlive it, as Redis would.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use looopy_agent::{Agent, AgentError, BusyHolder, TurnOptions};
use looopy_core::store::Stores;
use looopy_core::{
    LlmResponse, Message, Role, TaskState, ToolCall, ToolDefinition, ToolError, ToolProvider,
    ToolResult, TurnContext,
};
use looopy_stores_memory::MemoryTurnLock;
use looopy_testkit::ScriptedLlm;
use support::{builder, call, send, start_turn};

const TTL: Duration = Duration::from_millis(300);

/// `fast` answers at once; `hang` never answers. Counts the calls of each.
#[derive(Default)]
struct Tools {
    fast: AtomicUsize,
    hang: AtomicUsize,
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
        self.hang.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }
}

fn agent(ctx: &str, llm: &ScriptedLlm, stores: &Stores, tools: Arc<Tools>) -> Agent {
    builder(ctx, llm, stores)
        .tools(tools)
        .task_store(stores.checkpoints.clone())
        .turn_lock(stores.locks.clone())
        .lock_ttl(TTL)
        .build()
        .unwrap()
}

/// Starts a turn (with `options`, kept running when its stream is dropped)
/// on a runtime and a thread of its own, on the agent that `agent` builds
/// around a model that calls `fast` and `hang`; waits until `fast`'s result
/// is checkpointed, then kills the runtime. Returns the task id.
fn run_and_die(
    stores: &Stores,
    agent: impl FnOnce(&ScriptedLlm) -> Agent + Send + 'static,
    options: TurnOptions,
) -> String {
    let stores = stores.clone();
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
            let a = agent(&llm);
            let turn = a
                .execute_turn_with(
                    Some(Message::user("do both")),
                    options.keep_running_on_drop(true),
                )
                .await
                .unwrap();
            let task_id = turn.task_id().to_owned();
            drop(turn);
            // Until the checkpoint holds fast's result.
            for _ in 0..500 {
                if let Some(c) = stores.checkpoints.load(&task_id).await.unwrap()
                    && c.completed_tool_results
                        .iter()
                        .any(|r| r.tool_call_id == "call-fast")
                {
                    return task_id;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("the fast call never reached the checkpoint");
        });
        runtime.shutdown_background();
        task_id
    })
    .join()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranded_turn_is_resumed_by_one_other_process_and_saved() {
    // The memory lock itself, to read who holds the lease.
    let locks = Arc::new(MemoryTurnLock::new());
    let stores = Stores {
        locks: locks.clone(),
        ..looopy_stores_memory::stores()
    };
    let tools = Arc::new(Tools::default());
    let task_id = {
        let (on, tools) = (stores.clone(), tools.clone());
        let options = TurnOptions::new().with_task_id("task-1");
        run_and_die(&stores, move |llm| agent("c-rec", llm, &on, tools), options)
    };
    assert_eq!(tools.fast.load(Ordering::SeqCst), 1);

    // Survivors: both see the stranded lease once it ran out.
    tokio::time::sleep(TTL * 2).await;
    let stranded = stores.locks.stranded(10).await.unwrap();
    assert_eq!(stranded.len(), 1);
    assert_eq!(stranded[0].task_id.as_deref(), Some(task_id.as_str()));
    let llm = ScriptedLlm::new().respond(LlmResponse::text("all done"));
    let b = agent("c-rec", &llm, &stores, tools.clone());
    let c = agent("c-rec", &llm, &stores, tools.clone());

    // A new turn may not jump the queue: the stranded one goes first.
    match b.execute_turn(Some(Message::user("next")), None).await {
        Err(AgentError::Busy(busy)) => {
            assert_eq!(busy.holder, BusyHolder::StrandedTurn);
            assert_eq!(busy.task_id.as_deref(), Some(task_id.as_str()));
        }
        other => panic!("expected a stranded-turn busy error, got {other:?}"),
    }

    // Two recoverers at once: exactly one resumes.
    let (rb, rc) = tokio::join!(
        b.resume_turn(&task_id, TurnOptions::new()),
        c.resume_turn(&task_id, TurnOptions::new())
    );
    let turn = match (rb, rc) {
        (Ok(t), Err(e)) | (Err(e), Ok(t)) => {
            assert!(e.is_busy(), "{e}");
            t
        }
        (Ok(_), Ok(_)) => panic!("two processes resumed the same turn"),
        (Err(a), Err(b)) => panic!("nobody resumed the turn: {a} / {b}"),
    };
    assert_eq!(turn.task_id(), task_id);
    let summary = turn.finish().await.unwrap();
    assert_eq!(summary.state, TaskState::Completed);
    assert_eq!(summary.message.unwrap().text(), "all done");

    // fast ran once, before the crash: its result came from the checkpoint;
    // hang (not declared idempotent) was not run again.
    assert_eq!(tools.fast.load(Ordering::SeqCst), 1);
    assert_eq!(tools.hang.load(Ordering::SeqCst), 1);
    // The model saw both results: fast's, and one for the interrupted call.
    let seen = &llm.requests()[0].messages;
    let results: Vec<&str> = seen
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(results, ["call-fast", "call-hang"]);

    // Saved once, in order: user, tool calls, two results, answer.
    let saved = stores.messages.load("c-rec").await.unwrap();
    let roles: Vec<Role> = saved.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert!(stores.locks.stranded(10).await.unwrap().is_empty());
    assert_eq!(locks.holder("c-rec"), None, "the lease was released");

    // The conversation goes on.
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("second"));
    let d = agent("c-rec", &llm2, &stores, tools);
    let s = send(&d, Message::user("next")).await;
    assert_eq!(s.turn_number, 2);
    assert_eq!(llm2.requests()[0].messages.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_turn_cannot_be_resumed_elsewhere() {
    let stores = looopy_stores_memory::stores();
    let tools = Arc::new(Tools::default());
    let llm = ScriptedLlm::new().respond(call("hang", &["h1"]));
    let a = agent("c-live", &llm, &stores, tools.clone());
    let running = start_turn(&a, "go", TurnOptions::new().with_task_id("t-live")).await;
    let cancel = running.cancellation_token();
    // A turn runs on the task that reads it: read on a task of its own.
    let running = tokio::spawn(running.finish());
    tokio::time::sleep(TTL * 2).await;
    let b = agent("c-live", &ScriptedLlm::new(), &stores, tools);
    let err = b
        .resume_turn("t-live", TurnOptions::new())
        .await
        .unwrap_err();
    assert!(err.is_busy(), "{err}");
    assert!(stores.locks.stranded(10).await.unwrap().is_empty());
    cancel.cancel();
    let s = running.await.unwrap().unwrap();
    assert_eq!(s.state, TaskState::Canceled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_turn_tools_given_to_resume_turn_serve_the_resumed_turn() {
    let stores = looopy_stores_memory::stores();
    // The agent has no tools of its own: `fast` and `hang` are the turn's.
    let tools = Arc::new(Tools::default());
    let task_id = {
        let on = stores.clone();
        let options = TurnOptions::new()
            .with_task_id("task-tt")
            .with_tools(tools.clone());
        run_and_die(
            &stores,
            move |llm| bare_agent("c-turn-tools", llm, &on),
            options,
        )
    };
    tokio::time::sleep(TTL * 2).await;

    // The model answers the resumed turn by calling `fast` again: only a
    // turn that was given its tools again can run it.
    let llm = ScriptedLlm::new()
        .respond(call("fast", &["again"]))
        .respond(LlmResponse::text("done"));
    let b = bare_agent("c-turn-tools", &llm, &stores);
    let summary = b
        .resume_turn(&task_id, TurnOptions::new().with_tools(tools.clone()))
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(summary.state, TaskState::Completed);
    assert_eq!(tools.fast.load(Ordering::SeqCst), 2);
    let offered: Vec<String> = llm.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    // The agent's own built-ins (`read_tool_output`) come first.
    assert!(
        offered.ends_with(&["fast".to_owned(), "hang".to_owned()]),
        "{offered:?}"
    );
    let again = llm.requests()[1]
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("again"))
        .unwrap()
        .text();
    assert_eq!(again, "fast result");
}

/// An agent with no tools of its own.
fn bare_agent(ctx: &str, llm: &ScriptedLlm, stores: &Stores) -> Agent {
    builder(ctx, llm, stores)
        .task_store(stores.checkpoints.clone())
        .turn_lock(stores.locks.clone())
        .lock_ttl(TTL)
        .build()
        .unwrap()
}
