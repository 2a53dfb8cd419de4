-- 002_orchestration: rate limits and queue limits, workflows, cron.
-- Rate windows are fixed windows per key: `window_start` is the first start
-- of the current window, `count` the starts in it. Updated inside the claim
-- transaction, so the check and the increment are one atomic step.

ALTER TABLE ojs_jobs ADD COLUMN rate_key TEXT;
CREATE INDEX ojs_jobs_rate_active ON ojs_jobs (rate_key) WHERE state = 'active' AND rate_key IS NOT NULL;
CREATE INDEX ojs_jobs_workflow ON ojs_jobs (workflow_id, seq) WHERE workflow_id IS NOT NULL;

ALTER TABLE ojs_queues ADD COLUMN concurrency INTEGER;
ALTER TABLE ojs_queues ADD COLUMN rate_limit INTEGER;
ALTER TABLE ojs_queues ADD COLUMN rate_period_ms INTEGER;

CREATE TABLE ojs_rate_windows (
  key           TEXT PRIMARY KEY,
  window_start  INTEGER NOT NULL,
  count         INTEGER NOT NULL
) STRICT;

CREATE TABLE ojs_workflows (
  id   TEXT PRIMARY KEY,
  rev  INTEGER NOT NULL,
  doc  TEXT NOT NULL
) STRICT;

CREATE TABLE ojs_crons (
  name         TEXT PRIMARY KEY,
  rev          INTEGER NOT NULL,
  enabled      INTEGER NOT NULL,
  next_run_ms  INTEGER,
  doc          TEXT NOT NULL
) STRICT;
CREATE INDEX ojs_crons_due ON ojs_crons (next_run_ms) WHERE enabled = 1;
