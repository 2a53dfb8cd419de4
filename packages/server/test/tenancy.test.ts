/**
 * Multi-tenancy over HTTP (ext-multi-tenancy): every job route called by
 * the job's own tenant, by another tenant and with no tenant (an operator
 * or shared worker). The foreign request is refused as not found and
 * changes nothing the store shows (helpers `snapshot`); the others act.
 * Then enqueue rules (header vs body, pattern, key-bound tenants, strict
 * mode), limits, the admin routes and queue stats by tenant.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.ts';
import { type Ctx, type Json, setup, snapshot } from './helpers.ts';

const OWN = 'tenant-own';
const FOREIGN = 'tenant-foreign';

type Caller = 'own' | 'foreign' | 'none';
const CALLERS: Caller[] = ['own', 'foreign', 'none'];

function headersOf(caller: Caller): Record<string, string> {
  if (caller === 'own') return { 'x-ojs-tenant': OWN };
  if (caller === 'foreign') return { 'x-ojs-tenant': FOREIGN };
  return {};
}

let queueSeq = 0;

/** A job of OWN in a queue of its own, in the state a route needs. */
async function prepare(
  ctx: Ctx,
  state: 'available' | 'active' | 'dead' | 'pending',
): Promise<{ id: string; queue: string; workerId: string }> {
  const queue = `mt-${++queueSeq}`;
  const workerId = `w-${queueSeq}`;
  const body: Json = { type: 'mt.job', args: [1], options: { queue } };
  if (state === 'dead') body.options.retry = { max_attempts: 1, on_exhaustion: 'dead_letter' };
  if (state === 'pending') body.options.pending = true;
  const res = await ctx.req('POST', '/ojs/v1/jobs', body, headersOf('own'));
  assert.equal(res.statusCode, 201, res.body);
  const id = res.json().job.id as string;
  assert.equal(res.json().job.meta.tenant_id, OWN);
  if (state === 'active' || state === 'dead') {
    const jobs = await ctx.fetch({ queues: [queue], worker_id: workerId });
    assert.equal(jobs[0]?.id, id);
  }
  if (state === 'dead') {
    const nack = await ctx.req('POST', '/ojs/v1/workers/nack', {
      job_id: id,
      worker_id: workerId,
      error: { code: 'boom', message: 'boom' },
    });
    assert.equal(nack.statusCode, 200, nack.body);
  }
  return { id, queue, workerId };
}

async function workflowOf(ctx: Ctx): Promise<string> {
  const res = await ctx.req(
    'POST',
    '/ojs/v1/workflows',
    {
      type: 'chain',
      name: 'mt-chain',
      steps: [
        { type: 'mt.step', args: [1] },
        { type: 'mt.step', args: [2] },
      ],
    },
    headersOf('own'),
  );
  assert.equal(res.statusCode, 201, res.body);
  return res.json().workflow.id;
}

interface RouteCase {
  name: string;
  state: 'available' | 'active' | 'dead' | 'pending' | 'workflow';
  /** Status for the own tenant and for no tenant. */
  ok: number;
  run(
    ctx: Ctx,
    job: { id: string; queue: string; workerId: string },
    headers: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  /** What a foreign request is answered (default 404); and how its answer shows nothing. */
  foreign?: (res: LightMyRequestResponse) => void;
}

const emptyJobs = (res: LightMyRequestResponse) => {
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json().jobs, []);
};

