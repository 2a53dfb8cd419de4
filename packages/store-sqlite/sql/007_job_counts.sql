-- 007_job_counts: job counts per (queue, state) kept by triggers, so the
-- counts the admin API, the dead letter stats, backpressure and listings'
-- totals ask for are one small-table read instead of a count over the jobs
-- (72 ms for the counts of 1,000,000 jobs; 27 ms for one large state).
--
-- SQLite has one writer, so a plain counter row per pair costs no
-- contention: each state change adds one upsert on the same transaction's
-- pages. No REPLACE is ever run on ojs_jobs (its implicit delete would not
-- fire the delete trigger): inserts, updates and deletes only.
--
-- Same conditions as 001.

CREATE TABLE ojs_job_counts (
  queue TEXT NOT NULL,
  state TEXT NOT NULL,
  n     INTEGER NOT NULL,
  PRIMARY KEY (queue, state)
) STRICT, WITHOUT ROWID;

INSERT INTO ojs_job_counts (queue, state, n)
  SELECT queue, state, count(*) FROM ojs_jobs GROUP BY queue, state;

CREATE TRIGGER ojs_job_counts_insert AFTER INSERT ON ojs_jobs BEGIN
  INSERT INTO ojs_job_counts (queue, state, n) VALUES (new.queue, new.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER ojs_job_counts_delete AFTER DELETE ON ojs_jobs BEGIN
  UPDATE ojs_job_counts SET n = n - 1 WHERE queue = old.queue AND state = old.state;
END;

CREATE TRIGGER ojs_job_counts_update AFTER UPDATE OF queue, state ON ojs_jobs
  WHEN old.queue IS NOT new.queue OR old.state IS NOT new.state BEGIN
  UPDATE ojs_job_counts SET n = n - 1 WHERE queue = old.queue AND state = old.state;
  INSERT INTO ojs_job_counts (queue, state, n) VALUES (new.queue, new.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;
