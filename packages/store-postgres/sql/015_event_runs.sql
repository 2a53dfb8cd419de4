-- 015_event_runs: a write's run of per-job events (job.enqueued,
-- job.started, job.completed) is one row of the event log, not one row
-- each (decision 0113, as SQLite's migration 014, decision 0111). A claim
-- of 50 inserted 50 event rows, each with its heap tuple and two index
-- entries (seq, the id hash): a quarter of the claim's backend CPU.
--
-- n is how many events the row holds. A row of one event is as before:
-- doc is the event, id, type, queue and job_type its own. A row of
-- several: docs holds them in order (a jsonb[]: built by array_agg, which
-- copies each document, where a jsonb array re-encoded them all), doc and
-- id are NULL (not in the id hash index), and type, queue and job_type are the value all its events
-- share, or NULL when they differ (a listing reads them as "may match" and
-- checks each event; src/event-queries.ts). The rarer types are always
-- rows of their own, so the partial type index of migration 010 holds
-- them all.
--
-- An event's position is (seq, k), k = its index from the row's end
-- (0 for the last, 1 - n for the first): seq still comes from the
-- identity, so a row committed late (a lower seq made visible after a
-- higher one was read) carries all its events below the rows read, where
-- the readers' re-read window finds them (engine event-tail.ts, webhooks
-- fan-out.ts), as a late event row did. Counting from the end keeps every
-- remaining event's position when pruning removes a row's oldest events.
--
-- The existing rows are rows of one event (n = 1): nothing is rewritten.
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

ALTER TABLE events ADD COLUMN n integer NOT NULL DEFAULT 1;
ALTER TABLE events ALTER COLUMN id DROP NOT NULL;
ALTER TABLE events ALTER COLUMN type DROP NOT NULL;
ALTER TABLE events ALTER COLUMN doc DROP NOT NULL;
ALTER TABLE events ADD COLUMN docs jsonb[];
-- A run's docs (~25 KB for 50 events) are TOASTed: lz4 compresses them
-- at a fraction of pglz's CPU and shrinks what the WAL and the TOAST
-- table write (decision 0113: without it a run cost what its rows did).
-- A server built without lz4 keeps the default (pglz).
DO $$
BEGIN
  ALTER TABLE events ALTER COLUMN docs SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END $$;
