-- 012_webhooks: the webhook delivery log and its queue (ext-webhooks).
-- One row per (event, subscription): the id is derived from both, so the
-- fan-out inserting a delivery again is a no-op. The document is the
-- source of truth; due_at (pending: next attempt, delivering: lease end,
-- NULL once delivered or dead) is what the delivery loop claims by;
-- settled_at (when it was delivered or died) is what the log is pruned by.
CREATE TABLE ojs_webhook_deliveries (
  seq             INTEGER PRIMARY KEY,
  id              TEXT NOT NULL UNIQUE,
  subscription_id TEXT NOT NULL,
  tenant_id       TEXT,
  state           TEXT NOT NULL,
  due_at          INTEGER,
  settled_at      INTEGER,
  rev             INTEGER NOT NULL,
  doc             TEXT NOT NULL
) STRICT;
CREATE INDEX ojs_webhook_deliveries_due ON ojs_webhook_deliveries (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX ojs_webhook_deliveries_sub ON ojs_webhook_deliveries (subscription_id, seq);
CREATE INDEX ojs_webhook_deliveries_settled ON ojs_webhook_deliveries (state, settled_at) WHERE settled_at IS NOT NULL;
