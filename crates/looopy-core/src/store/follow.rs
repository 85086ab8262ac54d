//! The follow loop every [`EventLog`](super::EventLog) shares: a follower
//! hands out what it fetched, one event at a time, stops after a task's
//! final event, and ends on the first error. A log only says how to fetch
//! the next events after its cursor ([`FollowSource`]), waiting for them
//! as its backend can (a wake-up in memory, a blocking read in Redis).

use std::collections::VecDeque;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};

use super::{StoreError, StoredEvent};

/// What one fetch after a follower's cursor found.
#[derive(Debug, Default)]
pub struct FollowBatch {
    /// Events after the cursor, in log order (may be empty: fetched again).
    pub events: Vec<StoredEvent>,
    /// The log's last event, at or before the cursor, is a final one:
    /// nothing more will come, so the follower ends.
    pub ended: bool,
}

/// How a log fetches the events after a follower's cursor.
#[async_trait]
pub trait FollowSource: Send {
    /// The next events after the cursor, moving the cursor to the last of
    /// them. May wait for appends; an empty batch that has not `ended` is
    /// simply asked for again.
    async fn next_batch(&mut self) -> Result<FollowBatch, StoreError>;
}

/// The follower of `source`: its events up to and including the first final
/// one, then the end; on an error, that error, then the end.
pub fn follow<'a, S: FollowSource + 'a>(
    source: S,
) -> BoxStream<'a, Result<StoredEvent, StoreError>> {
    let follower = Follower {
        source,
        buffer: VecDeque::new(),
        done: false,
    };
    stream::unfold(follower, Follower::next).boxed()
}

/// A follower that fails at once: what `follow` returns for a cursor the
/// log cannot read (an id that is not one of its own).
pub fn follow_error<'a>(error: StoreError) -> BoxStream<'a, Result<StoredEvent, StoreError>> {
    stream::once(async move { Err(error) }).boxed()
}

struct Follower<S> {
    source: S,
    buffer: VecDeque<StoredEvent>,
    /// The buffer ends with the task's final event, or the log already ended.
    done: bool,
}

impl<S: FollowSource> Follower<S> {
    /// Buffers `events` up to and including the first final one.
    fn take(&mut self, events: Vec<StoredEvent>) {
        for event in events {
            let last = event.event.is_final();
            self.buffer.push_back(event);
            if last {
                self.done = true;
                break;
            }
        }
    }

    async fn next(mut self) -> Option<(Result<StoredEvent, StoreError>, Self)> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                return Some((Ok(event), self));
            }
            if self.done {
                return None;
            }
            match self.source.next_batch().await {
                Ok(batch) => {
                    self.done = batch.ended;
                    self.take(batch.events);
                }
                Err(e) => {
                    self.done = true;
                    return Some((Err(e), self));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::event::{AgentEvent, EventPayload};

    fn event(id: u32, is_final: bool) -> StoredEvent {
        let payload = if is_final {
            EventPayload::StatusUpdate {
                status: crate::task::TaskStatus::new(crate::task::TaskState::Completed),
                is_final: true,
                metadata: crate::StatusMetadata::default(),
            }
        } else {
            EventPayload::Text {
                text: id.to_string(),
            }
        };
        StoredEvent {
            id: id.to_string(),
            event: Arc::new(AgentEvent::new("t".into(), "c".into(), payload)),
        }
    }

    /// Hands out prepared batches, then fails.
    struct Batches(VecDeque<Result<FollowBatch, StoreError>>);

    #[async_trait]
    impl FollowSource for Batches {
        async fn next_batch(&mut self) -> Result<FollowBatch, StoreError> {
            self.0.pop_front().unwrap_or_else(|| {
                Err(StoreError::Unavailable {
                    message: "no more batches".into(),
                })
            })
        }
    }

    fn ids(items: &[Result<StoredEvent, StoreError>]) -> Vec<String> {
        items
            .iter()
            .map(|i| match i {
                Ok(e) => e.id.clone(),
                Err(e) => format!("error: {e}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn stops_after_the_first_final_event_and_asks_again_on_empty_batches() {
        let source = Batches(VecDeque::from([
            Ok(FollowBatch::default()),
            Ok(FollowBatch {
                events: vec![event(1, false)],
                ended: false,
            }),
            Ok(FollowBatch {
                events: vec![event(2, false), event(3, true), event(4, false)],
                ended: false,
            }),
        ]));
        let items: Vec<_> = follow(source).collect().await;
        assert_eq!(ids(&items), ["1", "2", "3"]);
    }

    #[tokio::test]
    async fn an_ended_log_ends_the_follower_and_an_error_is_the_last_item() {
        let ended = Batches(VecDeque::from([Ok(FollowBatch {
            events: Vec::new(),
            ended: true,
        })]));
        assert!(follow(ended).collect::<Vec<_>>().await.is_empty());
        let failing = Batches(VecDeque::from([Ok(FollowBatch {
            events: vec![event(1, false)],
            ended: false,
        })]));
        let items: Vec<_> = follow(failing).collect().await;
        assert_eq!(
            ids(&items),
            ["1", "error: store unavailable: no more batches"]
        );
    }
}
