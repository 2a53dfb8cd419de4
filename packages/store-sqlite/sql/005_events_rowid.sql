-- 005_events_rowid: the event log without AUTOINCREMENT. AUTOINCREMENT
-- updates sqlite_sequence on every insert (a second b-tree write per event,
-- and every job transition writes an event); a plain INTEGER PRIMARY KEY is
-- still monotonic here because the pruner deletes the oldest events, never
-- the newest, so max(seq) only grows.

CREATE TABLE ojs_events_v5 (
  seq       INTEGER PRIMARY KEY,
  id        TEXT NOT NULL UNIQUE,
  type      TEXT NOT NULL,
  queue     TEXT,
  job_type  TEXT,
  doc       TEXT NOT NULL
) STRICT;

INSERT INTO ojs_events_v5 (seq, id, type, queue, job_type, doc)
  SELECT seq, id, type, queue, job_type, doc FROM ojs_events ORDER BY seq;

DROP TABLE ojs_events;
ALTER TABLE ojs_events_v5 RENAME TO ojs_events;
CREATE INDEX ojs_events_type ON ojs_events (type, seq);
