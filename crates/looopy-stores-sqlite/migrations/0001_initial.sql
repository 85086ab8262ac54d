-- Looopy SQLite schema, version 1. Timestamps ending in `_ms` are Unix
-- milliseconds (what retention and leases compare), `_ns` Unix nanoseconds
-- (what listings order by). Every `body` is the JSON of the stored value.

-- Loop checkpoints of running turns, by task.
CREATE TABLE checkpoints (
    task_id    TEXT PRIMARY KEY NOT NULL,
    context_id TEXT NOT NULL,
    saved_ms   INTEGER NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX checkpoints_by_save ON checkpoints (saved_ms);

-- One row per conversation with a history: its epoch (changed by every
-- rewrite) and its length.
CREATE TABLE histories (
    context_id TEXT PRIMARY KEY NOT NULL,
    epoch      TEXT NOT NULL,
    len        INTEGER NOT NULL,
    touched_ms INTEGER NOT NULL
);
CREATE INDEX histories_by_touch ON histories (touched_ms);

-- The messages of each history, `seq` 0-based and without gaps.
CREATE TABLE messages (
    context_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (context_id, seq)
) WITHOUT ROWID;

-- Artifacts; `ord` is the creation order within the conversation.
CREATE TABLE artifacts (
    context_id  TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    ord         INTEGER NOT NULL,
    touched_ms  INTEGER NOT NULL,
    body        TEXT NOT NULL,
    PRIMARY KEY (context_id, artifact_id)
);
CREATE INDEX artifacts_by_order ON artifacts (context_id, ord);
CREATE INDEX artifacts_by_touch ON artifacts (touched_ms);

-- Agent lifecycle state, by conversation.
CREATE TABLE agent_states (
    context_id  TEXT PRIMARY KEY NOT NULL,
    owner       TEXT,
    activity_ns INTEGER NOT NULL,
    touched_ms  INTEGER NOT NULL,
    body        TEXT NOT NULL
);
CREATE INDEX agent_states_by_owner ON agent_states (owner, activity_ns DESC, context_id);
CREATE INDEX agent_states_by_touch ON agent_states (touched_ms);

-- Event logs: one sequence for every task, never reused (AUTOINCREMENT),
-- so a task's ids keep growing after its log was deleted.
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     TEXT NOT NULL,
    is_final    INTEGER NOT NULL,
    appended_ms INTEGER NOT NULL,
    body        TEXT NOT NULL
);
CREATE INDEX events_by_task ON events (task_id, seq);
CREATE INDEX events_by_append ON events (appended_ms);

-- Turn leases and the registry of running turns (rows with a task).
CREATE TABLE leases (
    context_id TEXT PRIMARY KEY NOT NULL,
    owner      TEXT NOT NULL,
    task_id    TEXT,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX leases_by_expiry ON leases (expires_ms);

-- A2A task records; `version` is the one compare-and-put checks.
CREATE TABLE task_records (
    task_id    TEXT PRIMARY KEY NOT NULL,
    context_id TEXT NOT NULL,
    owner      TEXT,
    updated_ns INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    touched_ms INTEGER NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX task_records_by_update ON task_records (updated_ns DESC, task_id);
CREATE INDEX task_records_by_owner ON task_records (owner, updated_ns DESC, task_id);
CREATE INDEX task_records_by_context ON task_records (context_id, updated_ns DESC, task_id);
CREATE INDEX task_records_by_touch ON task_records (touched_ms);

-- Raised cancel flags, apart from the records.
CREATE TABLE cancel_flags (
    task_id   TEXT PRIMARY KEY NOT NULL,
    raised_ms INTEGER NOT NULL
);

-- A2A push notification configs.
CREATE TABLE push_configs (
    task_id    TEXT NOT NULL,
    id         TEXT NOT NULL,
    touched_ms INTEGER NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (task_id, id)
) WITHOUT ROWID;
CREATE INDEX push_configs_by_touch ON push_configs (touched_ms);

-- The tool and model response caches.
CREATE TABLE cache_entries (
    key        TEXT PRIMARY KEY NOT NULL,
    expires_ms INTEGER NOT NULL,
    value      TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX cache_entries_by_expiry ON cache_entries (expires_ms);
