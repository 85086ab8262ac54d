//! Checkpointing and resume.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use looopy_core::store::CheckpointStore;
use looopy_core::{
    EventPayload, History, LlmResponse, Message, Role, TaskState, ToolCall, ToolResult, TurnContext,
};
use looopy_loop::{AgentLoop, TurnInput, TurnStream};
use looopy_stores_memory::MemoryCheckpointStore;
use looopy_testkit::ScriptedLlm;
use support::*;

fn cx() -> TurnContext {
    TurnContext::new("task-r", "ctx-r")
}

/// Tools `a`, `b`, `c`, all idempotent: `c` hangs unless `c_works`; every
/// run is counted.
fn tools(runs: Arc<AtomicUsize>, c_works: bool) -> FnTools {
    let mut t = FnTools::new();
    for name in ["a", "b", "c"] {
        let runs = runs.clone();
        t = t.tool(name, move |call, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            let name = call.name.clone();
            async move {
                if name == "c" && !c_works {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                ToolResult::text(&call.id, format!("result {name}"))
            }
        });
    }
    t.idempotent("a").idempotent("b").idempotent("c")
}

/// Waits (at most 5 s) until the stored checkpoint of the test task satisfies `ok`.
async fn wait_for(
    store: &MemoryCheckpointStore,
    ok: impl Fn(&looopy_core::store::TaskCheckpoint) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(c) = store.load("task-r").await.unwrap()
            && ok(&c)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the checkpoint never landed"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A loop with `tools` that checkpoints into `store`.
fn checkpointing(
    llm: ScriptedLlm,
    tools: FnTools,
    store: &Arc<MemoryCheckpointStore>,
) -> AgentLoop {
    AgentLoop::builder(llm)
        .tools(tools)
        .task_store(store.clone())
        .build()
}

/// Starts the test task on the user message "go".
fn go(agent: &AgentLoop) -> TurnStream {
    agent.start_turn(History::from(vec![Message::user("go")]), cx())
}

/// Reads `stream` up to its `n`th event of kind `kind`.
async fn read_until(stream: &mut TurnStream, kind: &str, n: usize) {
    let mut seen = 0;
    while let Some(e) = stream.next().await {
        if e.kind() == kind {
            seen += 1;
            if seen == n {
                return;
            }
        }
    }
    panic!("the turn ended before its event {kind} number {n}");
}

fn three_calls() -> LlmResponse {
    LlmResponse::tool_calls(
        "",
        vec![
            ToolCall::new("ca", "a", "{}"),
            ToolCall::new("cb", "b", "{}"),
            ToolCall::new("cc", "c", "{}"),
        ],
    )
}

#[tokio::test]
async fn checkpoints_are_taken_and_the_last_one_holds_the_final_state() {
    let store = Arc::new(MemoryCheckpointStore::new());
    let llm = calls_then(&[("ca", "a", "{}")], "ok");
    let agent = checkpointing(llm, tools(Arc::default(), true), &store);
    let events = drain(go(&agent)).await;
    // Six snapshots are taken (before it.1, after llm 1, after tool a, before
    // it.2, after llm 2, end); the writer may fold those that arrive while a
    // save runs into one save of the newest, but the end is always written,
    // before the final event.
    let saves = kinds(&events)
        .iter()
        .filter(|k| **k == "internal:checkpoint")
        .count();
    assert!((1..=6).contains(&saves), "{saves} saves");
    let k = kinds(&events);
    let last_save = k.iter().rposition(|k| *k == "internal:checkpoint").unwrap();
    assert!(
        last_save < k.len() - 1,
        "the last save precedes the final event"
    );
    let saved = store.load("task-r").await.unwrap().unwrap();
    assert_eq!(saved.state, TaskState::Completed);
    assert_eq!(saved.messages.len(), 4);
    assert_eq!(saved.turn_start, 1);
    assert_eq!(saved.iteration, 2);
}

#[tokio::test]
async fn per_turn_tools_handed_again_to_resume_with_run_the_missing_call() {
    let store = Arc::new(MemoryCheckpointStore::new());
    let first_runs = Arc::new(AtomicUsize::new(0));
    let llm = ScriptedLlm::new().respond(three_calls());
    // The loop has no tools of its own: a, b and c are the turn's.
    let agent = AgentLoop::builder(llm).task_store(store.clone()).build();
    let input = TurnInput::new().with_tools(Arc::new(tools(first_runs.clone(), false)));
    let mut stream = agent.start_turn_with(History::from(vec![Message::user("go")]), cx(), input);
    read_until(&mut stream, "internal:tool-complete", 2).await;
    wait_for(&store, |c| c.completed_tool_results.len() == 2).await;
    drop(stream);
    drop(agent);

    // A new process hands the turn's tools again (checkpoints cannot keep
    // a provider): only c, still missing, runs.
    let second_runs = Arc::new(AtomicUsize::new(0));
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("all three done"));
    let agent2 = AgentLoop::builder(llm2.clone())
        .task_store(store.clone())
        .build();
    let input = TurnInput::new().with_tools(Arc::new(tools(second_runs.clone(), true)));
    let events = drain(agent2.resume_with(cx(), input)).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(second_runs.load(Ordering::SeqCst), 1);
    let request = &llm2.requests()[0];
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let c_result = request
        .messages
        .iter()
        .find(|m| m.role == Role::Tool && m.text().contains("result c"));
    assert!(c_result.is_some(), "{:?}", request.messages);
}

