//! [`ArtifactStore`] rules.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use looopy_core::store::{ArtifactStore, StoredArtifact};
use looopy_core::{Artifact, Part};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use super::fixtures::{all_parts, full_artifact};
use super::{UniqueIds, join, ok};

const WRITERS: usize = 8;
const BATCHES: usize = 5;
const BATCH_SIZE: usize = 3;

/// Checks an [`ArtifactStore`]: round trips, `append_parts` creating and
/// appending in order, `put` replacing, list order, delete, clear, isolation
/// between contexts, and concurrent appends to one artifact.
pub async fn artifact_store(store: Arc<dyn ArtifactStore>, ids: &UniqueIds) {
    lifecycle(&*store, ids).await;
    concurrent_appends(store, ids).await;
}

fn ids_of(list: &[StoredArtifact]) -> Vec<&str> {
    list.iter()
        .map(|a| a.artifact.artifact_id.as_str())
        .collect()
}

async fn get(store: &dyn ArtifactStore, ctx: &str, id: &str) -> StoredArtifact {
    match ok(store.get(ctx, id).await, "get") {
        Some(stored) => stored,
        None => panic!("conformance: artifact `{id}` must exist"),
    }
}

/// Lets the clock move on, so that creation times differ even at a
/// millisecond resolution.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(15)).await;
}

async fn lifecycle(store: &dyn ArtifactStore, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let other_ctx = ids.next("ctx");
    let (t1, t2, t3) = (ids.next("task"), ids.next("task"), ids.next("task"));

    // Missing.
    assert_eq!(
        ok(store.get(&ctx, "nope").await, "get of a missing artifact"),
        None
    );
    assert!(ok(store.list(&ctx).await, "list of a missing context").is_empty());
    ok(
        store.delete(&ctx, "nope").await,
        "delete of a missing artifact",
    );
    ok(store.clear(&ctx).await, "clear of a missing context");

    // put: every field round-trips. Ids are chosen so that their sort order
    // is the reverse of creation order.
    let first = full_artifact("z-first");
    ok(store.put(&ctx, &t1, &first).await, "put");
    let stored_first = get(store, &ctx, "z-first").await;
    assert_eq!(
        stored_first.artifact, first,
        "put/get must round-trip every field"
    );
    assert_eq!(stored_first.context_id, ctx);
    assert_eq!(stored_first.task_id, t1);
    assert!(stored_first.created_at <= stored_first.updated_at);

    // append_parts creates a missing artifact, without a name.
    tick().await;
    let p1 = all_parts("p1");
    ok(
        store.append_parts(&ctx, &t2, "a-second", &p1).await,
        "append_parts creating",
    );
    let created = get(store, &ctx, "a-second").await;
    assert_eq!(
        created.artifact,
        Artifact::new("a-second", p1.clone()),
        "append_parts on a missing artifact must create it with exactly those parts"
    );
    assert_eq!(created.task_id, t2);
    assert_eq!(created.context_id, ctx);
    assert!(
        created.created_at >= stored_first.created_at,
        "created_at must follow creation"
    );

    // ... and then appends in order.
    let p2 = vec![Part::text("two-a"), Part::text("two-b")];
    let p3 = vec![Part::data(json!({"three": 3}))];
    ok(
        store.append_parts(&ctx, &t2, "a-second", &p2).await,
        "append_parts",
    );
    ok(
        store.append_parts(&ctx, &t2, "a-second", &[]).await,
        "append_parts of nothing",
    );
    ok(
        store.append_parts(&ctx, &t2, "a-second", &p3).await,
        "append_parts",
    );
    let grown = get(store, &ctx, "a-second").await;
    let expected: Vec<Part> = [p1, p2, p3].concat();
    assert_eq!(
        grown.artifact.parts, expected,
        "appended parts must keep their order"
    );
    assert_eq!(
        grown.created_at, created.created_at,
        "appending keeps created_at"
    );
    assert!(grown.updated_at >= created.updated_at);

    // Appending to a put artifact keeps its other fields.
    let extra = vec![Part::text("extra")];
    ok(
        store.append_parts(&ctx, &t1, "z-first", &extra).await,
        "append_parts",
    );
    let mut expected_first = first.clone();
    expected_first.parts.extend(extra);
    let appended_first = get(store, &ctx, "z-first").await;
    assert_eq!(
        appended_first.artifact, expected_first,
        "append_parts must keep name, description and metadata"
    );
    assert_eq!(appended_first.created_at, stored_first.created_at);

    tick().await;
    ok(store.put(&ctx, &t3, &full_artifact("m-third")).await, "put");
    assert_eq!(
        ids_of(&ok(store.list(&ctx).await, "list")),
        ["z-first", "a-second", "m-third"],
        "list must return artifacts oldest first"
    );

    // put on an existing id replaces it in place.
    let replacement = Artifact::new("z-first", vec![Part::text("replaced")]);
    ok(store.put(&ctx, &t3, &replacement).await, "put replacing");
    let replaced = get(store, &ctx, "z-first").await;
    assert_eq!(
        replaced.artifact, replacement,
        "put must replace the whole artifact"
    );
    assert_eq!(replaced.task_id, t3);
    assert_eq!(
        replaced.created_at, stored_first.created_at,
        "put on an existing artifact keeps its created_at"
    );
    let list = ok(store.list(&ctx).await, "list");
    assert_eq!(
        ids_of(&list),
        ["z-first", "a-second", "m-third"],
        "replacing keeps the artifact's place"
    );
    assert_eq!(list[0], replaced, "list must return what get returns");

    // The same id in another context is another artifact.
    let elsewhere = full_artifact("z-first").with_name("elsewhere");
    ok(
        store.put(&other_ctx, &t1, &elsewhere).await,
        "put in another context",
    );
    assert_eq!(get(store, &ctx, "z-first").await.artifact, replacement);
    assert_eq!(get(store, &other_ctx, "z-first").await.artifact, elsewhere);
    assert_eq!(ok(store.list(&other_ctx).await, "list").len(), 1);

    // delete and clear.
    ok(store.delete(&ctx, "a-second").await, "delete");
    assert_eq!(
        ok(store.get(&ctx, "a-second").await, "get after delete"),
        None
    );
    assert_eq!(
        ids_of(&ok(store.list(&ctx).await, "list after delete")),
        ["z-first", "m-third"]
    );
    ok(store.clear(&ctx).await, "clear");
    assert!(ok(store.list(&ctx).await, "list after clear").is_empty());
    assert_eq!(
        ok(store.get(&ctx, "z-first").await, "get after clear"),
        None
    );
    assert_eq!(
        get(store, &other_ctx, "z-first").await.artifact,
        elsewhere,
        "clear must not touch other contexts"
    );
    ok(store.clear(&other_ctx).await, "cleanup clear");
}

