-- 001_init: jobs, queues, events, unique locks.
-- The job document (doc, JSON) is the source of truth; the other columns are
-- derived from it on every write and exist for indexes and guards.
-- Locking: every write runs in BEGIN IMMEDIATE, so one writer at a time even
-- across processes sharing the file; guards compare `rev`.

CREATE TABLE ojs_jobs (
  id           TEXT PRIMARY KEY,
  seq          INTEGER NOT NULL UNIQUE,
  queue        TEXT NOT NULL,
  type         TEXT NOT NULL,
  state        TEXT NOT NULL,
  priority     INTEGER NOT NULL,
  attempt      INTEGER NOT NULL,
  rev          INTEGER NOT NULL,
  run_at       INTEGER,
  deadline     INTEGER,
  expires_at   INTEGER,
  finished_at  INTEGER,
  dead_letter  INTEGER NOT NULL DEFAULT 0,
  unique_key   TEXT,
  workflow_id  TEXT,
  doc          TEXT NOT NULL
) STRICT;

-- Claim: available jobs of one queue by priority desc, then FIFO.
CREATE INDEX ojs_jobs_claim ON ojs_jobs (queue, priority DESC, seq) WHERE state = 'available';
-- Promoter: due scheduled/retryable jobs.
CREATE INDEX ojs_jobs_due ON ojs_jobs (run_at) WHERE state IN ('scheduled', 'retryable');
-- Reaper: active jobs by their earliest deadline (visibility or execution timeout).
CREATE INDEX ojs_jobs_lease ON ojs_jobs (deadline) WHERE state = 'active';
-- Expiry of unstarted jobs.
CREATE INDEX ojs_jobs_expiry ON ojs_jobs (expires_at)
  WHERE expires_at IS NOT NULL AND state IN ('scheduled', 'available', 'pending', 'retryable');
CREATE INDEX ojs_jobs_dead_letter ON ojs_jobs (seq) WHERE dead_letter = 1;
CREATE INDEX ojs_jobs_queue_state ON ojs_jobs (queue, state);
CREATE INDEX ojs_jobs_finished ON ojs_jobs (queue, finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE ojs_queues (
  name        TEXT PRIMARY KEY,
  paused      INTEGER NOT NULL DEFAULT 0,
  created_at  TEXT NOT NULL,
  paused_at   TEXT
) STRICT;

CREATE TABLE ojs_events (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  id        TEXT NOT NULL UNIQUE,
  type      TEXT NOT NULL,
  queue     TEXT,
  job_type  TEXT,
  doc       TEXT NOT NULL
) STRICT;
CREATE INDEX ojs_events_type ON ojs_events (type, seq);

-- One row per held unique key: which job holds it and since when.
CREATE TABLE ojs_unique_locks (
  key        TEXT PRIMARY KEY,
  job_id     TEXT NOT NULL,
  locked_at  INTEGER NOT NULL
) STRICT;

-- Monotonic job sequence (FIFO order), never reused even after deletes.
CREATE TABLE ojs_counters (
  name   TEXT PRIMARY KEY,
  value  INTEGER NOT NULL
) STRICT;
INSERT INTO ojs_counters (name, value) VALUES ('job_seq', 0);
