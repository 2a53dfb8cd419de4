-- 011_webhooks: the webhook delivery log and its queue (ext-webhooks).
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).
--
-- One row per (event, subscription): the id is derived from both, so the
-- fan-out inserting a delivery again (after a crash, from another process)
-- is a no-op. The document is the source of truth; due_at (pending: next
-- attempt, delivering: lease end, NULL once delivered or dead) is what the
-- delivery loop claims by, with a write guarded on rev; settled_at (when
-- it was delivered or died) is what the log is pruned by.
CREATE TABLE webhook_deliveries (
  seq             bigserial PRIMARY KEY,
  id              text NOT NULL UNIQUE,
  subscription_id text NOT NULL,
  tenant_id       text,
  state           text NOT NULL,
  due_at          double precision,
  settled_at      double precision,
  rev             integer NOT NULL,
  doc             jsonb NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_deliveries_sub ON webhook_deliveries (subscription_id, seq);
CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (state, settled_at) WHERE settled_at IS NOT NULL;
