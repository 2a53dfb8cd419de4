-- 014_event_batches: a write's run of per-job events (job.enqueued,
-- job.started, job.completed) is one row of the event log, not one row
-- each (decision 0111). Measured on node:sqlite, 40 events per
-- transaction: 5.6-6.7 µs per event inserted as a row each, 1.7-2.0 as
-- one row per run (the event's build and JSON included in neither).
--
-- seq is the position of the row's first event; its n events hold the
-- positions seq .. seq + n - 1, and the next row starts at seq + n, so
-- every event keeps one position (an `after` cursor, pruning to the
-- newest N). A row of one event is as before: doc is the event, id and
-- type its own. A row of several: doc is their JSON array, id is NULL, and
-- type, queue and job_type are the value all its events share, or NULL
-- when they differ (a listing's filter reads them as "may match" and
-- checks each event; src/sqlite-store.ts listEvents). The rarer types are
-- always rows of their own, so the partial type index below holds them
-- all, as in migration 010.
--
-- The existing events are carried over as rows of one event (n = 1),
-- keeping their seqs.

CREATE TABLE ojs_events_v14 (
  seq       INTEGER PRIMARY KEY,
  n         INTEGER NOT NULL DEFAULT 1,
  id        TEXT,
  type      TEXT,
  queue     TEXT,
  job_type  TEXT,
  doc       TEXT NOT NULL
) STRICT;

INSERT INTO ojs_events_v14 (seq, n, id, type, queue, job_type, doc)
  SELECT seq, 1, id, type, queue, job_type, doc FROM ojs_events ORDER BY seq;

DROP TABLE ojs_events;
ALTER TABLE ojs_events_v14 RENAME TO ojs_events;
CREATE INDEX ojs_events_type ON ojs_events (type, seq)
  WHERE type NOT IN ('job.enqueued', 'job.started', 'job.completed');
