-- 006_keyed_available: the claim plan asks, per fetched queue, whether any
-- available job carries a rate-limit key (such queues take the limited
-- claim path). Without this index that EXISTS walked jobs_claim and read
-- the heap of every available job (a queue of 200,000 unkeyed jobs cut
-- claims from ~1,900 to ~240 jobs/s); with it the answer is one probe.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

CREATE INDEX jobs_keyed_available ON jobs (queue)
  WHERE state = 'available' AND rate_key IS NOT NULL;

-- A queue table churns: every job is inserted, updated two or three times
-- and finished. Autovacuum's defaults (act after 10-20 % of the table
-- changed) let dead rows and stale statistics pile up for long stretches on
-- a large queue; these make it act after ~2 % (the store also analyzes
-- after large intakes, see postgres-store.ts).
ALTER TABLE jobs SET (
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_analyze_threshold = 1000
);
