/**
 * settleJobs and extendLeases: the batched hot path of ACK, FAIL, lease
 * expiry and heartbeats. Items of one batch are independent (a stale item
 * is refused on its own, the valid ones commit), guarded on the lease
 * (state, attempt, worker), and a lease extension never changes the rev.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cancel, type JobRecord, type SettleItem, uuidv7 } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  allEvents,
  completedJob,
  failure,
  insertOk,
  mustGet,
  newJob,
  SECOND,
  T0,
  transition,
  VISIBILITY_MS,
} from './fixtures.ts';

const ack = (job: JobRecord, overrides: Partial<SettleItem> = {}): SettleItem => ({
  id: job.id,
  workerId: job.worker_id,
  attempt: job.attempt,
  settlement: { kind: 'complete', result: { n: job.id } },
  ...overrides,
});

const nack = (job: JobRecord, overrides: Partial<SettleItem> = {}): SettleItem => ({
  id: job.id,
  workerId: job.worker_id,
  attempt: job.attempt,
  settlement: { kind: 'fail', error: failure() },
  ...overrides,
});

const fixed = () => 0.5;

export function settleTests(ctx: SuiteContext): void {
  describe('settleJobs', () => {
    it('completes and fails many jobs in one batch, with their events', async () => {
      const jobs = [];
      for (let i = 0; i < 6; i++) jobs.push(await activeJob(ctx.store));
      const now = T0 + 2 * SECOND;
      const results = await ctx.store.settleJobs({
        items: [...jobs.slice(0, 4).map((j) => ack(j)), ...jobs.slice(4).map((j) => nack(j))],
        now,
        random: fixed,
      });
      assert.deepEqual(
        results.map((r) => r.status),
        ['settled', 'settled', 'settled', 'settled', 'settled', 'settled'],
      );
      for (const [index, job] of jobs.entries()) {
        const stored = await mustGet(ctx.store, job.id);
        const result = results[index]!;
        assert.equal(result.status, 'settled');
        if (result.status !== 'settled') continue;
        assert.deepEqual(stored, result.job, 'the result is the record as stored');
        assert.equal(stored.rev, job.rev + 1);
        assert.equal(stored.state, index < 4 ? 'completed' : 'retryable');
        assert.equal(stored.lease_until, undefined);
        if (index < 4) assert.deepEqual(stored.result, { n: job.id });
        else assert.equal(stored.error?.code, 'handler_error');
      }
      const events = await allEvents(ctx.store);
      assert.equal(events.filter((e) => e.type === 'job.completed').length, 4);
      assert.equal(events.filter((e) => e.type === 'job.failed').length, 2);
      assert.equal(events.filter((e) => e.type === 'job.retrying').length, 2);
    });

    it('partial batch: stale items are refused per item, the valid ones commit', async () => {
      const valid = await activeJob(ctx.store, {}, T0, 'w1');
      const staleAttempt = await activeJob(ctx.store, {}, T0, 'w1');
      const otherWorker = await activeJob(ctx.store, {}, T0, 'w2');
      const done = await completedJob(ctx.store);
      const validNack = await activeJob(ctx.store, {}, T0, 'w1');
      const missing = uuidv7(T0);
      const results = await ctx.store.settleJobs({
        items: [
          ack(valid),
          ack(staleAttempt, { attempt: staleAttempt.attempt + 1 }),
          ack(otherWorker, { workerId: 'w1' }),
          ack(done, { workerId: undefined, attempt: undefined }),
          { ...ack(valid), id: missing },
          nack(validNack),
        ],
        now: T0 + SECOND,
        random: fixed,
      });
      assert.deepEqual(
        results.map((r) => r.status),
        ['settled', 'conflict', 'conflict', 'conflict', 'not_found', 'settled'],
      );
      for (const index of [1, 2, 3]) {
        const result = results[index]!;
        assert.equal(result.status, 'conflict');
        if (result.status === 'conflict') {
          assert.equal((result.error as { code?: string }).code, 'conflict');
        }
      }
      assert.equal((await mustGet(ctx.store, valid.id)).state, 'completed');
      assert.equal((await mustGet(ctx.store, validNack.id)).state, 'retryable');
      assert.deepEqual(await mustGet(ctx.store, staleAttempt.id), staleAttempt, 'unchanged');
      assert.deepEqual(await mustGet(ctx.store, otherWorker.id), otherWorker, 'unchanged');
      assert.deepEqual(await mustGet(ctx.store, done.id), done, 'unchanged');
      const completedEvents = (await allEvents(ctx.store)).filter(
        (e) => e.type === 'job.completed' && e.subject !== done.id,
      );
      assert.deepEqual(
        completedEvents.map((e) => e.subject),
        [valid.id],
        'only settled items have events',
      );
    });

    it('what a caller does to the claimed objects is not what gets decided or written', async () => {
      const queue = `kept-${uuidv7()}`;
      await insertOk(
        ctx.store,
        [0, 1].map((i) => newJob({ args: [i], options: { queue } })),
      );
      const [one, two] = await ctx.store.claimJobs({
        queues: [queue],
        count: 2,
        workerId: 'w1',
        now: T0,
      });
      // A handler changing its job in place: a store that keeps claimed
      // jobs to decide ACKs on (decision 0076) must keep copies of its own.
      (one!.args as unknown[]).push('changed');
      one!.retry!.max_attempts = 1;
      one!.errors.push({
        code: 'junk',
        type: 'junk',
        message: 'junk',
        attempt: 1,
        occurred_at: 'x',
      });
      one!.meta.added = true;
      (two!.args as unknown[]).length = 0;
      const results = await ctx.store.settleJobs({
        items: [nack(one!), ack(two!)],
        now: T0 + 10,
        random: fixed,
      });
      assert.deepEqual(
        results.map((r) => r.status),
        ['settled', 'settled'],
      );
      const failed = await mustGet(ctx.store, one!.id);
      // Retried under the stored policy, not discarded under the caller's 1 attempt.
      assert.equal(failed.state, 'retryable');
      assert.deepEqual(failed.args, [0]);
      assert.deepEqual(
        failed.errors.map((e) => e.code),
        ['handler_error'],
      );
      assert.deepEqual(failed.meta, {});
      assert.deepEqual((await mustGet(ctx.store, two!.id)).args, [1]);
    });

    it('a repeated id: the first item decides, the second is refused', async () => {
      const job = await activeJob(ctx.store);
      const results = await ctx.store.settleJobs({
        items: [ack(job), nack(job)],
        now: T0 + SECOND,
      });
      assert.deepEqual(
        results.map((r) => r.status),
        ['settled', 'conflict'],
      );
      assert.equal((await mustGet(ctx.store, job.id)).state, 'completed');
    });

    it('exactly once: two batches racing on the same jobs settle each job once', async () => {
      const jobs = [];
      for (let i = 0; i < 10; i++) jobs.push(await activeJob(ctx.store));
      const [a, b] = await Promise.all([
        ctx.store.settleJobs({ items: jobs.map((j) => ack(j)), now: T0 + SECOND }),
        ctx.store.settleJobs({ items: jobs.map((j) => nack(j)), now: T0 + SECOND }),
      ]);
      for (const [index, job] of jobs.entries()) {
        const statuses = [a![index]!.status, b![index]!.status].sort();
        assert.deepEqual(statuses, ['conflict', 'settled'], `job ${index}`);
        const stored = await mustGet(ctx.store, job.id);
        assert.equal(stored.rev, job.rev + 1);
      }
    });

    it('workflow jobs are returned unwritten for the engine to settle with the workflow', async () => {
      const body = newJob();
      body.workflow_id = `wf_${uuidv7(T0)}`;
      body.workflow_step = 0;
      const [inserted] = await insertOk(ctx.store, [body]);
      const active = await transition(ctx.store, inserted!.id, (j) => ({
        ...j,
        state: 'active',
        attempt: 1,
        worker_id: 'w1',
        lease_until: T0 + VISIBILITY_MS,
        rev: j.rev + 1,
      }));
      const [result] = await ctx.store.settleJobs({ items: [ack(active)], now: T0 + SECOND });
      assert.equal(result!.status, 'workflow');
      assert.deepEqual(await mustGet(ctx.store, active.id), active, 'nothing written');
    });

    it('expire settles only jobs whose deadline has passed', async () => {
      const job = await activeJob(ctx.store);
      const expire = { ...ack(job), settlement: { kind: 'expire' as const } };
      const early = await ctx.store.settleJobs({ items: [expire], now: T0 + VISIBILITY_MS - 1 });
      assert.equal(early[0]!.status, 'conflict');
      const late = await ctx.store.settleJobs({ items: [expire], now: T0 + VISIBILITY_MS });
      assert.equal(late[0]!.status, 'settled');
      const stored = await mustGet(ctx.store, job.id);
      assert.equal(stored.state, 'available');
      assert.equal(stored.error?.code, 'visibility_timeout');
      assert.deepEqual(await ctx.store.findExpiredLeases(T0 + 10 * VISIBILITY_MS, 10), []);
    });

    it('requeue hands the job back available, claimable again', async () => {
      const job = await activeJob(ctx.store);
      const [result] = await ctx.store.settleJobs({
        items: [nack(job, { settlement: { kind: 'fail', error: failure(), requeue: true } })],
        now: T0 + SECOND,
      });
      assert.equal(result!.status, 'settled');
      const claimed = await ctx.store.claimJobs({
        queues: ['default'],
        count: 1,
        workerId: 'w9',
        now: T0 + 2 * SECOND,
      });
      assert.deepEqual(
        claimed.map((j) => j.id),
        [job.id],
      );
    });
  });

  describe('extendLeases', () => {
    it('extends the lease without changing rev, so the ACK decided before still commits', async () => {
      const job = await activeJob(ctx.store, {}, T0, 'w1');
      const [result] = await ctx.store.extendLeases(
        [{ id: job.id, workerId: 'w1', attempt: 1 }],
        T0 + 20 * SECOND,
      );
      assert.equal(result!.status, 'extended');
      const stored = await mustGet(ctx.store, job.id);
      assert.equal(stored.rev, job.rev, 'a lease is not a revision');
      assert.equal(stored.lease_until, T0 + 20 * SECOND + VISIBILITY_MS);
      assert.deepEqual(await ctx.store.findExpiredLeases(T0 + VISIBILITY_MS, 10), []);
      const [settled] = await ctx.store.settleJobs({ items: [ack(job)], now: T0 + 21 * SECOND });
      assert.equal(settled!.status, 'settled');
      const heartbeats = (await allEvents(ctx.store)).filter((e) => e.type === 'job.heartbeat');
      assert.equal(heartbeats.length, 1);
    });

    it('honours a requested lease length', async () => {
      const job = await activeJob(ctx.store);
      await ctx.store.extendLeases([{ id: job.id, visibilityTimeoutMs: 5 * SECOND }], T0 + SECOND);
      assert.equal((await mustGet(ctx.store, job.id)).lease_until, T0 + 6 * SECOND);
      const expired = await ctx.store.findExpiredLeases(T0 + 6 * SECOND, 10);
      assert.deepEqual(
        expired.map((j) => j.id),
        [job.id],
      );
    });

    it('reports cancelled jobs, refuses other holders, unknown and finished jobs', async () => {
      const mine = await activeJob(ctx.store, {}, T0, 'w1');
      const theirs = await activeJob(ctx.store, {}, T0, 'w2');
      const cancelled = await activeJob(ctx.store, {}, T0, 'w1');
      await transition(ctx.store, cancelled.id, (j) => cancel(j, T0 + SECOND));
      const done = await completedJob(ctx.store);
      const results = await ctx.store.extendLeases(
        [
          { id: mine.id, workerId: 'w1' },
          { id: theirs.id, workerId: 'w1' },
          { id: cancelled.id, workerId: 'w1' },
          { id: done.id, workerId: 'w1' },
          { id: uuidv7(T0), workerId: 'w1' },
          { id: mine.id, workerId: 'w1', attempt: 7 },
        ],
        T0 + 2 * SECOND,
      );
      assert.deepEqual(
        results.map((r) => r.status),
        ['extended', 'not_held', 'cancelled', 'not_held', 'not_held', 'not_held'],
      );
      assert.deepEqual(await mustGet(ctx.store, theirs.id), theirs, 'unchanged');
    });
  });
}