const ROUTES: RouteCase[] = [
  {
    name: 'GET /jobs/:id',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/jobs/${job.id}`, undefined, h),
  },
  {
    name: 'DELETE /jobs/:id',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) => ctx.req('DELETE', `/ojs/v1/jobs/${job.id}`, undefined, h),
  },
  {
    name: 'POST /jobs/:id/cancel',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) => ctx.req('POST', `/ojs/v1/jobs/${job.id}/cancel`, {}, h),
  },
  {
    name: 'POST /jobs/:id/activate',
    state: 'pending',
    ok: 200,
    run: (ctx, job, h) => ctx.req('POST', `/ojs/v1/jobs/${job.id}/activate`, {}, h),
  },
  {
    name: 'POST /workers/fetch',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) =>
      ctx.req('POST', '/ojs/v1/workers/fetch', { queues: [job.queue], worker_id: 'x' }, h),
    foreign: emptyJobs,
  },
  {
    name: 'POST /workers/ack',
    state: 'active',
    ok: 200,
    run: (ctx, job, h) =>
      ctx.req('POST', '/ojs/v1/workers/ack', { job_id: job.id, worker_id: job.workerId }, h),
  },
  {
    name: 'POST /jobs/:id/ack',
    state: 'active',
    ok: 200,
    run: (ctx, job, h) =>
      ctx.req('POST', `/ojs/v1/jobs/${job.id}/ack`, { worker_id: job.workerId }, h),
  },
  {
    name: 'POST /workers/nack',
    state: 'active',
    ok: 200,
    run: (ctx, job, h) =>
      ctx.req(
        'POST',
        '/ojs/v1/workers/nack',
        { job_id: job.id, worker_id: job.workerId, error: { code: 'x', message: 'x' } },
        h,
      ),
  },
  {
    name: 'POST /jobs/:id/nack',
    state: 'active',
    ok: 200,
    run: (ctx, job, h) =>
      ctx.req(
        'POST',
        `/ojs/v1/jobs/${job.id}/nack`,
        { worker_id: job.workerId, error: { code: 'x', message: 'x' } },
        h,
      ),
  },
  {
    name: 'POST /workers/ack/batch',
    state: 'active',
    ok: 200,
    run: (ctx, job, h) =>
      ctx.req(
        'POST',
        '/ojs/v1/workers/ack/batch',
        { acks: [{ job_id: job.id, worker_id: job.workerId }] },
        h,
      ),
    foreign: (res) => {
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().results[0].status, 'not_found', res.body);
    },
  },
  {
    name: 'POST /workers/heartbeat',
    state: 'active',
    ok: 200,
    run: async (ctx, job, h) => {
      // Time moves so an extension would change the lease.
      ctx.clock.advance(1000);
      return ctx.req(
        'POST',
        '/ojs/v1/workers/heartbeat',
        { worker_id: job.workerId, active_jobs: [job.id] },
        h,
      );
    },
    foreign: (res) => {
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json().jobs_extended ?? [], []);
    },
  },
  {
    name: 'PUT /jobs/:id/progress',
    state: 'active',
    ok: 200,
    run: (ctx, job, h) => ctx.req('PUT', `/ojs/v1/jobs/${job.id}/progress`, { progress: 0.5 }, h),
  },
  {
    name: 'GET /jobs/:id/progress',
    state: 'active',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/jobs/${job.id}/progress`, undefined, h),
  },
  {
    name: 'GET /jobs?queue',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/jobs?queue=${job.queue}`, undefined, h),
    foreign: emptyJobs,
  },
  {
    name: 'GET /dead-letter/:id',
    state: 'dead',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/dead-letter/${job.id}`, undefined, h),
  },
  {
    name: 'GET /dead-letter?queue',
    state: 'dead',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/dead-letter?queue=${job.queue}`, undefined, h),
    foreign: emptyJobs,
  },
  {
    name: 'POST /dead-letter/:id/retry',
    state: 'dead',
    ok: 200,
    run: (ctx, job, h) => ctx.req('POST', `/ojs/v1/dead-letter/${job.id}/retry`, {}, h),
  },
  {
    name: 'DELETE /dead-letter/:id',
    state: 'dead',
    ok: 200,
    run: (ctx, job, h) => ctx.req('DELETE', `/ojs/v1/dead-letter/${job.id}`, undefined, h),
  },
  {
    name: 'GET /workflows/:id',
    state: 'workflow',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/workflows/${job.id}`, undefined, h),
  },
  {
    name: 'DELETE /workflows/:id',
    state: 'workflow',
    ok: 200,
    run: (ctx, job, h) => ctx.req('DELETE', `/ojs/v1/workflows/${job.id}`, undefined, h),
  },
  {
    name: 'GET /admin/jobs/:id',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/admin/jobs/${job.id}`, undefined, h),
  },
  {
    name: 'POST /admin/jobs/:id/cancel',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) => ctx.req('POST', `/ojs/v1/admin/jobs/${job.id}/cancel`, {}, h),
  },
  {
    name: 'POST /admin/jobs/:id/retry',
    state: 'dead',
    ok: 200,
    run: (ctx, job, h) => ctx.req('POST', `/ojs/v1/admin/jobs/${job.id}/retry`, {}, h),
  },
  {
    name: 'GET /queues/:name',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/queues/${job.queue}`, undefined, h),
    foreign: (res) => {
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().queue.counts.available, 0, res.body);
    },
  },
  {
    name: 'GET /events?queues',
    state: 'available',
    ok: 200,
    run: (ctx, job, h) => ctx.req('GET', `/ojs/v1/events?queues=${job.queue}`, undefined, h),
    foreign: (res) => {
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json().events, []);
    },
  },
];

