/**
 * Unique jobs at insert: reject / ignore / replace, the states a lock holds
 * in, the period that bounds it, and atomicity with the rest of the batch.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { complete, type InsertResult, type JobRecord, toIso } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  allEvents,
  completedJob,
  enqueuedEvent,
  idsOf,
  insertOk,
  mustGet,
  newJob,
  SECOND,
  T0,
  transition,
} from './fixtures.ts';

type OnConflict = 'reject' | 'ignore' | 'replace';

/** Jobs with the same `account` share a unique key. */
function uniqueBody(
  onConflict: OnConflict,
  account = 1,
  unique: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    type: 'report.build',
    args: [{ account }],
    unique: { keys: ['type', 'args'], on_conflict: onConflict, ...unique },
  };
}

function uniqueJob(
  onConflict: OnConflict,
  account = 1,
  unique: Record<string, unknown> = {},
  now = T0,
): JobRecord {
  return newJob(uniqueBody(onConflict, account, unique), now);
}

const existingOf = (result: InsertResult | undefined): JobRecord =>
  (result as { existing: JobRecord }).existing;

export function uniqueTests(ctx: SuiteContext): void {
  describe('insertJobs: unique keys', () => {
    it('reject: returns rejected with the holder and stores nothing of the batch', async () => {
      const [holder] = await insertOk(ctx.store, [uniqueJob('reject')]);
      const other = newJob();
      const conflicting = uniqueJob('reject');
      assert.equal(conflicting.unique_key, holder!.unique_key);
      const results = await ctx.store.insertJobs(
        [other, conflicting],
        [enqueuedEvent(other), enqueuedEvent(conflicting)],
        T0 + SECOND,
      );
      assert.equal(results[1]!.status, 'rejected');
      assert.deepEqual(existingOf(results[1]), holder);
      assert.equal(await ctx.store.getJob(conflicting.id), null);
      assert.equal(await ctx.store.getJob(other.id), null, 'the whole batch is refused');
      assert.deepEqual(await allEvents(ctx.store), []);
    });

    it('different keys do not conflict', async () => {
      await insertOk(ctx.store, [uniqueJob('reject', 1), uniqueJob('reject', 2)]);
      await insertOk(ctx.store, [uniqueJob('reject', 3)], T0 + SECOND);
    });

    it('ignore: returns the existing job, inserts nothing for it, keeps the rest', async () => {
      const [holder] = await insertOk(ctx.store, [uniqueJob('ignore')]);
      const conflicting = uniqueJob('ignore');
      const other = newJob();
      const events = [enqueuedEvent(conflicting), enqueuedEvent(other)];
      const results = await ctx.store.insertJobs([conflicting, other], events, T0 + SECOND);
      assert.equal(results[0]!.status, 'existing');
      assert.deepEqual(existingOf(results[0]), holder);
      assert.equal(results[1]!.status, 'inserted');
      assert.equal(await ctx.store.getJob(conflicting.id), null);
      assert.equal((await mustGet(ctx.store, other.id)).state, 'available');
      const subjects = (await allEvents(ctx.store)).map((e) => e.subject);
      assert.deepEqual(subjects, [other.id], 'no event for the job that was not inserted');
    });

    it('replace: cancels the old job in the same step and hands the lock over', async () => {
      const [old] = await insertOk(ctx.store, [uniqueJob('replace')]);
      const replacement = uniqueJob('replace', 1, {}, T0 + SECOND);
      const [stored] = await insertOk(ctx.store, [replacement], T0 + SECOND);
      assert.equal(stored!.state, 'available');
      const cancelled = await mustGet(ctx.store, old!.id);
      assert.equal(cancelled.state, 'cancelled');
      assert.equal(cancelled.cancelled_at, toIso(T0 + SECOND));
      assert.equal(cancelled.rev, old!.rev + 1, 'the cancel is a guarded write (rev + 1)');
      const claimed = await ctx.store.claimJobs({
        queues: ['default'],
        count: 10,
        now: T0 + 2 * SECOND,
      });
      assert.deepEqual(idsOf(claimed), [replacement.id]);
      // The replacement now holds the key.
      const results = await ctx.store.insertJobs([uniqueJob('reject')], [], T0 + 3 * SECOND);
      assert.equal(results[0]!.status, 'rejected');
      assert.equal(existingOf(results[0]).id, replacement.id);
    });

    it('replace is undone when the batch is refused', async () => {
      const [old] = await insertOk(ctx.store, [uniqueJob('replace')]);
      const [taken] = await insertOk(ctx.store, [newJob()]);
      const replacement = uniqueJob('replace');
      const results = await ctx.store.insertJobs(
        [replacement, newJob({ id: taken!.id })],
        [],
        T0 + SECOND,
      );
      assert.equal(results[1]!.status, 'duplicate_id');
      assert.deepEqual(await mustGet(ctx.store, old!.id), old, 'old job not cancelled');
      assert.equal(await ctx.store.getJob(replacement.id), null);
    });

    it('conflicts inside one batch: reject refuses the batch, ignore keeps the first', async () => {
      const first = uniqueJob('reject');
      const second = uniqueJob('reject');
      const rejected = await ctx.store.insertJobs([first, second], [], T0);
      assert.equal(rejected[1]!.status, 'rejected');
      assert.equal(existingOf(rejected[1]).id, first.id);
      assert.equal(await ctx.store.getJob(first.id), null, 'nothing stored');

      const keep = uniqueJob('ignore', 2);
      const dropped = uniqueJob('ignore', 2);
      const other = newJob();
      const results = await ctx.store.insertJobs([keep, dropped, other], [], T0);
      assert.deepEqual(
        results.map((r) => r.status),
        ['inserted', 'existing', 'inserted'],
      );
      assert.equal(existingOf(results[1]).id, keep.id);
      assert.equal(await ctx.store.getJob(dropped.id), null);
    });

    it('default states: an active holder blocks, a completed one does not', async () => {
      const active = await activeJob(ctx.store, uniqueBody('reject'));
      const blocked = await ctx.store.insertJobs([uniqueJob('reject')], [], T0 + SECOND);
      assert.equal(blocked[0]!.status, 'rejected');
      assert.equal(existingOf(blocked[0]).id, active.id);

      await transition(ctx.store, active.id, (j) => complete(j, null, T0 + 2 * SECOND));
      await insertOk(ctx.store, [uniqueJob('reject', 1, {}, T0 + 3 * SECOND)], T0 + 3 * SECOND);
    });

    it('states filter: only holders in the listed states conflict', async () => {
      const onlyAvailable = { states: ['available'] };
      const holder = await activeJob(ctx.store, uniqueBody('reject', 1, onlyAvailable));
      await insertOk(ctx.store, [uniqueJob('reject', 1, onlyAvailable)], T0 + SECOND);
      // Once the new job holds the key in `available`, a third one conflicts with it.
      const results = await ctx.store.insertJobs(
        [uniqueJob('reject', 1, onlyAvailable)],
        [],
        T0 + 2 * SECOND,
      );
      assert.equal(results[0]!.status, 'rejected');
      assert.notEqual(existingOf(results[0]).id, holder.id);

      const withCompleted = { states: ['available', 'completed'] };
      const done = await completedJob(ctx.store, uniqueBody('reject', 2, withCompleted));
      const blocked = await ctx.store.insertJobs(
        [uniqueJob('reject', 2, withCompleted)],
        [],
        T0 + SECOND,
      );
      assert.equal(blocked[0]!.status, 'rejected');
      assert.equal(existingOf(blocked[0]).id, done.id);
    });

    it('period: the lock expires after the period and passes to the next job', async () => {
      const period = { period: 'PT1M' };
      const [first] = await insertOk(ctx.store, [uniqueJob('reject', 1, period)]);
      const within = await ctx.store.insertJobs(
        [uniqueJob('reject', 1, period, T0 + 30 * SECOND)],
        [],
        T0 + 30 * SECOND,
      );
      assert.equal(within[0]!.status, 'rejected');
      assert.equal(existingOf(within[0]).id, first!.id);

      const later = uniqueJob('reject', 1, period, T0 + 90 * SECOND);
      await insertOk(ctx.store, [later], T0 + 90 * SECOND);
      const next = await ctx.store.insertJobs(
        [uniqueJob('reject', 1, period, T0 + 120 * SECOND)],
        [],
        T0 + 120 * SECOND,
      );
      assert.equal(next[0]!.status, 'rejected');
      assert.equal(existingOf(next[0]).id, later.id, 'the lock moved to the newer job');
    });

    it('a deleted holder releases its key', async () => {
      const [holder] = await insertOk(ctx.store, [uniqueJob('reject')]);
      const ok = await ctx.store.commit({ deletes: [{ id: holder!.id, expectRev: holder!.rev }] });
      assert.equal(ok, true);
      await insertOk(ctx.store, [uniqueJob('reject')], T0 + SECOND);
    });
  });
}
