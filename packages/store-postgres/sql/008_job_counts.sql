-- 008_job_counts: job counts per (queue, state) kept by triggers, so the
-- counts the admin API, the dead letter stats, backpressure and listings'
-- totals ask for are a small read instead of a count over the jobs (450 ms
-- for the counts of 1,000,000 jobs; 150 ms for one large state).
--
-- Several transactions change jobs at once, so one counter row per pair
-- would serialise every claim and ACK of a queue on its row lock until
-- COMMIT. Instead each statement that changes jobs appends its net change
-- per pair to job_count_deltas (statement-level triggers with transition
-- tables: one row per pair per statement, however many jobs a batch holds;
-- appends never wait for each other), and the store folds the deltas into
-- job_counts now and then (compactJobCounts). A count is counters + deltas.
-- TRUNCATE fires no trigger: reset truncates the counters too.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held). The functions keep that search_path (SET ... FROM
-- CURRENT): triggers run with the caller's, and the store's statements
-- are schema-qualified rather than relying on it.

CREATE TABLE job_counts (
  queue text NOT NULL,
  state text NOT NULL,
  n     bigint NOT NULL,
  PRIMARY KEY (queue, state)
);

CREATE TABLE job_count_deltas (
  queue text NOT NULL,
  state text NOT NULL,
  delta bigint NOT NULL
);

INSERT INTO job_counts (queue, state, n)
  SELECT queue, state, count(*) FROM jobs GROUP BY queue, state;

CREATE FUNCTION ojs_job_counts_inserted() RETURNS trigger
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_count_deltas (queue, state, delta)
    SELECT queue, state, count(*) FROM new_jobs GROUP BY queue, state;
  RETURN NULL;
END
$$;

CREATE FUNCTION ojs_job_counts_deleted() RETURNS trigger
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_count_deltas (queue, state, delta)
    SELECT queue, state, -count(*) FROM old_jobs GROUP BY queue, state;
  RETURN NULL;
END
$$;

CREATE FUNCTION ojs_job_counts_updated() RETURNS trigger
  LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  -- Heartbeats and lease extensions change no state: nothing is appended.
  INSERT INTO job_count_deltas (queue, state, delta)
    SELECT queue, state, sum(d) FROM (
        SELECT queue, state, 1 AS d FROM new_jobs
        UNION ALL
        SELECT queue, state, -1 AS d FROM old_jobs
      ) changes
     GROUP BY queue, state
    HAVING sum(d) <> 0;
  RETURN NULL;
END
$$;

CREATE TRIGGER job_counts_inserted AFTER INSERT ON jobs
  REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION ojs_job_counts_inserted();

CREATE TRIGGER job_counts_deleted AFTER DELETE ON jobs
  REFERENCING OLD TABLE AS old_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION ojs_job_counts_deleted();

CREATE TRIGGER job_counts_updated AFTER UPDATE ON jobs
  REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION ojs_job_counts_updated();
