//! On the Redis stores an Agent holds a streamed answer's artifact writes
//! until the turn-end script; a process that dies after the answer's
//! checkpoint but before that end must not lose the answer's artifact: the
//! resumed turn ends from the checkpoint without asking the model again,
//! and stores the artifact from the answer the checkpoint recorded. The
//! checkpoint builds on the stored history (it holds the turn's own
//! messages only) and is rebuilt whole for the resume; once that history
//! was rewritten, the resume fails with a message that says so.
//!
//! A "process" is a tokio runtime of its own, shut down while its turn's end
//! hangs in the turn store (as a SIGKILL would leave it); Redis outlives it.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use looopy_agent::{Agent, TurnOptions};
use looopy_core::store::{
    AgentStateStore, ArtifactStore, CheckpointStore, MessageStore, Stores, TurnBegin, TurnBegun,
    TurnCommit, TurnLock, TurnStore,
};
use looopy_core::{
    AgentEvent, EventPayload, FinishReason, LlmChunk, LlmResponse, Message, Part, Role, StoreError,
    TaskState,
};
use looopy_testkit::ScriptedLlm;
use looopy_testkit::conformance::UniqueIds;

const TTL: Duration = Duration::from_millis(300);

/// The bundle's Redis turn store.
fn redis_turns(stores: &Stores) -> Arc<dyn TurnStore> {
    stores
        .turns
        .clone()
        .expect("the Redis stores have a turn store")
}

/// The Redis turn store, except that a turn's end never comes back (the
/// process dies while it waits): the end script is never sent.
struct EndNeverSaved {
    inner: Arc<dyn TurnStore>,
    reached: Arc<AtomicBool>,
}

#[async_trait]
impl TurnStore for EndNeverSaved {
    fn messages(&self) -> &dyn MessageStore {
        self.inner.messages()
    }
    fn states(&self) -> Option<&dyn AgentStateStore> {
        self.inner.states()
    }
    fn lock(&self) -> Option<&dyn TurnLock> {
        self.inner.lock()
    }
    fn checkpoints(&self) -> Option<&dyn CheckpointStore> {
        self.inner.checkpoints()
    }
    fn artifacts(&self) -> Option<&dyn ArtifactStore> {
        self.inner.artifacts()
    }
    async fn begin_turn(&self, begin: TurnBegin<'_>) -> Result<TurnBegun, StoreError> {
        self.inner.begin_turn(begin).await
    }
    async fn commit_turn(&self, _: TurnCommit<'_>) -> Result<(), StoreError> {
        self.reached.store(true, Ordering::SeqCst);
        std::future::pending().await
    }
}

fn agent(ctx: &str, llm: &ScriptedLlm, stores: &Stores, turns: Arc<dyn TurnStore>) -> Agent {
    Agent::builder(ctx)
        .llm(llm.clone())
        .message_store(stores.messages.clone())
        .artifact_store(stores.artifacts.clone())
        .state_store(stores.agents.clone())
        .turn_lock(stores.locks.clone())
        .task_store(stores.checkpoints.clone())
        .turn_store(turns)
        .lock_ttl(TTL)
        .build()
        .unwrap()
}

fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).collect()
}

/// The answer artifacts the events announced: (id, text), in order.
fn announced(events: &[AgentEvent]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for event in events {
        if let EventPayload::ArtifactUpdate {
            artifact, append, ..
        } = &*event.payload
        {
            let text = text_of(&artifact.parts);
            match out.iter_mut().find(|(id, _)| *id == artifact.artifact_id) {
                Some((_, seen)) if *append => seen.push_str(&text),
                Some((_, seen)) => *seen = text,
                None => out.push((artifact.artifact_id.clone(), text)),
            }
        }
    }
    out
}

