-- 013_tenancy: the tenant of a job (ext-multi-tenancy), derived by core
-- jobColumns from meta.tenant_id and written once at insert (a job never
-- changes tenant). NULL for the default tenant, so untenanted jobs add no
-- entry to the index below and a server without tenants writes nothing more.
-- The index serves a tenant's claim (available jobs of a queue and tenant,
-- in claim order) and the per-tenant counts of the admin API.

ALTER TABLE ojs_jobs ADD COLUMN tenant_id TEXT;
CREATE INDEX ojs_jobs_tenant ON ojs_jobs (tenant_id, queue, state, priority DESC, seq)
  WHERE tenant_id IS NOT NULL;
-- The active jobs of each named tenant: the claim counts them against the
-- tenant's max_concurrency per candidate, so the index holds active jobs only.
CREATE INDEX ojs_jobs_tenant_active ON ojs_jobs (tenant_id)
  WHERE state = 'active' AND tenant_id IS NOT NULL;