#[tokio::test]
async fn resume_after_a_crash_mid_batch_runs_only_the_missing_calls() {
    let store = Arc::new(MemoryCheckpointStore::new());
    let first_runs = Arc::new(AtomicUsize::new(0));
    let llm = ScriptedLlm::new().respond(three_calls());
    let agent = checkpointing(llm, tools(first_runs.clone(), false), &store);
    let mut stream = go(&agent);
    // Read until a and b completed, then "crash" (drop everything).
    read_until(&mut stream, "internal:tool-complete", 2).await;
    // Checkpoints are written in the background: wait until the one after
    // the second completion landed, then "crash".
    wait_for(&store, |c| c.completed_tool_results.len() == 2).await;
    drop(stream);
    drop(agent);
    assert_eq!(first_runs.load(Ordering::SeqCst), 3);
    let saved = store.load("task-r").await.unwrap().unwrap();
    assert_eq!(saved.completed_tool_results.len(), 2);

    // A new process: new loop, new tool counters, c works now.
    let second_runs = Arc::new(AtomicUsize::new(0));
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("all three done"));
    let agent2 = checkpointing(llm2.clone(), tools(second_runs.clone(), true), &store);
    let stream = agent2.resume(cx());
    let handle = stream.handle();
    let events = drain(stream).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(second_runs.load(Ordering::SeqCst), 1, "only c ran again");
    let history = handle.outcome().unwrap().history;
    assert_eq!(
        tool_texts(&history),
        vec!["result a", "result b", "result c"]
    );
    assert_eq!(history.last().unwrap().text(), "all three done");
    assert_eq!(llm2.requests()[0].messages.len(), 5);
    assert_eq!(
        events[0].kind(),
        "status-update",
        "a resumed turn does not announce a new task"
    );
}

#[tokio::test]
async fn resume_after_a_crash_before_the_tools_ran_runs_them_all_once() {
    let store = Arc::new(MemoryCheckpointStore::new());
    let llm = ScriptedLlm::new().respond(three_calls());
    let agent = checkpointing(llm, tools(Arc::default(), false), &store);
    let mut stream = go(&agent);
    read_until(&mut stream, "internal:llm-response", 1).await;
    wait_for(&store, |c| c.messages.len() == 2).await;
    drop(stream);
    let runs = Arc::new(AtomicUsize::new(0));
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("fine"));
    let agent2 = checkpointing(llm2, tools(runs.clone(), true), &store);
    let events = drain(agent2.resume(cx())).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    // a and b may have finished before the crash (they are instant); c never did.
    let saved = store.load("task-r").await.unwrap().unwrap();
    let results = saved
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    assert_eq!(results, 3);
    assert!(runs.load(Ordering::SeqCst) >= 1);
}

#[tokio::test]
async fn resume_of_an_ended_task_reports_it_without_calling_the_model() {
    let store = Arc::new(MemoryCheckpointStore::new());
    let llm = ScriptedLlm::new().respond(LlmResponse::text("answer"));
    let agent = AgentLoop::builder(llm).task_store(store.clone()).build();
    drain(agent.start_turn(History::from(vec![Message::user("q")]), cx())).await;
    let llm2 = ScriptedLlm::new();
    let agent2 = AgentLoop::builder(llm2.clone()).task_store(store).build();
    let events = drain(agent2.resume(cx())).await;
    // The answer's artifact, announced again whole (its writes may have
    // been lost with the process), then the final state.
    assert_eq!(events.len(), 2);
    let looopy_core::EventPayload::ArtifactUpdate {
        artifact,
        append,
        last_chunk,
    } = &*events[0].payload
    else {
        panic!("expected the answer's artifact first, got {:?}", events[0]);
    };
    assert_eq!(artifact.parts.len(), 1);
    assert_eq!(artifact.parts[0].as_text(), Some("answer"));
    assert!(!append && *last_chunk);
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert_eq!(llm2.request_count(), 0);
}

