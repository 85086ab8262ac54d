//! [`TaskRecordStore`] rules.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use looopy_core::store::{TaskRecord, TaskRecordStore};
use looopy_core::{TaskState, TaskStatus};
use tokio::sync::Barrier;

use super::fixtures::{TASK_STATES, at, full_message, metadata};
use super::{UniqueIds, join, ok};

const CONTENDERS: usize = 8;

/// A record with every field set.
fn full_record(
    task_id: &str,
    context_id: &str,
    owner: Option<&str>,
    state: TaskState,
    updated_at: DateTime<Utc>,
) -> TaskRecord {
    TaskRecord {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        owner: owner.map(str::to_owned),
        status: TaskStatus {
            state,
            message: Some(full_message(task_id, 1).into()),
            timestamp: at(7),
        },
        created_at: at(0),
        updated_at,
        last_event_id: Some("1767225600123-4".to_owned()),
        turn_start_event_id: Some("1767225600000-0".to_owned()),
        final_event_id: Some("1767225600123-4".to_owned()),
        turns: 3,
        turn_message_ids: vec![format!("{task_id}-m1"), "m:{2}%".to_owned()],
        version: 0,
        metadata: metadata(task_id),
    }
}

/// `record` as the store holds it after writes that gave it `version`.
fn at_version(record: &TaskRecord, version: u64) -> TaskRecord {
    TaskRecord {
        version,
        ..record.clone()
    }
}

fn ids_of(records: &[TaskRecord]) -> Vec<&str> {
    records.iter().map(|r| r.task_id.as_str()).collect()
}

/// Checks a [`TaskRecordStore`]: round trips of every field and state, versions,
/// replacement, delete, and `list` by owner, by context, by both and for
/// all owners (order, ties, limit, owner and context changes, deletes,
/// concurrent replacements); compare-and-put races, updates that lose
/// nothing, and the cancel flag.
pub async fn task_store(store: Arc<dyn TaskRecordStore>, ids: &UniqueIds) {
    round_trips(&*store, ids).await;
    listing(&*store, ids).await;
    concurrent_owner_changes(Arc::clone(&store), ids).await;
    task_store_across_handles(Arc::clone(&store), store, ids).await;
}

/// The atomic operations of a [`TaskRecordStore`] seen from two handles on one
/// backend (two processes sharing it): a compare-and-put race where exactly
/// one writer wins each version, concurrent [`TaskRecordStore::update`]s that
/// lose nothing, and a cancel flag raised through one handle and taken once
/// through the other.
pub async fn task_store_across_handles(
    a: Arc<dyn TaskRecordStore>,
    b: Arc<dyn TaskRecordStore>,
    ids: &UniqueIds,
) {
    compare_and_put_rules(&*a, &*b, ids).await;
    compare_and_put_race(&a, &b, ids).await;
    updates_lose_nothing(&a, &b, ids).await;
    cancel_flag(&a, &b, ids).await;
}