fn tag(part: &Part) -> (u64, u64, u64) {
    let get = |k: &str| match part {
        Part::Data { data } => data.get(k).and_then(Value::as_u64).unwrap_or(u64::MAX),
        _ => u64::MAX,
    };
    (get("w"), get("b"), get("i"))
}

async fn concurrent_appends(store: Arc<dyn ArtifactStore>, ids: &UniqueIds) {
    let ctx = ids.next("ctx");
    let task = ids.next("task");
    let start = Arc::new(Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (store, ctx, task) = (Arc::clone(&store), ctx.clone(), task.clone());
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                for b in 0..BATCHES {
                    let parts: Vec<Part> = (0..BATCH_SIZE)
                        .map(|i| Part::data(json!({"w": w, "b": b, "i": i})))
                        .collect();
                    ok(
                        store.append_parts(&ctx, &task, "shared", &parts).await,
                        "concurrent append_parts",
                    );
                }
            })
        })
        .collect();
    for writer in writers {
        join(writer).await;
    }
    let parts = get(&*store, &ctx, "shared").await.artifact.parts;
    assert_eq!(
        parts.len(),
        WRITERS * BATCHES * BATCH_SIZE,
        "concurrent append_parts (the first ones creating the artifact) must lose nothing"
    );
    let mut seen = HashSet::new();
    let mut last = [None; WRITERS];
    for chunk in parts.chunks(BATCH_SIZE) {
        let (w, b, _) = tag(&chunk[0]);
        for (i, part) in chunk.iter().enumerate() {
            assert_eq!(
                tag(part),
                (w, b, i as u64),
                "the parts of one append_parts call must stay together and in order"
            );
        }
        assert!(seen.insert((w, b)), "batch {w}/{b} stored twice");
        let previous = &mut last[w as usize];
        assert!(
            previous.is_none_or(|p| p < b),
            "writer {w}'s batches out of order"
        );
        *previous = Some(b);
    }
    assert_eq!(ok(store.list(&ctx).await, "list").len(), 1);
    ok(store.clear(&ctx).await, "cleanup clear");
}
