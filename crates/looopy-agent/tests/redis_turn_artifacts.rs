//! On the Redis stores, a turn's streamed artifacts are saved with its end
//! (the turn-end script) instead of one write each: a reader of the
//! artifact store finds, once the turn ended, every artifact the turn's
//! events announced, with every streamed chunk in order; held writes reach
//! the store before a tool runs; and a turn end refused for a lost lease
//! still stores what the turn announced.
#![allow(clippy::unwrap_used)]

use crate::support;

use looopy_agent::{Agent, FLUSH_EVERY};
use looopy_core::store::Stores;
use looopy_core::store::{ArtifactWrite, TurnArtifacts, TurnCommit};
use looopy_core::{
    AgentEvent, Artifact, EventPayload, FinishReason, LlmChunk, LlmResponse, Part, StoreError,
};
use looopy_testkit::ScriptedLlm;
use looopy_testkit::conformance::UniqueIds;

use support::{call, turn};

/// An agent on every Redis store, through the turn store when `combined`.
fn agent(ctx: &str, llm: &ScriptedLlm, stores: &Stores, combined: bool) -> Agent {
    support::every_store(ctx, llm, stores, combined)
        .build()
        .unwrap()
}

/// The text of an artifact's parts (a stored artifact holds its streamed
/// text in fewer, joined parts than the chunks it came in).
fn text(parts: &[Part]) -> String {
    parts.iter().map(|p| p.as_text().unwrap()).collect()
}

/// The text of each of an artifact's parts.
fn texts(parts: &[Part]) -> Vec<String> {
    parts
        .iter()
        .map(|p| p.as_text().unwrap().to_owned())
        .collect()
}

/// Per artifact id announced by the events, in order of first
/// announcement, the text the events built.
fn announced(events: &[AgentEvent]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for event in events {
        if let EventPayload::ArtifactUpdate {
            artifact, append, ..
        } = &*event.payload
        {
            let chunk = text(&artifact.parts);
            match out.iter_mut().find(|(id, _)| *id == artifact.artifact_id) {
                Some((_, seen)) if *append => seen.push_str(&chunk),
                Some((_, seen)) => *seen = chunk,
                None => out.push((artifact.artifact_id.clone(), chunk)),
            }
        }
    }
    out
}

fn streamed(deltas: &[String]) -> Vec<LlmChunk> {
    let mut chunks: Vec<LlmChunk> = deltas.iter().cloned().map(LlmChunk::TextDelta).collect();
    chunks.push(LlmChunk::Finish(FinishReason::Stop));
    chunks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_announced_artifact_is_stored_when_the_turn_has_ended() {
    let ids = UniqueIds::new();
    let stores = support::redis_stores(ids.prefix()).await;
    // More chunks than are buffered before a write: written as they come,
    // a put and several appends of one artifact; with the end, one put.
    let deltas: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    let mut stored_by_path = Vec::new();
    for combined in [true, false] {
        let ctx = ids.next("ctx");
        let llm = ScriptedLlm::new()
            .stream(streamed(&deltas))
            .respond(call("chart", &["k1"]))
            .respond(LlmResponse::text("Here is your chart."));
        let agent = agent(&ctx, &llm, &stores, combined);
        let mut announced_all = Vec::new();
        for prompt in ["long answer please", "draw"] {
            let (events, end) = turn(&agent, prompt).await;
            assert!(end.saved, "{end:?}");
            let seen = announced(&events);
            assert!(!seen.is_empty(), "the turn announced artifacts");
            // Read right after the turn ended, from the store, not the agent.
            for (id, built) in &seen {
                let found = stores
                    .artifacts
                    .get(&ctx, id)
                    .await
                    .unwrap()
                    .unwrap_or_else(|| panic!("announced artifact {id} is stored"));
                assert_eq!(&text(&found.artifact.parts), built, "artifact {id}");
                assert_eq!(found.task_id, end.task_id);
            }
            let mut ids: Vec<_> = seen.iter().map(|(id, _)| id.clone()).collect();
            ids.sort();
            let mut noted = end.artifact_ids.clone();
            noted.sort();
            assert_eq!(ids, noted, "the finished turn names what it announced");
            announced_all.extend(seen);
        }
        let listed = stores.artifacts.list(&ctx).await.unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|a| text(&a.artifact.parts))
                .collect::<Vec<_>>(),
            announced_all
                .iter()
                .map(|(_, c)| c.clone())
                .collect::<Vec<_>>(),
            "listed in the order they were announced"
        );
        assert_eq!(text(&listed[0].artifact.parts), deltas.concat());
        // One part per batch of chunks at most, not one per chunk.
        assert!(listed[0].artifact.parts.len() <= 1 + deltas.len().div_ceil(FLUSH_EVERY));
        stored_by_path.push(
            listed
                .iter()
                .map(|a| (a.artifact.name.clone(), text(&a.artifact.parts)))
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(
        stored_by_path[0], stored_by_path[1],
        "the turn end stores what writing each chunk as it streams stores"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_turn_end_still_stores_the_artifacts_it_carries() {
    let ids = UniqueIds::new();
    let stores = support::redis_stores(ids.prefix()).await;
    let turns = stores.turns.clone().unwrap();
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    assert!(
        turns.artifacts().is_some(),
        "the bundle's turn store takes the artifacts"
    );
    let writes = vec![
        ArtifactWrite::Put(Artifact::new("answer", vec![Part::text("a")]).with_name("response")),
        ArtifactWrite::Append {
            artifact_id: "answer".into(),
            parts: vec![Part::text("b"), Part::text("c")],
        },
        ArtifactWrite::Append {
            artifact_id: "fresh".into(),
            parts: vec![Part::text("x")],
        },
    ];
    let result = turns
        .commit_turn(TurnCommit {
            context_id: &ctx,
            lease_owner: Some("not-the-holder"),
            messages: &[std::sync::Arc::new(looopy_core::Message::assistant(
                "never saved",
            ))],
            state: None,
            forget_checkpoint: None,
            artifacts: Some(TurnArtifacts {
                task_id: &task,
                writes: &writes,
            }),
        })
        .await;
    assert!(
        matches!(result, Err(StoreError::LeaseLost { .. })),
        "{result:?}"
    );
    let listed = stores.artifacts.list(&ctx).await.unwrap();
    let got: Vec<_> = listed
        .iter()
        .map(|a| {
            (
                a.artifact.artifact_id.clone(),
                a.artifact.name.clone(),
                texts(&a.artifact.parts),
                a.task_id.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "answer".to_owned(),
                Some("response".to_owned()),
                vec!["a".to_owned(), "b".to_owned(), "c".to_owned()],
                task.clone()
            ),
            ("fresh".to_owned(), None, vec!["x".to_owned()], task.clone()),
        ]
    );
    assert!(
        stores.messages.load(&ctx).await.unwrap().is_empty(),
        "the refused end wrote no messages"
    );
}
