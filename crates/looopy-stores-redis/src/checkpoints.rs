//! [`RedisCheckpointStore`]: checkpoints that cost one round trip each.
//!
//! A checkpoint is two keys of the task's slot: a hash with the header (the
//! checkpoint as JSON without its messages), an `epoch` and the message
//! count `len`, and a list with one JSON message per element.
//!
//! The loop saves a checkpoint several times per iteration, and within a
//! turn the history only grows. So the store remembers, per task, the
//! history it last saved and the epoch it saved it under. When the new
//! history extends that one (same messages, compared by pointer, else by
//! value), it sends only the new messages with the header, in one script
//! call that appends them **only if** the stored epoch and length are still
//! those it remembers. Otherwise (first save in this process, a history
//! that was rewritten, another process saved in between, a failed call) it
//! writes the whole history under a fresh epoch.
//!
//! Crash safety: each save is one script, which Redis runs atomically: a
//! reader sees the previous checkpoint or the new one, never a mix. A
//! process that dies before its call reaches Redis leaves the previous
//! checkpoint whole; one that dies after left the new one whole. The epoch
//! check makes a stale incremental save (from a process that was presumed
//! dead, or after a lost reply) a no-op answered with "stale", never an
//! append onto someone else's history. Loads read both keys in one
//! `MULTI`/`EXEC` and check that the list holds `len` messages.
//!
//! A checkpoint that builds on the conversation's stored history
//! ([`TaskCheckpoint::stored_history`]: the Agent started the turn from it,
//! whole) keeps only the messages after it in its list, so that a turn's
//! first save writes the turn's own messages, not the whole conversation.
//! Its load reads the history's first `len` messages and its epoch in one
//! more round trip and fails with
//! [`StoreError::HistoryRewritten`](looopy_core::StoreError::HistoryRewritten)
//! when the epoch is no longer the one the checkpoint names.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use looopy_core::store::{CheckpointStore, HistoryMark, TaskCheckpoint};
use looopy_core::{History, Message, StoreError};
use serde_json::Value;

use crate::backend::{RedisBackend, Retry};
use crate::error::corrupt;
use crate::scripts::SAVE_CHECKPOINT;

/// Tasks whose last save this store remembers (turns under way: a task is
/// forgotten once a checkpoint says its turn ended); past this, it forgets
/// them all (the next save of each is a full one).
const REMEMBERED_TASKS: usize = 4096;

struct Saved {
    epoch: String,
    history: History,
    /// How many leading messages are the stored history's, not in the list.
    base: usize,
}

/// Loop checkpoints in Redis (see the module docs for the layout and why a
/// save is one round trip).
pub struct RedisCheckpointStore {
    backend: RedisBackend,
    saved: Mutex<HashMap<String, Saved>>,
}

impl std::fmt::Debug for RedisCheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCheckpointStore")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

/// Whether `new` starts with every message of `old`.
fn extends(new: &History, old: &History) -> bool {
    new.len() >= old.len()
        && new
            .iter()
            .zip(old.iter())
            .all(|(a, b)| std::ptr::eq(a, b) || a == b)
}

fn head_json(checkpoint: &TaskCheckpoint) -> Result<String, StoreError> {
    // The messages are stored apart; serialize the rest only. Cloning the
    // checkpoint is cheap (the history is shared), serializing the whole
    // history every save was not (O(history) per iteration).
    let head = TaskCheckpoint {
        messages: History::new(),
        stored_history: checkpoint.history_mark().cloned(),
        ..checkpoint.clone()
    };
    let mut json = serde_json::to_value(&head)?;
    if let Value::Object(map) = &mut json {
        map.remove("messages");
    }
    Ok(json.to_string())
}

impl RedisCheckpointStore {
    /// Checkpoints on `backend`, expiring `task_ttl_secs` after their last save.
    pub fn new(backend: RedisBackend) -> Self {
        RedisCheckpointStore {
            backend,
            saved: Mutex::new(HashMap::new()),
        }
    }

    fn saved(&self) -> std::sync::MutexGuard<'_, HashMap<String, Saved>> {
        self.saved.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn remember(&self, task_id: &str, epoch: String, history: History, base: usize) {
        let mut saved = self.saved();
        if saved.len() >= REMEMBERED_TASKS && !saved.contains_key(task_id) {
            saved.clear();
        }
        saved.insert(
            task_id.to_owned(),
            Saved {
                epoch,
                history,
                base,
            },
        );
    }

    fn forget(&self, task_id: &str) {
        self.saved().remove(task_id);
    }

    /// Writes the messages from `base` on (the list holds no others):
    /// those after `append_from` onto the stored list, or all of them.
    async fn write(
        &self,
        checkpoint: &TaskCheckpoint,
        head: &str,
        epoch: &str,
        base: usize,
        append_from: Option<usize>,
    ) -> Result<bool, StoreError> {
        let keys = self.backend.keys();
        let from = append_from.unwrap_or(base);
        let mut call = SAVE_CHECKPOINT.prepare_invoke();
        call.key(keys.checkpoint(&checkpoint.task_id))
            .key(keys.checkpoint_messages(&checkpoint.task_id))
            .arg(if append_from.is_some() {
                "append"
            } else {
                "full"
            })
            .arg(epoch)
            .arg(from - base)
            .arg(head)
            .arg(checkpoint.messages.len() - base)
            .arg(self.backend.task_ttl_ms());
        for message in checkpoint.messages.iter().skip(from) {
            call.arg(serde_json::to_string(message)?);
        }
        let written: i64 = self.backend.script(&call, Retry::Safe).await?;
        Ok(written == 1)
    }
}

