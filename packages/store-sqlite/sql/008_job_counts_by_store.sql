-- 008_job_counts_by_store: the job counts of 007 are kept by the store's
-- own writes (src/job-counts.ts, decision 0038) instead of row triggers:
-- the deltas of a group commit are summed in memory and written as one
-- upsert per (queue, state) just before its COMMIT. The triggers cost four
-- statements per claimed and acknowledged job, 28 % of its CPU.
--
-- Every statement that writes ojs_jobs is in src/statements.ts and
-- src/job-queries.ts; each call site records its delta. The counts are
-- recomputed here so a database whose counters were kept by 007 starts
-- exact.

DROP TRIGGER ojs_job_counts_insert;
DROP TRIGGER ojs_job_counts_delete;
DROP TRIGGER ojs_job_counts_update;

DELETE FROM ojs_job_counts;
INSERT INTO ojs_job_counts (queue, state, n)
  SELECT queue, state, count(*) FROM ojs_jobs GROUP BY queue, state;
