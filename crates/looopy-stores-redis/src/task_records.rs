//! [`RedisTaskRecordStore`]: A2A task records.

use async_trait::async_trait;
use looopy_core::StoreError;
use looopy_core::store::{TaskRecord, TaskRecordStore};

use crate::backend::{RedisBackend, Retry};
use crate::index::{self, Listing, score};
use crate::keys::KeyLayout;
use crate::scripts::TASK_RECORD_CAS;

/// How many times `put` tries again when other writers keep winning.
const PUT_ATTEMPTS: usize = 64;

/// A2A task records in Redis: `P:{task:T}:record` holds the record as JSON,
/// its version included; `P:{task:T}:cancel` is its cancel flag. Writes go
/// through one script on the record's key (`TASK_RECORD_CAS`): it checks
/// the stored version and writes the record in one step, so
/// `compare_and_put` is atomic on a cluster too (one key, one slot); `put`
/// is a compare-and-put against whatever version is stored, tried again
/// with the version the script reported until it wins. The cancel flag is
/// raised with `SET ... PX` and taken with `GETDEL`. Sorted sets scored by `updated_at` (µs) index them for `list`: every
/// record (`P:{tasks}:all`), per context (`P:{ctx:C}:tasks`), per owner
/// (`P:{owner:O}:tasks`) and per owner and context
/// (`P:{owner:O}:ctx:C:tasks`).
///
/// As for agent states, the indexes live on other cluster slots than the
/// record, so a write adds the index entries, then writes the record, then
/// removes the entries of the previous owner and context when they changed; `list` checks each
/// record's owner and context, so entries left behind are never returned.
#[derive(Debug, Clone)]
pub struct RedisTaskRecordStore {
    backend: RedisBackend,
}

/// The indexes a record belongs to.
fn indexes(keys: &KeyLayout, record: &TaskRecord) -> Vec<String> {
    let mut out = vec![keys.all_tasks(), keys.context_tasks(&record.context_id)];
    if let Some(owner) = &record.owner {
        out.push(keys.owner_tasks(owner));
        out.push(keys.owner_context_tasks(owner, &record.context_id));
    }
    out
}

impl RedisTaskRecordStore {
    /// Task records on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisTaskRecordStore { backend }
    }

    /// Removes `task_id` from the indexes of `previous` that `current` does
    /// not use.
    async fn unindex(&self, task_id: &str, previous: Option<String>, current: &[String]) {
        let Some(previous) = previous else { return };
        let Ok(previous) = serde_json::from_str::<TaskRecord>(&previous) else {
            return;
        };
        let mut pipe = redis::pipe();
        let mut any = false;
        for index in indexes(self.backend.keys(), &previous) {
            if !current.contains(&index) {
                pipe.zrem(index, task_id).ignore();
                any = true;
            }
        }
        if any && let Err(error) = self.backend.pipe::<()>(&pipe, Retry::Safe).await {
            // Left in the indexes; listings skip them.
            tracing::debug!(%error, "could not remove a task from its former indexes");
        }
    }
}