#[tokio::test]
async fn resume_without_a_checkpoint_fails_clearly() {
    let agent = AgentLoop::builder(ScriptedLlm::new())
        .task_store(Arc::new(MemoryCheckpointStore::new()))
        .build();
    let events = drain(agent.resume(cx())).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    assert!(final_text(&events).contains("no checkpoint for task 'task-r'"));

    let no_store = AgentLoop::builder(ScriptedLlm::new()).build();
    let events = drain(no_store.resume(cx())).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
}

/// One run of a tool: its name and the idempotency key it was given.
type Run = (String, Option<String>);

/// What the tools of the crash test saw: every run, in order.
#[derive(Clone, Default)]
struct Seen {
    log: Arc<std::sync::Mutex<Vec<Run>>>,
}

impl Seen {
    fn runs(&self, tool: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| t == tool)
            .count()
    }

    fn keys(&self, tool: &str) -> Vec<Option<String>> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| t == tool)
            .map(|(_, k)| k.clone())
            .collect()
    }
}

/// `note` answers at once; `lookup` (idempotent) and `charge` (not) hang
/// unless `work`.
fn crash_tools(seen: Seen, work: bool) -> FnTools {
    let mut t = FnTools::new();
    for name in ["note", "lookup", "charge"] {
        let seen = seen.clone();
        t = t.tool(name, move |call, cx| {
            seen.log
                .lock()
                .unwrap()
                .push((call.name.clone(), cx.idempotency_key().map(str::to_owned)));
            async move {
                if call.name != "note" && !work {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                ToolResult::text(&call.id, format!("{} ok", call.name))
            }
        });
    }
    t.idempotent("lookup")
}

#[tokio::test]
async fn after_a_crash_completed_calls_stay_done_idempotent_calls_rerun_and_others_are_reported() {
    let store = Arc::new(MemoryCheckpointStore::new());
    // The model gives `lookup` no call id: the loop makes one.
    let llm = ScriptedLlm::new().respond(LlmResponse::tool_calls(
        "",
        vec![
            ToolCall::new("c-note", "note", "{}"),
            ToolCall::new("", "lookup", r#"{"q":1}"#),
            ToolCall::new("c-charge", "charge", r#"{"cents":500}"#),
        ],
    ));
    let first = Seen::default();
    let agent = checkpointing(llm, crash_tools(first.clone(), false), &store);
    let mut stream = go(&agent);
    read_until(&mut stream, "internal:tool-start", 3).await;
    // `note` is recorded, `lookup` and `charge` are in flight: crash.
    wait_for(&store, |c| c.completed_tool_results.len() == 1).await;
    drop(stream);
    drop(agent);
    let saved = store.load("task-r").await.unwrap().unwrap();
    let lookup_id = saved.messages.get(1).unwrap().tool_calls[1].id.clone();
    assert!(!lookup_id.is_empty(), "the loop gave the call an id");
    assert_eq!(saved.completed_tool_results[0].tool_call_id, "c-note");
    for tool in ["note", "lookup", "charge"] {
        assert_eq!(first.runs(tool), 1, "{tool} started before the crash");
    }
    assert_eq!(first.keys("lookup"), [Some(lookup_id.clone())]);
    assert_eq!(first.keys("charge"), [Some("c-charge".to_owned())]);

    // A new process: every tool works now.
    let second = Seen::default();
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("noted; charge unclear"));
    let agent2 = checkpointing(llm2.clone(), crash_tools(second.clone(), true), &store);
    let events = drain(agent2.resume(cx())).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));

    // The completed call never runs again; the idempotent one runs once,
    // under the same key; the other one does not run.
    assert_eq!(second.runs("note"), 0);
    assert_eq!(second.keys("lookup"), [Some(lookup_id.clone())]);
    assert_eq!(second.runs("charge"), 0);

    // The model's next request has every result, in the calls' order, the
    // last one the interrupted error.
    let request = &llm2.requests()[0];
    let results: Vec<&Message> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    let ids: Vec<&str> = results
        .iter()
        .map(|m| m.tool_call_id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["c-note", lookup_id.as_str(), "c-charge"]);
    assert_eq!(results[0].text(), "note ok");
    assert_eq!(results[1].text(), "lookup ok");
    assert!(results[2].is_error());
    assert!(
        results[2]
            .text()
            .contains("interrupted by a restart and not retried"),
        "{}",
        results[2].text()
    );

    // Events: one decision per in-flight call, none for the completed one.
    let interrupted: Vec<(String, String, bool)> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ToolInterrupted {
                name,
                call_id,
                retried,
            } => Some((name.clone(), call_id.clone(), *retried)),
            _ => None,
        })
        .collect();
    assert_eq!(
        interrupted,
        [
            ("lookup".to_owned(), lookup_id.clone(), true),
            ("charge".to_owned(), "c-charge".to_owned(), false),
        ]
    );
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::ToolStart { call, .. } => Some(call.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["lookup"], "only the idempotent call starts again");
    let charge_result = events
        .iter()
        .find_map(|e| match &*e.payload {
            EventPayload::ToolComplete { name, result, .. } if name == "charge" => Some(result),
            _ => None,
        })
        .expect("a tool-complete event for the call not retried");
    assert!(charge_result.is_error);
    assert_eq!(
        charge_result.failure,
        Some(looopy_core::ToolFailure::Interrupted)
    );
    let k = kinds(&events);
    let charge_decision = k
        .iter()
        .position(|k| *k == "internal:tool-interrupted")
        .unwrap();
    let first_llm_call = k.iter().position(|k| *k == "internal:llm-call").unwrap();
    assert!(
        charge_decision < first_llm_call,
        "the decisions come before the model is called again"
    );
}

