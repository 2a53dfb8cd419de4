/**
 * Limits checked inside claimJobs: queue concurrency and rate windows
 * (setQueueConfig), job-level rate_limit concurrency and rate per key. A
 * limited job is skipped and stays available; the next eligible job is tried.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { complete } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  idsOf,
  insertOk,
  MINUTE,
  mustGet,
  newJob,
  newJobs,
  SECOND,
  T0,
  transition,
} from './fixtures.ts';

export function limitTests(ctx: SuiteContext): void {
  const claimFrom = (queues: string[], now: number, count = 100) =>
    ctx.store.claimJobs({ queues, count, now, workerId: 'w' });
  const finish = (id: string, now: number) =>
    transition(ctx.store, id, (j) => complete(j, null, now));

  describe('setQueueConfig', () => {
    it('sets, keeps and clears queue limits, and lists them', async () => {
      await ctx.store.setQueuePaused('cfg', true, T0);
      const set = await ctx.store.setQueueConfig(
        'cfg',
        { concurrency: 4, rate_limit: { limit: 10, period_ms: MINUTE } },
        T0,
      );
      assert.equal(set.name, 'cfg');
      assert.equal(set.paused, true, 'pause state is kept');
      assert.equal(set.concurrency, 4);
      assert.deepEqual(set.rate_limit, { limit: 10, period_ms: MINUTE });
      // An absent field keeps its value; null clears it.
      const partial = await ctx.store.setQueueConfig('cfg', { concurrency: 2 }, T0);
      assert.equal(partial.concurrency, 2);
      assert.deepEqual(partial.rate_limit, { limit: 10, period_ms: MINUTE });
      const listed = (await ctx.store.listQueues()).find((q) => q.name === 'cfg');
      assert.equal(listed?.concurrency, 2);
      assert.deepEqual(listed?.rate_limit, { limit: 10, period_ms: MINUTE });
      const cleared = await ctx.store.setQueueConfig(
        'cfg',
        { concurrency: null, rate_limit: null },
        T0,
      );
      assert.equal(cleared.concurrency, undefined);
      assert.equal(cleared.rate_limit, undefined);
      assert.equal(cleared.paused, true);
    });

    it('creates the queue when needed', async () => {
      const info = await ctx.store.setQueueConfig('cfg-new', { concurrency: 1 }, T0);
      assert.deepEqual([info.name, info.paused, info.concurrency], ['cfg-new', false, 1]);
      assert.ok((await ctx.store.listQueues()).some((q) => q.name === 'cfg-new'));
    });
  });

  describe('claimJobs: limits', () => {
    it('queue concurrency caps active jobs of the queue', async () => {
      const jobs = await insertOk(
        ctx.store,
        newJobs(5, () => ({ options: { queue: 'qc' } })),
      );
      await ctx.store.setQueueConfig('qc', { concurrency: 2 }, T0);
      assert.deepEqual(idsOf(await claimFrom(['qc'], T0)), idsOf(jobs.slice(0, 2)));
      assert.deepEqual(await claimFrom(['qc'], T0 + SECOND), []);
      await finish(jobs[0]!.id, T0 + 2 * SECOND);
      assert.deepEqual(idsOf(await claimFrom(['qc'], T0 + 3 * SECOND)), [jobs[2]!.id]);
      await ctx.store.setQueueConfig('qc', { concurrency: null }, T0 + 4 * SECOND);
      assert.deepEqual(idsOf(await claimFrom(['qc'], T0 + 5 * SECOND)), idsOf(jobs.slice(3)));
    });

    it('a queue at its limit does not stop other queues of the same claim', async () => {
      await insertOk(
        ctx.store,
        newJobs(2, () => ({ options: { queue: 'full' } })),
      );
      const other = await insertOk(
        ctx.store,
        newJobs(2, () => ({ options: { queue: 'free' } })),
      );
      await ctx.store.setQueueConfig('full', { concurrency: 1 }, T0);
      const claimed = await claimFrom(['full', 'free'], T0);
      assert.equal(claimed.length, 3);
      assert.deepEqual(idsOf(claimed.slice(1)), idsOf(other));
    });

    it('queue rate limit caps starts per fixed window', async () => {
      const jobs = await insertOk(
        ctx.store,
        newJobs(8, () => ({ options: { queue: 'qr' } })),
      );
      await ctx.store.setQueueConfig('qr', { rate_limit: { limit: 3, period_ms: MINUTE } }, T0);
      assert.deepEqual(idsOf(await claimFrom(['qr'], T0 + SECOND)), idsOf(jobs.slice(0, 3)));
      assert.deepEqual(await claimFrom(['qr'], T0 + 30 * SECOND), []);
      // The window opened at the first start (T0 + 1 s) and ends a minute later.
      assert.deepEqual(await claimFrom(['qr'], T0 + MINUTE + SECOND - 1), []);
      const next = await claimFrom(['qr'], T0 + MINUTE + SECOND, 2);
      assert.deepEqual(idsOf(next), idsOf(jobs.slice(3, 5)));
      assert.deepEqual(idsOf(await claimFrom(['qr'], T0 + MINUTE + 2 * SECOND)), [jobs[5]!.id]);
      for (const job of jobs.slice(6)) {
        assert.equal((await mustGet(ctx.store, job.id)).state, 'available');
      }
    });

    it('job rate_limit concurrency caps active jobs per key and skips to the next job', async () => {
      const limited = (queue: string) => ({
        options: { queue, rate_limit: { key: 'tenant-1', concurrency: 1 } },
      });
      const [k1, x1, k2, x2] = await insertOk(ctx.store, [
        newJob(limited('rk')),
        newJob({ options: { queue: 'rk' } }),
        newJob(limited('rk')),
        newJob({ options: { queue: 'rk' } }),
      ]);
      const [k3] = await insertOk(ctx.store, [newJob(limited('rk-other'))]);
      const claimed = await claimFrom(['rk', 'rk-other'], T0);
      assert.deepEqual(idsOf(claimed), [k1!.id, x1!.id, x2!.id], 'the key spans queues');
      assert.equal((await mustGet(ctx.store, k2!.id)).state, 'available');
      assert.equal((await mustGet(ctx.store, k3!.id)).state, 'available');
      await finish(k1!.id, T0 + SECOND);
      assert.deepEqual(idsOf(await claimFrom(['rk-other', 'rk'], T0 + 2 * SECOND)), [k3!.id]);
    });

    it('job rate_limit rate caps starts per key and fixed window', async () => {
      const body = {
        options: { queue: 'rr', rate_limit: { key: 'api', rate: 2, period: 'PT10S' } },
      };
      const jobs = await insertOk(ctx.store, [newJob(body), newJob(body), newJob(body)]);
      const [free] = await insertOk(ctx.store, [newJob({ options: { queue: 'rr' } })]);
      const claimed = await claimFrom(['rr'], T0);
      assert.deepEqual(idsOf(claimed), [jobs[0]!.id, jobs[1]!.id, free!.id]);
      assert.deepEqual(await claimFrom(['rr'], T0 + 10 * SECOND - 1), []);
      assert.deepEqual(idsOf(await claimFrom(['rr'], T0 + 10 * SECOND)), [jobs[2]!.id]);
    });

    it('a rate window is fixed: it runs from its first start, later starts do not move it', async () => {
      const body = {
        options: { queue: 'fw', rate_limit: { key: 'fixed', rate: 2, period: 'PT10S' } },
      };
      const jobs = await insertOk(
        ctx.store,
        newJobs(6, () => body),
      );
      assert.equal((await claimFrom(['fw'], T0, 1)).length, 1, 'window opens at T0');
      assert.equal(
        (await claimFrom(['fw'], T0 + 5 * SECOND)).length,
        1,
        'second start at T0 + 5 s',
      );
      assert.equal((await claimFrom(['fw'], T0 + 9 * SECOND)).length, 0);
      // The window ends at T0 + 10 s (not T0 + 15 s); the next one opens at its first start.
      assert.equal((await claimFrom(['fw'], T0 + 12 * SECOND, 1)).length, 1);
      assert.equal((await claimFrom(['fw'], T0 + 21 * SECOND)).length, 1);
      assert.equal(
        (await claimFrom(['fw'], T0 + 22 * SECOND)).length,
        2,
        'new window at T0 + 22 s',
      );
      assert.equal((await mustGet(ctx.store, jobs[5]!.id)).state, 'active');
    });

    it('max_per_second limits starts to N per second', async () => {
      const body = { options: { queue: 'mps', rate_limit: { max_per_second: 2 } } };
      const jobs = await insertOk(
        ctx.store,
        newJobs(5, () => body),
      );
      assert.equal((await claimFrom(['mps'], T0)).length, 2);
      assert.equal((await claimFrom(['mps'], T0 + 999)).length, 0);
      assert.equal((await claimFrom(['mps'], T0 + 1000)).length, 2);
      assert.equal((await mustGet(ctx.store, jobs[4]!.id)).state, 'available');
    });

    it('a long backlog of limited jobs does not hide an eligible job behind it', async () => {
      // One tenant's backlog must not starve the rest of the queue.
      const limited = {
        options: { queue: 'deep', rate_limit: { key: 'tenant-a', concurrency: 1 } },
      };
      await insertOk(
        ctx.store,
        newJobs(1500, () => limited),
      );
      const [free] = await insertOk(ctx.store, [newJob({ options: { queue: 'deep' } })]);
      const claimed = await claimFrom(['deep'], T0, 10);
      assert.equal(claimed.length, 2, 'one tenant-a job and the free job');
      assert.ok(
        idsOf(claimed).includes(free!.id),
        'the eligible job behind the backlog is claimed',
      );
    });

    it('concurrent claims never exceed a concurrency limit', async () => {
      await insertOk(
        ctx.store,
        newJobs(40, () => ({ options: { queue: 'race' } })),
      );
      await ctx.store.setQueueConfig('race', { concurrency: 7 }, T0);
      const claims = await Promise.all(
        Array.from({ length: 10 }, () => claimFrom(['race'], T0, 3)),
      );
      assert.equal(claims.flat().length, 7);
      assert.equal((await ctx.store.queueStats('race', T0)).counts.active, 7);
    });
  });
}
