//! [`RedisTaskStore`]: A2A task records.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use looopy_core::StoreError;
use looopy_core::store::{TaskRecord, TaskStore};

use crate::backend::{RedisBackend, Retry};
use crate::index::{self, Listing, score};
use crate::keys::KeyLayout;

/// A2A task records in Redis: `P:{task:T}:record` holds the record as JSON;
/// sorted sets scored by `updated_at` (µs) index them for `list`: every
/// record (`P:{tasks}:all`), per context (`P:{ctx:C}:tasks`), per owner
/// (`P:{owner:O}:tasks`) and per owner and context
/// (`P:{owner:O}:ctx:C:tasks`).
///
/// As for agent states, the indexes live on other cluster slots than the
/// record, so `put` adds the index entries, then writes the record (`SET ...
/// GET`, one pipelined round trip), then removes the entries of the
/// previous owner and context when they changed; `list` checks each
/// record's owner and context, so entries left behind are never returned.
#[derive(Debug, Clone)]
pub struct RedisTaskStore {
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

fn order_of(record: &TaskRecord) -> (DateTime<Utc>, &str) {
    (record.updated_at, &record.task_id)
}

impl RedisTaskStore {
    /// Task records on `backend`.
    pub fn new(backend: RedisBackend) -> Self {
        RedisTaskStore { backend }
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

#[async_trait]
impl TaskStore for RedisTaskStore {
    async fn put(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let keys = self.backend.keys();
        let json = serde_json::to_string(record)?;
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
        let set = pipe
            .cmd("SET")
            .arg(keys.task_record(&record.task_id))
            .arg(json);
        if ttl > 0 {
            set.arg("PX").arg(ttl);
        }
        set.arg("GET");
        let (previous,): (Option<String>,) = self.backend.pipe(&pipe, Retry::Safe).await?;
        self.unindex(&record.task_id, previous, &current).await;
        Ok(())
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
        let accept = |r: &TaskRecord| {
            owner.is_none_or(|o| r.owner.as_deref() == Some(o))
                && context_id.is_none_or(|c| r.context_id == c)
        };
        index::list(
            &self.backend,
            Listing {
                index,
                key_of: &key_of,
                accept: &accept,
                order: &order_of,
            },
            limit,
        )
        .await
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        let mut getdel = redis::cmd("GETDEL");
        getdel.arg(self.backend.keys().task_record(task_id));
        let previous: Option<String> = self.backend.query(&getdel, Retry::Safe).await?;
        self.unindex(task_id, previous, &[]).await;
        Ok(())
    }
}
