-- 004_worker_id: the lease holder as a column, so a settlement (ACK, FAIL,
-- expiry) is guarded in its UPDATE on state, attempt, rev and worker_id
-- without reading the document. Derived from the document (core jobColumns)
-- on every write; null unless the job is active.

ALTER TABLE ojs_jobs ADD COLUMN worker_id TEXT;

UPDATE ojs_jobs SET worker_id = doc ->> '$.worker_id' WHERE state = 'active';