describe('multi-tenancy: every job route x (own, foreign, no tenant) over HTTP', () => {
  let ctx: Ctx;
  before(async () => {
    ctx = await setup();
  });
  after(async () => {
    await ctx.close();
  });

  for (const route of ROUTES) {
    for (const caller of CALLERS) {
      it(`${route.name} as ${caller}`, async () => {
        const job =
          route.state === 'workflow'
            ? { id: await workflowOf(ctx), queue: 'default', workerId: '' }
            : await prepare(ctx, route.state);
        const before = await snapshot(ctx.engine);
        const res = await route.run(ctx, job, headersOf(caller));
        if (caller === 'foreign') {
          if (route.foreign !== undefined) route.foreign(res);
          else {
            assert.equal(res.statusCode, 404, `${route.name}: ${res.body}`);
            assert.equal(res.json().error.code, 'not_found');
          }
          assert.equal(await snapshot(ctx.engine), before, `${route.name} changed the store`);
        } else {
          assert.equal(res.statusCode, route.ok, `${route.name}: ${res.body}`);
          if (route.foreign !== undefined && route.name !== 'POST /workers/heartbeat') {
            // The same answer shows the own job to its tenant and to an operator.
            assert.notDeepEqual(res.json(), { jobs: [] });
          }
        }
      });
    }
  }
});

