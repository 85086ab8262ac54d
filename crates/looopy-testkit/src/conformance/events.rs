//! [`EventLog`] rules.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use looopy_core::store::{EventLog, StoredEvent};
use looopy_core::{AgentEvent, EventPayload};
use tokio::sync::Barrier;

use super::fixtures::{every_event, final_event, numbered_event};
use super::{UniqueIds, join, ok, within};

const WRITERS: usize = 8;
const PER_WRITER: usize = 10;

/// Checks an [`EventLog`]: round trips of every event kind, ids, `read`
/// after an id with limits, isolation between tasks, `follow` (replay, live
/// events, end at the final event, start before the first event, several
/// followers), concurrent appends, entries replaced below the last one,
/// delete.
pub async fn event_log(log: Arc<dyn EventLog>, ids: &UniqueIds) {
    missing(&*log, ids).await;
    let (task, appended) = read_after(&*log, ids).await;
    follow_finished_log(&*log, &task, &appended).await;
    follow_live(Arc::clone(&log), ids).await;
    follow_before_first_event(Arc::clone(&log), ids).await;
    concurrent_appends(Arc::clone(&log), ids).await;
    replace_entries(&*log, ids).await;
    delete(&*log, &task).await;
}

async fn append_all(log: &dyn EventLog, task: &str, events: &[AgentEvent]) -> Vec<StoredEvent> {
    let mut stored = Vec::new();
    for event in events {
        let event = Arc::new(event.clone());
        let id = ok(log.append(task, Arc::clone(&event)).await, "append");
        stored.push(StoredEvent { id, event });
    }
    stored
}

async fn missing(log: &dyn EventLog, ids: &UniqueIds) {
    let task = ids.next("task");
    assert!(ok(log.read(&task, None, 10).await, "read of a missing task").is_empty());
    ok(log.delete(&task).await, "delete of a missing task");
}

async fn read_after(log: &dyn EventLog, ids: &UniqueIds) -> (String, Vec<StoredEvent>) {
    let task = ids.next("task");
    let ctx = ids.next("ctx");
    let appended = append_all(log, &task, &every_event(&task, &ctx)).await;
    let distinct: HashSet<&str> = appended.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(distinct.len(), appended.len(), "event ids must be distinct");

    assert_eq!(
        ok(log.read(&task, None, 1000).await, "read"),
        appended,
        "read must return every event in append order, with the ids append returned \
         and every field intact"
    );
    assert_eq!(
        ok(log.read(&task, None, 3).await, "read with a limit"),
        appended[..3].to_vec(),
        "read must honour its limit"
    );
    assert_eq!(
        ok(
            log.read(&task, Some(&appended[2].id), 4).await,
            "read after an id"
        ),
        appended[3..7].to_vec(),
        "read after an id must start right after it"
    );
    let last = &appended[appended.len() - 1].id;
    assert!(
        ok(
            log.read(&task, Some(last), 10).await,
            "read after the last id"
        )
        .is_empty(),
        "nothing comes after the last id"
    );

    // Paging with `after` visits every event once.
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = ok(log.read(&task, after.as_deref(), 4).await, "read a page");
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        paged.extend(page);
        assert!(
            paged.len() <= appended.len(),
            "paging must not repeat events"
        );
    }
    assert_eq!(
        paged, appended,
        "paging with `after` must visit every event once"
    );

    // Tasks are separate.
    let other = ids.next("task");
    let other_events = append_all(log, &other, &[numbered_event(&other, 1)]).await;
    assert_eq!(ok(log.read(&other, None, 10).await, "read"), other_events);
    assert_eq!(
        ok(log.read(&task, None, 1000).await, "read"),
        appended,
        "appending to another task must not change this one"
    );
    ok(log.delete(&other).await, "cleanup delete");
    (task, appended)
}

async fn collect(log: &dyn EventLog, task: &str, after: Option<String>) -> Vec<StoredEvent> {
    let stream = log.follow(task, after);
    ok(within("follow", stream.try_collect()).await, "follow")
}

