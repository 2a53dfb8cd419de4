-- 003_versioning: job versions for routing, and small named settings
-- (schema registry, routing rules, worker declarations).

ALTER TABLE ojs_jobs ADD COLUMN version_num INTEGER;

CREATE TABLE ojs_settings (
  namespace   TEXT NOT NULL,
  key         TEXT NOT NULL,
  rev         INTEGER NOT NULL,
  updated_at  TEXT NOT NULL,
  doc         TEXT NOT NULL,
  PRIMARY KEY (namespace, key)
) STRICT;