async fn compare_and_put_rules(a: &dyn TaskRecordStore, b: &dyn TaskRecordStore, ids: &UniqueIds) {
    let task = ids.next("task");
    let ctx = ids.next("ctx");
    let record = full_record(&task, &ctx, Some("owner"), TaskState::Submitted, at(1));
    assert!(
        ok(a.compare_and_put(&record).await, "compare_and_put creating"),
        "compare_and_put at version 0 must create a missing record"
    );
    assert!(
        !ok(b.compare_and_put(&record).await, "compare_and_put again"),
        "compare_and_put at version 0 must refuse once the record exists"
    );
    let stored = ok(b.get(&task).await, "get");
    assert_eq!(
        stored,
        Some(at_version(&record, 1)),
        "the first write gives version 1"
    );
    let mut next = at_version(&record, 1);
    next.status.state = TaskState::Working;
    assert!(ok(b.compare_and_put(&next).await, "compare_and_put at 1"));
    assert!(
        !ok(a.compare_and_put(&next).await, "stale compare_and_put"),
        "compare_and_put with a version read before another write must refuse"
    );
    assert_eq!(ok(a.get(&task).await, "get"), Some(at_version(&next, 2)));
    ok(a.put(&record).await, "put over version 2");
    assert_eq!(
        ok(b.get(&task).await, "get"),
        Some(at_version(&record, 3)),
        "put replaces whatever is stored and gives the next version"
    );
    assert_eq!(
        ok(b.list(None, Some(&ctx), 10).await, "list"),
        vec![at_version(&record, 3)],
        "list returns records with their versions"
    );

    // update: missing, declined, written.
    let missing = ids.next("task");
    assert_eq!(
        ok(
            a.update(&missing, &mut |_| true).await,
            "update of a missing task"
        ),
        None
    );
    assert_eq!(
        ok(a.get(&missing).await, "get"),
        None,
        "update creates nothing"
    );
    assert_eq!(
        ok(a.update(&task, &mut |_| false).await, "declined update"),
        None
    );
    assert_eq!(
        ok(b.get(&task).await, "get").map(|r| r.version),
        Some(3),
        "a declined update writes nothing"
    );
    let updated = ok(
        b.update(&task, &mut |r| {
            r.status.state = TaskState::Completed;
            true
        })
        .await,
        "update",
    );
    let mut expected = at_version(&record, 4);
    expected.status.state = TaskState::Completed;
    assert_eq!(
        updated,
        Some(expected.clone()),
        "update returns what it stored"
    );
    assert_eq!(ok(a.get(&task).await, "get"), Some(expected));
    ok(a.delete(&task).await, "cleanup delete");
}

async fn compare_and_put_race(
    a: &Arc<dyn TaskRecordStore>,
    b: &Arc<dyn TaskRecordStore>,
    ids: &UniqueIds,
) {
    let task = ids.next("task");
    let ctx = ids.next("ctx");
    let base = full_record(&task, &ctx, Some("owner"), TaskState::Working, at(1));
    ok(a.put(&base).await, "put");
    for round in 0..3u64 {
        let version = round + 1;
        let start = Arc::new(Barrier::new(CONTENDERS));
        let writers: Vec<_> = (0..CONTENDERS)
            .map(|n| {
                let store = Arc::clone(if n % 2 == 0 { a } else { b });
                let mut record = at_version(&base, version);
                record.turn_message_ids = vec![format!("round-{round}-writer-{n}")];
                let start = Arc::clone(&start);
                tokio::spawn(async move {
                    start.wait().await;
                    let won = ok(
                        store.compare_and_put(&record).await,
                        "racing compare_and_put",
                    );
                    won.then_some(record)
                })
            })
            .collect();
        let mut winners = Vec::new();
        for writer in writers {
            winners.extend(join(writer).await);
        }
        assert_eq!(
            winners.len(),
            1,
            "exactly one of {CONTENDERS} writers of version {version} must win, {} did",
            winners.len()
        );
        assert_eq!(
            ok(b.get(&task).await, "get"),
            Some(at_version(&winners[0], version + 1)),
            "the record must be the winner's, at the next version"
        );
    }
    ok(a.delete(&task).await, "cleanup delete");
}

async fn updates_lose_nothing(
    a: &Arc<dyn TaskRecordStore>,
    b: &Arc<dyn TaskRecordStore>,
    ids: &UniqueIds,
) {
    const EACH: usize = 5;
    let task = ids.next("task");
    let ctx = ids.next("ctx");
    let mut base = full_record(&task, &ctx, Some("owner"), TaskState::Working, at(1));
    base.turns = 0;
    base.turn_message_ids.clear();
    ok(a.put(&base).await, "put");
    let start = Arc::new(Barrier::new(CONTENDERS));
    let writers: Vec<_> = (0..CONTENDERS)
        .map(|n| {
            let store = Arc::clone(if n % 2 == 0 { a } else { b });
            let (start, task) = (Arc::clone(&start), task.clone());
            tokio::spawn(async move {
                start.wait().await;
                for i in 0..EACH {
                    let id = format!("writer-{n}-{i}");
                    let updated = ok(
                        store
                            .update(&task, &mut |r| {
                                r.turns += 1;
                                r.turn_message_ids.push(id.clone());
                                true
                            })
                            .await,
                        "concurrent update",
                    );
                    assert!(updated.is_some(), "an update of an existing record writes");
                }
            })
        })
        .collect();
    for writer in writers {
        join(writer).await;
    }
    let Some(last) = ok(a.get(&task).await, "get") else {
        panic!("conformance: a record updated concurrently must exist");
    };
    let total = CONTENDERS * EACH;
    assert_eq!(
        last.turns as usize, total,
        "{total} concurrent updates must all count (lost updates?)"
    );
    let mut seen = last.turn_message_ids.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen.len(),
        total,
        "every concurrent update must be kept exactly once"
    );
    assert_eq!(
        last.version,
        1 + total as u64,
        "each update gives one new version"
    );
    ok(a.delete(&task).await, "cleanup delete");
}