async fn follow_finished_log(log: &dyn EventLog, task: &str, appended: &[StoredEvent]) {
    assert_eq!(
        collect(log, task, None).await,
        appended,
        "follow on a finished task must replay everything, then end after the final event"
    );
    assert_eq!(
        collect(log, task, Some(appended[4].id.clone())).await,
        appended[5..].to_vec(),
        "follow after an id must replay what comes after it"
    );
    let last = appended[appended.len() - 1].id.clone();
    assert!(
        collect(log, task, Some(last)).await.is_empty(),
        "follow after a task's final event must end at once"
    );
}

fn sleep_a_little() -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_millis(50))
}

async fn follow_live(log: Arc<dyn EventLog>, ids: &UniqueIds) {
    let task = ids.next("task");
    let before = append_all(
        &*log,
        &task,
        &[numbered_event(&task, 0), numbered_event(&task, 1)],
    )
    .await;

    let mut stream = log.follow(&task, None);
    for expected in &before {
        let got = within("follow replay", stream.next()).await;
        assert_eq!(
            got.map(|r| ok(r, "follow")).as_ref(),
            Some(expected),
            "follow must first replay what was appended"
        );
    }

    let appender = {
        let (log, task) = (Arc::clone(&log), task.clone());
        tokio::spawn(async move {
            sleep_a_little().await;
            let live = [
                numbered_event(&task, 2),
                numbered_event(&task, 3),
                final_event(&task),
                // After the final event: the stream must have ended before it.
                numbered_event(&task, 5),
            ];
            append_all(&*log, &task, &live).await
        })
    };
    let rest: Vec<StoredEvent> = ok(within("follow live", stream.try_collect()).await, "follow");
    let live = join(appender).await;
    assert_eq!(
        rest,
        live[..3].to_vec(),
        "follow must yield events appended while it waits, and end after the final one"
    );
    ok(log.delete(&task).await, "cleanup delete");
}

async fn follow_before_first_event(log: Arc<dyn EventLog>, ids: &UniqueIds) {
    let task = ids.next("task");
    let first = log.follow(&task, None);
    let second = log.follow(&task, None);
    let appender = {
        let (log, task) = (Arc::clone(&log), task.clone());
        tokio::spawn(async move {
            sleep_a_little().await;
            let events = [numbered_event(&task, 0), final_event(&task)];
            append_all(&*log, &task, &events).await
        })
    };
    let (a, b) = within(
        "two followers",
        futures::future::join(
            first.try_collect::<Vec<_>>(),
            second.try_collect::<Vec<_>>(),
        ),
    )
    .await;
    let appended = join(appender).await;
    assert_eq!(
        ok(a, "follow"),
        appended,
        "a follower that starts before the first event must get every event"
    );
    assert_eq!(
        ok(b, "follow"),
        appended,
        "every follower must get every event"
    );
    ok(log.delete(&task).await, "cleanup delete");
}

async fn concurrent_appends(log: Arc<dyn EventLog>, ids: &UniqueIds) {
    let task = ids.next("task");
    let start = Arc::new(Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (log, task) = (Arc::clone(&log), task.clone());
            let start = Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let events: Vec<AgentEvent> = (0..PER_WRITER)
                    .map(|n| numbered_event(&task, w * 1000 + n))
                    .collect();
                append_all(&*log, &task, &events).await
            })
        })
        .collect();
    let mut by_id: HashMap<String, Arc<AgentEvent>> = HashMap::new();
    for writer in writers {
        for stored in join(writer).await {
            assert!(
                by_id.insert(stored.id.clone(), stored.event).is_none(),
                "concurrent appends must get distinct ids (`{}` twice)",
                stored.id
            );
        }
    }
    let read = ok(log.read(&task, None, 10_000).await, "read");
    assert_eq!(
        read.len(),
        WRITERS * PER_WRITER,
        "concurrent appends must lose nothing"
    );
    let mut next_of_writer = [0; WRITERS];
    for stored in &read {
        assert_eq!(
            by_id.get(&stored.id),
            Some(&stored.event),
            "read must return each event under the id its append returned"
        );
        let EventPayload::Text { text } = &*stored.event.payload else {
            panic!("conformance: unexpected event {:?}", stored.event);
        };
        let n: usize = text
            .trim_start_matches("event ")
            .parse()
            .unwrap_or(usize::MAX);
        let (w, k) = (n / 1000, n % 1000);
        assert!(w < WRITERS, "unexpected event {:?}", stored.event);
        assert_eq!(
            k, next_of_writer[w],
            "each writer's events must be read in the order it appended them"
        );
        next_of_writer[w] += 1;
    }
    ok(log.delete(&task).await, "cleanup delete");
}

