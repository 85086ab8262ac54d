-- Looopy SQLite schema, version 3: execution records, one row per turn of
-- a task (`turn` is the record's turn number, 0 when it has none).
-- `started_ns` orders listings, `started_ms` is what the retention's age
-- compares.
CREATE TABLE execution_records (
    task_id    TEXT NOT NULL,
    turn       INTEGER NOT NULL,
    context_id TEXT NOT NULL,
    started_ns INTEGER NOT NULL,
    started_ms INTEGER NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (task_id, turn)
);
CREATE INDEX execution_records_by_context ON execution_records (context_id, started_ns DESC, task_id);
CREATE INDEX execution_records_by_start ON execution_records (started_ms);