async fn cancel_flag(a: &Arc<dyn TaskRecordStore>, b: &Arc<dyn TaskRecordStore>, ids: &UniqueIds) {
    let task = ids.next("task");
    assert!(
        !ok(b.take_cancel(&task).await, "take_cancel"),
        "no cancel is requested at first"
    );
    ok(a.request_cancel(&task).await, "request_cancel");
    ok(a.request_cancel(&task).await, "request_cancel again");
    assert_eq!(
        ok(a.get(&task).await, "get"),
        None,
        "the cancel flag needs no record"
    );
    let start = Arc::new(Barrier::new(CONTENDERS));
    let takers: Vec<_> = (0..CONTENDERS)
        .map(|n| {
            let store = Arc::clone(if n % 2 == 0 { a } else { b });
            let (start, task) = (Arc::clone(&start), task.clone());
            tokio::spawn(async move {
                start.wait().await;
                ok(store.take_cancel(&task).await, "racing take_cancel")
            })
        })
        .collect();
    let mut taken = 0;
    for taker in takers {
        taken += usize::from(join(taker).await);
    }
    assert_eq!(taken, 1, "a cancel request must be taken exactly once");
    assert!(!ok(a.take_cancel(&task).await, "take_cancel after"));

    // delete forgets the flag with the record.
    let record = full_record(&task, &ids.next("ctx"), None, TaskState::Working, at(1));
    ok(a.put(&record).await, "put");
    ok(b.request_cancel(&task).await, "request_cancel");
    ok(a.delete(&task).await, "delete");
    assert!(
        !ok(b.take_cancel(&task).await, "take_cancel after delete"),
        "delete must lower the cancel flag"
    );
}

async fn round_trips(store: &dyn TaskRecordStore, ids: &UniqueIds) {
    let missing = ids.next("task");
    assert_eq!(ok(store.get(&missing).await, "get of a missing task"), None);
    ok(store.delete(&missing).await, "delete of a missing task");
    let nobody = ids.next("owner");
    assert!(
        ok(
            store.list(Some(&nobody), None, 10).await,
            "list of an unknown owner"
        )
        .is_empty(),
        "an unknown owner has no tasks"
    );
    let no_ctx = ids.next("ctx");
    assert!(
        ok(
            store.list(None, Some(&no_ctx), 10).await,
            "list of an unknown context"
        )
        .is_empty()
    );

    let owner = ids.next("owner");
    let ctx = ids.next("ctx");
    for state in TASK_STATES {
        let task = ids.next("task");
        let record = full_record(&task, &ctx, Some(&owner), state, at(10));
        ok(store.put(&record).await, "put");
        assert_eq!(
            ok(store.get(&task).await, "get"),
            Some(at_version(&record, 1)),
            "a task record in state {state:?} must round-trip field by field, at version 1"
        );
        ok(store.delete(&task).await, "cleanup delete");
    }

    // Without owner, status message, event ids, turns or metadata.
    let task = ids.next("task");
    let mut bare = TaskRecord::new(&task, &ctx, None, TaskStatus::new(TaskState::Submitted));
    bare.updated_at = at(11);
    bare.status.message = None;
    ok(store.put(&bare).await, "put without owner");
    assert_eq!(
        ok(store.get(&task).await, "get"),
        Some(at_version(&bare, 1))
    );

    // put replaces (including emptied metadata and a removed owner).
    let mut owned = full_record(&task, &ctx, Some(&owner), TaskState::Working, at(12));
    ok(store.put(&owned).await, "put replacing");
    assert_eq!(
        ok(store.get(&task).await, "get"),
        Some(at_version(&owned, 2))
    );
    owned.owner = None;
    owned.metadata.clear();
    owned.status.state = TaskState::Completed;
    ok(store.put(&owned).await, "put replacing again");
    assert_eq!(
        ok(store.get(&task).await, "get"),
        Some(at_version(&owned, 3)),
        "put must replace the whole record"
    );
    assert!(
        ok(store.list(Some(&owner), None, 10).await, "list").is_empty(),
        "a record whose owner was removed must leave the owner's list"
    );

    ok(store.delete(&task).await, "delete");
    assert_eq!(ok(store.get(&task).await, "get after delete"), None);
    ok(store.delete(&task).await, "second delete");
}