/// Runs a turn that streams `deltas` on a runtime of its own, until its end
/// is handed to the turn store, checks that the answer's artifact is not
/// stored yet (its writes ride with that end), then kills the runtime.
fn stream_and_die(ctx: &str, task: &str, stores: &Stores, deltas: &[&str]) {
    let mut chunks: Vec<LlmChunk> = deltas
        .iter()
        .map(|d| LlmChunk::TextDelta((*d).to_owned()))
        .collect();
    chunks.push(LlmChunk::Finish(FinishReason::Stop));
    let llm = ScriptedLlm::new().stream(chunks);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let reached = Arc::new(AtomicBool::new(false));
        let turns = Arc::new(EndNeverSaved {
            inner: redis_turns(stores),
            reached: reached.clone(),
        });
        let a = agent(ctx, &llm, stores, turns);
        let turn = a
            .execute_turn_with(
                Some(Message::user("answer at length")),
                TurnOptions::new()
                    .with_task_id(task)
                    .keep_running_on_drop(true),
            )
            .await
            .unwrap();
        drop(turn);
        for _ in 0..500 {
            if reached.load(Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(reached.load(Ordering::SeqCst), "the turn reached its end");
        let stored = stores.artifacts.list(ctx).await.unwrap();
        assert!(
            stored.iter().all(|a| a.task_id != task),
            "the answer's writes were held for the end, not stored while streaming"
        );
    });
    runtime.shutdown_background();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_streamed_before_the_process_died_is_stored_by_the_resumed_turn() {
    let ids = UniqueIds::new();
    let stores = support::redis_stores(ids.prefix()).await;
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    let deltas = ["The answer ", "is ", "forty", "-two."];
    let answer: String = deltas.concat();
    // An earlier turn, so that the checkpoint has a stored history to
    // build on.
    let first = ScriptedLlm::new().respond(LlmResponse::text("first answer"));
    let earlier = agent(&ctx, &first, &stores, redis_turns(&stores));
    let done = earlier
        .execute_turn(Some(Message::user("first question")), None)
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert!(done.saved);
    {
        let (ctx, task, stores) = (ctx.clone(), task.clone(), stores.clone());
        std::thread::spawn(move || stream_and_die(&ctx, &task, &stores, &deltas))
            .join()
            .unwrap();
    }

    // The window: the checkpoint holds the answer, the end was never saved.
    // The checkpoint builds on the stored history (the earlier turn and
    // this turn's input) and loads whole.
    let checkpoint = stores.checkpoints.load(&task).await.unwrap().unwrap();
    assert_eq!(checkpoint.stored_history.as_ref().map(|m| m.len), Some(3));
    let texts: Vec<String> = checkpoint.messages.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        [
            "first question",
            "first answer",
            "answer at length",
            &answer
        ]
    );
    assert_eq!(checkpoint.streamed_answers.len(), 1, "{checkpoint:?}");
    let before = stores.messages.load(&ctx).await.unwrap();
    assert_eq!(before.len(), 3, "the input was saved at the start");
    assert_eq!(before[2].role, Role::User);

    tokio::time::sleep(TTL * 2).await;
    // A model that is not asked: the resume ends from the checkpoint.
    let llm = ScriptedLlm::new();
    let survivor = agent(&ctx, &llm, &stores, redis_turns(&stores));
    let turn = survivor
        .resume_turn(&task, TurnOptions::new())
        .await
        .unwrap();
    let (events, summary) = turn.collect_all().await;
    let summary = summary.unwrap();
    assert!(llm.requests().is_empty(), "the model was not asked again");
    assert_eq!(summary.state, TaskState::Completed);
    assert!(summary.saved, "{summary:?}");
    assert_eq!(summary.message.unwrap().text(), answer);

    // The resumed turn announced the answer's artifact whole, and it is
    // stored with the answer's text under the id it streamed on.
    let artifact_id = &checkpoint.streamed_answers[0].artifact_id;
    assert_eq!(announced(&events), [(artifact_id.clone(), answer.clone())]);
    let stored = stores.artifacts.get(&ctx, artifact_id).await.unwrap();
    let stored = stored.expect("the answer's artifact is stored");
    assert_eq!(text_of(&stored.artifact.parts), answer);
    assert_eq!(stored.task_id, task);
    assert_eq!(stored.artifact.name.as_deref(), Some("response"));

    // The history has the answer once, and the turn is over for good.
    let saved = stores.messages.load(&ctx).await.unwrap();
    let roles: Vec<Role> = saved.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    assert_eq!(saved[3].text(), answer);
    assert!(stores.checkpoints.load(&task).await.unwrap().is_none());
    assert!(stores.locks.stranded(10).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_after_the_history_was_rewritten_fails_and_says_why() {
    let ids = UniqueIds::new();
    let stores = support::redis_stores(ids.prefix()).await;
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    {
        let (ctx, task, stores) = (ctx.clone(), task.clone(), stores.clone());
        std::thread::spawn(move || stream_and_die(&ctx, &task, &stores, &["an answer"]))
            .join()
            .unwrap();
    }
    assert!(
        stores
            .checkpoints
            .load(&task)
            .await
            .unwrap()
            .unwrap()
            .stored_history
            .is_some()
    );
    // Rewritten from outside while the turn was stranded.
    stores
        .messages
        .replace_range(&ctx, 0..1, &[Message::user("rewritten")])
        .await
        .unwrap();
    match stores.checkpoints.load(&task).await {
        Err(StoreError::HistoryRewritten { task_id, .. }) => assert_eq!(task_id, task),
        other => panic!("expected HistoryRewritten, got {other:?}"),
    }

    tokio::time::sleep(TTL * 2).await;
    let llm = ScriptedLlm::new();
    let survivor = agent(&ctx, &llm, &stores, redis_turns(&stores));
    let summary = survivor
        .resume_turn(&task, TurnOptions::new())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(summary.state, TaskState::Failed);
    let said = summary.message.unwrap().text();
    assert!(
        said.contains("cannot resume") && said.contains("rewritten"),
        "{said}"
    );
    assert!(llm.requests().is_empty());
    // The conversation is not stuck: the lease was given back.
    assert!(stores.locks.stranded(10).await.unwrap().is_empty());
}
