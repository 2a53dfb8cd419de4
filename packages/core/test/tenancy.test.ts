/**
 * Multi-tenancy decisions: the request's tenant (resolveTenant), the job's
 * (assignTenant), a breach of a tenant's enqueue limits (tenantBreach) and
 * the noisy-neighbour signals (noisyNeighbours).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assignTenant,
  newTenantRecord,
  noisyNeighbours,
  type OjsError,
  resolveTenant,
  tenantBreach,
} from '../src/index.ts';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return (error as OjsError).code;
  }
  return 'ok';
};

describe('tenancy decisions', () => {
  it('resolveTenant: key first, header must agree, pattern checked', () => {
    assert.equal(resolveTenant(undefined, undefined), undefined);
    assert.deepEqual(resolveTenant('acme', undefined), { id: 'acme' });
    assert.deepEqual(resolveTenant(undefined, 'acme'), { id: 'acme', bound: true });
    assert.deepEqual(resolveTenant('acme', 'acme'), { id: 'acme', bound: true });
    assert.equal(
      code(() => resolveTenant('globex', 'acme')),
      'tenant_access_denied',
    );
    assert.equal(
      code(() => resolveTenant('-x', undefined)),
      'invalid_request',
    );
  });

  it('assignTenant: writes the scope, refuses a different body tenant, strict mode', () => {
    const job = { meta: {} as Record<string, unknown> };
    assignTenant(job, { id: 'a' });
    assert.equal(job.meta.tenant_id, 'a');
    const untouched = { meta: { x: 1 } as Record<string, unknown> };
    assignTenant(untouched, undefined);
    assert.deepEqual(untouched.meta, { x: 1 });
    assert.equal(
      code(() => assignTenant({ meta: { tenant_id: 'b' } }, { id: 'a' })),
      'invalid_request',
    );
    assert.equal(
      code(() => assignTenant({ meta: { tenant_id: 'b' } }, { id: 'a', bound: true })),
      'tenant_access_denied',
    );
    assert.equal(
      code(() => assignTenant({ meta: { tenant_id: 'bad id' } }, undefined)),
      'invalid_request',
    );
    assert.equal(
      code(() => assignTenant({ meta: {} }, undefined, true)),
      'invalid_request',
    );
  });

  it('tenantBreach: depth, rate and scheduled limits', () => {
    const record = newTenantRecord('t', '2026-01-01T00:00:00Z');
    record.limits = { max_queue_depth: 2, max_enqueue_rate: { limit: 5, period: 'PT1M' } };
    assert.equal(tenantBreach(record, { depth: 1, enqueued: 0 }, 1, 0), null);
    assert.deepEqual(tenantBreach(record, { depth: 2, enqueued: 0 }, 1, 0), {
      limit: 'max_queue_depth',
      current: 2,
      maximum: 2,
      retryAfter: 1,
    });
    assert.equal(tenantBreach(record, { depth: 0, enqueued: 5 }, 1, 0)?.retryAfter, 60);
  });

  it('noisyNeighbours: depth over 10x the median, rate over 5x the mean, over half the active jobs', () => {
    const load = (tenant_id: string, depth: number, active: number, enqueuedPerMinute: number) => ({
      tenant_id,
      depth,
      active,
      enqueuedPerMinute,
    });
    assert.deepEqual([...noisyNeighbours([load('alone', 1000, 10, 100)])], []);
    const flagged = noisyNeighbours([
      load('noisy', 5000, 8, 600),
      load('a', 10, 1, 10),
      load('b', 12, 1, 10),
      load('c', 9, 0, 10),
      load('d', 11, 0, 10),
      load('e', 10, 0, 10),
    ]);
    assert.deepEqual([...flagged], [['noisy', ['depth', 'rate', 'active_share']]]);
  });
});
