//! The response caches: a model request or a cacheable tool call seen
//! before is answered from the cache store, until its time-to-live passes.

#![allow(clippy::unwrap_used)]
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use looopy_core::{
    AuthContext, CacheKind, CacheStore, EventPayload, History, LlmResponse, Message, ToolCall,
    ToolResult, TurnContext,
};
use looopy_loop::AgentLoop;
use looopy_loop::layers::{LlmCacheLayer, ToolCacheLayer};
use looopy_stores_memory::MemoryCacheStore;
use looopy_testkit::ScriptedLlm;
use support::*;

fn answer(events: &[looopy_core::AgentEvent]) -> String {
    let EventPayload::StatusUpdate { status, .. } = &*final_event(events).payload else {
        unreachable!()
    };
    status.message.as_ref().unwrap().text()
}

async fn ask(agent: &AgentLoop, context: &str, text: &str) -> String {
    ask_events(agent, context, text).await.0
}

/// A cache that answered, and the tool call it answered (tool hits).
type Hit = (CacheKind, Option<String>);

/// The answer, and the caches that answered in the turn (its
/// `internal:cache-hit` events).
async fn ask_events(agent: &AgentLoop, context: &str, text: &str) -> (String, Vec<Hit>) {
    let history = History::from(vec![Message::user(text)]);
    let events =
        drain(agent.start_turn(history, TurnContext::new(format!("t-{context}"), context))).await;
    (answer(&events), hits(&events))
}

fn hits(events: &[looopy_core::AgentEvent]) -> Vec<Hit> {
    events
        .iter()
        .filter_map(|e| match &*e.payload {
            EventPayload::CacheHit { cache, call_id } => Some((*cache, call_id.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_request_seen_before_is_answered_from_the_cache_streamed_or_not() {
    for stream in [true, false] {
        let store: Arc<dyn CacheStore> = Arc::new(MemoryCacheStore::new());
        let llm = ScriptedLlm::new()
            .respond(LlmResponse::text("Paris"))
            .respond(LlmResponse::text("Rome"));
        let agent = AgentLoop::builder(llm.clone())
            .stream(stream)
            .llm_layer(LlmCacheLayer::new(store.clone(), Duration::from_secs(60)))
            .build();
        let (first, hits_first) = ask_events(&agent, "a", "capital of France?").await;
        assert_eq!(first, "Paris");
        assert!(hits_first.is_empty(), "a miss is no hit event");
        // Another conversation, the same request (message ids differ).
        let (again, hits_again) = ask_events(&agent, "b", "capital of France?").await;
        assert_eq!(again, "Paris");
        assert_eq!(
            hits_again,
            vec![(CacheKind::Llm, None)],
            "stream={stream}: the hit is an event of the turn"
        );
        assert_eq!(
            llm.request_count(),
            1,
            "stream={stream}: the second was a hit"
        );
        assert_eq!(ask(&agent, "c", "capital of Italy?").await, "Rome");
        assert_eq!(llm.request_count(), 2);
    }
}

#[tokio::test]
async fn a_cached_answer_expires_after_its_time_to_live() {
    let store: Arc<dyn CacheStore> = Arc::new(MemoryCacheStore::new());
    let llm = ScriptedLlm::new()
        .respond(LlmResponse::text("old"))
        .respond(LlmResponse::text("new"));
    let agent = AgentLoop::builder(llm.clone())
        .llm_layer(LlmCacheLayer::new(store, Duration::from_millis(200)))
        .build();
    assert_eq!(ask(&agent, "a", "news?").await, "old");
    assert_eq!(ask(&agent, "b", "news?").await, "old");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(ask(&agent, "c", "news?").await, "new");
    assert_eq!(llm.request_count(), 2);
}

#[tokio::test]
async fn only_tools_declared_cacheable_are_cached_per_arguments_and_principal() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let tools = FnTools::new()
        .tool("weather", move |c: ToolCall, _| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move { ToolResult::text(&c.id, format!("sunny #{n}")) }
        })
        .echo("clock", Duration::ZERO);
    let calls = |id: &str, args: &str| {
        LlmResponse::tool_calls(
            "",
            vec![
                ToolCall::new(format!("w{id}"), "weather", args),
                ToolCall::new(format!("c{id}"), "clock", "{}"),
            ],
        )
    };
    let llm = ScriptedLlm::new()
        .respond(calls("1", r#"{"city":"Paris"}"#))
        .respond(LlmResponse::text("ok"))
        .respond(calls("2", r#"{ "city" : "Paris" }"#))
        .respond(LlmResponse::text("ok"))
        .respond(calls("3", r#"{"city":"Oslo"}"#))
        .respond(LlmResponse::text("ok"))
        .respond(calls("4", r#"{"city":"Paris"}"#))
        .respond(LlmResponse::text("ok"));
    let store: Arc<dyn CacheStore> = Arc::new(MemoryCacheStore::new());
    let agent = AgentLoop::builder(llm)
        .tools(tools)
        .tool_layer(ToolCacheLayer::new(store, Duration::from_secs(60)).tool("weather"))
        .build();
    let all_hits: Arc<std::sync::Mutex<Vec<Vec<Hit>>>> = Arc::default();
    let turn = |user: &'static str, n: &'static str| {
        let agent = agent.clone();
        let seen_hits = all_hits.clone();
        async move {
            let cx = TurnContext::new(format!("t{n}"), format!("c{n}"))
                .with_auth(AuthContext::new(user));
            let stream = agent.start_turn(History::from(vec![Message::user("weather?")]), cx);
            let handle = stream.handle();
            let events = drain(stream).await;
            seen_hits.lock().unwrap().push(hits(&events));
            let history = handle.outcome().unwrap().history;
            let text = |id: String| {
                history
                    .iter()
                    .find(|m| m.tool_call_id.as_deref() == Some(id.as_str()))
                    .unwrap()
                    .text()
            };
            (text(format!("w{n}")), text(format!("c{n}")))
        }
    };
    let (w1, c1) = turn("alice", "1").await;
    assert_eq!(w1, "sunny #0");
    // The same arguments (spaced differently): the stored result.
    let (w2, c2) = turn("alice", "2").await;
    assert_eq!(w2, "sunny #0");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A tool not declared cacheable runs every time.
    assert_eq!((c1.as_str(), c2.as_str()), ("clock:{}", "clock:{}"));
    // Other arguments, or another principal: it runs.
    assert_eq!(turn("alice", "3").await.0, "sunny #1");
    assert_eq!(turn("bob", "4").await.0, "sunny #2");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // One hit event, in turn 2, naming the call it answered.
    let all_hits = all_hits.lock().unwrap().clone();
    assert_eq!(
        all_hits,
        vec![
            vec![],
            vec![(CacheKind::Tool, Some("w2".to_owned()))],
            vec![],
            vec![]
        ]
    );
}
