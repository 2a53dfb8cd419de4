/**
 * insertJobs / getJob: seq assignment, exact round trips, id uniqueness and
 * batch atomicity.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type JobRecord, uuidv7 } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  allEvents,
  enqueuedEvent,
  idsOf,
  insertOk,
  mustGet,
  newJob,
  newJobs,
  T0,
} from './fixtures.ts';

/** A job using every envelope feature, with timestamps in non-canonical forms. */
function richJob(): JobRecord {
  const job = newJob({
    type: 'email.send_welcome',
    args: [
      {
        to: 'ünïcødé@example.com',
        nested: { list: [1, 2.5, -3, 0, true, false, null, '', 'quote"s\\and\'more'] },
        empty: {},
        emptyList: [],
      },
      'emoji 🚀 and a\nnewline\ttab',
      9_007_199_254_740_991,
      -0.000123,
      null,
    ],
    meta: { trace_id: 'trace-123', tenant: { id: 7, name: 'Acme' }, list: ['x', 'y'] },
    schema: 'https://example.com/schemas/email.json',
    x_custom_extension: { any: ['thing', 1, { deep: true }] },
    'com.example.flag': true,
    options: {
      queue: 'round-trip',
      priority: 42,
      timeout_ms: 120_000,
      visibility_timeout_ms: 45_000,
      tags: ['a', 'b'],
      retry: {
        max_attempts: 7,
        initial_interval: 'PT2S',
        backoff_coefficient: 3,
        max_interval: 'PT10M',
        jitter: false,
        non_retryable_errors: ['validation.*'],
        on_exhaustion: 'dead_letter',
      },
      // 13:00:00.250Z, after T0: scheduled, text kept as given.
      scheduled_at: '2026-01-01T14:00:00.250+01:00',
      expires_at: '2026-01-02T00:00:00Z',
      unique: { keys: ['type', 'args'], period: 'PT1H', on_conflict: 'reject' },
      rate_limit: { max_per_second: 5 },
    },
  });
  job.created_at = '2026-01-01T13:00:00.123456+01:00';
  job.enqueued_at = '2026-01-01T12:00:00.5Z';
  job.workflow_id = 'wf_0192f0c4';
  job.workflow_step = 2;
  job.parent_results = [{ ok: true }, [1, 2], 'text'];
  return job;
}

export function jobTests(ctx: SuiteContext): void {
  describe('insertJobs / getJob', () => {
    it('getJob returns null for an unknown id', async () => {
      assert.equal(await ctx.store.getJob(uuidv7(T0)), null);
    });

    it('assigns increasing seq in array order, within and across batches', async () => {
      // Ids are made in the opposite order, so seq cannot come from the id.
      const first = newJobs(5).reverse();
      const second = newJobs(3).reverse();
      const stored = [
        ...(await insertOk(ctx.store, first)),
        ...(await insertOk(ctx.store, second)),
      ];
      assert.deepEqual(idsOf(stored), idsOf([...first, ...second]));
      for (const [index, job] of stored.entries()) {
        assert.equal(typeof job.seq, 'number', 'seq is assigned');
        assert.equal((await mustGet(ctx.store, job.id)).seq, job.seq, 'stored seq is returned');
        if (index > 0) assert.ok(job.seq! > stored[index - 1]!.seq!, `seq increases at ${index}`);
      }
    });

    it('round-trips every field exactly (args, meta, extensions, timestamps as given)', async () => {
      const rich = richJob();
      assert.equal(rich.state, 'scheduled');
      const pending = newJob({ args: [{ a: [1, { b: null }] }], options: { pending: true } });
      const input = structuredClone([rich, pending]);
      const stored = await insertOk(ctx.store, [rich, pending]);
      for (const [index, expected] of input.entries()) {
        const returned = stored[index]!;
        assert.deepEqual(returned, { ...expected, seq: returned.seq }, 'insert result');
        assert.deepEqual(await mustGet(ctx.store, expected.id), returned, 'getJob');
      }
    });

    it('does not share its state with the caller (stored, read or returned)', async () => {
      const job = newJob({ args: [{ n: 1 }], meta: { m: 1 } });
      const [returned] = await insertOk(ctx.store, [job]);
      (returned!.args[0] as { n: number }).n = 3;
      const read = await mustGet(ctx.store, job.id);
      read.meta.m = 4;
      const again = await mustGet(ctx.store, job.id);
      assert.deepEqual(again.args, [{ n: 1 }], 'the returned record is not the stored one');
      assert.deepEqual(again.meta, { m: 1 }, 'a read record is not the stored one');
      const [other] = newJobs(1, () => ({ args: [{ n: 1 }], meta: { m: 1 } }));
      await ctx.store.insertJobs([other!], [], T0);
      (other!.args[0] as { n: number }).n = 2;
      other!.meta.m = 2;
      assert.deepEqual((await mustGet(ctx.store, other!.id)).args, [{ n: 1 }], 'store vs input');
      assert.deepEqual((await mustGet(ctx.store, other!.id)).meta, { m: 1 }, 'store vs input');
    });

    it('appends the given events with the inserted jobs', async () => {
      const jobs = newJobs(2);
      const events = jobs.map((job) => enqueuedEvent(job));
      await insertOk(ctx.store, jobs, T0, events);
      assert.deepEqual(await allEvents(ctx.store), events);
    });

    it('returns duplicate_id for an existing id and stores nothing of that batch', async () => {
      const [existing] = await insertOk(ctx.store, [newJob({ args: ['original'] })]);
      const before = newJob({ options: { queue: 'fresh-queue' } });
      const duplicate = newJob({ id: existing!.id, args: ['impostor'] });
      const after = newJob({ options: { queue: 'fresh-queue' } });
      const batch = [before, duplicate, after];
      const results = await ctx.store.insertJobs(
        batch,
        batch.map((job) => enqueuedEvent(job)),
        T0,
      );
      assert.equal(results.length, 3);
      assert.equal(results[1]!.status, 'duplicate_id');
      assert.deepEqual((results[1] as { existing: JobRecord }).existing, existing);
      assert.equal(await ctx.store.getJob(before.id), null, 'job before the duplicate not stored');
      assert.equal(await ctx.store.getJob(after.id), null, 'job after the duplicate not stored');
      assert.deepEqual(await mustGet(ctx.store, existing!.id), existing, 'existing job untouched');
      assert.deepEqual(await allEvents(ctx.store), [], 'no events appended');
      const queues = (await ctx.store.listQueues()).map((q) => q.name);
      assert.ok(!queues.includes('fresh-queue'), 'queue of the aborted batch not registered');
      const claimed = await ctx.store.claimJobs({ queues: ['fresh-queue'], count: 10, now: T0 });
      assert.deepEqual(claimed, []);
    });

    it('treats the same id twice in one batch as duplicate_id and stores nothing', async () => {
      const job = newJob();
      const twin = newJob({ id: job.id, args: ['twin'] });
      const results = await ctx.store.insertJobs([job, twin], [], T0);
      assert.equal(results[1]!.status, 'duplicate_id');
      assert.equal(await ctx.store.getJob(job.id), null);
    });

    it('inserts a later batch normally after an aborted one', async () => {
      const [existing] = await insertOk(ctx.store, [newJob()]);
      const retried = newJob();
      await ctx.store.insertJobs([retried, newJob({ id: existing!.id })], [], T0);
      const [stored] = await insertOk(ctx.store, [retried]);
      assert.ok(stored!.seq! > existing!.seq!);
      assert.equal((await mustGet(ctx.store, retried.id)).state, 'available');
    });
  });
}
