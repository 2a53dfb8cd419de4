/**
 * The cron registry: upsert / get / list / delete, dueCrons, and guarded
 * cron updates that make each fire time commit exactly once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CronRecord, toIso } from '@ojs/core';
import type { SuiteContext } from './context.ts';
import { allEvents, enqueuedEvent, MINUTE, newJob, T0 } from './fixtures.ts';

function cronRecord(name: string, overrides: Partial<CronRecord> = {}): CronRecord {
  const next = T0 + MINUTE;
  return {
    name,
    expression: '*/1 * * * *',
    timezone: 'Europe/Paris',
    overlap_policy: 'skip',
    enabled: true,
    description: 'every minute ünïcødé',
    job_template: { type: 'cron.tick', args: [{ n: 1 }], options: { queue: 'cron' } },
    created_at: '2026-01-01T13:00:00+01:00',
    updated_at: toIso(T0),
    next_run_at: toIso(next),
    next_run_ms: next,
    run_count: 0,
    rev: 0,
    ...overrides,
  };
}

/** The cron as it is after firing at its next_run_ms. */
function fired(cron: CronRecord, jobId: string): CronRecord {
  const next = cron.next_run_ms! + MINUTE;
  return {
    ...cron,
    last_run_at: cron.next_run_at!,
    last_job_id: jobId,
    next_run_at: toIso(next),
    next_run_ms: next,
    run_count: cron.run_count + 1,
    rev: cron.rev + 1,
  };
}

export function cronTests(ctx: SuiteContext): void {
  describe('cron registry', () => {
    it('upsertCron creates, then replaces by name', async () => {
      const cron = cronRecord('tick');
      const created = await ctx.store.upsertCron(cron);
      assert.equal(created.created, true);
      assert.deepEqual(created.cron, cron);
      assert.deepEqual(await ctx.store.getCron('tick'), cron);

      const changed = cronRecord('tick', { expression: '0 * * * *', description: 'hourly' });
      const replaced = await ctx.store.upsertCron(changed);
      assert.equal(replaced.created, false);
      assert.deepEqual({ ...replaced.cron, rev: 0 }, changed);
      assert.deepEqual(await ctx.store.getCron('tick'), replaced.cron);
      assert.equal((await ctx.store.listCrons()).length, 1);
    });

    it('a replace invalidates a guarded update made on the old record', async () => {
      const { cron } = await ctx.store.upsertCron(cronRecord('tick'));
      const { cron: replaced } = await ctx.store.upsertCron(
        cronRecord('tick', { expression: '0 * * * *' }),
      );
      const stale = await ctx.store.commit({
        cronUpdates: [{ cron: fired(cron, 'job'), expectRev: cron.rev }],
      });
      assert.equal(stale, false, 'the replaced record has a new rev');
      assert.deepEqual(await ctx.store.getCron('tick'), replaced);
    });

    it('getCron and deleteCron return null for an unknown name', async () => {
      assert.equal(await ctx.store.getCron('nope'), null);
      assert.equal(await ctx.store.deleteCron('nope'), null);
    });

    it('listCrons lists every cron; deleteCron removes one and returns it', async () => {
      const crons = ['b-cron', 'a-cron', 'c-cron'].map((name) => cronRecord(name));
      for (const cron of crons) await ctx.store.upsertCron(cron);
      const listed = await ctx.store.listCrons();
      assert.deepEqual(
        [...listed].sort((x, y) => x.name.localeCompare(y.name)),
        [...crons].sort((x, y) => x.name.localeCompare(y.name)),
      );
      assert.deepEqual(await ctx.store.deleteCron('b-cron'), crons[0]);
      assert.equal(await ctx.store.getCron('b-cron'), null);
      assert.equal(await ctx.store.deleteCron('b-cron'), null);
      assert.deepEqual((await ctx.store.listCrons()).map((c) => c.name).sort(), [
        'a-cron',
        'c-cron',
      ]);
    });

    it('dueCrons returns enabled crons whose next run is due', async () => {
      await ctx.store.upsertCron(cronRecord('due-early', { next_run_ms: T0 + 10_000 }));
      await ctx.store.upsertCron(cronRecord('due-now', { next_run_ms: T0 + 20_000 }));
      await ctx.store.upsertCron(cronRecord('later', { next_run_ms: T0 + 20_001 }));
      await ctx.store.upsertCron(
        cronRecord('disabled', { enabled: false, next_run_ms: T0 + 1_000 }),
      );
      const due = await ctx.store.dueCrons(T0 + 20_000);
      assert.deepEqual(due.map((c) => c.name).sort(), ['due-early', 'due-now']);
      assert.deepEqual(
        due.find((c) => c.name === 'due-now'),
        await ctx.store.getCron('due-now'),
      );
      assert.deepEqual(await ctx.store.dueCrons(T0), []);
    });

    it('a guarded cron update moves the schedule and commits its job together', async () => {
      const { cron } = await ctx.store.upsertCron(cronRecord('tick'));
      const job = newJob({ type: 'cron.tick', options: { queue: 'cron' } }, T0 + MINUTE);
      const next = fired(cron, job.id);
      const ok = await ctx.store.commit({
        cronUpdates: [{ cron: next, expectRev: cron.rev }],
        inserts: [job],
        events: [enqueuedEvent(job, T0 + MINUTE)],
      });
      assert.equal(ok, true);
      assert.deepEqual(await ctx.store.getCron('tick'), next);
      assert.equal((await ctx.store.getJob(job.id))?.state, 'available');
      assert.deepEqual(await ctx.store.dueCrons(T0 + MINUTE), [], 'no longer due');
      assert.deepEqual(
        (await ctx.store.dueCrons(T0 + 2 * MINUTE)).map((c) => c.name),
        ['tick'],
      );
      // Disabling removes it from dueCrons.
      const disabled = { ...next, enabled: false, rev: next.rev + 1 };
      assert.equal(
        await ctx.store.commit({ cronUpdates: [{ cron: disabled, expectRev: next.rev }] }),
        true,
      );
      assert.deepEqual(await ctx.store.dueCrons(T0 + 10 * MINUTE), []);
    });

    it('racing fires of one cron: exactly one commit lands', async () => {
      const { cron } = await ctx.store.upsertCron(cronRecord('tick'));
      const jobs = Array.from({ length: 8 }, () =>
        newJob({ type: 'cron.tick', options: { queue: 'cron' } }, T0 + MINUTE),
      );
      const results = await Promise.all(
        jobs.map((job) =>
          ctx.store.commit({
            cronUpdates: [{ cron: fired(cron, job.id), expectRev: cron.rev }],
            inserts: [job],
            events: [enqueuedEvent(job, T0 + MINUTE)],
          }),
        ),
      );
      assert.equal(results.filter(Boolean).length, 1);
      const winner = jobs[results.indexOf(true)]!;
      assert.equal((await ctx.store.getCron('tick'))?.last_job_id, winner.id);
      const stored = await Promise.all(jobs.map((job) => ctx.store.getJob(job.id)));
      assert.deepEqual(
        stored.filter((job) => job !== null).map((job) => job.id),
        [winner.id],
      );
      assert.deepEqual(
        (await allEvents(ctx.store)).map((e) => e.subject),
        [winner.id],
      );
    });

    it('updating a cron that does not exist fails', async () => {
      const ghost = cronRecord('ghost');
      assert.equal(await ctx.store.commit({ cronUpdates: [{ cron: ghost, expectRev: 0 }] }), false);
      assert.equal(await ctx.store.getCron('ghost'), null);
    });
  });
}
