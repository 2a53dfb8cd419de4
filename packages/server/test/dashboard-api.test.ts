/**
 * The dashboard's API (routes/dashboard-api.ts) and the viewer role:
 * throughput buckets from finished jobs, the event log newest first and by
 * subject, queues with limits in use, recent workflows, cron next fire
 * times and trigger, the session's role, and the refusal of bad input.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import type { FastifyInstance } from 'fastify';
import { buildApp, parseApiKeys } from '../src/index.ts';
import { type Ctx, type Json, setup, snapshot, T0 } from './helpers.ts';

const MINUTE = 60_000;

describe('dashboard API', () => {
  let ctx: Ctx;
  beforeEach(async () => {
    ctx = await setup();
  });
  afterEach(() => ctx.close());

  const get = async (url: string) => {
    const res = await ctx.req('GET', url);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as Json;
  };

  /** Enqueues, fetches and ACKs (or fails for good) one job at the clock's time. */
  const finish = async (queue: string, ok: boolean) => {
    await ctx.enqueue({ type: 't', args: [], options: { queue, retry: { max_attempts: 1 } } });
    const [job] = await ctx.fetch({ queues: [queue], worker_id: 'w' });
    const url = ok ? '/ojs/v1/workers/ack' : '/ojs/v1/workers/nack';
    const body = ok
      ? { job_id: job.id, worker_id: 'w' }
      : { job_id: job.id, worker_id: 'w', error: { message: 'no' } };
    assert.equal((await ctx.req('POST', url, body)).statusCode, 200);
  };

  it('throughput: completed and failed per bucket over the window, per queue too', async () => {
    await finish('a', true); // T0: 60 min before the end of the window
    ctx.clock.advance(30 * MINUTE);
    await finish('a', true);
    await finish('b', false);
    ctx.clock.advance(29 * MINUTE);
    await finish('b', true);
    ctx.clock.advance(MINUTE - 1);
    const all = await get('/ojs/v1/admin/dashboard/throughput?minutes=60&buckets=6');
    assert.equal(all.bucket_seconds, 600);
    assert.deepEqual(
      all.buckets.map((b: Json) => [b.completed, b.failed]),
      [
        [1, 0],
        [0, 0],
        [0, 0],
        [1, 1],
        [0, 0],
        [1, 0],
      ],
    );
    assert.deepEqual(all.totals, { completed: 3, failed: 1 });
    const b = await get('/ojs/v1/admin/dashboard/throughput?minutes=60&buckets=6&queue=b');
    assert.deepEqual(b.totals, { completed: 1, failed: 1 });
  });

  it('events: newest first, by subject, with the tail cursor', async () => {
    const first = await ctx.enqueue({ type: 'x', args: [] });
    ctx.clock.advance(1000);
    const second = await ctx.enqueue({ type: 'y', args: [] });
    const page = await get('/ojs/v1/admin/dashboard/events?limit=1');
    assert.equal(page.events.length, 1);
    assert.equal(page.events[0].subject, second.id);
    assert.equal(page.cursor, page.events[0].id);
    // The live tail continues after the cursor: nothing yet, then the next event.
    const tail = await get(`/ojs/v1/events?after=${page.cursor}`);
    assert.deepEqual(tail.events, []);
    const mine = await get(`/ojs/v1/admin/dashboard/events?subject=${first.id}`);
    assert.ok(mine.events.length >= 1);
    assert.ok(mine.events.every((e: Json) => e.subject === first.id));
    assert.equal(mine.cursor, null);
  });

  it('queues: counts with concurrency and rate limits in use', async () => {
    const res = await ctx.req('PUT', '/ojs/v1/admin/queues/q/config', {
      concurrency: 2,
      rate_limit: { limit: 10, period: 'PT1M' },
    });
    assert.equal(res.statusCode, 200, res.body);
    await ctx.enqueue({ type: 't', args: [], options: { queue: 'q' } });
    await ctx.enqueue({ type: 't', args: [], options: { queue: 'q' } });
    await ctx.fetch({ queues: ['q'], worker_id: 'w' });
    const { items } = await get('/ojs/v1/admin/dashboard/queues');
    const q = items.find((i: Json) => i.name === 'q');
    assert.equal(q.counts.active, 1);
    assert.equal(q.counts.available, 1);
    assert.deepEqual(q.concurrency, { limit: 2, active: 1 });
    assert.equal(q.rate_limit.limit, 10);
    assert.equal(q.rate_limit.window_count, 1);
  });

  it('workflows: the recent ones, newest first, without their steps', async () => {
    const ids = [];
    for (const name of ['one', 'two']) {
      const res = await ctx.req('POST', '/ojs/v1/workflows', {
        type: 'chain',
        name,
        steps: [
          { type: 'a', args: [] },
          { type: 'b', args: [] },
        ],
      });
      assert.equal(res.statusCode, 201, res.body);
      ids.push(res.json().workflow.id);
      ctx.clock.advance(1000);
    }
    const { items } = await get('/ojs/v1/admin/dashboard/workflows');
    assert.deepEqual(
      items.map((w: Json) => [w.id, w.name, w.steps_total, 'steps' in w]),
      [
        [ids[1], 'two', 2, false],
        [ids[0], 'one', 2, false],
      ],
    );
  });

  it('cron: next fire times in the zone; trigger enqueues now and keeps the schedule', async () => {
    const res = await ctx.req('POST', '/ojs/v1/cron', {
      name: 'daily',
      expression: '30 9 * * *',
      timezone: 'America/New_York',
      job_template: { type: 'report', args: [1], options: { queue: 'r' } },
    });
    assert.equal(res.statusCode, 201, res.body);
    const before = (await get('/ojs/v1/admin/dashboard/cron')).items[0];
    assert.equal(before.next_fire_times.length, 5);
    // 09:30 in New York on 2026-01-01..05 is 14:30 UTC (EST).
    assert.deepEqual(
      before.next_fire_times,
      [1, 2, 3, 4, 5].map((d) => `2026-01-0${d}T14:30:00.000Z`),
    );
    const fired = await ctx.req('POST', '/ojs/v1/cron/daily/trigger');
    assert.equal(fired.statusCode, 201, fired.body);
    const job = fired.json().job;
    assert.equal(job.type, 'report');
    assert.equal(job.state, 'available');
    assert.equal(job.meta.cron_name, 'daily');
    const after = (await get('/ojs/v1/admin/dashboard/cron')).items[0];
    assert.equal(after.run_count, 1);
    assert.equal(after.last_job_id, job.id);
    assert.deepEqual(after.next_fire_times, before.next_fire_times);
    const [claimed] = await ctx.fetch({ queues: ['r'], worker_id: 'w' });
    assert.equal(claimed.id, job.id);
    const missing = await ctx.req('POST', '/ojs/v1/cron/nope/trigger');
    assert.equal(missing.statusCode, 404);
  });

  it('refuses unknown parameters and out-of-range numbers, changing nothing', async () => {
    const before = await snapshot(ctx.engine);
    for (const url of [
      '/ojs/v1/admin/dashboard/throughput?minute=60',
      '/ojs/v1/admin/dashboard/throughput?buckets=0',
      '/ojs/v1/admin/dashboard/throughput?minutes=1.5',
      '/ojs/v1/admin/dashboard/events?limit=501',
      '/ojs/v1/admin/dashboard/events?subjet=x',
      '/ojs/v1/admin/dashboard/queues?x=1',
      '/ojs/v1/admin/dashboard/session?role=admin',
    ]) {
      const res = await ctx.req('GET', url);
      assert.equal(res.statusCode, 400, url);
      assert.equal(res.json().error.code, 'invalid_request', url);
    }
    const bad = await ctx.req('POST', '/ojs/v1/cron/x/trigger', '[1]', {
      'content-type': 'application/json',
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(await snapshot(ctx.engine), before);
  });

  it('job listings: total=false skips the count; another value is a 400', async () => {
    await ctx.enqueue({ type: 't', args: [] });
    const page = await get('/ojs/v1/admin/jobs?total=false');
    assert.equal(page.items.length, 1);
    assert.equal(page.pagination.total, null);
    assert.equal((await get('/ojs/v1/admin/jobs?total=true')).pagination.total, 1);
    const bad = await ctx.req('GET', '/ojs/v1/admin/jobs?total=no');
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.details.field, 'total');
  });

  it('session: admin when auth is off', async () => {
    const session = await get('/ojs/v1/admin/dashboard/session');
    assert.equal(session.role, 'admin');
    assert.equal(session.auth, false);
    assert.equal(session.now, new Date(T0).toISOString());
  });
});

