/**
 * Tenants at dispatch, on real servers of every store:
 * - max_concurrency under load: many concurrent fetching workers, over two
 *   engines on one store (two server processes), never hold more than N
 *   active jobs of a tenant limited to N (read from the
 *   store's own counts after every claim and by a watcher meanwhile),
 *   while another tenant's jobs run beside them;
 * - fairness: a noisy tenant's backlog (5,000 jobs enqueued first) does
 *   not starve a quiet tenant (100 jobs enqueued after): every quiet job
 *   starts while most of the noisy backlog still waits (a property of the
 *   start order, not a timing). The quiet tenant's p99 wait (enqueue to
 *   start) with and without fairness is printed for the record.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobRecord } from '@ojs/core';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import { createStore } from '../src/stores.ts';
import { type LiveServer, startLiveServer, storeKinds } from './stores.ts';

const kinds = await storeKinds();

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

interface Shared {
  done: number;
}

/** `workers` loops fetching `count` jobs of `queue` and ACKing them, until `total` are done. */
async function work(
  engine: Engine,
  queue: string,
  options: { workers: number; count: number; total: number; shared?: Shared },
  onClaim: (jobs: JobRecord[]) => Promise<void> | void,
): Promise<void> {
  // Workers of several engines count their jobs together.
  const shared = options.shared ?? { done: 0 };
  await Promise.all(
    Array.from({ length: options.workers }, async (_, worker) => {
      const workerId = `w-${worker}-${Math.random().toString(36).slice(2, 8)}`;
      while (shared.done < options.total) {
        const jobs = await engine.fetch({
          queues: [queue],
          count: options.count,
          workerId,
          waitMs: 20,
        });
        await onClaim(jobs);
        // The work takes a turn, so the other workers' claims interleave.
        await nextTurn();
        for (const job of jobs) await engine.ack({ jobId: job.id, workerId });
        shared.done += jobs.length;
      }
    }),
  );
}

const jobsOf = (queue: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ type: 'load', args: [i], options: { queue } }));

for (const kind of kinds) {
  describe(`tenant max_concurrency under load on ${kind}`, () => {
    let server: LiveServer;
    before(async () => {
      server = await startLiveServer(kind, { testMode: true });
    });
    after(async () => server?.close());

    it('a limit set through one engine holds on the first enqueue through another', async () => {
      await server.engine.tenants.setLimits('limited-x', { max_queue_depth: 1 });
      const otherStore = await createStore(server.store);
      await otherStore.init();
      const other = new Engine({ store: otherStore });
      try {
        const body = { type: 'x', args: [], options: { queue: 'lim-q' } };
        await other.enqueue(body, { id: 'limited-x' });
        await assert.rejects(other.enqueue(body, { id: 'limited-x' }), (error: Error) => {
          assert.equal((error as { code?: string }).code, 'TENANT_LIMIT_EXCEEDED');
          return true;
        });
      } finally {
        await other.stop();
        await otherStore.close();
      }
    });

    it('never more than N active jobs of the limited tenant, 12 workers over two engines', async () => {
      const engine = server.engine;
      // A second engine on the same store: another server process.
      const otherStore = await createStore(server.store);
      await otherStore.init();
      const other = new Engine({ store: otherStore });
      const N = 3;
      await engine.tenants.setLimits('capped', { max_concurrency: N });
      const queue = 'mt-load';
      await engine.enqueueBatch(jobsOf(queue, 60), {}, { id: 'capped' });
      await engine.enqueueBatch(jobsOf(queue, 60), {}, { id: 'free' });
      let maxSeen = 0;
      let freeStarted = 0;
      const check = async () => {
        const active = await engine.store.countJobs({ tenant: 'capped', states: ['active'] });
        maxSeen = Math.max(maxSeen, active);
        assert.ok(active <= N, `${active} active jobs of a tenant limited to ${N}`);
      };
      let running = true;
      const watcher = (async () => {
        while (running) {
          await check();
          await nextTurn();
        }
      })();
      const onClaim = async (claimed: JobRecord[]) => {
        freeStarted += claimed.filter((j) => j.meta.tenant_id === 'free').length;
        const capped = claimed.filter((j) => j.meta.tenant_id === 'capped').length;
        assert.ok(capped <= N, `one claim took ${capped} jobs of the capped tenant`);
        await check();
      };
      const shared: Shared = { done: 0 };
      try {
        await Promise.all([
          work(engine, queue, { workers: 6, count: 3, total: 120, shared }, onClaim),
          work(other, queue, { workers: 6, count: 3, total: 120, shared }, onClaim),
        ]);
      } finally {
        running = false;
        await watcher;
        await other.stop();
        await otherStore.close();
      }
      const completed = await engine.store.countJobs({ queues: [queue], states: ['completed'] });
      assert.equal(completed, 120);
      assert.equal(freeStarted, 60);
      assert.equal(maxSeen, N, 'the limit was reached: the test loaded it');
    });
  });
}

