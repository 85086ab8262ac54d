//! [`RedisEventLog`]: one Redis stream per task.

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use looopy_core::store::follow::{FollowBatch, FollowSource, follow, follow_error};
use looopy_core::store::validate::{check_replacement, foreign_event_id};
use looopy_core::store::{EventLog, StoredEvent};
use looopy_core::{AgentEvent, StoreError};
use redis::streams::{StreamId, StreamRangeReply, StreamReadReply};

use crate::backend::{RedisBackend, Retry};
use crate::connection::Connection;
use crate::error::{corrupt, from_redis};
use crate::scripts::EVENTS_REPLACE;

/// How many entries one read takes.
const BATCH: usize = 256;
/// The field of a stream entry that holds the event.
const FIELD: &str = "e";

/// Per-task event logs as Redis streams (`P:{task:T}:events`): `append` is
/// `XADD` and the stream ids are the event ids, so ids sort in append order
/// and `read` after an id is `XRANGE` from the exclusive start `(id`.
///
/// `follow` replays with `XRANGE` on pooled connections, then waits for new
/// entries with `XREAD BLOCK` on **a connection of its own**: a blocked
/// `XREAD` holds its connection until it returns, and on a shared
/// (multiplexed) one every command queued behind it would wait too. Each
/// blocking read waits at most `follow_block_ms`, then the follower asks
/// again, so a follower of a task that never ends costs one idle connection
/// and one round trip per `follow_block_ms`, until the stream is dropped
/// (which closes its connection). A follower whose connection fails yields
/// [`StoreError::Unavailable`] and ends. On a Redis Cluster the follower's
/// connection is a cluster connection of its own; its `XREAD` goes to the
/// master of the task's slot.
#[derive(Debug, Clone)]
pub struct RedisEventLog {
    backend: RedisBackend,
}

/// A stream id, `<ms>-<seq>`.
fn parse_id(id: &str) -> Result<(u64, u64), StoreError> {
    let not_ours = || foreign_event_id(id, "the Redis log's ids are stream ids `<ms>-<seq>`");
    let (ms, seq) = id.split_once('-').ok_or_else(not_ours)?;
    Ok((
        ms.parse().map_err(|_| not_ours())?,
        seq.parse().map_err(|_| not_ours())?,
    ))
}

fn decode(entry: &StreamId) -> Result<StoredEvent, StoreError> {
    let json: String = entry
        .get(FIELD)
        .ok_or_else(|| corrupt(format!("stream entry {} has no event", entry.id)))?;
    Ok(StoredEvent {
        id: entry.id.clone(),
        event: serde_json::from_str(&json)?,
    })
}

impl RedisEventLog {
    /// Event logs on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisEventLog { backend }
    }

    async fn range(
        &self,
        key: &str,
        after: Option<&str>,
        count: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let start = match after {
            Some(id) => {
                parse_id(id)?;
                format!("({id}")
            }
            None => "-".to_owned(),
        };
        let mut cmd = redis::cmd("XRANGE");
        cmd.arg(key).arg(start).arg("+").arg("COUNT").arg(count);
        let reply: StreamRangeReply = self.backend.query(&cmd, Retry::Safe).await?;
        reply.ids.iter().map(decode).collect()
    }

    /// The last event of a log, if any.
    async fn last(&self, key: &str) -> Result<Option<StoredEvent>, StoreError> {
        let mut cmd = redis::cmd("XREVRANGE");
        cmd.arg(key).arg("+").arg("-").arg("COUNT").arg(1);
        let reply: StreamRangeReply = self.backend.query(&cmd, Retry::Safe).await?;
        reply.ids.first().map(decode).transpose()
    }
}

/// What a follower of a Redis stream fetches from: `XRANGE` until it has
/// replayed what was there, then `XREAD BLOCK` on a connection of its own.
struct Follow<'a> {
    log: &'a RedisEventLog,
    key: String,
    /// The last id fetched (`0-0` before the first).
    cursor: String,
    replayed: bool,
    conn: Option<Connection>,
}