describe('multi-tenancy: enqueue', () => {
  let ctx: Ctx;
  before(async () => {
    ctx = await setup();
  });
  after(async () => {
    await ctx.close();
  });

  it('copies the header into meta.tenant_id on single, batch and push-many enqueues', async () => {
    const h = { 'x-ojs-tenant': 'acme' };
    const single = await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [] }, h);
    assert.equal(single.json().job.meta.tenant_id, 'acme');
    const batch = await ctx.req(
      'POST',
      '/ojs/v1/jobs/batch',
      {
        jobs: [
          { type: 't', args: [] },
          { type: 't', args: [] },
        ],
      },
      h,
    );
    assert.deepEqual(
      batch.json().jobs.map((j: Json) => j.meta.tenant_id),
      ['acme', 'acme'],
    );
    const many = await ctx.req(
      'POST',
      '/ojs/v1/jobs/many',
      { jobs: [{ type: 't', args: [] }] },
      { 'x-ojs-tenant-id': 'acme' },
    );
    assert.equal(many.statusCode, 200, many.body);
    assert.equal(many.json().results[0].job.meta.tenant_id, 'acme');
  });

  it('leaves an untenanted job byte-exact (no _default written)', async () => {
    const res = await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [], meta: { a: 1 } });
    assert.deepEqual(res.json().job.meta, { a: 1 });
  });

  it('400 when header and body disagree, and on a bad pattern; nothing stored', async () => {
    const before = await snapshot(ctx.engine);
    const mismatch = await ctx.req(
      'POST',
      '/ojs/v1/jobs',
      { type: 't', args: [], meta: { tenant_id: 'b' } },
      { 'x-ojs-tenant': 'a' },
    );
    assert.equal(mismatch.statusCode, 400, mismatch.body);
    const badHeader = await ctx.req(
      'POST',
      '/ojs/v1/jobs',
      { type: 't', args: [] },
      {
        'x-ojs-tenant': '-bad tenant',
      },
    );
    assert.equal(badHeader.statusCode, 400, badHeader.body);
    const badBody = await ctx.req('POST', '/ojs/v1/jobs', {
      type: 't',
      args: [],
      meta: { tenant_id: 'no spaces' },
    });
    assert.equal(badBody.statusCode, 400, badBody.body);
    assert.equal(await snapshot(ctx.engine), before);
  });

  it('workflow steps inherit the tenant; a step naming another is refused', async () => {
    const h = { 'x-ojs-tenant': 'wf-tenant' };
    const res = await ctx.req(
      'POST',
      '/ojs/v1/workflows',
      {
        type: 'chain',
        steps: [
          { type: 's', args: [] },
          { type: 's', args: [] },
        ],
      },
      h,
    );
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json().workflow.id;
    const jobs = await ctx.engine.store.listWorkflowJobs(id);
    assert.ok(jobs.length > 0);
    for (const job of jobs) assert.equal(job.meta.tenant_id, 'wf-tenant');
    const mismatch = await ctx.req(
      'POST',
      '/ojs/v1/workflows',
      { type: 'chain', steps: [{ type: 's', args: [], meta: { tenant_id: 'other' } }] },
      h,
    );
    assert.equal(mismatch.statusCode, 400, mismatch.body);
  });

  it('a cron registered for a tenant stamps its jobs; another tenant cannot replace it', async () => {
    const cron = {
      name: 'mt-nightly',
      expression: '0 3 * * *',
      job_template: { type: 'report', args: [] },
    };
    const res = await ctx.req('POST', '/ojs/v1/cron', cron, { 'x-ojs-tenant': 'cron-a' });
    assert.equal(res.statusCode, 201, res.body);
    const stored = await ctx.engine.store.getCron('mt-nightly');
    assert.equal((stored!.job_template.meta as { tenant_id?: string }).tenant_id, 'cron-a');
    const other = await ctx.req('POST', '/ojs/v1/cron', cron, { 'x-ojs-tenant': 'cron-b' });
    assert.equal(other.statusCode, 403, other.body);
    assert.equal(other.json().error.code, 'tenant_access_denied');
    const triggered = await ctx.req('POST', '/ojs/v1/cron/mt-nightly/trigger', {});
    assert.equal(triggered.json().job.meta.tenant_id, 'cron-a');
  });

  it('registers a tenant on its first enqueue (tenant.created), operator-scoped admin routes', async () => {
    await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [] }, { 'x-ojs-tenant': 'fresh' });
    const created = await ctx.req('GET', '/ojs/v1/events?types=tenant.created');
    assert.ok(created.json().events.some((e: Json) => e.data.tenant_id === 'fresh'));
    const got = await ctx.req('GET', '/ojs/v1/admin/tenants/fresh');
    assert.equal(got.statusCode, 200, got.body);
    assert.equal(got.json().tenant.fairness_weight, 1);
    const stats = await ctx.req('GET', '/ojs/v1/admin/tenants/fresh/stats');
    assert.equal(stats.json().tenant_id, 'fresh');
    assert.equal(stats.json().total_jobs, 1);
    assert.equal(stats.json().jobs.available, 1);
    const list = await ctx.req('GET', '/ojs/v1/admin/tenants');
    const fresh = list.json().tenants.find((t: Json) => t.tenant_id === 'fresh');
    assert.equal(fresh.stats.total_jobs, 1);
    const jobs = await ctx.req(
      'GET',
      '/ojs/v1/admin/tenants/fresh/jobs?state=available&page=1&per_page=10',
    );
    assert.equal(jobs.json().jobs.length, 1);
    assert.equal(jobs.json().jobs[0].meta.tenant_id, 'fresh');
    // The default tenant is no record of its own: its id does not match MT-001.
    const reserved = await ctx.req('PUT', '/ojs/v1/admin/tenants/_default/limits', {
      max_concurrency: 1,
    });
    assert.equal(reserved.statusCode, 400, reserved.body);
    const del = await ctx.req('DELETE', '/ojs/v1/admin/tenants/fresh');
    assert.equal(del.statusCode, 204);
    assert.equal((await ctx.req('GET', '/ojs/v1/admin/tenants/fresh')).statusCode, 404);
  });
});

