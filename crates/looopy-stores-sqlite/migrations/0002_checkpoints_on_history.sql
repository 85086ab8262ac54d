-- Looopy SQLite schema, version 2: a checkpoint that builds on the
-- conversation's stored history keeps only the turn's own messages.
-- `messages` holds them (a JSON array) and `body` the checkpoint without
-- its messages (its `storedHistory` says how many of the history's first
-- messages go in front of them on load). A row written by version 1 has no
-- `messages`: its `body` is the whole checkpoint.
ALTER TABLE checkpoints ADD COLUMN messages TEXT;