#[tokio::test]
async fn a_call_in_flight_for_a_tool_that_is_gone_is_not_retried() {
    let store = Arc::new(MemoryCheckpointStore::new());
    let llm = ScriptedLlm::new().respond(LlmResponse::tool_calls(
        "",
        vec![ToolCall::new("c1", "lookup", "{}")],
    ));
    let seen = Seen::default();
    let agent = checkpointing(llm, crash_tools(seen.clone(), false), &store);
    let mut stream = go(&agent);
    read_until(&mut stream, "internal:tool-start", 1).await;
    wait_for(&store, |c| c.messages.len() == 2).await;
    drop(stream);
    // The new process no longer offers `lookup`.
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("ok"));
    let agent2 = AgentLoop::builder(llm2.clone())
        .task_store(store.clone())
        .build();
    let events = drain(agent2.resume(cx())).await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Completed));
    assert!(events.iter().any(|e| matches!(
        &*e.payload,
        EventPayload::ToolInterrupted { retried: false, .. }
    )));
    let last_result = llm2.requests()[0]
        .messages
        .iter()
        .rfind(|m| m.role == Role::Tool)
        .cloned()
        .unwrap();
    assert!(last_result.text().contains("not retried"));
}

#[tokio::test]
async fn approved_calls_interrupted_by_a_crash_run_again_on_resume_without_asking_again() {
    use looopy_loop::hooks::RequireApproval;
    use looopy_loop::{ApprovedCalls, TurnSettings};

    // The turn that asked ended earlier; the history holds its calls, open.
    let history = History::from(vec![
        Message::user("go"),
        LlmResponse::tool_calls(
            "",
            vec![
                ToolCall::new("ca", "a", "{}"),
                ToolCall::new("cc", "c", "{}"),
            ],
        )
        .message,
        ToolResult::text("ca", "result a").into_message(),
    ]);
    let store = Arc::new(MemoryCheckpointStore::new());
    let agent = AgentLoop::builder(ScriptedLlm::new())
        .tools(tools(Arc::default(), false))
        .hook(RequireApproval::new(["c"]))
        .task_store(store.clone())
        .build();
    let approved = ApprovedCalls {
        calls: vec![ToolCall::new("cc", "c", "{}")],
        then: None,
        ..Default::default()
    };
    let mut stream = agent.start_turn_approved(history, cx(), TurnSettings::default(), approved);
    // The approved call runs (and hangs): the process dies.
    read_until(&mut stream, "internal:tool-start", 1).await;
    wait_for(&store, |c| c.messages.len() == 3).await;
    drop(stream);
    drop(agent);

    let runs = Arc::new(AtomicUsize::new(0));
    let llm2 = ScriptedLlm::new().respond(LlmResponse::text("fine"));
    let agent2 = AgentLoop::builder(llm2.clone())
        .tools(tools(runs.clone(), true))
        .hook(RequireApproval::new(["c"]))
        .task_store(store.clone())
        .build();
    let events = drain(agent2.resume(cx())).await;
    assert_eq!(
        final_event(&events).state(),
        Some(TaskState::Completed),
        "not asked again"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "c ran again (idempotent)");
    let sent = llm2.requests().pop().unwrap().messages.to_vec();
    let c = sent
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("cc"))
        .unwrap();
    assert_eq!(c.text(), "result c");
}

