/**
 * Tenant metrics (MT-006): jobs of named tenants are counted by tenant_id,
 * untenanted jobs not at all, and the label holds at most
 * MAX_TENANT_LABELS values: later tenants are counted under `_other`.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { type JobRecord, parseEnqueueRequest } from '@ojs/core';
import { Registry } from 'prom-client';
import { MAX_TENANT_LABELS, TenantMetrics } from '../src/observability/metrics.ts';

const job = (tenant?: string): JobRecord =>
  parseEnqueueRequest(
    { type: 't', args: [], meta: tenant === undefined ? {} : { tenant_id: tenant } },
    Date.UTC(2026, 0, 1),
    { visibilityTimeoutMs: 60_000 },
  );

it('counts by tenant_id, capped at MAX_TENANT_LABELS values plus _other', async () => {
  const registry = new Registry();
  const metrics = new TenantMetrics(registry);
  const extra = 5;
  const jobs = Array.from({ length: MAX_TENANT_LABELS + extra }, (_, i) => job(`t-${i}`));
  metrics.enqueued([...jobs, job('t-0'), job()]);
  const values = (await registry.getSingleMetric('ojs_tenant_jobs_enqueued_total')!.get()).values;
  assert.equal(values.length, MAX_TENANT_LABELS + 1);
  const of = (label: string) => values.find((v) => v.labels.tenant_id === label)?.value;
  assert.equal(of('t-0'), 2);
  assert.equal(of('_other'), extra);
  assert.equal(of(`t-${MAX_TENANT_LABELS}`), undefined);
  assert.equal(
    values.reduce((sum, v) => sum + v.value, 0),
    MAX_TENANT_LABELS + extra + 1,
    'the untenanted job is not counted',
  );
});