async fn listing(store: &dyn TaskRecordStore, ids: &UniqueIds) {
    let (alice, bob) = (ids.next("owner"), ids.next("owner"));
    let (c1, c2) = (ids.next("ctx"), ids.next("ctx"));
    // (owner, context, updated_at seconds)
    let layout: [(Option<&str>, &str, i64); 7] = [
        (Some(&alice), &c1, 30),
        (Some(&alice), &c1, 10),
        (Some(&alice), &c2, 20),
        (Some(&alice), &c2, 40),
        (Some(&bob), &c1, 50),
        (None, &c1, 5),
        (None, &c2, 60),
    ];
    let mut records = Vec::new();
    for (owner, ctx, seconds) in layout {
        let task = ids.next("task");
        let record = full_record(&task, ctx, owner, TaskState::Working, at(seconds));
        ok(store.put(&record).await, "put");
        records.push(at_version(&record, 1));
    }
    let id = |n: usize| records[n].task_id.as_str();
    let list = |owner: Option<&str>, ctx: Option<&str>, limit: usize| {
        let (owner, ctx) = (owner.map(str::to_owned), ctx.map(str::to_owned));
        async move {
            ok(
                store.list(owner.as_deref(), ctx.as_deref(), limit).await,
                "list",
            )
        }
    };

    let alices = list(Some(&alice), None, 10).await;
    assert_eq!(
        ids_of(&alices),
        [id(3), id(0), id(2), id(1)],
        "list by owner must return only that owner's records, most recently updated first"
    );
    assert_eq!(alices[0], records[3], "list must return whole records");
    assert_eq!(
        ids_of(&list(Some(&alice), None, 2).await),
        [id(3), id(0)],
        "list must honour its limit, keeping the most recent"
    );
    assert!(
        list(Some(&alice), None, 0).await.is_empty(),
        "a limit of 0 lists nothing"
    );
    assert_eq!(
        ids_of(&list(Some(&alice), Some(&c1), 10).await),
        [id(0), id(1)],
        "list by owner and context"
    );
    assert_eq!(
        ids_of(&list(None, Some(&c1), 10).await),
        [id(4), id(0), id(1), id(5)],
        "list by context covers every owner and none"
    );
    assert_eq!(
        ids_of(&list(None, Some(&c2), 2).await),
        [id(6), id(3)],
        "list by context honours its limit"
    );

    // All owners: on a shared backend other runs' records show up too, so
    // only check order, limit and that ours are there.
    let all = list(None, None, 100_000).await;
    assert!(
        all.windows(2).all(|w| w[0].updated_at >= w[1].updated_at),
        "list of all owners must be most recently updated first"
    );
    for record in &records {
        assert!(
            all.contains(record),
            "list of all owners must include task `{}`",
            record.task_id
        );
    }
    assert!(list(None, None, 3).await.len() <= 3, "limit of all owners");

    // Ties in updated_at are broken by task id, so pages are stable.
    let tie_owner = ids.next("owner");
    let mut tied = Vec::new();
    for _ in 0..5 {
        let task = ids.next("task");
        let record = full_record(&task, &c2, Some(&tie_owner), TaskState::Working, at(70));
        ok(store.put(&record).await, "put");
        tied.push(task);
    }
    let mut sorted = tied.clone();
    sorted.sort();
    assert_eq!(
        ids_of(&list(Some(&tie_owner), None, 10).await),
        sorted,
        "records updated at the same instant are listed by task id"
    );
    assert_eq!(
        ids_of(&list(Some(&tie_owner), None, 2).await),
        sorted[..2].to_vec(),
        "a limit that falls inside a tie keeps the lowest task ids"
    );

    // A newer update moves a record to the front; owner and context changes
    // move it between lists; a delete removes it.
    let mut moved = records[1].clone();
    moved.updated_at = at(100);
    moved.status.state = TaskState::Completed;
    ok(store.put(&moved).await, "put newer");
    assert_eq!(
        ids_of(&list(Some(&alice), None, 1).await),
        [id(1)],
        "a newer updated_at must move the record to the front"
    );
    assert_eq!(list(Some(&alice), None, 1).await[0], at_version(&moved, 2));

    let mut to_bob = records[0].clone();
    to_bob.owner = Some(bob.clone());
    to_bob.context_id = c2.clone();
    ok(
        store.put(&to_bob).await,
        "put with another owner and context",
    );
    ok(store.delete(id(2)).await, "delete");
    assert_eq!(
        ids_of(&list(Some(&alice), None, 10).await),
        [id(1), id(3)],
        "list by owner must follow owner changes and deletes"
    );
    assert_eq!(
        ids_of(&list(Some(&bob), None, 10).await),
        [id(4), id(0)],
        "a record put with a new owner is listed under it"
    );
    assert_eq!(
        ids_of(&list(Some(&alice), Some(&c1), 10).await),
        [id(1)],
        "list by owner and context must follow context changes"
    );
    assert_eq!(
        ids_of(&list(Some(&bob), Some(&c2), 10).await),
        [id(0)],
        "a record put with a new context is listed under it"
    );
    assert_eq!(
        ids_of(&list(None, Some(&c1), 10).await),
        [id(1), id(4), id(5)],
        "list by context must follow context changes"
    );
    assert!(
        !list(None, None, 100_000)
            .await
            .iter()
            .any(|r| r.task_id == id(2)),
        "a deleted record must not be listed"
    );

    for record in &records {
        ok(store.delete(&record.task_id).await, "cleanup delete");
    }
    for task in &tied {
        ok(store.delete(task).await, "cleanup delete");
    }
    assert!(list(Some(&alice), None, 10).await.is_empty());
    assert!(list(None, Some(&c1), 10).await.is_empty());
}

