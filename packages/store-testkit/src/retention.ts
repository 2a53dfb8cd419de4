/**
 * pruneJobs (the retention pruner's store step): deletes finished jobs of
 * one class older than the cut-off, per queue or excluding queues, bounded
 * per call, releasing unique keys, keeping workflow jobs and everything
 * unfinished; and rateLimitState (inspection of a rate-limit key).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cancel, claim, type PruneTarget, toIso, type WorkflowRecord } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  completedJob,
  discardedJob,
  HOUR,
  insertOk,
  newJob,
  retryableJob,
  T0,
  transition,
} from './fixtures.ts';

export function retentionTests(ctx: SuiteContext): void {
  const exists = async (id: string) => (await ctx.store.getJob(id)) !== null;

  describe('pruneJobs', () => {
    it('deletes only finished jobs of the target class older than the cut-off', async () => {
      const oldDone = await completedJob(ctx.store, {}, T0);
      const newDone = await completedJob(ctx.store, {}, T0 + 2 * HOUR);
      const oldDead = await discardedJob(ctx.store, {}, T0, true);
      const oldDiscarded = await discardedJob(ctx.store, {}, T0, false);
      const [toCancel] = await insertOk(ctx.store, [newJob()]);
      const oldCancelled = await transition(ctx.store, toCancel!.id, (j) => cancel(j, T0));
      const running = await activeJob(ctx.store, {}, T0);
      const waiting = await retryableJob(ctx.store, {}, T0);
      const before = T0 + HOUR;

      assert.equal(await ctx.store.pruneJobs({ retention: 'completed', before }, 100), 1);
      assert.equal(await exists(oldDone.id), false);
      assert.equal(await exists(newDone.id), true, 'finished after the cut-off');
      assert.equal(await ctx.store.pruneJobs({ retention: 'discarded', before }, 100), 1);
      assert.equal(await exists(oldDiscarded.id), false);
      assert.equal(await exists(oldDead.id), true, 'dead letters are their own class');
      assert.equal(await ctx.store.pruneJobs({ retention: 'dead_letter', before }, 100), 1);
      assert.equal(await exists(oldDead.id), false);
      assert.equal(await ctx.store.pruneJobs({ retention: 'cancelled', before }, 100), 1);
      assert.equal(await exists(oldCancelled.id), false);
      for (const job of [running, waiting, newDone]) assert.equal(await exists(job.id), true);
    });

    it('is bounded per call and restricted to or excluding queues', async () => {
      for (const queue of ['a', 'a', 'a', 'b', 'c']) {
        await completedJob(ctx.store, { options: { queue } }, T0);
      }
      const before = T0 + HOUR;
      const onlyA: PruneTarget = { retention: 'completed', before, queues: ['a'] };
      assert.equal(await ctx.store.pruneJobs(onlyA, 2), 2);
      assert.equal(await ctx.store.pruneJobs(onlyA, 2), 1);
      assert.equal(await ctx.store.pruneJobs(onlyA, 2), 0);
      const exceptB: PruneTarget = { retention: 'completed', before, exceptQueues: ['b'] };
      assert.equal(await ctx.store.pruneJobs(exceptB, 10), 1);
      assert.equal(await ctx.store.countJobs({ states: ['completed'] }), 1, 'b is left');
    });

    it('releases the unique keys of pruned jobs', async () => {
      const unique = {
        args: [{ k: 1 }],
        unique: { keys: ['type', 'args'], states: ['completed'], on_conflict: 'reject' },
      };
      await completedJob(ctx.store, unique, T0);
      const again = await ctx.store.insertJobs([newJob(unique, T0 + HOUR)], [], T0 + HOUR);
      assert.equal(again[0]!.status, 'rejected', 'the completed job holds the key');
      assert.equal(await ctx.store.pruneJobs({ retention: 'completed', before: T0 + HOUR }, 10), 1);
      await insertOk(ctx.store, [newJob(unique, T0 + HOUR)], T0 + HOUR);
    });

    it('keeps the jobs of workflows', async () => {
      const workflow: WorkflowRecord = {
        id: 'wf_keep',
        type: 'chain',
        state: 'running',
        steps: [],
        created_at: toIso(T0),
        rev: 0,
      };
      const step = { ...newJob(), workflow_id: workflow.id, workflow_step: 0 };
      assert.equal(await ctx.store.commit({ workflowInserts: [workflow], inserts: [step] }), true);
      const active = await transition(ctx.store, step.id, (j) => claim(j, { now: T0 }));
      await transition(ctx.store, active.id, (j) => ({
        ...j,
        rev: j.rev + 1,
        state: 'completed',
        completed_at: toIso(T0),
      }));
      assert.equal(await ctx.store.pruneJobs({ retention: 'completed', before: T0 + HOUR }, 10), 0);
      assert.equal(await exists(step.id), true);
    });
  });

  describe('rateLimitState', () => {
    it('reports active and waiting jobs of a key, its window and policy', async () => {
      const limited = {
        options: {
          queue: 'rl',
          rate_limit: { key: 'k1', concurrency: 1, rate: 5, period: 'PT1M' },
        },
      };
      await insertOk(ctx.store, [newJob(limited), newJob(limited)]);
      const [taken] = await ctx.store.claimJobs({ queues: ['rl'], count: 2, now: T0 });
      assert.ok(taken);
      const state = await ctx.store.rateLimitState('k1');
      assert.equal(state.key, 'k1');
      assert.equal(state.active, 1);
      assert.equal(state.waiting, 1);
      assert.deepEqual(state.window, { start: T0, count: 1 });
      assert.equal(state.policy?.concurrency, 1);
      const unknown = await ctx.store.rateLimitState('nobody');
      assert.deepEqual(unknown, {
        key: 'nobody',
        active: 0,
        waiting: 0,
        window: null,
        policy: null,
      });
    });
  });
}
