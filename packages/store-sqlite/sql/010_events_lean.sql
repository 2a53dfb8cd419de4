-- 010_events_lean: the event log keeps one b-tree write per event for the
-- job events every job writes (job.enqueued, job.started, job.completed).
--
-- Each event inserted three b-tree entries: the row, the UNIQUE index on id
-- and the (type, seq) index. The id index served only `after` cursors, which
-- now find their event through the store (src/sqlite-store.ts #eventSeq: the
-- seq of an id it listed, checked by a rowid read; else a scan from the
-- newest event, where a live tail's cursor is). The type index keeps only
-- the rarer types, the ones a filter looks for (the dashboard's workflows,
-- failures, queue and cron events); a filter on a per-job type finds a match
-- in every few rows in seq order anyway. A partial index is used only by a
-- query whose WHERE repeats its condition (src/statements.ts listEvents).
-- Measured on node:sqlite, 50,000 events in transactions of 50: 6.0 µs per
-- event before, 3.6 µs with the row alone.
--
-- Event ids were unique by the index; they are uuidv7 values made by core
-- makeEvent, never supplied by a client.

CREATE TABLE ojs_events_v10 (
  seq       INTEGER PRIMARY KEY,
  id        TEXT NOT NULL,
  type      TEXT NOT NULL,
  queue     TEXT,
  job_type  TEXT,
  doc       TEXT NOT NULL
) STRICT;

INSERT INTO ojs_events_v10 (seq, id, type, queue, job_type, doc)
  SELECT seq, id, type, queue, job_type, doc FROM ojs_events ORDER BY seq;

DROP TABLE ojs_events;
ALTER TABLE ojs_events_v10 RENAME TO ojs_events;
CREATE INDEX ojs_events_type ON ojs_events (type, seq)
  WHERE type NOT IN ('job.enqueued', 'job.started', 'job.completed');