impl Follow<'_> {
    /// Moves the cursor to the last of `events`.
    fn advance(&mut self, events: Vec<StoredEvent>) -> FollowBatch {
        if let Some(last) = events.last() {
            self.cursor.clone_from(&last.id);
        }
        FollowBatch {
            events,
            ended: false,
        }
    }

    /// Replays what is there; ended when the log ended at or before the
    /// cursor.
    async fn replay(&mut self) -> Result<FollowBatch, StoreError> {
        let after = (self.cursor != "0-0").then(|| self.cursor.clone());
        let events = self.log.range(&self.key, after.as_deref(), BATCH).await?;
        if events.is_empty() {
            self.replayed = true;
            let ended = match self.log.last(&self.key).await? {
                Some(last) => {
                    last.event.is_final() && parse_id(&last.id)? <= parse_id(&self.cursor)?
                }
                None => false,
            };
            return Ok(FollowBatch { events, ended });
        }
        if events.len() < BATCH {
            self.replayed = true;
        }
        Ok(self.advance(events))
    }

    /// Waits for entries after the cursor on this follower's connection.
    async fn wait(&mut self) -> Result<FollowBatch, StoreError> {
        let block = self.log.backend.config().follow_block();
        if self.conn.is_none() {
            self.conn = Some(self.log.backend.dedicated(block).await?);
        }
        let Some(conn) = self.conn.as_mut() else {
            return Ok(FollowBatch::default());
        };
        let mut cmd = redis::cmd("XREAD");
        cmd.arg("COUNT")
            .arg(BATCH)
            .arg("BLOCK")
            .arg(u64::try_from(block.as_millis()).unwrap_or(u64::MAX))
            .arg("STREAMS")
            .arg(&self.key)
            .arg(&self.cursor);
        let reply: Option<StreamReadReply> = match cmd.query_async(conn).await {
            Ok(reply) => reply,
            Err(e) => {
                self.conn = None;
                return Err(from_redis(e));
            }
        };
        let entries = reply
            .map(|r| r.keys.into_iter().flat_map(|k| k.ids).collect::<Vec<_>>())
            .unwrap_or_default();
        let events = entries.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
        Ok(self.advance(events))
    }
}

#[async_trait]
impl FollowSource for Follow<'_> {
    async fn next_batch(&mut self) -> Result<FollowBatch, StoreError> {
        if self.replayed {
            self.wait().await
        } else {
            self.replay().await
        }
    }
}

#[async_trait]
impl EventLog for RedisEventLog {
    async fn append(&self, task_id: &str, event: Arc<AgentEvent>) -> Result<String, StoreError> {
        let key = self.backend.keys().events(task_id);
        let json = serde_json::to_string(&*event)?;
        let ttl = self.backend.ttl_ms();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("XADD")
            .arg(&key)
            .arg("*")
            .arg(FIELD)
            .arg(json);
        if ttl > 0 {
            pipe.cmd("PEXPIRE").arg(&key).arg(ttl).ignore();
        }
        let (id,): (String,) = self.backend.pipe(&pipe, Retry::Never).await?;
        Ok(id)
    }

    async fn read(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        if let Some(id) = after {
            parse_id(id)?;
        }
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.range(&self.backend.keys().events(task_id), after, limit)
            .await
    }

    fn follow<'a>(
        &'a self,
        task_id: &'a str,
        after: Option<String>,
    ) -> BoxStream<'a, Result<StoredEvent, StoreError>> {
        let cursor = after.unwrap_or_else(|| "0-0".to_owned());
        if let Err(e) = parse_id(&cursor) {
            return follow_error(e);
        }
        follow(Follow {
            log: self,
            key: self.backend.keys().events(task_id),
            cursor,
            replayed: false,
            conn: None,
        })
    }

    async fn replace_entries(
        &self,
        task_id: &str,
        last: &str,
        remove: &[String],
        put: Vec<StoredEvent>,
    ) -> Result<bool, StoreError> {
        check_replacement(remove, &put)?;
        parse_id(last)?;
        for id in remove {
            parse_id(id)?;
        }
        let keys = self.backend.keys();
        let mut call = EVENTS_REPLACE.prepare_invoke();
        call.key(keys.events(task_id))
            .key(keys.events_scratch(task_id))
            .arg(last)
            .arg(remove.len())
            .arg(remove);
        for event in &put {
            call.arg(&event.id)
                .arg(serde_json::to_string(&*event.event)?);
        }
        // Safe to try again: a second run finds the stream already rewritten.
        let replaced: i64 = self.backend.script(&call, Retry::Safe).await?;
        Ok(replaced == 1)
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let mut del = redis::cmd("DEL");
        del.arg(self.backend.keys().events(task_id));
        let _: i64 = self.backend.query(&del, Retry::Safe).await?;
        Ok(())
    }
}
