/**
 * claimJobs: ordering (queues given, priority desc, FIFO by seq), limits,
 * paused queues, expiry, the fields a claim sets, events, and no double
 * claims under concurrency.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claim, type JobRecord, jobEvent, toIso } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import {
  activeJob,
  allEvents,
  completedJob,
  idsOf,
  insertOk,
  mustGet,
  newJob,
  newJobs,
  SECOND,
  shuffled,
  T0,
  VISIBILITY_MS,
} from './fixtures.ts';

export function claimTests(ctx: SuiteContext): void {
  describe('claimJobs', () => {
    const claimAll = (queues: string[], now = T0 + SECOND, count = 1000) =>
      ctx.store.claimJobs({ queues, count, now, workerId: 'w' });

    it('returns [] when nothing is available', async () => {
      assert.deepEqual(await claimAll(['default']), []);
      await insertOk(ctx.store, [newJob({ options: { queue: 'other' } })]);
      assert.deepEqual(await claimAll(['default', 'missing']), []);
    });

    it('sets active, attempt + 1, started_at, worker_id and the lease', async () => {
      const [stored] = await insertOk(ctx.store, [newJob({ timeout_ms: 5 * SECOND })]);
      const now = T0 + 7 * SECOND;
      const [job] = await ctx.store.claimJobs({
        queues: ['default'],
        count: 1,
        workerId: 'worker-a',
        now,
      });
      assert.ok(job);
      assert.equal(job.state, 'active');
      assert.equal(job.attempt, 1);
      assert.equal(job.started_at, toIso(now));
      assert.equal(job.worker_id, 'worker-a');
      assert.equal(job.lease_until, now + VISIBILITY_MS);
      assert.equal(job.timeout_at, now + 5 * SECOND);
      assert.equal(job.rev, stored!.rev + 1);
      // Nothing else changes: the record is core's claim decision.
      assert.deepEqual(job, claim(stored!, { now, workerId: 'worker-a' }));
      assert.deepEqual(await mustGet(ctx.store, job.id), job, 'the claim is stored');
    });

    it('uses the visibility timeout override and leaves worker_id absent without one', async () => {
      await insertOk(ctx.store, [newJob()]);
      const now = T0 + SECOND;
      const [job] = await ctx.store.claimJobs({
        queues: ['default'],
        count: 1,
        visibilityTimeoutMs: 5 * 60 * SECOND,
        now,
      });
      assert.equal(job!.lease_until, now + 5 * 60 * SECOND);
      assert.equal(job!.worker_id, undefined);
      assert.equal(job!.timeout_at, undefined);
      assert.equal((await mustGet(ctx.store, job!.id)).lease_until, now + 5 * 60 * SECOND);
    });

    it('takes queues in the order given, whatever the priorities', async () => {
      const low = await insertOk(
        ctx.store,
        newJobs(2, () => ({ options: { queue: 'a', priority: -50 } })),
      );
      const high = await insertOk(
        ctx.store,
        newJobs(2, () => ({ options: { queue: 'b', priority: 100 } })),
      );
      assert.deepEqual(idsOf(await claimAll(['a', 'b'])), idsOf([...low, ...high]));
    });

    it('takes later queues when earlier ones run dry, up to count in total', async () => {
      const a = await insertOk(
        ctx.store,
        newJobs(2, () => ({ options: { queue: 'a' } })),
      );
      const b = await insertOk(
        ctx.store,
        newJobs(3, () => ({ options: { queue: 'b' } })),
      );
      const claimed = await ctx.store.claimJobs({ queues: ['b', 'a'], count: 4, now: T0 });
      assert.deepEqual(idsOf(claimed), idsOf([...b, a[0]!]));
      assert.equal((await mustGet(ctx.store, a[1]!.id)).state, 'available');
    });

    it('claims the takes first, in their order, then fills from the queues in order', async () => {
      const a = await insertOk(
        ctx.store,
        newJobs(3, () => ({ options: { queue: 'a' } })),
      );
      const b = await insertOk(
        ctx.store,
        newJobs(3, () => ({ options: { queue: 'b' } })),
      );
      const c = await insertOk(
        ctx.store,
        newJobs(1, () => ({ options: { queue: 'c' } })),
      );
      // c's take is short (one job): its shortfall is filled from a, then b.
      const claimed = await ctx.store.claimJobs({
        queues: ['a', 'b', 'c'],
        count: 6,
        now: T0 + SECOND,
        takes: [
          { queue: 'a', count: 1 },
          { queue: 'b', count: 2 },
          { queue: 'c', count: 3 },
        ],
      });
      assert.deepEqual(idsOf(claimed), idsOf([a[0]!, b[0]!, b[1]!, c[0]!, a[1]!, a[2]!]));
      assert.equal((await mustGet(ctx.store, b[2]!.id)).state, 'available');
    });

    it('takes from a missing or empty queue claim nothing and the count still holds', async () => {
      const b = await insertOk(
        ctx.store,
        newJobs(3, () => ({ options: { queue: 'b' } })),
      );
      const claimed = await ctx.store.claimJobs({
        queues: ['a', 'b'],
        count: 2,
        now: T0 + SECOND,
        takes: [
          { queue: 'a', count: 1 },
          { queue: 'b', count: 1 },
        ],
      });
      assert.deepEqual(idsOf(claimed), idsOf([b[0]!, b[1]!]));
    });

    it('orders by priority descending, then FIFO', async () => {
      const priorities = [0, 10, -10, 10, 0, 100, -100, 0, 10];
      const jobs = await insertOk(
        ctx.store,
        priorities.map((priority) => newJob({ priority })),
      );
      const expected = jobs
        .map((job, index) => ({ job, index }))
        .sort((x, y) => y.job.priority - x.job.priority || x.index - y.index)
        .map((x) => x.job.id);
      const claimed: string[] = [];
      for (;;) {
        const [job] = await ctx.store.claimJobs({ queues: ['default'], count: 1, now: T0 });
        if (job === undefined) break;
        claimed.push(job.id);
      }
      assert.deepEqual(claimed, expected);
    });

    it('is FIFO by insertion order for jobs created at the same instant', async () => {
      // 60 jobs with identical timestamps, inserted in an order unrelated to their ids.
      const jobs = shuffled(newJobs(60));
      const firstBatch = await insertOk(ctx.store, jobs.slice(0, 25));
      const secondBatch = await insertOk(ctx.store, jobs.slice(25));
      const claimed = [
        ...(await ctx.store.claimJobs({ queues: ['default'], count: 7, now: T0 })),
        ...(await ctx.store.claimJobs({ queues: ['default'], count: 100, now: T0 })),
      ];
      assert.deepEqual(idsOf(claimed), idsOf([...firstBatch, ...secondBatch]));
    });

    it('claims at most count jobs', async () => {
      const jobs = await insertOk(ctx.store, newJobs(10));
      const claimed = await ctx.store.claimJobs({ queues: ['default'], count: 3, now: T0 });
      assert.deepEqual(idsOf(claimed), idsOf(jobs.slice(0, 3)));
      for (const job of jobs.slice(3)) {
        assert.equal((await mustGet(ctx.store, job.id)).state, 'available');
      }
    });

    it('skips paused queues and resumes them', async () => {
      const paused = await insertOk(
        ctx.store,
        newJobs(2, () => ({ options: { queue: 'p' } })),
      );
      const open = await insertOk(
        ctx.store,
        newJobs(1, () => ({ options: { queue: 'o' } })),
      );
      await ctx.store.setQueuePaused('p', true, T0);
      assert.deepEqual(idsOf(await claimAll(['p', 'o'])), idsOf(open));
      for (const job of paused) assert.equal((await mustGet(ctx.store, job.id)).state, 'available');
      await ctx.store.setQueuePaused('p', false, T0 + SECOND);
      assert.deepEqual(idsOf(await claimAll(['p', 'o'])), idsOf(paused));
    });

    it('skips a queue paused before it had jobs', async () => {
      await ctx.store.setQueuePaused('early', true, T0);
      await insertOk(
        ctx.store,
        newJobs(2, () => ({ options: { queue: 'early' } })),
      );
      assert.deepEqual(await claimAll(['early']), []);
    });

    it('skips jobs whose expires_at has passed', async () => {
      const [expiring] = await insertOk(ctx.store, [newJob({ options: { expires_at: '+PT5S' } })]);
      const [lasting] = await insertOk(ctx.store, [newJob({ options: { expires_at: '+PT1H' } })]);
      assert.deepEqual(idsOf(await claimAll(['default'], T0 + 6 * SECOND)), [lasting!.id]);
      assert.notEqual((await mustGet(ctx.store, expiring!.id)).state, 'active');
    });

    it('claims a job before its expires_at', async () => {
      const [job] = await insertOk(ctx.store, [newJob({ options: { expires_at: '+PT5S' } })]);
      assert.deepEqual(idsOf(await claimAll(['default'], T0 + 4 * SECOND)), [job!.id]);
    });

    it('only claims available jobs', async () => {
      await insertOk(ctx.store, [
        newJob({ options: { scheduled_at: '+PT1H' } }),
        newJob({ options: { pending: true } }),
      ]);
      await activeJob(ctx.store);
      await completedJob(ctx.store);
      const [available] = await insertOk(ctx.store, [newJob()]);
      assert.deepEqual(idsOf(await claimAll(['default'])), [available!.id]);
      assert.deepEqual(await claimAll(['default']), []);
    });

    it('does not hand out a job twice when a queue is listed twice', async () => {
      const jobs = await insertOk(ctx.store, newJobs(3));
      const claimed = await ctx.store.claimJobs({
        queues: ['default', 'default'],
        count: 10,
        now: T0,
      });
      assert.deepEqual(idsOf(claimed), idsOf(jobs));
    });

    it('never hands the same job to two concurrent claims', async () => {
      const jobs = await insertOk(
        ctx.store,
        newJobs(200, (i) => ({ options: { queue: i % 2 === 0 ? 'c1' : 'c2', priority: i % 5 } })),
      );
      const claims = await Promise.all(
        Array.from({ length: 20 }, (_, worker) =>
          ctx.store.claimJobs({
            queues: worker % 2 === 0 ? ['c1', 'c2'] : ['c2', 'c1'],
            count: 13,
            workerId: `w${worker}`,
            now: T0 + SECOND,
          }),
        ),
      );
      const owner = new Map<string, string>();
      for (const [worker, claimed] of claims.entries()) {
        assert.ok(claimed.length <= 13);
        for (const job of claimed) {
          assert.ok(!owner.has(job.id), `job ${job.id} claimed twice`);
          owner.set(job.id, `w${worker}`);
        }
      }
      assert.equal(owner.size, 200, 'every job claimed exactly once');
      for (const job of jobs) {
        const stored = await mustGet(ctx.store, job.id);
        assert.equal(stored.state, 'active');
        assert.equal(stored.attempt, 1);
        assert.equal(stored.worker_id, owner.get(job.id));
      }
      assert.deepEqual(await claimAll(['c1', 'c2']), []);
    });

    it('records a job.started event per claimed job', async () => {
      const jobs = await insertOk(
        ctx.store,
        newJobs(3, (i) => ({ type: `kind.t${i}`, options: { queue: 'ev' } })),
      );
      const now = T0 + 2 * SECOND;
      const claimed = await ctx.store.claimJobs({ queues: ['ev'], count: 2, workerId: 'w9', now });
      const events = await ctx.store.listEvents({ types: ['job.started'], limit: 100 });
      assert.equal(events.length, 2);
      const byJob = new Map(events.map((e) => [e.data.job_id as string, e]));
      for (const job of claimed as JobRecord[]) {
        const event = byJob.get(job.id);
        assert.ok(event, `job.started for ${job.id}`);
        assert.equal(event.subject, job.id);
        assert.equal(event.time, toIso(now));
        assert.equal(event.data.queue, 'ev');
        assert.equal(event.data.job_type, job.type);
        assert.equal(event.data.worker_id, 'w9');
        assert.equal(event.data.attempt, 1);
      }
      assert.ok(!byJob.has(jobs[2]!.id));
      assert.equal((await allEvents(ctx.store)).length, 2, 'nothing else recorded');
    });

    it('records job.started exactly as core jobEvent builds it, in claim order', async () => {
      const metas: Record<string, unknown>[] = [
        { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
        { trace_id: 'abc', traceparent: 'ignored' },
        { trace_id: null, traceparent: 'fallback' },
        { trace_id: null },
        {},
        { tenant_id: 'acme' },
        { tenant_id: '' },
      ];
      await insertOk(
        ctx.store,
        metas.map((meta, i) =>
          newJob({ type: `ev.t${i}`, meta, options: { queue: 'evx', priority: i % 2 } }),
        ),
      );
      const now = T0 + 3 * SECOND;
      // No worker id: the event carries worker_id null.
      const claimed = await ctx.store.claimJobs({ queues: ['evx'], count: 10, now });
      assert.equal(claimed.length, metas.length);
      const events = await ctx.store.listEvents({ types: ['job.started'], limit: 100 });
      assert.deepEqual(
        events.map((e) => e.subject),
        idsOf(claimed),
        'one event per job, in claim order',
      );
      for (const [index, job] of claimed.entries()) {
        const expected = jobEvent(
          'job.started',
          job,
          { worker_id: job.worker_id ?? null, attempt: job.attempt },
          now,
        );
        assert.deepEqual({ ...events[index], id: 'x' }, { ...expected, id: 'x' }, job.type);
        assert.match(events[index]!.id, /^evt_/);
      }
    });
  });
}