describe('multi-tenancy: limits', () => {
  let ctx: Ctx;
  before(async () => {
    ctx = await setup();
  });
  after(async () => {
    await ctx.close();
  });

  it('max_queue_depth: 429 TENANT_LIMIT_EXCEEDED with Retry-After and details; runtime change', async () => {
    const h = { 'x-ojs-tenant': 'small' };
    const put = await ctx.req('PUT', '/ojs/v1/admin/tenants/small/limits', {
      max_queue_depth: 2,
      reason: 'test',
    });
    assert.equal(put.statusCode, 200, put.body);
    for (let i = 0; i < 2; i++) {
      const ok = await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [i] }, h);
      assert.equal(ok.statusCode, 201, ok.body);
    }
    const before = await snapshot(ctx.engine);
    const refused = await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [3] }, h);
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(refused.headers['retry-after'], '1');
    const error = refused.json().error;
    assert.equal(error.code, 'TENANT_LIMIT_EXCEEDED');
    assert.equal(error.retryable, true);
    assert.deepEqual(
      { ...error.details, retry_after_seconds: undefined },
      {
        tenant_id: 'small',
        limit: 'max_queue_depth',
        current: 2,
        maximum: 2,
        retry_after_seconds: undefined,
      },
    );
    const breach = await ctx.req('GET', '/ojs/v1/events?types=tenant.limit_exceeded');
    assert.equal(breach.json().events.length, 1);
    // Other tenants are not limited by it.
    const other = await ctx.req(
      'POST',
      '/ojs/v1/jobs',
      { type: 't', args: [] },
      {
        'x-ojs-tenant': 'big',
      },
    );
    assert.equal(other.statusCode, 201);
    assert.notEqual(await snapshot(ctx.engine), before);
    // Raised at run time: admitted again, no restart.
    await ctx.req('PUT', '/ojs/v1/admin/tenants/small/limits', { max_queue_depth: 3 });
    ctx.engine.settings.clear();
    const again = await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [4] }, h);
    assert.equal(again.statusCode, 201, again.body);
  });

  it('max_scheduled counts scheduled jobs; soft quotas admit and report', async () => {
    const h = { 'x-ojs-tenant': 'later' };
    await ctx.req('PUT', '/ojs/v1/admin/tenants/later', { limits: { max_scheduled: 1 } });
    const at = '2030-01-01T00:00:00Z';
    const first = await ctx.req(
      'POST',
      '/ojs/v1/jobs',
      { type: 't', args: [], options: { scheduled_at: at } },
      h,
    );
    assert.equal(first.statusCode, 201, first.body);
    // An immediate job is not scheduled: admitted.
    assert.equal(
      (await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [] }, h)).statusCode,
      201,
    );
    const second = await ctx.req(
      'POST',
      '/ojs/v1/jobs',
      { type: 't', args: [], options: { scheduled_at: at } },
      h,
    );
    assert.equal(second.statusCode, 429, second.body);
    assert.equal(second.json().error.details.limit, 'max_scheduled');
    const soft = await ctx.req('PUT', '/ojs/v1/admin/tenants/later', { quota_mode: 'soft' });
    assert.equal(soft.json().tenant.quota_mode, 'soft');
    ctx.engine.settings.clear();
    const admitted = await ctx.req(
      'POST',
      '/ojs/v1/jobs',
      { type: 't', args: [], options: { scheduled_at: at } },
      h,
    );
    assert.equal(admitted.statusCode, 201, admitted.body);
    const reported = await ctx.req('GET', '/ojs/v1/events?types=tenant.limit_exceeded');
    assert.equal(
      reported.json().events.filter((e: Json) => e.data.tenant_id === 'later').length,
      2,
      'the refused and the admitted breach',
    );
  });

  it('max_enqueue_rate over a sliding period', async () => {
    const h = { 'x-ojs-tenant': 'rated' };
    await ctx.req('PUT', '/ojs/v1/admin/tenants/rated', {
      limits: { max_enqueue_rate: { limit: 2, period: 'PT1M' } },
    });
    for (let i = 0; i < 2; i++) {
      assert.equal(
        (await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [] }, h)).statusCode,
        201,
      );
    }
    const refused = await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [] }, h);
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(refused.json().error.details.limit, 'max_enqueue_rate');
    assert.equal(refused.headers['retry-after'], '60');
    ctx.clock.advance(61_000);
    assert.equal(
      (await ctx.req('POST', '/ojs/v1/jobs', { type: 't', args: [] }, h)).statusCode,
      201,
    );
  });
});

