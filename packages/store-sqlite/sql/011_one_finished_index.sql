-- 011_one_finished_index: finished jobs are in one index instead of two.
--
-- Every ACK (and every other move to a final state) inserted two entries:
-- (queue, finished_at) from 001 and (state, finished_at) from 006. The
-- planner reads the second for the retention pruner and also for the queue
-- stats' "completed in the last minute / hour" and the finished-since
-- counts of the admin API and the dashboard (then reading each job's row
-- for its queue); the first served no plan (EXPLAIN QUERY PLAN).
-- (state, finished_at, queue) serves all of them: the pruner walks one
-- state by finished_at as before and checks its queue filter in the
-- index; the counts read the state's range since the cut-off without
-- reading a row.

DROP INDEX ojs_jobs_finished;
DROP INDEX ojs_jobs_prune;
CREATE INDEX ojs_jobs_finished ON ojs_jobs (state, finished_at, queue) WHERE finished_at IS NOT NULL;
