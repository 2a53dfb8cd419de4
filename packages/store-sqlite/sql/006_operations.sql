-- 006_operations: indexes for finding jobs (admin listings, counts) and for
-- the retention pruner; cancelled jobs get a finished time.
--
-- Listings walk seq order inside one (queue, state), one state or one type
-- (core indexRanges), newest or oldest first, so the first page is a few
-- index probes whatever the table size. (queue, state, seq) replaces the
-- (queue, state) index: it serves the same counts and adds the order.
-- The pruner deletes by (state, finished_at).

DROP INDEX ojs_jobs_queue_state;
CREATE INDEX ojs_jobs_queue_state_seq ON ojs_jobs (queue, state, seq);
CREATE INDEX ojs_jobs_state_seq ON ojs_jobs (state, seq);
CREATE INDEX ojs_jobs_type_seq ON ojs_jobs (type, seq);
CREATE INDEX ojs_jobs_prune ON ojs_jobs (state, finished_at) WHERE finished_at IS NOT NULL;

-- finished_at now covers cancelled jobs too (core jobColumns), for retention.
UPDATE ojs_jobs
   SET finished_at = CAST(round(unixepoch(doc ->> '$.cancelled_at', 'subsec') * 1000) AS INTEGER)
 WHERE state = 'cancelled' AND doc ->> '$.cancelled_at' IS NOT NULL;
