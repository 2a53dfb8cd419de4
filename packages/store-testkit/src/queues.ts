/**
 * Queues: registration by insert, pause/resume, and exact per-state counts
 * and throughput windows of queueStats.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cancel, JOB_STATES, type QueueInfo, type StateCounts } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  completedJob,
  discardedJob,
  HOUR,
  insertOk,
  MINUTE,
  newJob,
  newJobs,
  retryableJob,
  SECOND,
  T0,
  transition,
} from './fixtures.ts';

const zeroCounts = (): StateCounts =>
  Object.fromEntries(JOB_STATES.map((state) => [state, 0])) as StateCounts;

/** Queues by name; `default` is left out, a store may or may not list it unasked. */
async function queuesByName(list: Promise<QueueInfo[]>): Promise<Map<string, QueueInfo>> {
  return new Map((await list).filter((q) => q.name !== 'default').map((q) => [q.name, q]));
}

export function queueTests(ctx: SuiteContext): void {
  describe('queues', () => {
    it('a fresh store lists no queues', async () => {
      assert.deepEqual([...(await queuesByName(ctx.store.listQueues())).keys()], []);
    });

    it('inserting jobs registers their queues, unpaused', async () => {
      await insertOk(ctx.store, [
        newJob({ options: { queue: 'beta' } }),
        newJob({ options: { queue: 'alpha' } }),
        newJob({ options: { queue: 'beta' } }),
      ]);
      const queues = await queuesByName(ctx.store.listQueues());
      assert.deepEqual([...queues.keys()].sort(), ['alpha', 'beta']);
      for (const queue of queues.values()) assert.equal(queue.paused, false);
    });

    it('setQueuePaused pauses and resumes, creating the queue when needed', async () => {
      await insertOk(ctx.store, [newJob({ options: { queue: 'work' } })]);
      const paused = await ctx.store.setQueuePaused('work', true, T0 + SECOND);
      assert.equal(paused.name, 'work');
      assert.equal(paused.paused, true);
      const created = await ctx.store.setQueuePaused('ghost', true, T0 + SECOND);
      assert.deepEqual([created.name, created.paused], ['ghost', true]);
      let queues = await queuesByName(ctx.store.listQueues());
      assert.equal(queues.get('work')?.paused, true);
      assert.equal(queues.get('ghost')?.paused, true);
      assert.equal((await ctx.store.queueStats('work', T0 + SECOND)).paused, true);

      // Pausing twice is harmless; new jobs do not unpause the queue.
      await ctx.store.setQueuePaused('work', true, T0 + 2 * SECOND);
      await insertOk(ctx.store, [newJob({ options: { queue: 'work' } })], T0 + 2 * SECOND);
      assert.equal((await queuesByName(ctx.store.listQueues())).get('work')?.paused, true);

      const resumed = await ctx.store.setQueuePaused('work', false, T0 + 3 * SECOND);
      assert.equal(resumed.paused, false);
      queues = await queuesByName(ctx.store.listQueues());
      assert.equal(queues.get('work')?.paused, false);
      assert.equal(queues.get('ghost')?.paused, true, 'other queues unaffected');
      assert.equal((await ctx.store.queueStats('work', T0 + 3 * SECOND)).paused, false);
    });

    it('queueStats counts jobs by state exactly, per queue', async () => {
      const q = { options: { queue: 'stats' } };
      await insertOk(
        ctx.store,
        newJobs(3, () => q),
      );
      await insertOk(ctx.store, [
        newJob({ options: { queue: 'stats', scheduled_at: '+PT1H' } }),
        newJob({ options: { queue: 'stats', scheduled_at: '+PT2H' } }),
        newJob({ options: { queue: 'stats', pending: true } }),
      ]);
      await activeJob(ctx.store, q);
      await activeJob(ctx.store, q);
      await completedJob(ctx.store, q);
      await retryableJob(ctx.store, q);
      const [toCancel] = await insertOk(ctx.store, [newJob(q)]);
      await transition(ctx.store, toCancel!.id, (j) => cancel(j, T0));
      await discardedJob(ctx.store, q, T0, true);
      await discardedJob(ctx.store, q, T0, false);
      // Other queues do not count.
      await insertOk(
        ctx.store,
        newJobs(2, () => ({ options: { queue: 'stats-other' } })),
      );
      await completedJob(ctx.store, { options: { queue: 'stats-other' } });

      const stats = await ctx.store.queueStats('stats', T0 + SECOND);
      assert.equal(stats.name, 'stats');
      assert.equal(stats.paused, false);
      assert.deepEqual(stats.counts, {
        scheduled: 2,
        available: 3,
        pending: 1,
        active: 2,
        completed: 1,
        retryable: 1,
        cancelled: 1,
        discarded: 2,
      } satisfies StateCounts);
    });

    it('queueStats of an unknown queue is all zeros', async () => {
      const stats = await ctx.store.queueStats('nothing-here', T0);
      assert.deepEqual(stats, {
        name: 'nothing-here',
        paused: false,
        counts: zeroCounts(),
        completed_last_minute: 0,
        completed_last_hour: 0,
        failed_last_hour: 0,
      });
    });

    it('queueStats counts completions in the last minute and hour', async () => {
      const q = { options: { queue: 'tp' } };
      await completedJob(ctx.store, q, T0);
      await completedJob(ctx.store, q, T0 + 30 * SECOND);
      const at = async (now: number) => {
        const s = await ctx.store.queueStats('tp', now);
        return [s.completed_last_minute, s.completed_last_hour];
      };
      assert.deepEqual(await at(T0 + 40 * SECOND), [2, 2]);
      assert.deepEqual(await at(T0 + 70 * SECOND), [1, 2]);
      assert.deepEqual(await at(T0 + 5 * MINUTE), [0, 2]);
      assert.deepEqual(await at(T0 + 30 * SECOND + HOUR + SECOND), [0, 0]);
    });

    it('queueStats counts jobs that failed for good in the last hour', async () => {
      const q = { options: { queue: 'fl' } };
      await discardedJob(ctx.store, q, T0, true);
      await discardedJob(ctx.store, q, T0 + 30 * MINUTE, false);
      await completedJob(ctx.store, q, T0 + 30 * MINUTE);
      assert.equal((await ctx.store.queueStats('fl', T0 + 40 * MINUTE)).failed_last_hour, 2);
      assert.equal((await ctx.store.queueStats('fl', T0 + 61 * MINUTE)).failed_last_hour, 1);
    });
  });
}
