/**
 * Time-driven work: promoteDueJobs (scheduled/retryable -> available,
 * unstarted jobs past expires_at -> discarded) and findExpiredLeases (by
 * visibility and by execution deadline). Time is always the `now` passed in.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claim, expireLease, extendLease, type JobRecord, toIso } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  allEvents,
  completedJob,
  idsOf,
  insertOk,
  MINUTE,
  mustGet,
  newJob,
  retryableJob,
  SECOND,
  T0,
  transition,
  VISIBILITY_MS,
} from './fixtures.ts';

export function timeTests(ctx: SuiteContext): void {
  describe('promoteDueJobs', () => {
    it('makes a scheduled job available when due, not before', async () => {
      const [job] = await insertOk(ctx.store, [newJob({ options: { scheduled_at: '+PT10S' } })]);
      assert.equal(job!.state, 'scheduled');
      assert.equal(job!.run_at, T0 + 10 * SECOND);
      assert.equal(await ctx.store.promoteDueJobs(T0 + 10 * SECOND - 1), 0);
      assert.deepEqual(await mustGet(ctx.store, job!.id), job);
      assert.equal(await ctx.store.promoteDueJobs(T0 + 10 * SECOND), 1);
      const promoted = await mustGet(ctx.store, job!.id);
      assert.equal(promoted.state, 'available');
      assert.equal(promoted.run_at, undefined);
      assert.equal(promoted.scheduled_at, job!.scheduled_at, 'scheduled_at is kept');
      assert.equal(promoted.rev, job!.rev + 1);
      const claimed = await ctx.store.claimJobs({
        queues: ['default'],
        count: 1,
        now: T0 + 11 * SECOND,
      });
      assert.deepEqual(idsOf(claimed), [job!.id]);
    });

    it('makes a due retryable job available', async () => {
      const job = await retryableJob(ctx.store);
      assert.ok(job.run_at !== undefined && job.run_at > T0);
      assert.equal(await ctx.store.promoteDueJobs(job.run_at - 1), 0);
      assert.equal((await mustGet(ctx.store, job.id)).state, 'retryable');
      assert.equal(await ctx.store.promoteDueJobs(job.run_at + 1), 1);
      const promoted = await mustGet(ctx.store, job.id);
      assert.equal(promoted.state, 'available');
      assert.equal(promoted.attempt, 1, 'promotion does not count an attempt');
      assert.deepEqual(promoted.errors, job.errors);
    });

    it('promotes only due scheduled/retryable jobs and counts them', async () => {
      const due = await insertOk(ctx.store, [
        newJob({ options: { scheduled_at: '+PT1S' } }),
        newJob({ options: { scheduled_at: '+PT2S' } }),
      ]);
      const [later] = await insertOk(ctx.store, [newJob({ options: { scheduled_at: '+PT1H' } })]);
      const untouched: JobRecord[] = [
        ...(await insertOk(ctx.store, [newJob(), newJob({ options: { pending: true } })])),
        await activeJob(ctx.store),
        await completedJob(ctx.store),
      ];
      assert.equal(await ctx.store.promoteDueJobs(T0 + MINUTE), 2);
      for (const job of due) assert.equal((await mustGet(ctx.store, job.id)).state, 'available');
      assert.equal((await mustGet(ctx.store, later!.id)).state, 'scheduled');
      for (const job of untouched) assert.deepEqual(await mustGet(ctx.store, job.id), job);
      assert.equal(await ctx.store.promoteDueJobs(T0 + MINUTE), 0, 'idempotent');
    });

    it('discards unstarted jobs past expires_at, without completed_at, with job.expired', async () => {
      const expiring = await insertOk(ctx.store, [
        newJob({ options: { expires_at: '+PT1S' } }),
        newJob({ options: { expires_at: '+PT1S', pending: true } }),
        // Due and expired at once: expiry wins, it never becomes available.
        newJob({ options: { expires_at: '+PT1S', scheduled_at: '+PT1S' } }),
      ]);
      const [fresh] = await insertOk(ctx.store, [newJob({ options: { expires_at: '+PT1H' } })]);
      const started = await activeJob(ctx.store, { options: { expires_at: '+PT1S' } });
      const now = T0 + 2 * SECOND;
      assert.equal(await ctx.store.promoteDueJobs(now), 0, 'expired jobs are not counted');
      for (const job of expiring) {
        const stored = await mustGet(ctx.store, job.id);
        assert.equal(stored.state, 'discarded', `${job.id} discarded`);
        assert.equal(stored.discarded_at, toIso(now));
        assert.equal(stored.completed_at, undefined);
        assert.equal(stored.dead_letter, undefined);
        assert.equal(stored.run_at, undefined);
      }
      assert.equal((await mustGet(ctx.store, fresh!.id)).state, 'available');
      assert.deepEqual(
        await mustGet(ctx.store, started.id),
        started,
        'a started job is not expired',
      );
      const events = await ctx.store.listEvents({ types: ['job.expired'], limit: 100 });
      assert.deepEqual(events.map((e) => e.subject).sort(), idsOf(expiring).sort());
      for (const event of events) {
        assert.equal(event.data.job_id, event.subject);
        assert.equal(event.data.state, 'discarded');
        assert.equal(event.time, toIso(now));
      }
      assert.equal((await ctx.store.listDeadLetter(undefined, 10, 0)).total, 0);
      await ctx.store.promoteDueJobs(now + SECOND);
      assert.equal((await allEvents(ctx.store)).length, 3, 'expired once, no duplicate events');
    });
  });

  describe('findExpiredLeases', () => {
    it('finds an active job once its visibility deadline passes, not before', async () => {
      const job = await activeJob(ctx.store);
      assert.equal(job.lease_until, T0 + VISIBILITY_MS);
      assert.deepEqual(await ctx.store.findExpiredLeases(T0 + VISIBILITY_MS - 1, 10), []);
      assert.deepEqual(await ctx.store.findExpiredLeases(T0 + VISIBILITY_MS, 10), [job]);
    });

    it('finds an active job once its execution deadline passes, not before', async () => {
      const job = await activeJob(ctx.store, {
        timeout_ms: 5 * SECOND,
        options: { visibility_timeout_ms: 10 * MINUTE },
      });
      assert.equal(job.timeout_at, T0 + 5 * SECOND);
      assert.deepEqual(await ctx.store.findExpiredLeases(T0 + 5 * SECOND - 1, 10), []);
      assert.deepEqual(await ctx.store.findExpiredLeases(T0 + 5 * SECOND, 10), [job]);
    });

    it('follows a lease extended by a heartbeat', async () => {
      const job = await activeJob(ctx.store);
      const extended = await transition(ctx.store, job.id, (j) => extendLease(j, T0 + 20 * SECOND));
      assert.deepEqual(await ctx.store.findExpiredLeases(T0 + VISIBILITY_MS, 10), []);
      const deadline = T0 + 20 * SECOND + VISIBILITY_MS;
      assert.deepEqual(await ctx.store.findExpiredLeases(deadline - 1, 10), []);
      assert.deepEqual(await ctx.store.findExpiredLeases(deadline, 10), [extended]);
    });

    it('ignores jobs that are not active and respects the limit', async () => {
      for (let i = 0; i < 4; i++) await activeJob(ctx.store);
      await completedJob(ctx.store);
      await retryableJob(ctx.store);
      await insertOk(ctx.store, [newJob()]);
      const later = T0 + 10 * MINUTE;
      const all = await ctx.store.findExpiredLeases(later, 100);
      assert.equal(all.length, 4);
      for (const job of all) assert.equal(job.state, 'active');
      assert.equal((await ctx.store.findExpiredLeases(later, 2)).length, 2);
    });

    it('returns records a guarded commit can act on (expire, then claim again)', async () => {
      const job = await activeJob(ctx.store);
      const now = T0 + VISIBILITY_MS + SECOND;
      const [found] = await ctx.store.findExpiredLeases(now, 10);
      const next = expireLease(found!, now);
      assert.equal(next.state, 'available');
      assert.equal(
        await ctx.store.commit({ updates: [{ job: next, expectRev: found!.rev }] }),
        true,
      );
      assert.deepEqual(await ctx.store.findExpiredLeases(now, 10), []);
      const [again] = await ctx.store.claimJobs({
        queues: ['default'],
        count: 1,
        workerId: 'w2',
        now,
      });
      assert.equal(again!.id, job.id);
      assert.equal(again!.attempt, 2);
      assert.deepEqual(again, claim(next, { now, workerId: 'w2' }));
    });
  });
}
