/**
 * Fair scheduling (`urn:ojs:ext:fair-scheduling`, decision 0103) and worker
 * drain on real servers over every store: weighted dispatch ratios over
 * 10,000 jobs, round-robin mixing and C17's plain multi-queue fetch,
 * isolation, the starvation guard, least-loaded under the pool's
 * concurrency, the pool and stats routes, and a draining worker's health,
 * fetch and pool count.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobRecord } from '@ojs/core';
import { startServer } from '../src/serve.ts';
import { type LiveServer, startLiveServer, storeKinds } from './stores.ts';

type Obj = Record<string, unknown>;

async function call(
  server: LiveServer,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Obj }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/openjobspec+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Obj) };
}

async function enqueue(server: LiveServer, queue: string, n: number): Promise<void> {
  for (let from = 0; from < n; from += 1000) {
    const bodies = Array.from({ length: Math.min(1000, n - from) }, (_, i) => ({
      type: 'fs.test',
      args: [from + i],
      options: { queue },
    }));
    const outcomes = await server.engine.enqueueMany(bodies);
    assert.ok(outcomes.every((o) => o.status === 'created'));
  }
}

function byQueue(jobs: readonly JobRecord[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const job of jobs) counts.set(job.queue, (counts.get(job.queue) ?? 0) + 1);
  return counts;
}

describe('fair scheduling on every store', async () => {
  for (const kind of await storeKinds()) {
    describe(kind, () => {
      let server: LiveServer;
      before(async () => {
        server = await startLiveServer(kind, { testMode: true });
      });
      after(async () => {
        await server.close();
      });

      it('weights 1:2:5 give dispatch ratios within 10% over 10,000 jobs', async () => {
        const put = await call(server, 'PUT', '/ojs/v1/admin/pools/w125', {
          strategy: 'weighted',
          queues: ['w-a', 'w-b', 'w-c'],
          weights: { 'w-a': 1, 'w-b': 2, 'w-c': 5 },
        });
        assert.equal(put.status, 201, JSON.stringify(put.body));
        await enqueue(server, 'w-a', 2000);
        await enqueue(server, 'w-b', 3500);
        await enqueue(server, 'w-c', 7000);
        const jobs: JobRecord[] = [];
        while (jobs.length < 10_000) {
          const got = await server.engine.fetch({
            queues: [],
            pool: 'w125',
            count: 100,
            workerId: 'w125-1',
          });
          assert.ok(got.length > 0);
          jobs.push(...got);
        }
        const counts = byQueue(jobs);
        const weights = { 'w-a': 1, 'w-b': 2, 'w-c': 5 };
        for (const [queue, weight] of Object.entries(weights)) {
          const expected = (jobs.length * weight) / 8;
          const actual = counts.get(queue) ?? 0;
          assert.ok(
            Math.abs(actual - expected) <= expected * 0.1,
            `${queue}: ${actual} dispatches, expected ${expected} ±10%`,
          );
        }
      });

      it('a round-robin pool deals one job per queue per cycle', async () => {
        await call(server, 'PUT', '/ojs/v1/admin/pools/rr', {
          strategy: 'round-robin',
          queues: { 'rr-a': {}, 'rr-b': {}, 'rr-c': {} },
        });
        await enqueue(server, 'rr-a', 10);
        await enqueue(server, 'rr-b', 10);
        await enqueue(server, 'rr-c', 10);
        const jobs = await server.engine.fetch({
          queues: [],
          pool: 'rr',
          count: 6,
          workerId: 'rr-1',
        });
        assert.deepEqual(
          jobs.map((j) => j.queue),
          ['rr-a', 'rr-b', 'rr-c', 'rr-a', 'rr-b', 'rr-c'],
        );
      });

      it('C17: a plain fetch takes its first job from the first non-empty queue, then mixes', async () => {
        await enqueue(server, 'c17-b', 3);
        await enqueue(server, 'c17-c', 3);
        const [first] = await server.engine.fetch({
          queues: ['c17-a', 'c17-b', 'c17-c'],
          count: 1,
        });
        assert.equal(first!.queue, 'c17-b', 'count 1 keeps the strict order');
        const jobs = await server.engine.fetch({ queues: ['c17-a', 'c17-b', 'c17-c'], count: 4 });
        assert.deepEqual(
          jobs.map((j) => j.queue),
          ['c17-b', 'c17-c', 'c17-b', 'c17-c'],
        );
      });

      it("C17: one worker's concurrent fetches, claimed together, each get a mix", async () => {
        await enqueue(server, 'c17g-a', 2);
        await enqueue(server, 'c17g-b', 2);
        // Listed first, so both fetches below take the same steps and claim in one turn.
        await server.engine.fetch({ queues: ['c17g-none'], workerId: 'c17g-w' });
        const ask = () =>
          server.engine.fetch({ queues: ['c17g-a', 'c17g-b'], count: 2, workerId: 'c17g-w' });
        const answers = await Promise.all([ask(), ask()]);
        for (const jobs of answers) {
          assert.deepEqual(
            jobs.map((j) => j.queue),
            ['c17g-a', 'c17g-b'],
          );
        }
      });

      it("a fetch's own strategy and weights, without a pool", async () => {
        await enqueue(server, 'own-a', 40);
        await enqueue(server, 'own-b', 40);
        const strict = await call(server, 'POST', '/ojs/v1/workers/fetch', {
          queues: ['own-a', 'own-b'],
          count: 3,
          strategy: 'strict',
        });
        assert.deepEqual(
          (strict.body.jobs as Obj[]).map((j) => j.queue),
          ['own-a', 'own-a', 'own-a'],
        );
        const jobs: JobRecord[] = [];
        for (let i = 0; i < 10; i++) {
          jobs.push(
            ...(await server.engine.fetch({
              queues: ['own-a', 'own-b'],
              count: 4,
              strategy: 'weighted',
              weights: { 'own-a': 3, 'own-b': 1 },
            })),
          );
        }
        const counts = byQueue(jobs);
        assert.deepEqual([counts.get('own-a'), counts.get('own-b')], [30, 10]);
      });

      it("an isolated pool's queues go only to its own workers", async () => {
        await call(server, 'PUT', '/ojs/v1/admin/pools/iso', {
          queues: ['iso-secret'],
          isolated: true,
        });
        await enqueue(server, 'iso-secret', 2);
        await enqueue(server, 'iso-public', 2);
        const outsider = await server.engine.fetch({
          queues: ['iso-secret', 'iso-public'],
          count: 4,
          workerId: 'outsider',
        });
        assert.deepEqual(
          outsider.map((j) => j.queue),
          ['iso-public', 'iso-public'],
        );
        // A worker declares its pool at registration; its fetches then reach the queue.
        const reg = await call(server, 'POST', '/ojs/v1/workers/register', {
          worker_id: 'insider',
          pool: 'iso',
        });
        assert.equal(reg.status, 200, JSON.stringify(reg.body));
        const badReg = await call(server, 'POST', '/ojs/v1/workers/register', {
          worker_id: 'insider-2',
          pool: ['iso'],
        });
        assert.equal(badReg.status, 400);
        const insider = await server.engine.fetch({
          queues: ['iso-secret'],
          count: 4,
          workerId: 'insider',
        });
        assert.equal(insider.length, 2);
      });

      it('the starvation guard lifts a weight-1 queue beside a weight-100 one to its minimum ratio', async () => {
        for (const [name, enabled] of [
          ['guarded', true],
          ['unguarded', false],
        ] as const) {
          await call(server, 'PUT', `/ojs/v1/admin/pools/${name}`, {
            strategy: 'weighted',
            queues: { [`${name}-heavy`]: { weight: 100 }, [`${name}-light`]: { weight: 1 } },
            starvation_guard: { enabled, rotation_interval: 'PT30S', min_dispatch_ratio: 0.05 },
          });
          await enqueue(server, `${name}-heavy`, 2000);
          await enqueue(server, `${name}-light`, 2000);
        }
        const guarded = byQueue(await fetchPool(server, 'guarded', 2000));
        const unguarded = byQueue(await fetchPool(server, 'unguarded', 2000));
        assert.ok(
          (guarded.get('guarded-light') ?? 0) >= 0.05 * 2000 - 1,
          JSON.stringify([...guarded]),
        );
        assert.ok(
          (unguarded.get('unguarded-light') ?? 0) < 0.02 * 2000,
          JSON.stringify([...unguarded]),
        );
        const events = await server.engine.listEvents({
          types: ['scheduling.queue_starved'],
          limit: 10,
        });
        assert.ok(
          events.some((e) => e.data.queue === 'guarded-light' && e.data.pool === 'guarded'),
        );
      });

      it('least-loaded takes from the deepest queue and serves a worker only below the pool concurrency', async () => {
        await call(server, 'PUT', '/ojs/v1/admin/pools/ll', {
          strategy: 'least-loaded',
          concurrency: 3,
          queues: ['ll-shallow', 'll-deep'],
        });
        await enqueue(server, 'll-shallow', 2);
        await enqueue(server, 'll-deep', 6);
        const first = await server.engine.fetch({
          queues: [],
          pool: 'll',
          count: 2,
          workerId: 'll-1',
        });
        assert.deepEqual(
          first.map((j) => j.queue),
          ['ll-deep', 'll-deep'],
        );
        // The worker reports 2 active jobs: one more slot below concurrency 3.
        await call(server, 'POST', '/ojs/v1/workers/beat', { worker_id: 'll-1', active_jobs: 2 });
        const second = await server.engine.fetch({
          queues: [],
          pool: 'll',
          count: 5,
          workerId: 'll-1',
        });
        assert.equal(second.length, 1);
        await call(server, 'POST', '/ojs/v1/workers/beat', { worker_id: 'll-1', active_jobs: 3 });
        const third = await server.engine.fetch({
          queues: [],
          pool: 'll',
          count: 5,
          workerId: 'll-1',
        });
        assert.equal(third.length, 0);
      });

      it('a pool written through one server process is applied by another; stats count both', async () => {
        const other = await startServer({
          store: server.store,
          port: 0,
          logLevel: 'silent',
          sqliteSynchronous: 'NORMAL',
        });
        try {
          await enqueue(server, 'mp-public', 1);
          // The other process reads the (still empty) pool list first: it is cached now.
          const before = await other.engine.scheduling.pools();
          assert.ok(!before.some((p) => p.name === 'mp-iso'));
          const put = await call(server, 'PUT', '/ojs/v1/admin/pools/mp-iso', {
            queues: ['mp-secret'],
            isolated: true,
          });
          assert.equal(put.status, 201);
          await enqueue(server, 'mp-secret', 1);
          const deadline = Date.now() + 5000;
          while (!(await other.engine.scheduling.pools()).some((p) => p.name === 'mp-iso')) {
            assert.ok(Date.now() < deadline, 'the other process never saw the pool');
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          const jobs = await other.engine.fetch({
            queues: ['mp-secret', 'mp-public'],
            count: 2,
            workerId: 'mp-outsider',
          });
          assert.deepEqual(
            jobs.map((j) => j.queue),
            ['mp-public'],
          );
          // The other process's dispatch reaches this one's stats (its window, flushed).
          const statsDeadline = Date.now() + 10_000;
          for (;;) {
            const { body } = await call(server, 'GET', '/ojs/v1/admin/scheduling/stats');
            const queues = (body.stats as { queues: Obj[] }).queues;
            if (queues.find((q) => q.name === 'mp-public')?.dispatch_count_1m === 1) break;
            assert.ok(Date.now() < statsDeadline, `never counted: ${JSON.stringify(queues)}`);
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        } finally {
          await other.close();
        }
      });

      it('pool routes: both body forms, name mismatch, list with workers, delete', async () => {
        const spec = await call(server, 'PUT', '/ojs/v1/admin/pools/routes', {
          name: 'routes',
          strategy: 'weighted',
          queues: { 'r-high': { weight: 70 }, 'r-low': { weight: 30 } },
        });
        assert.equal(spec.status, 201);
        assert.deepEqual(spec.body.pool, {
          name: 'routes',
          queues: ['r-high', 'r-low'],
          strategy: 'weighted',
          weights: { 'r-high': 70, 'r-low': 30 },
        });
        const replaced = await call(server, 'PUT', '/ojs/v1/admin/pools/routes', {
          queues: ['r-high'],
          weights: { 'r-high': 2 },
          concurrency: 4,
        });
        assert.equal(replaced.status, 200);
        assert.equal((replaced.body.pool as Obj).strategy, 'round-robin');
        const mismatch = await call(server, 'PUT', '/ojs/v1/admin/pools/routes', {
          name: 'other',
          queues: ['x'],
        });
        assert.equal(mismatch.status, 400);
        assert.equal((mismatch.body.error as Obj).code, 'invalid_request');
        const badWeight = await call(server, 'PUT', '/ojs/v1/admin/pools/routes', {
          queues: { x: { weight: 0 } },
        });
        assert.equal(badWeight.status, 400);
        assert.deepEqual(
          ((await call(server, 'GET', '/ojs/v1/admin/pools/routes')).body.pool as Obj).queues,
          ['r-high'],
        );
        // A worker in the pool counts while running, not once draining.
        await call(server, 'POST', '/ojs/v1/workers/beat', { worker_id: 'rw-1', pool: 'routes' });
        await call(server, 'POST', '/ojs/v1/workers/beat', { worker_id: 'rw-2', pool: 'routes' });
        await call(server, 'POST', '/ojs/v1/workers/beat', { worker_id: 'rw-2', state: 'drain' });
        const list = await call(server, 'GET', '/ojs/v1/admin/pools');
        const item = (list.body.items as Obj[]).find((p) => p.name === 'routes')!;
        assert.equal(item.active_workers, 1);
        assert.equal(typeof item.active_jobs, 'number');
        assert.equal((await call(server, 'DELETE', '/ojs/v1/admin/pools/routes')).status, 204);
        assert.equal((await call(server, 'DELETE', '/ojs/v1/admin/pools/routes')).status, 404);
      });

      it('scheduling stats count the last minute of dispatches per queue', async () => {
        await enqueue(server, 'st-a', 3);
        await server.engine.fetch({ queues: ['st-a'], count: 3 });
        const { status, body } = await call(server, 'GET', '/ojs/v1/admin/scheduling/stats');
        assert.equal(status, 200);
        const stats = body.stats as { queues: Obj[]; window: string };
        assert.equal(stats.window, 'PT1M');
        const a = stats.queues.find((q) => q.name === 'st-a')!;
        assert.equal(a.dispatch_count_1m, 3);
        assert.equal(a.active_jobs, 3);
        assert.ok((a.dispatch_ratio_1m as number) > 0 && (a.dispatch_ratio_1m as number) <= 1);
        assert.equal(typeof a.avg_wait_ms, 'number');
        const metrics = await (await fetch(`${server.url}/metrics`)).text();
        assert.match(metrics, /^ojs_scheduling_dispatch_total\{queue="st-a"\} 3$/m);
      });

      it('a worker is listed from its first fetch; a drain beat makes it unhealthy and fetch nothing', async () => {
        await enqueue(server, 'dr-q', 2);
        const got = await server.engine.fetch({ queues: ['dr-q'], count: 1, workerId: 'dr-1' });
        assert.equal(got.length, 1);
        const listed = await call(server, 'GET', '/ojs/v1/admin/workers/dr-1');
        assert.equal(listed.status, 200);
        assert.deepEqual(listed.body.queues, ['dr-q']);
        assert.equal(listed.body.state, 'running');
        assert.equal((await call(server, 'GET', '/ojs/v1/workers/dr-1/health')).status, 200);
        const beat = await call(server, 'POST', '/ojs/v1/workers/beat', {
          worker_id: 'dr-1',
          state: 'drain',
          active_jobs: 1,
        });
        assert.equal(beat.body.acknowledged, true);
        const health = await call(server, 'GET', '/ojs/v1/workers/dr-1/health');
        assert.equal(health.status, 503);
        assert.equal(health.body.state, 'draining');
        const http = await call(server, 'POST', '/ojs/v1/workers/fetch', {
          queues: ['dr-q'],
          worker_id: 'dr-1',
        });
        assert.deepEqual(http.body.jobs, []);
        assert.equal((await call(server, 'GET', '/ojs/v1/workers/nobody/health')).status, 404);
        const unknownPool = await call(server, 'POST', '/ojs/v1/workers/fetch', {
          pool: 'no-such-pool',
        });
        assert.equal(unknownPool.status, 404);
        const badPool = await call(server, 'POST', '/ojs/v1/workers/fetch', { pool: 'Bad Pool!' });
        assert.equal(badPool.status, 400);
        const badStrategy = await call(server, 'POST', '/ojs/v1/workers/fetch', {
          queues: ['a', 'b'],
          count: 2,
          strategy: 'random',
        });
        assert.equal(badStrategy.status, 400);
        const badWeights = await call(server, 'POST', '/ojs/v1/workers/fetch', {
          queues: ['a', 'b'],
          weights: { a: -1 },
        });
        assert.equal(badWeights.status, 400);
      });
    });
  }
});

async function fetchPool(server: LiveServer, pool: string, total: number): Promise<JobRecord[]> {
  const jobs: JobRecord[] = [];
  while (jobs.length < total) {
    const got = await server.engine.fetch({ queues: [], pool, count: 50, workerId: `${pool}-w` });
    if (got.length === 0) break;
    jobs.push(...got);
  }
  return jobs;
}
