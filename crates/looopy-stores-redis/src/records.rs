//! [`RedisRecordStore`]: a string per record (one per turn), a sorted set
//! of turns per task and a sorted set of records per context.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::record::ExecutionRecord;
use looopy_core::store::listing::first_page;
use looopy_core::store::{RecordRetention, RecordStore};

use crate::backend::{RedisBackend, Retry};

/// Execution records in Redis: `T:{task:T}:execution:N` holds the JSON of
/// turn N's record, expiring [`RecordRetention::max_age`] after the turn
/// started; `T:{task:T}:executions` is a sorted set of the task's turns;
/// `C:{ctx:C}:executions` is a sorted set of the context's records
/// (`<turn>:<task id>`) by start time, trimmed to
/// [`RecordRetention::max_per_context`] on each `put` (the records trimmed
/// are deleted).
#[derive(Debug, Clone)]
pub struct RedisRecordStore {
    backend: RedisBackend,
    retention: RecordRetention,
}

impl RedisRecordStore {
    /// Records on `backend`, with the default retention.
    pub fn new(backend: RedisBackend) -> Self {
        Self::with_retention(backend, RecordRetention::default())
    }

    /// Records on `backend`, kept as `retention` says.
    pub fn with_retention(backend: RedisBackend, retention: RecordRetention) -> Self {
        RedisRecordStore { backend, retention }
    }

    fn key(&self, task_id: &str, turn: u64) -> String {
        self.backend.keys().execution_record(task_id, turn)
    }

    /// A stored record's body, decoded, unless it has aged out at `now`.
    fn kept(&self, body: &str, now: DateTime<Utc>) -> Result<Option<ExecutionRecord>, StoreError> {
        let record = decode(body)?;
        Ok((!self.retention.expired(record.started_at, now)).then_some(record))
    }

    /// Forgets one turn's record and its entry in the task's turns (not in
    /// the context's index).
    async fn forget(&self, task_id: &str, turn: u64) -> Result<bool, StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("DEL")
            .arg(self.key(task_id, turn))
            .cmd("ZREM")
            .arg(self.backend.keys().task_executions(task_id))
            .arg(turn)
            .ignore();
        let (removed,): (i64,) = self.backend.pipe(&pipe, Retry::Safe).await?;
        Ok(removed > 0)
    }

    /// Milliseconds left to live for a record that started at `started_ms`,
    /// or `None` when it never expires; `Some(0)` when it already has.
    fn ttl_left(&self, started_ms: i64) -> Option<i64> {
        let age = self.retention.max_age?;
        let max = i64::try_from(age.as_millis()).unwrap_or(i64::MAX);
        let elapsed = Utc::now().timestamp_millis() - started_ms;
        Some(max.saturating_sub(elapsed).max(0))
    }
}

fn decode(json: &str) -> Result<ExecutionRecord, StoreError> {
    Ok(serde_json::from_str(json)?)
}

/// A record's member of its context's index: `<turn>:<task id>`.
fn member(task_id: &str, turn: u64) -> String {
    format!("{turn}:{task_id}")
}

/// The task and turn of a member of a context's index.
fn parse_member(member: &str) -> Option<(&str, u64)> {
    let (turn, task_id) = member.split_once(':')?;
    Some((task_id, turn.parse().ok()?))
}

#[async_trait]
impl RecordStore for RedisRecordStore {
    async fn put(&self, record: &ExecutionRecord) -> Result<(), StoreError> {
        let started = record.started_at.timestamp_millis();
        let turn = record.turn();
        let json = serde_json::to_string(record)?;
        let ttl = self.ttl_left(started);
        if ttl == Some(0) {
            return Ok(());
        }
        let turns = self.backend.keys().task_executions(&record.task_id);
        let mut pipe = redis::pipe();
        pipe.atomic();
        let set = pipe
            .cmd("SET")
            .arg(self.key(&record.task_id, turn))
            .arg(json);
        if let Some(ttl) = ttl {
            set.arg("PX").arg(ttl);
        }
        set.ignore();
        pipe.cmd("ZADD").arg(&turns).arg(turn).arg(turn).ignore();
        if let Some(age) = self.retention.max_age {
            // The task's turns outlive its newest record.
            pipe.cmd("PEXPIRE")
                .arg(&turns)
                .arg(u64::try_from(age.as_millis()).unwrap_or(u64::MAX))
                .ignore();
        }
        let () = self.backend.pipe(&pipe, Retry::Safe).await?;
        let index = self.backend.keys().context_executions(&record.context_id);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("ZADD")
            .arg(&index)
            .arg(started)
            .arg(member(&record.task_id, turn))
            .ignore();
        if let Some(age) = self.retention.max_age {
            let oldest = self.retention.oldest_kept_ms(Utc::now());
            pipe.cmd("ZREMRANGEBYSCORE")
                .arg(&index)
                .arg("-inf")
                .arg(format!("({oldest}"))
                .ignore();
            pipe.cmd("PEXPIRE")
                .arg(&index)
                .arg(u64::try_from(age.as_millis()).unwrap_or(u64::MAX))
                .ignore();
        }
        let () = self.backend.pipe(&pipe, Retry::Safe).await?;
        if let Some(max) = self.retention.max_per_context {
            // Everything but the `max` most recent.
            let mut over = redis::cmd("ZRANGE");
            over.arg(&index)
                .arg(0)
                .arg(-(i64::try_from(max).unwrap_or(i64::MAX)) - 1);
            let dropped: Vec<String> = self.backend.query(&over, Retry::Safe).await?;
            for entry in dropped {
                if let Some((task_id, turn)) = parse_member(&entry) {
                    self.forget(task_id, turn).await?;
                }
                let mut zrem = redis::cmd("ZREM");
                zrem.arg(&index).arg(&entry);
                let _: i64 = self.backend.query(&zrem, Retry::Safe).await?;
            }
        }
        Ok(())
    }

