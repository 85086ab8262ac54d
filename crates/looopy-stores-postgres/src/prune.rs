//! Retention: what outlived its lifetime is deleted by a periodic prune,
//! in batches of at most `prune_batch` rows (or conversations) a
//! statement, so that it never holds many locks nor a long transaction.
//!
//! - checkpoints `task_ttl_secs` after their last save;
//! - with `ttl_secs`, conversations (history, artifacts), agent states,
//!   event logs, task records and their cancel flags, and push configs
//!   that long after their last write; a conversation whose turn still
//!   holds its lease is kept;
//! - cache entries and taskless leases once they expired.
//!
//! Rows are picked with `FOR UPDATE SKIP LOCKED`, so replicas pruning at
//! once split the work instead of queueing on each other.
//!
//! This module says what a prune deletes ([`steps`]) and what it reports;
//! [`PostgresBackend::prune`](crate::PostgresBackend::prune) runs the
//! steps.

/// What one prune deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PruneReport {
    /// Checkpoints.
    pub checkpoints: u64,
    /// Conversation histories.
    pub conversations: u64,
    /// Artifacts.
    pub artifacts: u64,
    /// Agent states.
    pub agent_states: u64,
    /// Event logs.
    pub event_logs: u64,
    /// Task records.
    pub task_records: u64,
    /// Push configs.
    pub push_configs: u64,
    /// Execution records (turns that started longer ago than the
    /// lifetime).
    pub execution_records: u64,
    /// Cache entries.
    pub cache_entries: u64,
    /// Expired leases without a turn.
    pub leases: u64,
}

/// At most this many batches a table in one prune: a prune ends even when
/// writers outpace it; the next one goes on.
pub(crate) const MAX_BATCHES: usize = 100;

const CHECKPOINTS: &str = "WITH doomed AS (
        SELECT task_id FROM checkpoints
        WHERE saved_at < now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM checkpoints WHERE task_id IN (SELECT task_id FROM doomed)";

const CONVERSATIONS: &str = "WITH doomed AS (
        SELECT context_id FROM histories h
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
          AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.context_id = h.context_id)
        LIMIT $2 FOR UPDATE SKIP LOCKED),
    m AS (DELETE FROM messages WHERE context_id IN (SELECT context_id FROM doomed))
    DELETE FROM histories WHERE context_id IN (SELECT context_id FROM doomed)";

const ARTIFACTS: &str = "WITH doomed AS (
        SELECT context_id, artifact_id FROM artifacts a
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
          AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.context_id = a.context_id)
        LIMIT $2 FOR UPDATE SKIP LOCKED),
    p AS (DELETE FROM artifact_parts WHERE (context_id, artifact_id) IN (SELECT context_id, artifact_id FROM doomed))
    DELETE FROM artifacts WHERE (context_id, artifact_id) IN (SELECT context_id, artifact_id FROM doomed)";

const AGENTS: &str = "WITH doomed AS (
        SELECT context_id FROM agents a
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
          AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.context_id = a.context_id)
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM agents WHERE context_id IN (SELECT context_id FROM doomed)";

const EVENT_LOGS: &str = "WITH doomed AS (
        SELECT task_id FROM event_logs
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED),
    e AS (DELETE FROM events WHERE task_id IN (SELECT task_id FROM doomed))
    DELETE FROM event_logs WHERE task_id IN (SELECT task_id FROM doomed)";

const TASK_RECORDS: &str = "WITH doomed AS (
        SELECT task_id FROM task_records
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED),
    c AS (DELETE FROM task_cancels WHERE task_id IN (SELECT task_id FROM doomed))
    DELETE FROM task_records WHERE task_id IN (SELECT task_id FROM doomed)";

const PUSH_CONFIGS: &str = "WITH doomed AS (
        SELECT task_id, id FROM push_configs
        WHERE touched_at < now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM push_configs WHERE (task_id, id) IN (SELECT task_id, id FROM doomed)";

const EXECUTION_RECORDS: &str = "WITH doomed AS (
        SELECT task_id, turn FROM execution_records
        WHERE started_ms < extract(epoch FROM now()) * 1000 - $1::float8
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM execution_records WHERE (task_id, turn) IN (SELECT task_id, turn FROM doomed)";

const CACHE: &str = "WITH doomed AS (
        SELECT key FROM cache_entries WHERE expires_at <= now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM cache_entries WHERE key IN (SELECT key FROM doomed)";

const LEASES: &str = "WITH doomed AS (
        SELECT context_id FROM leases
        WHERE task_id IS NULL AND expires_at <= now() - $1::float8 * interval '1 millisecond'
        LIMIT $2 FOR UPDATE SKIP LOCKED)
    DELETE FROM leases WHERE context_id IN (SELECT context_id FROM doomed)";

/// One kind of row a prune deletes.
pub(crate) struct Step {
    /// Deletes one batch; bound to the age in milliseconds and the batch
    /// size.
    pub(crate) sql: &'static str,
    /// How long ago, in milliseconds, a row must have been last written or
    /// have expired.
    pub(crate) age_ms: i64,
    /// Where the rows it deleted are counted.
    pub(crate) count: fn(&mut PruneReport) -> &mut u64,
}

/// What one prune deletes, in order, with a checkpoint lifetime of
/// `task_ttl_ms` and a lifetime of everything else of `ttl_ms`
/// (milliseconds, 0: kept for ever).
pub(crate) fn steps(task_ttl_ms: i64, ttl_ms: i64) -> Vec<Step> {
    let step = |sql, age_ms, count| Step { sql, age_ms, count };
    let mut steps = Vec::new();
    if task_ttl_ms > 0 {
        steps.push(step(CHECKPOINTS, task_ttl_ms, |r| &mut r.checkpoints));
    }
    if ttl_ms > 0 {
        steps.extend([
            step(CONVERSATIONS, ttl_ms, |r| &mut r.conversations),
            step(ARTIFACTS, ttl_ms, |r| &mut r.artifacts),
            step(AGENTS, ttl_ms, |r| &mut r.agent_states),
            step(EVENT_LOGS, ttl_ms, |r| &mut r.event_logs),
            step(TASK_RECORDS, ttl_ms, |r| &mut r.task_records),
            step(PUSH_CONFIGS, ttl_ms, |r| &mut r.push_configs),
            step(EXECUTION_RECORDS, ttl_ms, |r| &mut r.execution_records),
        ]);
    }
    steps.push(step(CACHE, 0, |r| &mut r.cache_entries));
    steps.push(step(LEASES, 0, |r| &mut r.leases));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_of_zero_keep_their_rows_and_expired_rows_always_go() {
        let counted = |steps: Vec<Step>| {
            let mut report = PruneReport::default();
            for (n, step) in (1..).zip(steps) {
                *(step.count)(&mut report) = n;
            }
            report
        };
        let none = counted(steps(0, 0));
        assert_eq!((none.checkpoints, none.conversations), (0, 0));
        assert_eq!((none.cache_entries, none.leases), (1, 2));
        let all = steps(5, 7);
        assert_eq!(all.len(), 10, "one step a kind of row");
        assert_eq!(all[0].age_ms, 5, "checkpoints by the checkpoint lifetime");
        assert!(all[1..8].iter().all(|s| s.age_ms == 7));
        let all = counted(all);
        assert_eq!(
            (all.checkpoints, all.execution_records, all.leases),
            (1, 8, 10)
        );
    }
}
