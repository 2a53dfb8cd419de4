-- 007_operations: indexes for finding jobs (admin listings, counts) and for
-- the retention pruner; cancelled jobs get a finished time.
--
-- Listings walk seq order inside one (queue, state) or one state (core
-- indexRanges), newest or oldest first, so the first page is a few index
-- probes whatever the table size. (queue, state, seq) replaces the
-- (queue, state) index: it serves the same counts and adds the order.
-- No (type, seq) index here, unlike SQLite: state is indexed, so every
-- update of a job is non-HOT and writes an entry in every full index again,
-- so each one taxes every claim and ACK. A type filter is checked along the
-- seq walk (or within the queue/state ranges) instead. The pruner deletes by (state, finished_at).
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

DROP INDEX jobs_queue_state;
CREATE INDEX jobs_queue_state_seq ON jobs (queue, state, seq);
CREATE INDEX jobs_state_seq ON jobs (state, seq);
CREATE INDEX jobs_prune ON jobs (state, finished_at) WHERE finished_at IS NOT NULL;

-- finished_at now covers cancelled jobs too (core jobColumns), for retention.
UPDATE jobs
   SET finished_at = extract(epoch FROM (doc ->> 'cancelled_at')::timestamptz) * 1000
 WHERE state = 'cancelled' AND doc ->> 'cancelled_at' IS NOT NULL;