/** Starts the noisy backlog and the quiet jobs on SQLite; the quiet tenant's waits and start positions. */
async function noisyNeighbour(fairness: boolean): Promise<{
  p99WaitMs: number;
  lastQuietPosition: number;
  noisyLeftAtLastQuiet: number;
}> {
  const store = new SqliteStore({ path: ':memory:' });
  await store.init();
  const engine = new Engine({ store, tenancy: { fairness } });
  try {
    const queue = 'shared';
    await engine.enqueueBatch(jobsOf(queue, 5000), {}, { id: 'noisy' });
    await engine.enqueueBatch(jobsOf(queue, 100), {}, { id: 'quiet' });
    const waits: number[] = [];
    let position = 0;
    let lastQuietPosition = -1;
    let noisyStarted = 0;
    let noisyLeftAtLastQuiet = -1;
    await work(engine, queue, { workers: 4, count: 10, total: 5100 }, (claimed) => {
      for (const job of claimed) {
        position++;
        if (job.meta.tenant_id === 'noisy') noisyStarted++;
        else {
          waits.push(Date.parse(job.started_at!) - Date.parse(job.enqueued_at!));
          lastQuietPosition = position;
          noisyLeftAtLastQuiet = 5000 - noisyStarted;
        }
      }
    });
    waits.sort((a, b) => a - b);
    return {
      p99WaitMs: waits[Math.ceil(waits.length * 0.99) - 1]!,
      lastQuietPosition,
      noisyLeftAtLastQuiet,
    };
  } finally {
    await engine.stop();
    await store.close();
  }
}

describe('fairness between tenants at dispatch', () => {
  it('interleaves tenants within a priority, not across priorities', async () => {
    const store = new SqliteStore({ path: ':memory:' });
    await store.init();
    const engine = new Engine({ store });
    try {
      const queue = 'prio';
      const of = (n: number, priority: number) =>
        Array.from({ length: n }, (_, i) => ({
          type: 'p',
          args: [i],
          options: { queue, priority },
        }));
      await engine.enqueueBatch(of(50, 0), {}, { id: 'low' });
      await engine.enqueueBatch(of(50, 10), {}, { id: 'high' });
      await engine.enqueueBatch(of(50, 10), {}, { id: 'high2' });
      const order: string[] = [];
      await work(engine, queue, { workers: 1, count: 10, total: 150 }, (claimed) => {
        for (const job of claimed) order.push(job.meta.tenant_id as string);
      });
      const lastHigh = Math.max(order.lastIndexOf('high'), order.lastIndexOf('high2'));
      const lowBefore = order.slice(0, lastHigh).filter((t) => t === 'low').length;
      // Only the first round, before any claim showed the tenants' priorities, may take a low job.
      assert.ok(lowBefore <= 4, `${lowBefore} low-priority jobs started before the last high one`);
      // The two priority-10 tenants alternate.
      const firstHundred = order.slice(0, 100).filter((t) => t !== 'low');
      const high = firstHundred.filter((t) => t === 'high').length;
      assert.ok(
        Math.abs(high - (firstHundred.length - high)) <= 10,
        `high ${high} of ${firstHundred.length}`,
      );
    } finally {
      await engine.stop();
      await store.close();
    }
  });

  it('a noisy backlog does not starve a quiet tenant', async () => {
    const fair = await noisyNeighbour(true);
    const unfair = await noisyNeighbour(false);
    process.stdout.write(
      `# quiet tenant p99 wait: ${fair.p99WaitMs} ms with fairness ` +
        `(last quiet job started at position ${fair.lastQuietPosition}, ${fair.noisyLeftAtLastQuiet} noisy jobs still waiting), ` +
        `${unfair.p99WaitMs} ms without (position ${unfair.lastQuietPosition}, ${unfair.noisyLeftAtLastQuiet} waiting)\n`,
    );
    // Equal weights: the quiet tenant gets every other slot, so its 100 jobs
    // have started by about the 200th start, long before the backlog ends.
    assert.ok(fair.lastQuietPosition <= 300, `last quiet job at ${fair.lastQuietPosition}`);
    assert.ok(fair.noisyLeftAtLastQuiet >= 4700, `${fair.noisyLeftAtLastQuiet} noisy jobs left`);
    // Without fairness the quiet jobs wait behind the whole backlog (FIFO).
    assert.equal(unfair.noisyLeftAtLastQuiet, 0);
  });
});
