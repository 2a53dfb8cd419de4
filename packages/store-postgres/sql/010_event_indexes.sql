-- 010_event_indexes: the event log keeps only the indexes a read uses.
--
-- Every transition appends events (three per job at least: enqueued,
-- started, completed), and each event row wrote five btree entries: seq,
-- id, (type, seq), (queue, seq). The (type, seq) and (queue, seq) indexes
-- served listEvents filtered by type or queue; the log is bounded by the
-- engine's event retention (100,000 events by default, pruned every
-- minute), so such a read walks the seq order (the primary key) and checks
-- the filter row by row, as the subject filter already does. What stays:
-- seq (order, cursors, pruning) and id (where a cursor resumes).
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

DROP INDEX events_type;
DROP INDEX events_queue;