impl RedisTaskRecordStore {
    /// Adds the record to its indexes, then writes it when the stored
    /// version is `expected`: `Ok(Ok(previous JSON))` when written,
    /// `Ok(Err(stored version))` when not.
    async fn write(
        &self,
        record: &TaskRecord,
        expected: u64,
    ) -> Result<Result<Option<String>, u64>, StoreError> {
        let keys = self.backend.keys();
        let mut stored = record.clone();
        stored.version = expected + 1;
        let json = serde_json::to_string(&stored)?;
        let ttl = self.backend.ttl_ms();
        let current = indexes(keys, record);
        let mut pipe = redis::pipe();
        for index in &current {
            pipe.zadd(index, &record.task_id, score(record.updated_at))
                .ignore();
            if ttl > 0 {
                pipe.cmd("PEXPIRE").arg(index).arg(ttl).ignore();
            }
        }
        self.backend.pipe::<()>(&pipe, Retry::Safe).await?;
        let mut call = TASK_RECORD_CAS.prepare_invoke();
        call.key(keys.task_record(&record.task_id))
            .arg(expected)
            .arg(json)
            .arg(ttl);
        // Not repeated: a repeat after a lost reply would find its own write
        // and report a conflict.
        let reply: Vec<redis::Value> = self.backend.script(&call, Retry::Never).await?;
        let unexpected = || StoreError::Backend {
            message: format!("unexpected reply of the task record script: {reply:?}"),
        };
        match reply.as_slice() {
            [redis::Value::Int(1), previous] => {
                let previous: Option<String> =
                    redis::from_redis_value(previous.clone()).map_err(|_| unexpected())?;
                self.unindex(&record.task_id, previous, &current).await;
                Ok(Ok(None))
            }
            [redis::Value::Int(0), version] => {
                let version: u64 =
                    redis::from_redis_value(version.clone()).map_err(|_| unexpected())?;
                Ok(Err(version))
            }
            _ => Err(unexpected()),
        }
    }
}

#[async_trait]
impl TaskRecordStore for RedisTaskRecordStore {
    async fn put(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let mut expected = record.version;
        for _ in 0..PUT_ATTEMPTS {
            match self.write(record, expected).await? {
                Ok(_) => return Ok(()),
                Err(stored) => expected = stored,
            }
        }
        Err(StoreError::Conflict {
            message: format!(
                "task record `{}`: other writers won {PUT_ATTEMPTS} times in a row",
                record.task_id
            ),
        })
    }

    async fn compare_and_put(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        Ok(self.write(record, record.version).await?.is_ok())
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let mut get = redis::cmd("GET");
        get.arg(self.backend.keys().task_record(task_id));
        let json: Option<String> = self.backend.query(&get, Retry::Safe).await?;
        Ok(json.map(|j| serde_json::from_str(&j)).transpose()?)
    }

    async fn list(
        &self,
        owner: Option<&str>,
        context_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let keys = self.backend.keys();
        let index = match (owner, context_id) {
            (Some(o), Some(c)) => keys.owner_context_tasks(o, c),
            (Some(o), None) => keys.owner_tasks(o),
            (None, Some(c)) => keys.context_tasks(c),
            (None, None) => keys.all_tasks(),
        };
        let key_of = |task_id: &str| keys.task_record(task_id);
        let accept = |r: &TaskRecord| r.listed_by(owner, context_id);
        index::list(
            &self.backend,
            Listing {
                index,
                key_of: &key_of,
                accept: &accept,
            },
            limit,
        )
        .await
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let keys = self.backend.keys();
        let mut pipe = redis::pipe();
        pipe.cmd("GETDEL").arg(keys.task_record(task_id));
        pipe.cmd("DEL").arg(keys.task_cancel(task_id)).ignore();
        let (previous,): (Option<String>,) = self.backend.pipe(&pipe, Retry::Safe).await?;
        self.unindex(task_id, previous, &[]).await;
        Ok(())
    }

    async fn request_cancel(&self, task_id: &str) -> Result<(), StoreError> {
        let mut set = redis::cmd("SET");
        set.arg(self.backend.keys().task_cancel(task_id)).arg("1");
        let ttl = self.backend.ttl_ms();
        if ttl > 0 {
            set.arg("PX").arg(ttl);
        }
        self.backend.query::<()>(&set, Retry::Safe).await
    }

    async fn take_cancel(&self, task_id: &str) -> Result<bool, StoreError> {
        let mut getdel = redis::cmd("GETDEL");
        getdel.arg(self.backend.keys().task_cancel(task_id));
        // Not repeated: a repeat after a lost reply would miss the flag.
        let flag: Option<String> = self.backend.query(&getdel, Retry::Never).await?;
        Ok(flag.is_some())
    }
}
