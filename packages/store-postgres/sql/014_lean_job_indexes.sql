-- 014_lean_job_indexes: fewer index entries per job transition.
--
-- Every change of state is a non-HOT update, so the new row version gets an
-- entry in every index whose condition it meets. A job's hot path
-- (enqueue, claim, ACK) wrote 16 job index entries; now 12:
-- - Active jobs leave the (queue, state, seq) and (state, seq) listing
--   indexes, as SQLite's migration 009 did: every job passes through
--   'active', whose jobs are few at any time (the leases held) and already
--   have their own partial index (jobs_lease). The claim's UPDATE now writes
--   3 entries instead of 5. Listings of other states repeat the condition
--   (src/job-queries.ts) so the planner can use the partial indexes; a
--   listing of active jobs reads jobs_lease and orders the leases held; a
--   queue's active count comes from the counters (migration 008).
-- - Finished jobs are in one index instead of two, as SQLite's migration
--   011 did: (queue, finished_at) served no plan the (state, finished_at)
--   index does not serve (the queue stats' "completed in the last minute /
--   hour" read a state's range since the cut-off; the retention pruner walks
--   a state by finished_at). (state, finished_at, queue) serves both, the
--   queue checked in the index. The ACK's UPDATE now writes 5 entries
--   instead of 6.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

DROP INDEX jobs_queue_state_seq;
CREATE INDEX jobs_queue_state_seq ON jobs (queue, state, seq) WHERE state <> 'active';
DROP INDEX jobs_state_seq;
CREATE INDEX jobs_state_seq ON jobs (state, seq) WHERE state <> 'active';
DROP INDEX jobs_finished;
DROP INDEX jobs_prune;
CREATE INDEX jobs_finished ON jobs (state, finished_at, queue) WHERE finished_at IS NOT NULL;

-- The event log's id index is a hash index instead of a unique btree: a
-- cursor (`after`) is looked up by equality only, and a hash entry is
-- cheaper to insert than a btree one (no comparisons of the id along a
-- descent). Event ids are UUIDv7 (core makeEvent): their uniqueness never
-- came from the index.
ALTER TABLE events DROP CONSTRAINT events_id_key;
CREATE INDEX events_id ON events USING hash (id);
