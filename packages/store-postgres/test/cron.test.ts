/**
 * Cron exactly-once across processes: several stores (own pools, one
 * schema) run the scheduler step at the same simulated instants; firing is
 * a guarded cron update committed together with the job it enqueues, so
 * each (cron, fire time) produces exactly one job whatever the race.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import {
  type CronRecord,
  dueOccurrence,
  jobEvent,
  parseCronSchedule,
  parseEnqueueRequest,
  toIso,
} from '@ojs/core';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, testSchema, unavailable } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const MINUTE = 60_000;

function cronRecord(name: string, expression: string): CronRecord {
  return {
    name,
    expression,
    timezone: 'UTC',
    overlap_policy: 'allow',
    enabled: true,
    job_template: { type: 'cron.tick', args: [] },
    created_at: toIso(T0),
    updated_at: toIso(T0),
    next_run_at: toIso(T0 + MINUTE),
    next_run_ms: T0 + MINUTE,
    run_count: 0,
    rev: 0,
  };
}

/** One scheduler step of one process at `now`: fire every due cron once. Returns fires won. */
async function schedulerStep(store: PostgresStore, now: number, process: string): Promise<number> {
  let won = 0;
  for (const cron of await store.dueCrons(now)) {
    const schedule = parseCronSchedule(cron.expression, cron.timezone);
    const occurrence = dueOccurrence(schedule, cron.next_run_ms!, now);
    if (occurrence === null) continue;
    const job = parseEnqueueRequest(
      { ...cron.job_template, meta: { cron: cron.name, fire_at: occurrence.fireAt, process } },
      now,
      { visibilityTimeoutMs: 30_000 },
    );
    const next: CronRecord = {
      ...cron,
      last_run_at: toIso(occurrence.fireAt),
      last_job_id: job.id,
      next_run_ms: occurrence.next ?? undefined,
      next_run_at: occurrence.next === null ? undefined : toIso(occurrence.next),
      run_count: cron.run_count + 1,
      rev: cron.rev + 1,
    };
    const ok = await store.commit({
      cronUpdates: [{ cron: next, expectRev: cron.rev }],
      inserts: [job],
      events: [jobEvent('job.enqueued', job, { cron: cron.name }, now)],
    });
    if (ok) won++;
  }
  return won;
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL cron exactly-once', { skip: reason }, () => {});
} else {
  describe('cron firing across processes', () => {
    const schema = testSchema('cron');
    const stores: PostgresStore[] = [];

    before(async () => {
      for (let i = 0; i < 3; i++) stores.push(await openStore(schema, { pool: { max: 6 } }));
    });
    after(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await dropSchema(schema);
    });

    it('two processes racing on one due cron: exactly one commit lands', async () => {
      await stores[0]!.reset();
      await stores[0]!.upsertCron(cronRecord('race', '* * * * *'));
      const now = T0 + MINUTE;
      const [a, b] = await Promise.all([
        schedulerStep(stores[0]!, now, 'p1'),
        schedulerStep(stores[1]!, now, 'p2'),
      ]);
      assert.equal(a + b, 1, 'exactly one fire');
      const jobs = await stores[2]!.claimJobs({ queues: ['default'], count: 10, now });
      assert.equal(jobs.length, 1);
      const cron = await stores[2]!.getCron('race');
      assert.equal(cron?.run_count, 1);
      assert.equal(cron?.last_job_id, jobs[0]!.id);
      assert.equal(cron?.next_run_ms, T0 + 2 * MINUTE);
    });

    it('three processes x four schedulers over 30 minutes: once per cron and fire time', async () => {
      await stores[0]!.reset();
      const crons = ['every-minute', 'every-2-minutes', 'every-5-minutes'];
      await stores[0]!.upsertCron(cronRecord(crons[0]!, '* * * * *'));
      await stores[1]!.upsertCron({
        ...cronRecord(crons[1]!, '*/2 * * * *'),
        next_run_ms: T0 + 2 * MINUTE,
        next_run_at: toIso(T0 + 2 * MINUTE),
      });
      await stores[2]!.upsertCron({
        ...cronRecord(crons[2]!, '*/5 * * * *'),
        next_run_ms: T0 + 5 * MINUTE,
        next_run_at: toIso(T0 + 5 * MINUTE),
      });
      let fires = 0;
      for (let minute = 1; minute <= 30; minute++) {
        // Every scheduler wakes a few ms after the minute, at slightly different instants.
        const steps = stores.flatMap((store, p) =>
          [0, 1, 2, 3].map((s) =>
            schedulerStep(store, T0 + minute * MINUTE + ((p * 4 + s) % 7) * 13, `p${p}s${s}`),
          ),
        );
        fires += (await Promise.all(steps)).reduce((sum, n) => sum + n, 0);
      }
      assert.equal(fires, 30 + 15 + 6);
      const jobs = await stores[0]!.claimJobs({ queues: ['default'], count: 1000, now: T0 });
      assert.equal(jobs.length, fires, 'one job per fire, no orphan inserts');
      const seen = new Set<string>();
      for (const job of jobs) {
        const key = `${job.meta.cron}@${job.meta.fire_at}`;
        assert.ok(!seen.has(key), `fired twice: ${key}`);
        seen.add(key);
      }
      for (const [name, every, count] of [
        [crons[0]!, 1, 30],
        [crons[1]!, 2, 15],
        [crons[2]!, 5, 6],
      ] as const) {
        const cron = await stores[1]!.getCron(name);
        assert.equal(cron?.run_count, count, `${name} run_count`);
        for (let m = every; m <= 30; m += every) {
          assert.ok(seen.has(`${name}@${T0 + m * MINUTE}`), `${name} fired at minute ${m}`);
        }
      }
    });
  });
}
