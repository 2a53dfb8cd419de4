/**
 * ping (liveness) and reset (test mode: wipes jobs, queues, events and
 * unique locks, and leaves a working store behind).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeEvent, toIso, type WorkflowRecord } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  allEvents,
  discardedJob,
  enqueuedEvent,
  idsOf,
  insertOk,
  newJob,
  SECOND,
  T0,
} from './fixtures.ts';

export function adminTests(ctx: SuiteContext): void {
  describe('ping / reset', () => {
    it('ping resolves on a working store', async () => {
      await ctx.store.ping();
    });

    it('ping throws once the store is closed', async () => {
      const store = ctx.store;
      await ctx.closeStore();
      await assert.rejects(store.ping());
    });

    it('onJobsAvailable, when offered, returns an unsubscribe function', async (t) => {
      if (ctx.store.onJobsAvailable === undefined) {
        t.skip('single-process store: no cross-process wake-ups');
        return;
      }
      const unsubscribe = ctx.store.onJobsAvailable(() => {});
      assert.equal(typeof unsubscribe, 'function');
      unsubscribe();
    });

    it('reset wipes jobs, queues, events, dead letters, unique locks, limits, workflows, crons', async () => {
      const rateLimited = {
        options: { queue: 'limited', rate_limit: { key: 'reset-key', rate: 1, period: 'PT1H' } },
      };
      const unique = {
        args: [{ k: 1 }],
        unique: { keys: ['type', 'args'], on_conflict: 'reject' },
        options: { queue: 'wipe' },
      };
      const [job, locked] = await insertOk(
        ctx.store,
        [newJob({ options: { queue: 'wipe' } }), newJob(unique)],
        T0,
        [],
      );
      await activeJob(ctx.store, { options: { queue: 'wipe' } });
      await discardedJob(ctx.store, { options: { queue: 'wipe' } });
      await ctx.store.setQueuePaused('wipe', true, T0);
      await ctx.store.appendEvents([makeEvent('queue.paused', 'wipe', { queue: 'wipe' }, T0)]);
      await ctx.store.setQueueConfig('limited', { concurrency: 1 }, T0);
      const [limited] = await insertOk(ctx.store, [newJob(rateLimited)]);
      const taken = await ctx.store.claimJobs({ queues: ['limited'], count: 1, now: T0 });
      assert.equal(taken.length, 1);
      const workflow: WorkflowRecord = {
        id: 'wf_reset',
        type: 'group',
        state: 'running',
        steps: [],
        created_at: toIso(T0),
        rev: 0,
      };
      await ctx.store.commit({ workflowInserts: [workflow] });
      await ctx.store.upsertCron({
        name: 'reset-cron',
        expression: '* * * * *',
        timezone: 'UTC',
        overlap_policy: 'allow',
        enabled: true,
        job_template: { type: 'cron.tick', args: [] },
        created_at: toIso(T0),
        updated_at: toIso(T0),
        next_run_ms: T0,
        next_run_at: toIso(T0),
        run_count: 0,
        rev: 0,
      });

      await ctx.store.reset();

      assert.equal(await ctx.store.getJob(job!.id), null);
      assert.equal(await ctx.store.getJob(locked!.id), null);
      assert.deepEqual(
        (await ctx.store.listQueues()).filter((q) => q.name !== 'default'),
        [],
      );
      assert.deepEqual(await allEvents(ctx.store), []);
      assert.deepEqual(await ctx.store.listDeadLetter(undefined, 10, 0), { items: [], total: 0 });
      assert.deepEqual(await ctx.store.findExpiredLeases(T0 + 24 * 3600 * SECOND, 10), []);
      assert.equal(await ctx.store.getJob(limited!.id), null);
      assert.equal(await ctx.store.getWorkflow(workflow.id), null);
      assert.deepEqual(await ctx.store.listCrons(), []);
      assert.deepEqual(await ctx.store.dueCrons(T0 + 3_600_000), []);
      const stats = await ctx.store.queueStats('wipe', T0);
      assert.equal(stats.paused, false);
      assert.ok(Object.values(stats.counts).every((n) => n === 0));

      // The store works after a reset: same ids and unique keys are free again.
      const again = newJob({ ...unique, id: locked!.id }, T0 + SECOND);
      const same = newJob({ id: job!.id, options: { queue: 'wipe' } }, T0 + SECOND);
      await insertOk(ctx.store, [same, again], T0 + SECOND, [enqueuedEvent(same)]);
      const claimed = await ctx.store.claimJobs({ queues: ['wipe'], count: 10, now: T0 + SECOND });
      assert.deepEqual(idsOf(claimed), [same.id, again.id]);
      assert.equal((await allEvents(ctx.store)).length, 3, 'enqueued + two job.started');
      assert.equal(
        (await ctx.store.listQueues()).find((q) => q.name === 'limited'),
        undefined,
        'queue config is gone',
      );
      // The key's rate window (1 start per hour) does not survive a reset.
      await insertOk(ctx.store, [newJob(rateLimited, T0 + SECOND)], T0 + SECOND);
      const next = await ctx.store.claimJobs({ queues: ['limited'], count: 1, now: T0 + SECOND });
      assert.equal(next.length, 1, 'no rate window survives a reset');
    });
  });
}
