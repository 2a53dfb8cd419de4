-- 004_worker_id: the lease holder as a column, so a settlement's guard
-- (state, attempt, rev and worker_id as read) is checked by the UPDATE itself.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held). The backfill locks every active row once; jobs in
-- other states keep NULL, as core jobColumns derives it (the holder while
-- active, else null).

ALTER TABLE jobs ADD COLUMN worker_id text;

UPDATE jobs SET worker_id = doc->>'worker_id' WHERE state = 'active' AND doc ? 'worker_id';
