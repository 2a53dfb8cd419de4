-- 002_orchestration: rate limits and queue limits, workflows, cron.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).
-- Rate windows are fixed windows per key: `window_start` is the first start
-- of the current window, `count` the starts in it. They are read and updated
-- inside the claim transaction while the claimer holds the advisory lock of
-- the queue (queue limits) or of the rate key (job limits).

ALTER TABLE jobs ADD COLUMN rate_key text;
-- Tells the claim whether a queue has rate-limited jobs waiting (slow path).
CREATE INDEX jobs_rate_available ON jobs (queue, priority DESC, seq)
  WHERE state = 'available' AND rate_key IS NOT NULL;
CREATE INDEX jobs_rate_active ON jobs (rate_key) WHERE state = 'active' AND rate_key IS NOT NULL;
CREATE INDEX jobs_workflow ON jobs (workflow_id, seq) WHERE workflow_id IS NOT NULL;

ALTER TABLE queues ADD COLUMN concurrency integer;
ALTER TABLE queues ADD COLUMN rate_limit integer;
ALTER TABLE queues ADD COLUMN rate_period_ms double precision;

CREATE TABLE rate_windows (
  key           text PRIMARY KEY,
  window_start  double precision NOT NULL,
  count         integer NOT NULL
);

CREATE TABLE workflows (
  id   text PRIMARY KEY,
  rev  integer NOT NULL,
  doc  jsonb NOT NULL
);

CREATE TABLE crons (
  name         text PRIMARY KEY,
  rev          integer NOT NULL,
  enabled      boolean NOT NULL,
  next_run_ms  double precision,
  doc          jsonb NOT NULL
);
CREATE INDEX crons_due ON crons (next_run_ms) WHERE enabled;
