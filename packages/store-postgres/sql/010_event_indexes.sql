-- 010_event_indexes: the event log's indexes, kept to what reads use.
--
-- Every job appends at least three events (job.enqueued, job.started,
-- job.completed), and each event row wrote four btree entries: seq, id,
-- (type, seq), (queue, seq). Now:
-- - (type, seq) holds only the other types (failures, retries, workflow,
--   cron, dead letter, ...): a listing filtered by those alone finds them
--   through it (listEvents is planned with its values, so the planner
--   proves the predicate from the types asked for), e.g. the dashboard's
--   newest workflow.started events in a log full of job events. A listing
--   filtered by one of the three frequent types walks seq order and finds
--   them at once.
-- - (queue, seq) is gone: a listing filtered by queue walks seq order (the
--   primary key) and checks the queue row by row, as the subject filter
--   already did. The log is bounded by the engine's retention (100,000
--   events by default, pruned every minute), and so is such a walk.
-- A job's three lifecycle events now write two index entries each (seq,
-- id): six fewer per job.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

DROP INDEX events_type;
DROP INDEX events_queue;
CREATE INDEX events_type_rare ON events (type, seq)
  WHERE type NOT IN ('job.enqueued', 'job.started', 'job.completed');
