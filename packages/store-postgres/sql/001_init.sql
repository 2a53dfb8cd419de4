-- 001_init: jobs, queues, events, unique locks.
--
-- Runs inside the migration transaction with search_path set to the store's
-- schema (so names here are unqualified) while holding the per-schema
-- migration advisory lock: concurrent starts apply it exactly once.
--
-- The job document (doc, jsonb) is the source of truth; the other columns
-- are derived from it on every write and exist for indexes and guards. Every
-- transition is one guarded UPDATE ... WHERE id = $1 AND rev = $2.
-- Instants are epoch milliseconds (double precision: exact for integers).

CREATE SEQUENCE job_seq AS bigint;

CREATE TABLE jobs (
  id           text PRIMARY KEY,
  -- FIFO order within a priority, from job_seq (never a timestamp).
  seq          bigint NOT NULL UNIQUE,
  queue        text NOT NULL,
  type         text NOT NULL,
  state        text NOT NULL,
  priority     integer NOT NULL,
  attempt      integer NOT NULL,
  rev          integer NOT NULL,
  run_at       double precision,
  -- min(lease_until, timeout_at) while active.
  deadline     double precision,
  expires_at   double precision,
  finished_at  double precision,
  dead_letter  boolean NOT NULL DEFAULT false,
  unique_key   text,
  workflow_id  text,
  doc          jsonb NOT NULL
);

-- Claim: available jobs of one queue by priority desc, then FIFO.
CREATE INDEX jobs_claim ON jobs (queue, priority DESC, seq) WHERE state = 'available';
-- Promoter: due scheduled/retryable jobs.
CREATE INDEX jobs_due ON jobs (run_at) WHERE state IN ('scheduled', 'retryable');
-- Reaper: active jobs by their earliest deadline (visibility or execution timeout).
CREATE INDEX jobs_lease ON jobs (deadline) WHERE state = 'active';
-- Expiry of unstarted jobs.
CREATE INDEX jobs_expiry ON jobs (expires_at)
  WHERE expires_at IS NOT NULL AND state IN ('scheduled', 'available', 'pending', 'retryable');
CREATE INDEX jobs_dead_letter ON jobs (queue, seq) WHERE dead_letter;
CREATE INDEX jobs_queue_state ON jobs (queue, state);
CREATE INDEX jobs_finished ON jobs (queue, finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE queues (
  name        text PRIMARY KEY,
  paused      boolean NOT NULL DEFAULT false,
  created_at  text NOT NULL,
  paused_at   text
);

CREATE TABLE events (
  seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id        text NOT NULL UNIQUE,
  type      text NOT NULL,
  queue     text,
  job_type  text,
  doc       jsonb NOT NULL
);
CREATE INDEX events_type ON events (type, seq);
CREATE INDEX events_queue ON events (queue, seq) WHERE queue IS NOT NULL;

-- One row per held unique key: which job holds it and since when. The row
-- is locked (INSERT or SELECT ... FOR UPDATE) by the inserting transaction,
-- so two enqueues of one key serialise on it: the database enforces the key.
CREATE TABLE unique_locks (
  key        text PRIMARY KEY,
  job_id     text NOT NULL,
  locked_at  double precision NOT NULL
);
CREATE INDEX unique_locks_job ON unique_locks (job_id);
