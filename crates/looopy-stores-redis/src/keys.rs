//! [`KeyLayout`]: the name of every key.
//!
//! Keys are `<prefix>:{<tag>}:<what>`. The part in braces is a Redis Cluster
//! hash tag: every key of one context (`{ctx:<id>}`), of one task
//! (`{task:<id>}`) or of one owner index (`{owner:<id>}`) hashes to one
//! slot, so the scripts that touch several keys of a context or a task run
//! on one node. Ids are escaped (`%` → `%25`, `:` → `%3A`, `{` → `%7B`,
//! `}` → `%7D`), so no id can end a hash tag early or make two keys equal.

use std::borrow::Cow;

/// Escapes the characters that delimit keys and hash tags.
pub(crate) fn escape(id: &str) -> Cow<'_, str> {
    if !id.contains(['%', ':', '{', '}']) {
        return Cow::Borrowed(id);
    }
    let mut out = String::with_capacity(id.len() + 8);
    for c in id.chars() {
        match c {
            '%' => out.push_str("%25"),
            ':' => out.push_str("%3A"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// How many shards the turn registry has: enough to spread the leases over
/// the masters of a cluster, few enough that a scan for stranded turns
/// (one script per shard) stays cheap.
pub(crate) const TURN_SHARDS: u32 = 16;

/// The shard of a context: FNV-1a of its id, so that every process agrees.
pub(crate) fn turn_shard(context_id: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in context_id.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash % TURN_SHARDS
}

/// The names of every key the stores use, under one prefix.
///
/// | key | type | holds |
/// |---|---|---|
/// | `P:{ctx:C}:messages` | list | one JSON message per element |
/// | `P:{ctx:C}:messages:epoch` | string | the history's epoch: a new token whenever the history is created, rewritten or deleted |
/// | `P:{ctx:C}:agent` | string | the agent state (JSON) |
/// | `P:{turns:K}:lease:C` | hash | the turn lease of context C: `owner`, `task` (empty for none), `exp` (ms, server clock) |
/// | `P:{turns:K}:expiry` | sorted set | the turn registry of shard K: context ids of turn leases, scored by `exp` |
/// | `P:{ctx:C}:artifacts` | sorted set | artifact ids (escaped), scored by creation order |
/// | `P:{ctx:C}:artifact:A` | hash | `meta` (JSON without parts), `task`, `created`, `updated` |
/// | `P:{ctx:C}:artifact:A:parts` | list | one JSON part per element |
/// | `P:{ctx:C}:tasks` | sorted set | task ids of the context, scored by `updated_at` (µs) |
/// | `P:{task:T}:checkpoint` | hash | `head` (checkpoint JSON without messages), `epoch`, `len` |
/// | `P:{task:T}:checkpoint:messages` | list | the checkpoint's messages, one JSON each |
/// | `P:{task:T}:events` | stream | entries `{e: <event JSON>}`; ids are the event ids |
/// | `P:{task:T}:events:scratch` | stream | a task's stream being rewritten (inside one script: never seen outside it) |
/// | `P:{task:T}:record` | string | the A2A task record (JSON, its `version` included) |
/// | `P:{task:T}:cancel` | string | the task's cancel flag (`1` while a cancel is requested) |
/// | `P:{task:T}:execution:N` | string | the execution record of turn N of the task (JSON), expiring with the record retention's age |
/// | `P:{task:T}:executions` | sorted set | the task's turns that have an execution record, scored by turn number |
/// | `P:{ctx:C}:executions` | sorted set | `<turn>:<task id>` of the context's execution records, scored by start time (ms) |
/// | `P:{task:T}:push` | hash | the task's push notification configs: config id → config JSON |
/// | `P:{owner:O}:agents` | sorted set | context ids, scored by `last_activity` (µs) |
/// | `P:{owner:O}:tasks` | sorted set | task ids, scored by `updated_at` (µs) |
/// | `P:{owner:O}:ctx:C:tasks` | sorted set | task ids of one context of the owner |
/// | `P:{tasks}:all` | sorted set | every task id |
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    prefix: String,
}

impl KeyLayout {
    /// Keys under `prefix` (validated by [`RedisConfig`](crate::RedisConfig)).
    pub fn new(prefix: impl Into<String>) -> Self {
        KeyLayout {
            prefix: prefix.into(),
        }
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn ctx(&self, context_id: &str, what: &str) -> String {
        format!("{}:{{ctx:{}}}:{what}", self.prefix, escape(context_id))
    }

    fn task(&self, task_id: &str, what: &str) -> String {
        format!("{}:{{task:{}}}:{what}", self.prefix, escape(task_id))
    }

    fn owner(&self, owner: &str, what: &str) -> String {
        format!("{}:{{owner:{}}}:{what}", self.prefix, escape(owner))
    }

    /// A context's messages.
    pub fn messages(&self, context_id: &str) -> String {
        self.ctx(context_id, "messages")
    }

    /// The epoch of a context's history: a token set when the history is
    /// created, rewritten (compaction) or deleted, never by an append; a
    /// process holding the history checks it before reading only the tail.
    pub fn messages_epoch(&self, context_id: &str) -> String {
        self.ctx(context_id, "messages:epoch")
    }

    /// A context's agent state.
    pub fn agent(&self, context_id: &str) -> String {
        self.ctx(context_id, "agent")
    }

    /// A context's turn lease. It lives with its registry shard rather than
    /// with the context, so that taking, renewing, releasing and taking over
    /// a lease update the registry in the same atomic script.
    pub fn lock(&self, context_id: &str) -> String {
        format!(
            "{}:{{turns:{}}}:lease:{}",
            self.prefix,
            turn_shard(context_id),
            escape(context_id)
        )
    }

    /// The turn registry of shard `shard` (`0..TURN_SHARDS`): the contexts
    /// whose lease belongs to a turn, scored by the lease's expiry.
    pub fn turn_registry(&self, shard: u32) -> String {
        format!("{}:{{turns:{shard}}}:expiry", self.prefix)
    }

    /// The registry shard of a context's lease.
    pub fn turn_registry_of(&self, context_id: &str) -> String {
        self.turn_registry(turn_shard(context_id))
    }

    /// A context's artifact index.
    pub fn artifacts(&self, context_id: &str) -> String {
        self.ctx(context_id, "artifacts")
    }

    /// The common start of a context's artifact keys (the index member is
    /// appended to it).
    pub(crate) fn artifact_base(&self, context_id: &str) -> String {
        self.ctx(context_id, "artifact:")
    }

    /// One artifact's fields.
    pub fn artifact(&self, context_id: &str, artifact_id: &str) -> String {
        format!("{}{}", self.artifact_base(context_id), escape(artifact_id))
    }

    /// One artifact's parts.
    pub fn artifact_parts(&self, context_id: &str, artifact_id: &str) -> String {
        format!("{}:parts", self.artifact(context_id, artifact_id))
    }

    /// The task records of a context (all owners).
    pub fn context_tasks(&self, context_id: &str) -> String {
        self.ctx(context_id, "tasks")
    }

    /// A task's checkpoint header.
    pub fn checkpoint(&self, task_id: &str) -> String {
        self.task(task_id, "checkpoint")
    }

    /// A task's checkpoint messages.
    pub fn checkpoint_messages(&self, task_id: &str) -> String {
        self.task(task_id, "checkpoint:messages")
    }

    /// A task's event stream.
    pub fn events(&self, task_id: &str) -> String {
        self.task(task_id, "events")
    }

    /// Where a task's event stream is rebuilt before it replaces the
    /// stream (`EventLog::replace_entries`); gone once it has.
    pub fn events_scratch(&self, task_id: &str) -> String {
        self.task(task_id, "events:scratch")
    }

    /// A task's A2A record.
    pub fn task_record(&self, task_id: &str) -> String {
        self.task(task_id, "record")
    }

    /// The execution record of one turn of a task.
    pub fn execution_record(&self, task_id: &str, turn: u64) -> String {
        self.task(task_id, &format!("execution:{turn}"))
    }

    /// The turns of a task that have an execution record: a sorted set of
    /// turn numbers.
    pub fn task_executions(&self, task_id: &str) -> String {
        self.task(task_id, "executions")
    }

    /// The execution records of a context: a sorted set of `<turn>:<task
    /// id>` members by start time.
    pub fn context_executions(&self, context_id: &str) -> String {
        self.ctx(context_id, "executions")
    }

    /// A task's push notification configs.
    pub fn push_configs(&self, task_id: &str) -> String {
        self.task(task_id, "push")
    }

    /// A task's cancel flag.
    pub fn task_cancel(&self, task_id: &str) -> String {
        self.task(task_id, "cancel")
    }

    /// The contexts of an owner.
    pub fn owner_agents(&self, owner: &str) -> String {
        self.owner(owner, "agents")
    }

    /// The task records of an owner.
    pub fn owner_tasks(&self, owner: &str) -> String {
        self.owner(owner, "tasks")
    }

    /// The task records of an owner in one context.
    pub fn owner_context_tasks(&self, owner: &str, context_id: &str) -> String {
        self.owner(owner, &format!("ctx:{}:tasks", escape(context_id)))
    }

    /// Every task record.
    pub fn all_tasks(&self) -> String {
        format!("{}:{{tasks}}:all", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash tag Redis Cluster hashes: between the first `{` and the next `}`.
    fn tag(key: &str) -> &str {
        let open = key.find('{').unwrap_or(0);
        let close = key[open..].find('}').map_or(key.len(), |c| open + c);
        &key[open + 1..close]
    }

    #[test]
    fn every_key_of_a_context_or_task_shares_one_hash_tag() {
        let keys = KeyLayout::new("app:x");
        for ctx in ["c1", "we}ird:{id}%", "ctx:1"] {
            let all = [
                keys.messages(ctx),
                keys.messages_epoch(ctx),
                keys.agent(ctx),
                keys.artifacts(ctx),
                keys.artifact(ctx, "a:parts"),
                keys.artifact_parts(ctx, "a}"),
                keys.context_tasks(ctx),
            ];
            let expected = format!("ctx:{}", escape(ctx));
            for key in &all {
                assert!(key.starts_with("app:x:{"), "{key}");
                assert_eq!(tag(key), expected, "{key}");
            }
        }
        let t = "t:{1}";
        for key in [
            keys.checkpoint(t),
            keys.checkpoint_messages(t),
            keys.events(t),
            keys.events_scratch(t),
            keys.task_record(t),
            keys.task_cancel(t),
        ] {
            assert_eq!(tag(&key), "task:t%3A%7B1%7D", "{key}");
        }
        assert_eq!(
            tag(&keys.owner_context_tasks("o", "c")),
            tag(&keys.owner_tasks("o"))
        );
        for ctx in ["c1", "c2", "we}ird:{id}%"] {
            assert_eq!(tag(&keys.lock(ctx)), tag(&keys.turn_registry_of(ctx)));
        }
        let shards: std::collections::HashSet<u32> =
            (0..200).map(|i| turn_shard(&format!("ctx-{i}"))).collect();
        assert_eq!(
            shards.len(),
            TURN_SHARDS as usize,
            "contexts spread over every shard"
        );
    }

    #[test]
    fn escaped_ids_cannot_make_two_keys_equal() {
        let keys = KeyLayout::new("p");
        assert_ne!(keys.artifact("c", "x:parts"), keys.artifact_parts("c", "x"));
        assert_ne!(keys.messages("x}:agent"), keys.agent("x"));
        assert_eq!(escape("plain-id_1"), "plain-id_1");
        assert_eq!(escape("%:{}"), "%25%3A%7B%7D");
    }
}