describe('viewer role', () => {
  const VIEWER = 'viewer-key-0123456789abcdef';
  const ADMIN = 'admin-key-0123456789abcdefghij';
  let app: FastifyInstance;
  let store: SqliteStore;
  before(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.init();
    app = await buildApp(
      { auth: parseApiKeys(`viewer:${VIEWER},admin:${ADMIN}`) },
      new Engine({ store }),
    );
  });
  after(async () => {
    await app.close();
    await store.close();
  });
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, key: string) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${key}` } });

  it('reads the admin API and the dashboard session as viewer', async () => {
    for (const url of [
      '/ojs/v1/admin/stats',
      '/ojs/v1/admin/jobs',
      '/ojs/v1/admin/dead-letter',
      '/ojs/v1/cron',
      '/ojs/v1/events',
      '/ojs/v1/queues',
    ]) {
      assert.equal((await call('GET', url, VIEWER)).statusCode, 200, url);
    }
    const session = await call('GET', '/ojs/v1/admin/dashboard/session', VIEWER);
    assert.deepEqual([session.json().role, session.json().auth], ['viewer', true]);
    assert.equal(
      (await call('GET', '/ojs/v1/admin/dashboard/session', ADMIN)).json().role,
      'admin',
    );
  });

  it('may not act: every write is a 403, and worker endpoints too', async () => {
    for (const [method, url] of [
      ['POST', '/ojs/v1/admin/queues/q/pause'],
      ['POST', '/ojs/v1/admin/dead-letter/retry'],
      ['POST', '/ojs/v1/cron/c/trigger'],
      ['POST', '/ojs/v1/jobs'],
      ['DELETE', '/ojs/v1/jobs/x'],
      ['POST', '/ojs/v1/workers/fetch'],
    ] as const) {
      const res = await call(method, url, VIEWER);
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.equal(res.json().error.code, 'permission_denied');
    }
  });

  it('the dashboard files need no key; the API still does', async () => {
    // Not built into this app (dashboard: false): a 404, not a 401.
    assert.equal((await app.inject({ method: 'GET', url: '/ojs/admin/' })).statusCode, 404);
    assert.equal(
      (await app.inject({ method: 'GET', url: '/ojs/v1/admin/dashboard/session' })).statusCode,
      401,
    );
  });
});