impl RedisCheckpointStore {
    /// The first `mark.len` messages of the conversation's stored history,
    /// read in one round trip; [`StoreError::HistoryRewritten`] when the
    /// history is no longer the one of `mark`.
    async fn stored_prefix(
        &self,
        checkpoint: &TaskCheckpoint,
        mark: &HistoryMark,
    ) -> Result<History, StoreError> {
        if mark.len == 0 {
            // Nothing to read (and `LRANGE 0 -1` would read the whole list).
            return Ok(History::new());
        }
        let context_id = &checkpoint.context_id;
        let keys = self.backend.keys();
        let mut pipe = redis::pipe();
        pipe.atomic().get(keys.messages_epoch(context_id)).lrange(
            keys.messages(context_id),
            0,
            mark.len as isize - 1,
        );
        let (epoch, messages): (Option<String>, Vec<String>) =
            self.backend.pipe(&pipe, Retry::Safe).await?;
        if epoch.as_deref() != Some(mark.epoch.as_str()) || messages.len() != mark.len {
            return Err(StoreError::HistoryRewritten {
                context_id: context_id.to_string(),
                task_id: checkpoint.task_id.to_string(),
            });
        }
        messages
            .iter()
            .map(|json| Ok(serde_json::from_str::<Message>(json)?))
            .collect()
    }
}

/// How many leading messages of `checkpoint` its list leaves to the stored
/// history (see [`TaskCheckpoint::stored_history`]).
fn base_of(checkpoint: &TaskCheckpoint) -> usize {
    checkpoint.history_mark().map_or(0, |mark| mark.len)
}

#[async_trait]
impl CheckpointStore for RedisCheckpointStore {
    async fn save(&self, checkpoint: &TaskCheckpoint) -> Result<(), StoreError> {
        let head = head_json(checkpoint)?;
        let task_id: &str = &checkpoint.task_id;
        let base = base_of(checkpoint);
        let known = self
            .saved()
            .get(task_id)
            .filter(|s| s.base == base && extends(&checkpoint.messages, &s.history))
            .map(|s| (s.epoch.clone(), s.history.len()));
        let result = async {
            if let Some((epoch, stored)) = known
                && self
                    .write(checkpoint, &head, &epoch, base, Some(stored))
                    .await?
            {
                return Ok(epoch);
            }
            let epoch = uuid::Uuid::new_v4().simple().to_string();
            self.write(checkpoint, &head, &epoch, base, None).await?;
            Ok(epoch)
        }
        .await;
        match result {
            Ok(_) if checkpoint.state.ends_turn() => {
                // The turn is over: nothing more will be appended, so do not
                // keep its history alive.
                self.forget(task_id);
                Ok(())
            }
            Ok(epoch) => {
                self.remember(task_id, epoch, checkpoint.messages.clone(), base);
                Ok(())
            }
            Err(e) => {
                self.forget(task_id);
                Err(e)
            }
        }
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskCheckpoint>, StoreError> {
        let keys = self.backend.keys();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HMGET")
            .arg(keys.checkpoint(task_id))
            .arg(&["head", "epoch", "len"])
            .lrange(keys.checkpoint_messages(task_id), 0, -1);
        type Fields = (Option<String>, Option<String>, Option<usize>);
        let ((head, epoch, len), messages): (Fields, Vec<String>) =
            self.backend.pipe(&pipe, Retry::Safe).await?;
        let (Some(head), Some(epoch), Some(len)) = (head, epoch, len) else {
            return Ok(None);
        };
        if messages.len() != len {
            return Err(corrupt(format!(
                "checkpoint of task `{task_id}` lists {} messages, its header says {len}",
                messages.len()
            )));
        }
        let mut head: Value = serde_json::from_str(&head)?;
        if let Value::Object(map) = &mut head {
            map.insert("messages".into(), Value::Array(Vec::new()));
        }
        let mut checkpoint: TaskCheckpoint = serde_json::from_value(head)?;
        let mut history = match &checkpoint.stored_history {
            Some(mark) => self.stored_prefix(&checkpoint, mark).await?,
            None => History::new(),
        };
        let base = history.len();
        for json in &messages {
            history.push(serde_json::from_str::<Message>(json)?);
        }
        checkpoint.messages = history.clone();
        if !checkpoint.state.ends_turn() {
            self.remember(task_id, epoch, history, base);
        }
        Ok(Some(checkpoint))
    }

    async fn delete(&self, task_id: &str) -> Result<(), StoreError> {
        self.forget(task_id);
        let keys = self.backend.keys();
        let mut del = redis::cmd("DEL");
        del.arg(keys.checkpoint(task_id))
            .arg(keys.checkpoint_messages(task_id));
        let _: i64 = self.backend.query(&del, Retry::Safe).await?;
        Ok(())
    }
}