    async fn get(&self, task_id: &str) -> Result<Option<ExecutionRecord>, StoreError> {
        // The highest turn is the latest; when it has aged out, so has
        // every earlier one.
        let mut last = redis::cmd("ZRANGE");
        last.arg(self.backend.keys().task_executions(task_id))
            .arg(-1)
            .arg(-1);
        let turns: Vec<u64> = self.backend.query(&last, Retry::Safe).await?;
        match turns.first() {
            Some(&turn) => self.get_turn(task_id, turn).await,
            None => Ok(None),
        }
    }

    async fn get_turn(
        &self,
        task_id: &str,
        turn: u64,
    ) -> Result<Option<ExecutionRecord>, StoreError> {
        let mut get = redis::cmd("GET");
        get.arg(self.key(task_id, turn));
        let json: Option<String> = self.backend.query(&get, Retry::Safe).await?;
        let now = Utc::now();
        Ok(json
            .map(|body| self.kept(&body, now))
            .transpose()?
            .flatten())
    }

    async fn list_task(&self, task_id: &str) -> Result<Vec<ExecutionRecord>, StoreError> {
        let mut range = redis::cmd("ZRANGE");
        range
            .arg(self.backend.keys().task_executions(task_id))
            .arg(0)
            .arg(-1);
        let turns: Vec<u64> = self.backend.query(&range, Retry::Safe).await?;
        if turns.is_empty() {
            return Ok(Vec::new());
        }
        // A task's keys share its hash slot, so one MGET reads every turn,
        // on a cluster too.
        let mut get = redis::cmd("MGET");
        for &turn in &turns {
            get.arg(self.key(task_id, turn));
        }
        let bodies: Vec<Option<String>> = self.backend.query(&get, Retry::Safe).await?;
        let now = Utc::now();
        let mut out = Vec::with_capacity(bodies.len());
        for body in bodies.iter().flatten() {
            out.extend(self.kept(body, now)?);
        }
        Ok(out)
    }

    async fn list(
        &self,
        context_id: &str,
        limit: usize,
    ) -> Result<Vec<ExecutionRecord>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut range = redis::cmd("ZRANGE");
        range
            .arg(self.backend.keys().context_executions(context_id))
            .arg(0)
            .arg(-1);
        let entries: Vec<String> = self.backend.query(&range, Retry::Safe).await?;
        let mut out = Vec::with_capacity(entries.len());
        for entry in &entries {
            let Some((task_id, turn)) = parse_member(entry) else {
                continue;
            };
            if let Some(record) = self.get_turn(task_id, turn).await? {
                out.push(record);
            }
        }
        Ok(first_page(out, limit))
    }

    async fn delete(&self, task_id: &str) -> Result<bool, StoreError> {
        let mut range = redis::cmd("ZRANGE");
        range
            .arg(self.backend.keys().task_executions(task_id))
            .arg(0)
            .arg(-1);
        let turns: Vec<u64> = self.backend.query(&range, Retry::Safe).await?;
        let mut existed = false;
        for turn in turns {
            let record = self.get_turn(task_id, turn).await?;
            existed |= self.forget(task_id, turn).await?;
            if let Some(record) = record {
                let mut zrem = redis::cmd("ZREM");
                zrem.arg(self.backend.keys().context_executions(&record.context_id))
                    .arg(member(task_id, turn));
                let _: i64 = self.backend.query(&zrem, Retry::Safe).await?;
            }
        }
        let mut del = redis::cmd("DEL");
        del.arg(self.backend.keys().task_executions(task_id));
        let _: i64 = self.backend.query(&del, Retry::Safe).await?;
        Ok(existed)
    }

    fn retention(&self) -> RecordRetention {
        self.retention
    }
}