async fn delete(log: &dyn EventLog, task: &str) {
    ok(log.delete(task).await, "delete");
    assert!(
        ok(log.read(task, None, 100).await, "read after delete").is_empty(),
        "delete must forget every event"
    );
    let again = append_all(log, task, &[numbered_event(task, 42)]).await;
    assert_eq!(
        ok(
            log.read(task, None, 100).await,
            "read after delete and append"
        ),
        again,
        "a deleted log starts afresh"
    );
    ok(log.delete(task).await, "cleanup delete");
}

async fn replace_entries(log: &dyn EventLog, ids: &UniqueIds) {
    let task = ids.next("task");
    let events: Vec<AgentEvent> = (0..4)
        .map(|n| numbered_event(&task, n))
        .chain([final_event(&task)])
        .collect();
    let appended = append_all(log, &task, &events).await;
    let last = appended[4].id.clone();
    // Entries 1 and 2 become one event, in entry 2's place.
    let whole = StoredEvent {
        id: appended[2].id.clone(),
        event: Arc::new(numbered_event(&task, 12)),
    };
    let remove = [appended[1].id.clone(), appended[2].id.clone()];

    let stale = log
        .replace_entries(&task, &appended[3].id, &remove, vec![whole.clone()])
        .await;
    assert!(
        !ok(stale, "replace_entries with a stale last id"),
        "a call that did not see the log's last entry must change nothing"
    );
    assert_eq!(ok(log.read(&task, None, 100).await, "read"), appended);

    let done = log
        .replace_entries(&task, &last, &remove, vec![whole.clone()])
        .await;
    assert!(ok(done, "replace_entries"), "the log must be rewritten");
    let expected = vec![
        appended[0].clone(),
        whole.clone(),
        appended[3].clone(),
        appended[4].clone(),
    ];
    assert_eq!(
        ok(log.read(&task, None, 100).await, "read"),
        expected,
        "removed entries must be gone and the new event in its place, with its id"
    );
    for (after, from) in [(1, 1), (2, 2)] {
        assert_eq!(
            ok(
                log.read(&task, Some(&appended[after].id), 100).await,
                "read after a removed id"
            ),
            expected[from..].to_vec(),
            "a reader after a removed id must read every later event"
        );
    }
    assert_eq!(
        collect(log, &task, Some(appended[1].id.clone())).await,
        expected[1..].to_vec(),
        "follow after a removed id must replay every later event and end"
    );
    let again = log
        .replace_entries(&task, &last, &remove, vec![whole.clone()])
        .await;
    assert!(
        ok(again, "the same replacement again"),
        "the same call again must leave the log as it is"
    );
    assert_eq!(ok(log.read(&task, None, 100).await, "read"), expected);

    let next = append_all(log, &task, &[numbered_event(&task, 5)]).await;
    assert_eq!(
        ok(
            log.read(&task, Some(&last), 100).await,
            "read after the rewrite"
        ),
        next,
        "appends must go on after a rewritten log"
    );

    let misplaced = log
        .replace_entries(
            &task,
            &next[0].id,
            std::slice::from_ref(&appended[0].id),
            vec![StoredEvent {
                id: appended[3].id.clone(),
                event: Arc::new(numbered_event(&task, 13)),
            }],
        )
        .await;
    assert!(
        matches!(misplaced, Err(looopy_core::StoreError::Conflict { .. })),
        "an event put in the place of an entry not removed must be refused: {misplaced:?}"
    );
    let missing = log
        .replace_entries(&ids.next("task"), &last, &remove, Vec::new())
        .await;
    assert!(
        !ok(missing, "replace_entries on a missing task"),
        "a missing log must be left alone"
    );
    ok(log.delete(&task).await, "cleanup delete");
}