#[tokio::test]
async fn resuming_without_a_checkpoint_ends_failed_with_an_outcome_saying_why() {
    let store = Arc::new(MemoryCheckpointStore::default());
    let agent = AgentLoop::builder(ScriptedLlm::new())
        .task_store(store)
        .build();
    let (events, outcome) = agent.resume(cx()).collect_all().await;
    assert_eq!(final_event(&events).state(), Some(TaskState::Failed));
    let outcome = outcome.expect("an outcome once the final event is out");
    assert_eq!(outcome.state, TaskState::Failed);
    let text = outcome.message.map(|m| m.text()).unwrap_or_default();
    assert!(text.starts_with("cannot resume:"), "{text}");
}

/// A tool `name` that notes in `on_record`, each time it runs, whether the
/// checkpoint saved in `store` holds its call.
fn checking_tool(
    name: &str,
    store: Arc<dyn CheckpointStore>,
    on_record: &Arc<std::sync::Mutex<Vec<bool>>>,
) -> FnTools {
    let on_record = on_record.clone();
    FnTools::new().tool(name, move |call, _| {
        let (store, on_record) = (store.clone(), on_record.clone());
        async move {
            let saved = store.load("task-r").await.unwrap();
            let recorded = saved.is_some_and(|c| {
                c.messages
                    .iter()
                    .any(|m| m.tool_calls.iter().any(|t| t.id == call.id))
            });
            on_record.lock().unwrap().push(recorded);
            ToolResult::text(&call.id, "done")
        }
    })
}

/// A checkpoint store in memory whose saves wait `wait` first (as on a slow
/// network).
struct WaitingSaves {
    store: MemoryCheckpointStore,
    wait: Duration,
}

impl WaitingSaves {
    fn new(wait: Duration) -> Arc<Self> {
        Arc::new(WaitingSaves {
            store: MemoryCheckpointStore::new(),
            wait,
        })
    }
}

#[async_trait::async_trait]
impl CheckpointStore for WaitingSaves {
    async fn save(
        &self,
        checkpoint: &looopy_core::store::TaskCheckpoint,
    ) -> Result<(), looopy_core::store::StoreError> {
        tokio::time::sleep(self.wait).await;
        self.store.save(checkpoint).await
    }
    async fn load(
        &self,
        task_id: &str,
    ) -> Result<Option<looopy_core::store::TaskCheckpoint>, looopy_core::store::StoreError> {
        self.store.load(task_id).await
    }
    async fn delete(&self, task_id: &str) -> Result<(), looopy_core::store::StoreError> {
        self.store.delete(task_id).await
    }
}

#[tokio::test]
async fn a_call_of_a_tool_that_is_not_idempotent_is_saved_before_it_runs() {
    // With saves landing late, a tool with side effects must still find its
    // own call in the saved checkpoint when it starts: a crash from then on
    // resumes with the call on record (reported interrupted, not run again)
    // instead of asking the model again and running the tool twice.
    let store = WaitingSaves::new(Duration::from_millis(200));
    let on_record = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tools = checking_tool("pay", store.clone(), &on_record);
    let llm = calls_then(&[("c-pay", "pay", "{}")], "done");
    let agent = AgentLoop::builder(llm)
        .tools(tools)
        .task_store(store.clone())
        .build();
    drain(go(&agent)).await;
    assert_eq!(*on_record.lock().unwrap(), vec![true]);
}

#[tokio::test]
async fn a_store_that_saves_in_place_holds_each_checkpoint_before_the_next_step() {
    // The memory store saves in place: the checkpoint holding the model's
    // call is stored when the call's (idempotent) tool starts, with no
    // writer task to wait for, and every snapshot is reported saved.
    let store = Arc::new(MemoryCheckpointStore::new());
    assert!(store.in_place().is_some());
    let on_record = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tools = checking_tool("look", store.clone(), &on_record).idempotent("look");
    let agent = AgentLoop::builder(calls_then(&[("c-look", "look", "{}")], "done"))
        .tools(tools)
        .task_store(store.clone())
        .build();
    let events = drain(go(&agent)).await;
    assert_eq!(*on_record.lock().unwrap(), vec![true]);
    let saved = events
        .iter()
        .filter(|e| e.kind() == "internal:checkpoint")
        .count();
    assert!(saved >= 4, "each snapshot is saved and reported: {saved}");
    let last = store.load("task-r").await.unwrap().unwrap();
    assert_eq!(last.state, TaskState::Completed);
}