async fn concurrent_owner_changes(store: Arc<dyn TaskRecordStore>, ids: &UniqueIds) {
    let task = ids.next("task");
    let ctx = ids.next("ctx");
    let owners: Vec<String> = (0..CONTENDERS).map(|_| ids.next("owner")).collect();
    let start = Arc::new(Barrier::new(CONTENDERS));
    let writers: Vec<_> = owners
        .iter()
        .enumerate()
        .map(|(n, owner)| {
            let record = full_record(&task, &ctx, Some(owner), TaskState::Working, at(n as i64));
            let (store, start) = (Arc::clone(&store), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                ok(store.put(&record).await, "concurrent put");
            })
        })
        .collect();
    for writer in writers {
        join(writer).await;
    }
    let Some(last) = ok(store.get(&task).await, "get") else {
        panic!("conformance: a task put concurrently must exist");
    };
    for owner in &owners {
        let listed = ok(store.list(Some(owner), None, 10).await, "list");
        let expected: Vec<&str> = if last.owner.as_deref() == Some(owner.as_str()) {
            vec![task.as_str()]
        } else {
            Vec::new()
        };
        assert_eq!(
            ids_of(&listed),
            expected,
            "after concurrent puts the record must be listed under its final owner only"
        );
    }
    assert_eq!(
        ok(store.list(None, Some(&ctx), 10).await, "list"),
        vec![last],
        "after concurrent puts the context lists the record once, as stored"
    );
    ok(store.delete(&task).await, "cleanup delete");
}
