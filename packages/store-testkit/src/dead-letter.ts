/**
 * listDeadLetter: only discarded jobs sent to the dead letter queue, with a
 * total, offset/limit pages and a queue filter; revive and delete take a job
 * out of it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cancel, expire, type JobRecord, reviveDeadLetter } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  completedJob,
  discardedJob,
  idsOf,
  insertOk,
  mustGet,
  newJob,
  SECOND,
  T0,
  transition,
} from './fixtures.ts';

export function deadLetterTests(ctx: SuiteContext): void {
  describe('listDeadLetter', () => {
    const dead = async (count: number, queue: string, from = 0): Promise<JobRecord[]> => {
      const jobs: JobRecord[] = [];
      for (let i = 0; i < count; i++) {
        jobs.push(await discardedJob(ctx.store, { options: { queue } }, T0 + (from + i) * SECOND));
      }
      return jobs;
    };

    it('is empty on a fresh store', async () => {
      assert.deepEqual(await ctx.store.listDeadLetter(undefined, 10, 0), { items: [], total: 0 });
    });

    it('lists only dead-lettered discarded jobs, as stored', async () => {
      const [listed] = await dead(1, 'dl');
      await discardedJob(ctx.store, { options: { queue: 'dl' } }, T0, false);
      await completedJob(ctx.store, { options: { queue: 'dl' } });
      const [toCancel, toExpire] = await insertOk(ctx.store, [
        newJob({ options: { queue: 'dl' } }),
        newJob({ options: { queue: 'dl' } }),
      ]);
      await transition(ctx.store, toCancel!.id, (j) => cancel(j, T0));
      await transition(ctx.store, toExpire!.id, (j) => expire(j, T0));
      const page = await ctx.store.listDeadLetter(undefined, 10, 0);
      assert.equal(page.total, 1);
      assert.deepEqual(page.items, [listed]);
      assert.deepEqual(page.items[0], await mustGet(ctx.store, listed!.id));
    });

    it('pages with limit and offset and reports the total', async () => {
      const jobs = await dead(5, 'dl');
      const seen: string[] = [];
      for (const offset of [0, 2, 4]) {
        const page = await ctx.store.listDeadLetter(undefined, 2, offset);
        assert.equal(page.total, 5);
        assert.equal(page.items.length, offset === 4 ? 1 : 2);
        seen.push(...idsOf(page.items));
      }
      assert.deepEqual([...seen].sort(), idsOf(jobs).sort(), 'pages are disjoint and complete');
      const all = await ctx.store.listDeadLetter(undefined, 10, 0);
      assert.deepEqual(idsOf(all.items), seen, 'pages follow one stable order');
      assert.deepEqual(await ctx.store.listDeadLetter(undefined, 2, 10), { items: [], total: 5 });
    });

    it('filters by queue', async () => {
      const first = await dead(2, 'dl-a');
      const second = await dead(3, 'dl-b', 2);
      const a = await ctx.store.listDeadLetter('dl-a', 10, 0);
      assert.equal(a.total, 2);
      assert.deepEqual(idsOf(a.items).sort(), idsOf(first).sort());
      const b = await ctx.store.listDeadLetter('dl-b', 2, 0);
      assert.equal(b.total, 3);
      assert.equal(b.items.length, 2);
      for (const job of b.items) assert.ok(idsOf(second).includes(job.id));
      assert.deepEqual(await ctx.store.listDeadLetter('dl-none', 10, 0), { items: [], total: 0 });
      assert.equal((await ctx.store.listDeadLetter(undefined, 10, 0)).total, 5);
    });

    it('a revived or deleted job leaves the dead letter queue', async () => {
      const [revived, deleted, kept] = await dead(3, 'dl');
      const back = await transition(ctx.store, revived!.id, (j) =>
        reviveDeadLetter(j, T0 + 10 * SECOND),
      );
      assert.equal(back.state, 'available');
      const ok = await ctx.store.commit({
        deletes: [{ id: deleted!.id, expectRev: deleted!.rev }],
      });
      assert.equal(ok, true);
      const page = await ctx.store.listDeadLetter(undefined, 10, 0);
      assert.deepEqual(page, { items: [kept], total: 1 });
      const claimed = await ctx.store.claimJobs({
        queues: ['dl'],
        count: 10,
        now: T0 + 11 * SECOND,
      });
      assert.deepEqual(idsOf(claimed), [revived!.id], 'the revived job runs again');
      assert.equal(claimed[0]!.attempt, 1, 'with fresh attempts');
    });
  });
}
