/**
 * commit: guarded updates on rev, all-or-nothing application of updates,
 * inserts, deletes and events, and exact round trips of lifecycle records.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  cancel,
  claim,
  complete,
  extendLease,
  fail,
  type JobRecord,
  jobEvent,
  makeEvent,
  uuidv7,
} from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  allEvents,
  failure,
  idsOf,
  insertOk,
  mustGet,
  newJob,
  newJobs,
  SECOND,
  T0,
  transition,
} from './fixtures.ts';

export function commitTests(ctx: SuiteContext): void {
  describe('commit', () => {
    const event = (type: string, job: JobRecord) => jobEvent(type, job, {}, T0);

    it('applies a guarded update with the right rev', async () => {
      const [job] = await insertOk(ctx.store, [newJob()]);
      const next = claim(job!, { now: T0, workerId: 'w' });
      const events = [event('job.started', next)];
      const ok = await ctx.store.commit({ updates: [{ job: next, expectRev: job!.rev }], events });
      assert.equal(ok, true);
      assert.deepEqual(await mustGet(ctx.store, job!.id), next);
      assert.deepEqual(await allEvents(ctx.store), events);
    });

    it('returns false and changes nothing with a stale rev', async () => {
      const [job] = await insertOk(ctx.store, [newJob()]);
      const current = await transition(ctx.store, job!.id, (j) =>
        claim(j, { now: T0, workerId: 'a' }),
      );
      // A decision made on the record read before the claim must not land.
      const stale = cancel(job!, T0 + SECOND);
      const ok = await ctx.store.commit({
        updates: [{ job: stale, expectRev: job!.rev }],
        events: [event('job.cancelled', stale)],
      });
      assert.equal(ok, false);
      assert.deepEqual(await mustGet(ctx.store, job!.id), current);
      assert.deepEqual(await allEvents(ctx.store), []);
      // A guard ahead of the stored rev fails too.
      const ahead = await ctx.store.commit({
        updates: [{ job: stale, expectRev: current.rev + 1 }],
      });
      assert.equal(ahead, false);
      assert.deepEqual(await mustGet(ctx.store, job!.id), current);
    });

    it('returns false for an update of a job that does not exist', async () => {
      const ghost = newJob();
      assert.equal(
        await ctx.store.commit({ updates: [{ job: { ...ghost, rev: 1 }, expectRev: 0 }] }),
        false,
      );
      assert.equal(await ctx.store.getJob(ghost.id), null);
    });

    for (const stalePosition of [0, 1, 2]) {
      it(`applies no update and no event when one guard of several is stale (#${stalePosition})`, async () => {
        const jobs = await insertOk(ctx.store, newJobs(3));
        const moved = await transition(ctx.store, jobs[stalePosition]!.id, (j) =>
          claim(j, { now: T0, workerId: 'first' }),
        );
        const updates = jobs.map((job) => ({ job: cancel(job, T0 + SECOND), expectRev: job.rev }));
        const [extra] = newJobs(1);
        const ok = await ctx.store.commit({
          updates,
          inserts: [extra!],
          events: updates.map((u) => event('job.cancelled', u.job)),
        });
        assert.equal(ok, false);
        for (const [index, job] of jobs.entries()) {
          const expected = index === stalePosition ? moved : job;
          assert.deepEqual(await mustGet(ctx.store, job.id), expected, `job ${index} unchanged`);
        }
        assert.equal(await ctx.store.getJob(extra!.id), null, 'insert not applied');
        assert.deepEqual(await allEvents(ctx.store), [], 'no events appended');
      });
    }

    it('applies several updates, inserts, deletes and events together', async () => {
      const [updated, deleted] = await insertOk(ctx.store, newJobs(2));
      const inserts = newJobs(
        3,
        (i) => ({ args: [i], options: { queue: 'spawned' } }),
        T0 + SECOND,
      );
      const next = cancel(updated!, T0 + SECOND);
      const events = [event('job.cancelled', next), event('workflow.step', inserts[0]!)];
      const ok = await ctx.store.commit({
        updates: [{ job: next, expectRev: updated!.rev }],
        deletes: [{ id: deleted!.id, expectRev: deleted!.rev }],
        inserts,
        events,
      });
      assert.equal(ok, true);
      assert.deepEqual(await mustGet(ctx.store, updated!.id), next);
      assert.equal(await ctx.store.getJob(deleted!.id), null);
      const stored = await Promise.all(inserts.map((job) => mustGet(ctx.store, job.id)));
      for (const [index, job] of stored.entries()) {
        assert.deepEqual(job, { ...inserts[index]!, seq: job.seq });
        assert.ok(job.seq! > deleted!.seq!, 'inserted jobs get later seqs');
        if (index > 0) assert.ok(job.seq! > stored[index - 1]!.seq!, 'seq in array order');
      }
      assert.deepEqual(await allEvents(ctx.store), events);
      const claimed = await ctx.store.claimJobs({
        queues: ['spawned'],
        count: 10,
        now: T0 + SECOND,
      });
      assert.deepEqual(idsOf(claimed), idsOf(inserts), 'inserted jobs are claimable in order');
      assert.ok((await ctx.store.listQueues()).some((q) => q.name === 'spawned'));
    });

    it('returns false and applies nothing when a delete guard is stale or the job is gone', async () => {
      const [kept, target] = await insertOk(ctx.store, newJobs(2));
      const moved = await transition(ctx.store, target!.id, (j) => cancel(j, T0));
      const [extra] = newJobs(1);
      const next = cancel(kept!, T0 + SECOND);
      const stale = await ctx.store.commit({
        updates: [{ job: next, expectRev: kept!.rev }],
        deletes: [{ id: target!.id, expectRev: target!.rev }],
        inserts: [extra!],
        events: [event('job.cancelled', next)],
      });
      assert.equal(stale, false);
      assert.deepEqual(await mustGet(ctx.store, kept!.id), kept);
      assert.deepEqual(await mustGet(ctx.store, target!.id), moved);
      assert.equal(await ctx.store.getJob(extra!.id), null);
      assert.deepEqual(await allEvents(ctx.store), []);

      const gone = await ctx.store.commit({ deletes: [{ id: uuidv7(T0), expectRev: 0 }] });
      assert.equal(gone, false);
    });

    it('does not apply a commit whose insert reuses an existing id', async () => {
      const [existing, other] = await insertOk(ctx.store, newJobs(2));
      const next = cancel(other!, T0 + SECOND);
      let outcome: boolean | 'threw';
      try {
        outcome = await ctx.store.commit({
          updates: [{ job: next, expectRev: other!.rev }],
          inserts: [newJob({ id: existing!.id, args: ['impostor'] })],
          events: [event('job.cancelled', next)],
        });
      } catch {
        outcome = 'threw';
      }
      assert.notEqual(outcome, true, 'the commit must fail (false or an error)');
      assert.deepEqual(await mustGet(ctx.store, existing!.id), existing);
      assert.deepEqual(await mustGet(ctx.store, other!.id), other);
      assert.deepEqual(await allEvents(ctx.store), []);
    });

    it('accepts an empty commit and an events-only commit', async () => {
      assert.equal(await ctx.store.commit({}), true);
      const events = [makeEvent('queue.paused', 'q', { queue: 'q' }, T0)];
      assert.equal(await ctx.store.commit({ events }), true);
      assert.deepEqual(await allEvents(ctx.store), events);
    });

    it('round-trips lifecycle records exactly (errors, result, lease, cancel flag)', async () => {
      const body = {
        args: [{ to: 'x' }],
        timeout_ms: 60 * SECOND,
        retry: { max_attempts: 5, jitter: false },
      };
      const active = await activeJob(ctx.store, body, T0, 'worker-7');
      const beat = await transition(ctx.store, active.id, (j) => extendLease(j, T0 + 5 * SECOND));
      assert.deepEqual(await mustGet(ctx.store, active.id), beat);
      const report = failure({
        code: 'smtp_down',
        message: 'SMTP refused: "550" ünïcødé',
        details: { host: 'mx', codes: [550, 551], nested: { deep: null } },
        backtrace: ['at send (mail.ts:1)', 'at run (worker.ts:2)'],
      });
      const retryable = await transition(ctx.store, active.id, (j) =>
        fail(j, report, T0 + 6 * SECOND),
      );
      assert.equal(retryable.state, 'retryable');
      assert.deepEqual(await mustGet(ctx.store, active.id), retryable);
      const promoted = { ...retryable, state: 'available' as const, rev: retryable.rev + 1 };
      delete promoted.run_at;
      await ctx.store.commit({ updates: [{ job: promoted, expectRev: retryable.rev }] });
      const second = await transition(ctx.store, active.id, (j) =>
        claim(j, { now: T0 + 10 * SECOND, workerId: 'worker-8' }),
      );
      assert.equal(second.attempt, 2);
      const result = { sent: true, ids: ['a', 'b'], nested: { n: 1.5, nil: null } };
      const done = await transition(ctx.store, active.id, (j) =>
        complete(j, result, T0 + 11 * SECOND),
      );
      assert.deepEqual(await mustGet(ctx.store, active.id), done);
      assert.equal(done.errors.length, 1);

      const other = await activeJob(ctx.store, {}, T0);
      const cancelled = await transition(ctx.store, other.id, (j) => cancel(j, T0 + SECOND));
      assert.equal(cancelled.cancel_requested, true);
      assert.deepEqual(await mustGet(ctx.store, other.id), cancelled);
    });
  });
}