describe('multi-tenancy: API keys bound to a tenant, strict mode', () => {
  it('a bound key scopes its requests; naming another tenant is 403 TENANT_ACCESS_DENIED', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.init();
    const engine = new Engine({ store });
    const app = await buildApp(
      {
        auth: {
          keys: [
            { role: 'producer', key: 'acme-key-0123456789', tenant: 'acme' },
            { role: 'admin', key: 'admin-key-0123456789' },
          ],
        },
      },
      engine,
    );
    try {
      const as = (key: string, headers: Record<string, string> = {}) => ({
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        ...headers,
      });
      const own = await app.inject({
        method: 'POST',
        url: '/ojs/v1/jobs',
        headers: as('acme-key-0123456789'),
        payload: JSON.stringify({ type: 't', args: [] }),
      });
      assert.equal(own.statusCode, 201, own.body);
      assert.equal(own.json().job.meta.tenant_id, 'acme');
      const named = await app.inject({
        method: 'POST',
        url: '/ojs/v1/jobs',
        headers: as('acme-key-0123456789', { 'x-ojs-tenant': 'globex' }),
        payload: JSON.stringify({ type: 't', args: [] }),
      });
      assert.equal(named.statusCode, 403, named.body);
      assert.equal(named.json().error.code, 'tenant_access_denied');
      const body = await app.inject({
        method: 'POST',
        url: '/ojs/v1/jobs',
        headers: as('acme-key-0123456789'),
        payload: JSON.stringify({ type: 't', args: [], meta: { tenant_id: 'globex' } }),
      });
      assert.equal(body.statusCode, 403, body.body);
      const globex = await app.inject({
        method: 'POST',
        url: '/ojs/v1/jobs',
        headers: as('admin-key-0123456789', { 'x-ojs-tenant': 'globex' }),
        payload: JSON.stringify({ type: 't', args: [] }),
      });
      const read = await app.inject({
        method: 'GET',
        url: `/ojs/v1/jobs/${globex.json().job.id}`,
        headers: as('acme-key-0123456789'),
      });
      assert.equal(read.statusCode, 404, read.body);
    } finally {
      await app.close();
      await engine.stop();
      await store.close();
    }
  });

  it('strict mode: a job with no tenant is 400, with one it is stored', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.init();
    const engine = new Engine({ store, tenancy: { strict: true } });
    const app = await buildApp({}, engine);
    try {
      const none = await app.inject({
        method: 'POST',
        url: '/ojs/v1/jobs',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ type: 't', args: [] }),
      });
      assert.equal(none.statusCode, 400, none.body);
      assert.equal(none.json().error.code, 'invalid_request');
      const some = await app.inject({
        method: 'POST',
        url: '/ojs/v1/jobs',
        headers: { 'content-type': 'application/json', 'x-ojs-tenant': 'x' },
        payload: JSON.stringify({ type: 't', args: [] }),
      });
      assert.equal(some.statusCode, 201, some.body);
    } finally {
      await app.close();
      await engine.stop();
      await store.close();
    }
  });
});
