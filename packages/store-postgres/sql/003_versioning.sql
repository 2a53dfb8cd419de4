-- 003_versioning: job versions for routing, and small named settings
-- (schema registry, routing rules, worker declarations).
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

-- Comparable version number (core versionNumber), NULL for unversioned jobs;
-- the claim filters on it when the fetching worker declares handlers.
ALTER TABLE jobs ADD COLUMN version_num double precision;

-- Guarded by rev like jobs: an update applies only if the stored rev is the
-- expected one; a create (expectRev null) only if the key is free.
CREATE TABLE settings (
  namespace   text NOT NULL,
  key         text NOT NULL,
  rev         integer NOT NULL,
  updated_at  text NOT NULL,
  value       jsonb NOT NULL,
  PRIMARY KEY (namespace, key)
);
