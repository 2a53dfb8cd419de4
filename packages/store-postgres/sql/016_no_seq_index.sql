-- 016_no_seq_index: no index on seq alone (decision 0117).
--
-- Every change of state is a non-HOT update, so each transition wrote an
-- entry in the unique seq index too: three per job (enqueue, claim, ACK),
-- for an index no hot-path statement reads. seq comes from job_seq (one
-- nextval per job, never rewritten), so its uniqueness never came from the
-- index. What walked it now walks others:
-- - a listing without a state (src/job-queries.ts) merges one walk per
--   state: (state, seq) for the states other than active, jobs_lease for
--   the leases held; a type filter is checked along those walks;
-- - the dead-letter page of every queue reads jobs_dead_letter and sorts
--   (the discarded jobs kept as dead letters).
-- A process of the previous version still running (a rolling upgrade)
-- plans its listings without a state on the other indexes or a sorted scan:
-- slower for that while, never wrong.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

ALTER TABLE jobs DROP CONSTRAINT jobs_seq_key;
