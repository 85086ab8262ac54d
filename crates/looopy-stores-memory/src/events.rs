//! [`MemoryEventLog`].

use hashbrown::HashMap;
use std::pin::pin;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream::BoxStream;
use looopy_core::store::follow::{FollowBatch, FollowSource, follow, follow_error};
use looopy_core::store::validate::{check_replacement, foreign_event_id};
use looopy_core::store::{EventLog, StoredEvent};
use looopy_core::{AgentEvent, StoreError};
use tokio::sync::Notify;

use crate::lock;
use crate::retention::{MemoryRetention, Retained};

/// How many events a follower takes from the log per lock.
const FOLLOW_BATCH: usize = 256;

#[derive(Debug, Clone)]
struct Entry {
    seq: u64,
    /// Shared with the appender and every reader: reading copies no event.
    event: Arc<AgentEvent>,
}

impl Entry {
    fn stored(&self) -> StoredEvent {
        StoredEvent {
            id: self.seq.to_string(),
            event: Arc::clone(&self.event),
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    logs: Retained<Vec<Entry>>,
    /// Source of ids: one sequence for the whole store, so that the ids of a
    /// task keep growing even after its log was deleted and started again.
    last_seq: u64,
    /// Tasks with live followers: whom to wake, and how many follow.
    watchers: HashMap<String, (Arc<Notify>, usize)>,
}

impl Inner {
    /// Entries of `task_id` with a sequence number above `after`.
    fn after(&self, task_id: &str, after: u64) -> &[Entry] {
        self.logs
            .peek(task_id)
            .map_or(&[], |log| entries_after(log, after))
    }
}

/// The entries of one task's log with a sequence number above `after`.
fn entries_after(log: &[Entry], after: u64) -> &[Entry] {
    let start = log.partition_point(|e| e.seq <= after);
    &log[start..]
}

/// Per-task event logs in memory.
///
/// Ids are decimal numbers from one sequence for the whole store, so they
/// grow in append order within every task. Appending and reading after an id
/// cost O(log n) plus what is read. [`EventLog::follow`] wakes on appends
/// through a [`Notify`] per followed task. [`with_retention`](Self::with_retention)
/// drops a task's log `ttl_secs` after its last append and keeps the logs
/// of at most `max_entries` tasks besides those in use, which the cap never
/// drops: a running task's (its last event is not final) and one a stream
/// follows, so that every stream reaches its task's final event. A
/// follower whose log is dropped under it all the same (by expiry, or
/// deleted) ends with [`StoreError::NotFound`] rather than waiting for
/// events that will not come.
#[derive(Debug, Default)]
pub struct MemoryEventLog {
    inner: Arc<Mutex<Inner>>,
}

impl MemoryEventLog {
    /// An empty log that keeps every task's events.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log whose task logs expire and are capped as `retention` says.
    pub fn with_retention(retention: &MemoryRetention) -> Self {
        MemoryEventLog {
            inner: Arc::new(Mutex::new(Inner {
                // An evicted task's log is freed after the lock (appends wait on it).
                logs: Retained::new(retention.ttl(), retention.cap()).defer_drops(),
                ..Inner::default()
            })),
        }
    }

    /// Number of events of a task.
    pub fn len(&self, task_id: &str) -> usize {
        lock(&self.inner).logs.peek(task_id).map_or(0, Vec::len)
    }
}

/// Whether the log's task is running (its last event is not final): the
/// cap must not drop it, a client may still follow it to its end.
fn running(log: &[Entry]) -> bool {
    log.last().is_some_and(|last| !last.event.is_final())
}

fn parse_id(id: Option<&str>) -> Result<u64, StoreError> {
    match id {
        None => Ok(0),
        Some(id) => id
            .parse()
            .map_err(|_| foreign_event_id(id, "the memory log's ids are decimal numbers")),
    }
}

/// A live follower: registers its task's [`Notify`] and unregisters on drop.
struct Watch {
    inner: Arc<Mutex<Inner>>,
    task_id: String,
    notify: Arc<Notify>,
}

impl Watch {
    fn new(inner: Arc<Mutex<Inner>>, task_id: String) -> Self {
        let notify = {
            let mut guard = lock(&inner);
            let (notify, followers) = guard
                .watchers
                .entry(task_id.clone())
                .or_insert_with(|| (Arc::new(Notify::new()), 0));
            *followers += 1;
            Arc::clone(notify)
        };
        Watch {
            inner,
            task_id,
            notify,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut guard = lock(&self.inner);
        if let Some((_, followers)) = guard.watchers.get_mut(&self.task_id) {
            *followers -= 1;
            if *followers == 0 {
                guard.watchers.remove(&self.task_id);
            }
        }
    }
}

/// What a follower of the memory log fetches from: the log, woken by appends.
struct Follow {
    watch: Watch,
    cursor: u64,
    /// Whether this follower read events from the log (so a missing log
    /// was dropped, not yet started).
    read_any: bool,
}

impl Follow {
    /// What the log holds after the cursor, at most a batch; moves the cursor.
    /// A log that is gone after the follower read from it was dropped (by
    /// retention, or deleted): its remaining events will never come.
    fn fill(&mut self) -> Result<FollowBatch, StoreError> {
        let guard = lock(&self.watch.inner);
        let Some(log) = guard.logs.peek(&self.watch.task_id) else {
            if self.read_any {
                return Err(StoreError::NotFound {
                    what: format!(
                        "the events of task `{}`: its log was dropped (retention or deletion) before the stream reached its end",
                        self.watch.task_id
                    ),
                });
            }
            return Ok(FollowBatch {
                events: Vec::new(),
                ended: false,
            });
        };
        // The log found above: no second look-up (a hash and a clock read).
        let entries = entries_after(log, self.cursor);
        if entries.is_empty() {
            // Nothing new: when the last event was the final one, nothing will come.
            let ended = log
                .last()
                .is_some_and(|last| last.seq <= self.cursor && last.event.is_final());
            return Ok(FollowBatch {
                events: Vec::new(),
                ended,
            });
        }
        let taken = &entries[..entries.len().min(FOLLOW_BATCH)];
        if let Some(last) = taken.last() {
            self.cursor = last.seq;
            self.read_any = true;
        }
        Ok(FollowBatch {
            events: taken.iter().map(Entry::stored).collect(),
            ended: false,
        })
    }
}

#[async_trait]
impl FollowSource for Follow {
    async fn next_batch(&mut self) -> Result<FollowBatch, StoreError> {
        loop {
            let notify = Arc::clone(&self.watch.notify);
            let mut notified = pin!(notify.notified());
            // Registered before looking, so an append after the look wakes us.
            notified.as_mut().enable();
            let batch = self.fill()?;
            if !batch.events.is_empty() || batch.ended {
                return Ok(batch);
            }
            notified.await;
        }
    }
}

#[async_trait]
impl EventLog for MemoryEventLog {
    async fn append(&self, task_id: &str, event: Arc<AgentEvent>) -> Result<String, StoreError> {
        let (seq, notify, evicted) = {
            let mut inner = lock(&self.inner);
            inner.last_seq += 1;
            let seq = inner.last_seq;
            // A running task's log, or one a stream follows, is in use.
            let Inner { logs, watchers, .. } = &mut *inner;
            logs.entry_or_insert_with_keeping(task_id, Vec::new, |task, log| {
                running(log) || watchers.contains_key(task)
            })
            .push(Entry { seq, event });
            let notify = inner.watchers.get(task_id).map(|(n, _)| Arc::clone(n));
            (seq, notify, inner.logs.take_evicted())
        };
        drop(evicted); // the logs the cap or expiry dropped, freed outside the lock
        if let Some(notify) = notify {
            notify.notify_waiters();
        }
        Ok(seq.to_string())
    }

    async fn read(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let after = parse_id(after)?;
        let inner = lock(&self.inner);
        Ok(inner
            .after(task_id, after)
            .iter()
            .take(limit)
            .map(Entry::stored)
            .collect())
    }

    fn follow<'a>(
        &'a self,
        task_id: &'a str,
        after: Option<String>,
    ) -> BoxStream<'a, Result<StoredEvent, StoreError>> {
        let cursor = match parse_id(after.as_deref()) {
            Ok(cursor) => cursor,
            Err(e) => return follow_error(e),
        };
        follow(Follow {
            watch: Watch::new(Arc::clone(&self.inner), task_id.to_owned()),
            cursor,
            read_any: false,
        })
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let removed = lock(&self.inner).logs.remove(task_id);
        drop(removed); // freed outside the lock
        Ok(())
    }

    async fn replace_entries(
        &self,
        task_id: &str,
        last: &str,
        remove: &[String],
        put: Vec<StoredEvent>,
    ) -> Result<bool, StoreError> {
        check_replacement(remove, &put)?;
        let last = parse_id(Some(last))?;
        let mut gone = remove
            .iter()
            .map(|id| parse_id(Some(id)))
            .collect::<Result<Vec<u64>, _>>()?;
        gone.sort_unstable();
        let mut put = put
            .into_iter()
            .map(|p| {
                Ok(Entry {
                    seq: parse_id(Some(&p.id))?,
                    event: p.event,
                })
            })
            .collect::<Result<Vec<Entry>, StoreError>>()?;
        put.sort_unstable_by_key(|e| e.seq);
        let removed: Vec<Entry> = {
            let mut inner = lock(&self.inner);
            let Some(log) = inner.logs.get_mut(task_id) else {
                return Ok(false);
            };
            if log.last().is_none_or(|e| e.seq != last) {
                return Ok(false);
            }
            let removed = log
                .extract_if(.., |e| gone.binary_search(&e.seq).is_ok())
                .collect();
            for entry in put {
                let at = log.partition_point(|e| e.seq < entry.seq);
                log.insert(at, entry);
            }
            log.shrink_to_fit();
            removed
        };
        // Freed outside the lock (a reader that took one keeps its share).
        drop(removed);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use looopy_core::EventPayload;

    fn text(n: u32) -> Arc<AgentEvent> {
        Arc::new(AgentEvent::new(
            "t".into(),
            "c".into(),
            EventPayload::Text {
                text: n.to_string(),
            },
        ))
    }

    #[tokio::test]
    async fn ids_keep_growing_after_a_delete() {
        let log = MemoryEventLog::new();
        let first = log.append("t", text(1)).await.unwrap();
        log.delete("t").await.unwrap();
        let second = log.append("t", text(2)).await.unwrap();
        assert!(second.parse::<u64>().unwrap() > first.parse::<u64>().unwrap());
        // A reader that had seen `first` still gets the new event.
        let after = log.read("t", Some(&first), 10).await.unwrap();
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].id, second);
    }

    #[tokio::test]
    async fn an_id_that_is_not_ours_is_an_error() {
        let log = MemoryEventLog::new();
        let err = log.read("t", Some("1-0"), 10).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
        let items: Vec<_> = log.follow("t", Some("x".into())).collect().await;
        assert_eq!(items.len(), 1);
        assert!(items[0].is_err());
    }

    #[tokio::test]
    async fn a_dropped_follower_unregisters() {
        let log = MemoryEventLog::new();
        let mut first = log.follow("t", None);
        let second = log.follow("t", None);
        assert_eq!(lock(&log.inner).watchers.get("t").map(|w| w.1), Some(2));
        drop(second);
        let event = text(1);
        log.append("t", Arc::clone(&event)).await.unwrap();
        assert_eq!(first.next().await.unwrap().unwrap().event, event);
        drop(first);
        assert!(lock(&log.inner).watchers.is_empty());
        assert_eq!(log.len("t"), 1);
    }
}
