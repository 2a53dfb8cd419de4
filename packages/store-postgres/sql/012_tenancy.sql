-- 012_tenancy: the tenant of a job (ext-multi-tenancy), derived by core
-- jobColumns from meta.tenant_id and written once at insert (a job never
-- changes tenant). NULL for the default tenant, so untenanted jobs add no
-- entry to the index below and a server without tenants writes nothing
-- more. The index serves a tenant's claim (available jobs of a queue and
-- tenant, in claim order) and the per-tenant counts of the admin API.
--
-- Same conditions as 001 (search_path = the store's schema, migration
-- advisory lock held).

ALTER TABLE jobs ADD COLUMN tenant_id text;
CREATE INDEX jobs_tenant ON jobs (tenant_id, queue, state, priority DESC, seq)
  WHERE tenant_id IS NOT NULL;
-- The active jobs of each named tenant: the claim counts them against the
-- tenant's max_concurrency per candidate, so the index holds active jobs only.
CREATE INDEX jobs_tenant_active ON jobs (tenant_id)
  WHERE state = 'active' AND tenant_id IS NOT NULL;
