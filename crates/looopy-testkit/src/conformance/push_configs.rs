//! [`PushConfigStore`] rules.

use std::sync::Arc;

use looopy_core::store::{PushAuthentication, PushConfig, PushConfigStore};

use super::{UniqueIds, join, ok, within};

fn config(task_id: &str, id: &str, url: &str) -> PushConfig {
    PushConfig {
        task_id: task_id.to_owned(),
        id: id.to_owned(),
        url: url.to_owned(),
        token: None,
        authentication: None,
        protocol_version: "1.0".into(),
    }
}

/// Checks a [`PushConfigStore`]: every field round-trips, `put` replaces
/// the config of the same task and id, `list` is ordered by id and keeps
/// tasks apart, deletes of missing configs succeed, `delete` says whether
/// the config existed, `delete_all` forgets a task's configs only, and
/// concurrent puts of distinct ids lose none.
pub async fn push_config_store(store: Arc<dyn PushConfigStore>, ids: &UniqueIds) {
    let s = &*store;
    let task = ids.next("task");
    let other_task = ids.next("task");

    // Missing.
    assert_eq!(
        ok(s.get(&task, "nope").await, "get of a missing config"),
        None
    );
    assert!(ok(s.list(&task).await, "list of a task without configs").is_empty());
    assert!(!ok(
        s.delete(&task, "nope").await,
        "delete of a missing config"
    ));
    ok(
        s.delete_all(&task).await,
        "delete_all of a task without configs",
    );

    // Every field round-trips (ids with key delimiters included).
    let full = PushConfig {
        token: Some("tok-ü".into()),
        authentication: Some(PushAuthentication {
            schemes: vec!["Bearer".into(), "Basic".into()],
            credentials: Some("s3cret".into()),
        }),
        protocol_version: "0.3".into(),
        ..config(&task, "b:{odd}%", "https://example.com/hook?x=1")
    };
    ok(s.put(&full).await, "put");
    assert_eq!(
        ok(s.get(&task, "b:{odd}%").await, "get"),
        Some(full.clone()),
        "conformance: a push config must come back with every field equal"
    );

    // Replacement keeps one config per id.
    let replaced = config(&task, "b:{odd}%", "https://example.com/other");
    ok(s.put(&replaced).await, "put (replace)");
    assert_eq!(
        ok(s.get(&task, "b:{odd}%").await, "get after replace"),
        Some(replaced.clone())
    );

    // Listing: ordered by id, one task only.
    let a = config(&task, "a", "https://example.com/a");
    let c = config(&task, "c", "https://example.com/c");
    ok(s.put(&c).await, "put");
    ok(s.put(&a).await, "put");
    ok(
        s.put(&config(&other_task, "a", "https://example.com/x"))
            .await,
        "put",
    );
    let listed = ok(s.list(&task).await, "list");
    assert_eq!(
        listed,
        vec![a.clone(), replaced.clone(), c.clone()],
        "conformance: list must return the task's configs ordered by id"
    );

    // Delete says whether the config existed, and is idempotent.
    assert!(ok(s.delete(&task, "a").await, "delete"));
    assert!(!ok(s.delete(&task, "a").await, "second delete"));
    assert_eq!(ok(s.get(&task, "a").await, "get after delete"), None);
    assert_eq!(
        ok(s.list(&task).await, "list after delete"),
        vec![replaced, c]
    );

    // delete_all forgets one task's configs only.
    ok(s.delete_all(&task).await, "delete_all");
    assert!(ok(s.list(&task).await, "list after delete_all").is_empty());
    assert_eq!(
        ok(s.list(&other_task).await, "list of another task").len(),
        1,
        "conformance: delete_all must leave other tasks' configs alone"
    );
    ok(s.delete_all(&other_task).await, "delete_all");

    // Concurrent puts of distinct ids lose nothing.
    let busy = ids.next("task");
    let mut handles = Vec::new();
    for n in 0..16 {
        let store = Arc::clone(&store);
        let busy = busy.clone();
        handles.push(tokio::spawn(async move {
            let c = config(&busy, &format!("id-{n:02}"), "https://example.com/n");
            ok(store.put(&c).await, "concurrent put");
        }));
    }
    for handle in handles {
        within("a concurrent put", join(handle)).await;
    }
    let listed = ok(s.list(&busy).await, "list after concurrent puts");
    let expected: Vec<String> = (0..16).map(|n| format!("id-{n:02}")).collect();
    assert_eq!(
        listed.into_iter().map(|c| c.id).collect::<Vec<_>>(),
        expected,
        "conformance: concurrent puts of distinct ids must all be stored"
    );
    ok(s.delete_all(&busy).await, "delete_all");
}
