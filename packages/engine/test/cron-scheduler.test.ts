/**
 * The cron scheduler (features §4) over SQLite on a ManualClock: the tests
 * move time by hand and call engine.cron.tick() directly (the background
 * services are never started), so every firing is deterministic.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { type JobRecord, ManualClock, OjsError } from '@ojs/core';
import { SqliteStore } from '@ojs/store-sqlite';
import { Engine } from '../src/engine.ts';

/** 2026-01-01T12:00:00Z: a whole minute, so `* * * * *` is next due at 12:01:00. */
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

type Obj = Record<string, unknown>;

let store: SqliteStore;
let clock: ManualClock;
let engine: Engine;

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  clock = new ManualClock(T0);
  engine = new Engine({ store, clock, testMode: true });
});

afterEach(async () => {
  await engine.stop();
  await store.close();
});

function cronBody(overrides: Obj = {}): Obj {
  return {
    name: 'nightly.report',
    expression: '* * * * *',
    job_template: { type: 'report.build', args: ['daily', 7], options: { queue: 'crons' } },
    ...overrides,
  };
}

/** Every job enqueued so far (any queue), in enqueue order. */
async function allJobs(e: Engine = engine): Promise<JobRecord[]> {
  const events = await e.listEvents({ types: ['job.enqueued'], limit: 10_000 });
  const jobs: JobRecord[] = [];
  for (const event of events) {
    const job = await e.store.getJob(event.data.job_id as string);
    if (job !== null) jobs.push(job);
  }
  return jobs;
}

async function eventsOf(type: string, e: Engine = engine) {
  return e.listEvents({ types: [type], limit: 10_000 });
}

async function rejectsWith(body: Obj, pattern: RegExp): Promise<OjsError> {
  let caught: unknown;
  try {
    await engine.cron.register(body);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof OjsError, `expected an OjsError for ${JSON.stringify(body)}`);
  assert.equal(caught.code, 'invalid_request');
  assert.equal(caught.status, 400);
  assert.match(caught.message, pattern);
  assert.deepEqual(await store.listCrons(), [], 'nothing is stored');
  return caught;
}

async function fetchOne(queue = 'crons'): Promise<JobRecord | undefined> {
  const [job] = await engine.fetch({ queues: [queue], workerId: 'w1' });
  return job;
}

describe('registration', () => {
  it('registers a new cron (created) with next_run_at computed from the clock', async () => {
    const { created, cron } = await engine.cron.register(cronBody({ description: 'x' }));
    assert.equal(created, true);
    assert.equal(cron.name, 'nightly.report');
    assert.equal(cron.expression, '* * * * *');
    assert.equal(cron.timezone, 'UTC');
    assert.equal(cron.overlap_policy, 'skip', 'skip is the default policy');
    assert.equal(cron.enabled, true);
    assert.equal(cron.description, 'x');
    assert.equal(cron.run_count, 0);
    assert.equal(cron.created_at, iso(T0));
    assert.equal(cron.next_run_at, iso(T0 + MINUTE));
    assert.equal(cron.last_run_at, undefined);
    assert.deepEqual(cron.job_template, {
      type: 'report.build',
      args: ['daily', 7],
      options: { queue: 'crons' },
    });
    assert.deepEqual(await engine.cron.get('nightly.report'), cron);
  });

  it('accepts the spec shape (cron + flat type/args/options)', async () => {
    const { cron } = await engine.cron.register({
      name: 'spec-shape',
      cron: '@hourly',
      type: 'cleanup.run',
      options: { queue: 'maint' },
      timezone: 'America/New_York',
    });
    assert.equal(cron.expression, '@hourly');
    assert.equal(cron.timezone, 'America/New_York');
    assert.deepEqual(cron.job_template, {
      type: 'cleanup.run',
      args: [],
      options: { queue: 'maint' },
    });
    assert.equal(cron.next_run_at, iso(T0 + 60 * MINUTE));
  });

  it('re-registering the same name updates it and keeps created_at, run_count and last run', async () => {
    await engine.cron.register(cronBody({ overlap_policy: 'allow' }));
    clock.advance(MINUTE);
    assert.equal(await engine.cron.tick(), 1);
    const fired = await engine.cron.get('nightly.report');
    assert.equal(fired.run_count, 1);

    clock.advance(10_000);
    const { created, cron } = await engine.cron.register(
      cronBody({ expression: '*/5 * * * *', overlap_policy: 'allow' }),
    );
    assert.equal(created, false);
    assert.equal(cron.expression, '*/5 * * * *');
    assert.equal(cron.created_at, iso(T0));
    assert.equal(cron.updated_at, iso(T0 + MINUTE + 10_000));
    assert.equal(cron.run_count, 1);
    assert.equal(cron.last_run_at, fired.last_run_at);
    assert.equal(cron.last_job_id, fired.last_job_id);
    assert.equal(cron.next_run_at, iso(T0 + 5 * MINUTE));
    assert.equal((await store.listCrons()).length, 1);
  });

  it('get and delete of an unknown cron are 404 not_found', async () => {
    await assert.rejects(engine.cron.get('nope'), { code: 'not_found' });
    await assert.rejects(engine.cron.delete('nope'), { code: 'not_found' });
    await assert.rejects(engine.cron.setEnabled('nope', false), { code: 'not_found' });
  });

  it('delete removes the cron; jobs it already enqueued stay', async () => {
    await engine.cron.register(cronBody());
    clock.advance(MINUTE);
    await engine.cron.tick();
    const deleted = await engine.cron.delete('nightly.report');
    assert.equal(deleted.name, 'nightly.report');
    assert.equal(await store.getCron('nightly.report'), null);
    clock.advance(MINUTE);
    assert.equal(await engine.cron.tick(), 0);
    const jobs = await allJobs();
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0]!.state, 'available');
  });
});

describe('validation', () => {
  const cases: [string, unknown, RegExp][] = [
    ['minute out of range', '61 * * * *', /minute value 61 is out of range 0-59/],
    ['hour out of range', '0 24 * * *', /hour value 24 is out of range 0-23/],
    ['day-of-month 32', '0 0 32 * *', /day-of-month value 32 is out of range 1-31/],
    ['month 13', '0 0 1 13 *', /month value 13 is out of range 1-12/],
    ['step 0', '*/0 * * * *', /step 0/],
    ['too few fields', 'not a valid cron', /found 4 fields, expected 5/],
    ['seven fields', '0 0 0 0 0 0 0', /found 7 fields/],
    ['every field wrong', '99 25 32 13 8', /minute value 99.*hour value 25/],
    ['empty', '', /empty/],
    ['unknown special', '@fortnightly', /unknown special expression '@fortnightly'/],
    ['not a string', 5, /must be a string/],
  ];
  for (const [label, expression, pattern] of cases) {
    it(`rejects an invalid expression: ${label}`, async () => {
      const error = await rejectsWith(cronBody({ expression }), pattern);
      assert.equal(error.details?.field, 'expression');
    });
  }

  const zones: [string, RegExp][] = [
    ['EST', /EST.*abbreviation/],
    ['+05:00', /fixed UTC offset/],
    ['UTC+5', /fixed UTC offset/],
    ['Mars/Olympus_Mons', /Mars\/Olympus_Mons.*not a known IANA zone/],
    ['not a zone', /not an IANA zone name/],
  ];
  for (const [timezone, pattern] of zones) {
    it(`rejects the timezone ${JSON.stringify(timezone)}`, async () => {
      const error = await rejectsWith(cronBody({ timezone }), pattern);
      assert.equal(error.details?.field, 'timezone');
    });
  }

  it('rejects an unknown overlap policy, a bad template, a bad name', async () => {
    await rejectsWith(cronBody({ overlap_policy: 'sometimes' }), /overlap_policy must be one of/);
    await assert.rejects(
      engine.cron.register(cronBody({ job_template: { type: 'Bad Type', args: [] } })),
      (error: unknown) => error instanceof OjsError && /Bad Type/.test(error.message),
    );
    assert.deepEqual(await store.listCrons(), []);
    await rejectsWith(cronBody({ name: '' }), /name is required/);
    await rejectsWith(cronBody({ name: '-leading-dash' }), /name is required/);
  });

  it('rejects names outside [a-z0-9][a-z0-9.-]* (features §4.1)', async () => {
    await rejectsWith(cronBody({ name: 'Nightly_Report' }), /name/);
  });

  it('accepts 6-field, named and special expressions and IANA zones', async () => {
    for (const [i, expression] of [
      '*/30 * * * * *',
      '0 9 * JAN-MAR MON-FRI',
      '@daily',
      '@weekly',
      '@every 1h30m',
    ].entries()) {
      const { cron } = await engine.cron.register(
        cronBody({ name: `ok-${i}`, expression, timezone: 'Asia/Tokyo' }),
      );
      assert.equal(typeof cron.next_run_at, 'string');
      assert.ok(cron.next_run_ms! > T0);
    }
  });
});

describe('firing', () => {
  it('`* * * * *` fires once per minute as the clock advances; two ticks in one minute fire once', async () => {
    await engine.cron.register(cronBody({ overlap_policy: 'allow' }));
    assert.equal(await engine.cron.tick(), 0, 'not due before the first minute');

    clock.advance(MINUTE);
    assert.equal(await engine.cron.tick(), 1);
    assert.equal(await engine.cron.tick(), 0, 'same instant: nothing more');
    clock.advance(30_000);
    assert.equal(await engine.cron.tick(), 0, 'same minute: nothing more');
    assert.equal((await allJobs()).length, 1);

    clock.advance(30_000);
    assert.equal(await engine.cron.tick(), 1);
    clock.advance(MINUTE - 1);
    assert.equal(await engine.cron.tick(), 0);
    clock.advance(1);
    assert.equal(await engine.cron.tick(), 1);
    assert.equal((await allJobs()).length, 3);

    const cron = await engine.cron.get('nightly.report');
    assert.equal(cron.run_count, 3);
    assert.equal(cron.last_run_at, iso(T0 + 3 * MINUTE));
    assert.equal(cron.next_run_at, iso(T0 + 4 * MINUTE));
    assert.equal((await eventsOf('cron.triggered')).length, 3);
  });

  it('the job carries meta.cron_name and the template type, args and queue', async () => {
    await engine.cron.register(
      cronBody({
        job_template: {
          type: 'report.build',
          args: ['daily', 7],
          meta: { owner: 'ops' },
          options: { queue: 'crons', priority: 5 },
        },
      }),
    );
    clock.advance(MINUTE + 250);
    await engine.cron.tick();
    const job = await fetchOne();
    assert.ok(job, 'the cron job is fetchable from the template queue');
    assert.equal(job.type, 'report.build');
    assert.deepEqual(job.args, ['daily', 7]);
    assert.equal(job.queue, 'crons');
    assert.equal(job.priority, 5);
    assert.equal(job.meta.owner, 'ops');
    assert.equal(job.meta.cron_name, 'nightly.report');
    assert.equal(job.meta.cron_triggered_at, iso(T0 + MINUTE));
    const cron = await engine.cron.get('nightly.report');
    assert.equal(cron.last_job_id, job.id);
    const [triggered] = await eventsOf('cron.triggered');
    assert.equal(triggered!.data.cron_name, 'nightly.report');
    assert.equal(triggered!.data.job_id, job.id);
    assert.equal(triggered!.data.run_count, 1);
    assert.equal(triggered!.data.scheduled_time, iso(T0 + MINUTE));
    assert.equal(triggered!.data.actual_time, iso(T0 + MINUTE + 250));
  });

  it('catch-up after downtime: 10 missed minutes fire exactly one job, next_run in the future', async () => {
    await engine.cron.register(cronBody());
    clock.advance(10 * MINUTE + 5_000);
    assert.equal(await engine.cron.tick(), 1);
    assert.equal(await engine.cron.tick(), 0);
    const jobs = await allJobs();
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0]!.meta.cron_triggered_at, iso(T0 + 10 * MINUTE), 'the latest missed one');
    const cron = await engine.cron.get('nightly.report');
    assert.ok(cron.next_run_ms! > clock.now());
    assert.equal(cron.next_run_at, iso(T0 + 11 * MINUTE));
    assert.equal(cron.run_count, 1);
  });

  it('a disabled cron never fires; re-enabling computes next_run_at from now', async () => {
    const { cron } = await engine.cron.register(cronBody({ enabled: false }));
    assert.equal(cron.enabled, false);
    assert.equal(cron.next_run_at, undefined);
    clock.advance(60 * MINUTE);
    assert.equal(await engine.cron.tick(), 0);

    await engine.cron.register(cronBody({ name: 'other', overlap_policy: 'allow' }));
    const disabled = await engine.cron.setEnabled('other', false);
    assert.equal(disabled.next_run_at, undefined);
    clock.advance(60 * MINUTE);
    assert.equal(await engine.cron.tick(), 0);
    assert.deepEqual(await allJobs(), []);

    const enabled = await engine.cron.setEnabled('other', true);
    assert.equal(enabled.next_run_at, iso(clock.now() + MINUTE));
    clock.advance(MINUTE);
    assert.equal(await engine.cron.tick(), 1);
  });
});

describe('overlap policies', () => {
  it('skip: no new job while the previous one is available, then active; cron.skipped is recorded', async () => {
    await engine.cron.register(cronBody({ overlap_policy: 'skip' }));
    clock.advance(MINUTE);
    await engine.cron.tick();
    const [first] = await allJobs();
    assert.equal(first!.state, 'available');

    clock.advance(MINUTE);
    await engine.cron.tick();
    assert.equal((await allJobs()).length, 1, 'skipped while available');

    const claimed = await fetchOne();
    assert.equal(claimed?.id, first!.id);
    clock.advance(MINUTE);
    await engine.cron.tick();
    assert.equal((await allJobs()).length, 1, 'skipped while active');

    const skipped = await eventsOf('cron.skipped');
    assert.equal(skipped.length, 2);
    assert.equal(skipped[1]!.data.reason, 'overlap_skip');
    assert.equal(skipped[1]!.data.cron_name, 'nightly.report');
    assert.equal(skipped[1]!.data.active_job_id, first!.id);
    assert.equal(skipped[1]!.data.scheduled_time, iso(T0 + 3 * MINUTE));
    const cron = await engine.cron.get('nightly.report');
    assert.equal(cron.run_count, 1);
    assert.equal(cron.next_run_at, iso(T0 + 4 * MINUTE), 'next_run_at still advances');

    // Once the previous run is done the next occurrence fires again.
    await engine.ack({ jobId: first!.id, result: 'ok' });
    clock.advance(MINUTE);
    await engine.cron.tick();
    assert.equal((await allJobs()).length, 2);
  });

  it('tick() counts only crons that enqueued a job, not skipped occurrences', async () => {
    await engine.cron.register(cronBody({ overlap_policy: 'skip' }));
    clock.advance(MINUTE);
    assert.equal(await engine.cron.tick(), 1);
    clock.advance(MINUTE);
    assert.equal(await engine.cron.tick(), 0);
  });

  it('allow: a new job every occurrence, runs may overlap', async () => {
    await engine.cron.register(cronBody({ overlap_policy: 'allow' }));
    clock.advance(MINUTE);
    await engine.cron.tick();
    const first = await fetchOne();
    assert.ok(first);
    clock.advance(MINUTE);
    await engine.cron.tick();
    const second = await fetchOne();
    assert.ok(second, 'the second run is fetchable while the first is active');
    assert.notEqual(second.id, first.id);
    assert.equal((await store.getJob(first.id))!.state, 'active');
    assert.deepEqual(await eventsOf('cron.skipped'), []);
  });

  it('cancel_previous: the still-running job is cancelled and a new one enqueued', async () => {
    await engine.cron.register(cronBody({ overlap_policy: 'cancel_previous' }));
    clock.advance(MINUTE);
    await engine.cron.tick();
    const first = await fetchOne();
    assert.ok(first);
    clock.advance(MINUTE);
    await engine.cron.tick();
    const old = (await store.getJob(first.id))!;
    assert.equal(old.state, 'cancelled');
    assert.equal(old.cancelled_at, iso(T0 + 2 * MINUTE));
    const jobs = await allJobs();
    assert.equal(jobs.length, 2);
    assert.equal(jobs[1]!.state, 'available');
    const cancelled = await eventsOf('job.cancelled');
    assert.equal(cancelled.length, 1);
    assert.equal(cancelled[0]!.data.job_id, first.id);

    // An available (never fetched) previous run is cancelled too; a finished one is left alone.
    clock.advance(MINUTE);
    await engine.cron.tick();
    assert.equal((await store.getJob(jobs[1]!.id))!.state, 'cancelled');
    const third = await fetchOne();
    assert.ok(third);
    await engine.ack({ jobId: third.id });
    clock.advance(MINUTE);
    await engine.cron.tick();
    assert.equal((await store.getJob(third.id))!.state, 'completed');
    assert.equal((await allJobs()).length, 4);
  });

  it('enqueue: the next run is enqueued but not claimable until the previous one finishes', async () => {
    await engine.cron.register(cronBody({ overlap_policy: 'enqueue' }));
    clock.advance(MINUTE);
    await engine.cron.tick();
    const first = await fetchOne();
    assert.ok(first);
    clock.advance(MINUTE);
    await engine.cron.tick();
    clock.advance(MINUTE);
    await engine.cron.tick();
    const jobs = await allJobs();
    assert.equal(jobs.length, 3, 'occurrences accumulate');
    assert.deepEqual(
      jobs.map((j) => j.state),
      ['active', 'available', 'available'],
    );
    assert.equal(await fetchOne(), undefined, 'not claimable while the first run is active');

    await engine.ack({ jobId: first.id });
    const second = await fetchOne();
    assert.equal(second?.id, jobs[1]!.id);
    assert.equal(await fetchOne(), undefined, 'still one at a time');
    await engine.nack({
      jobId: second!.id,
      error: { code: 'x', message: 'failed', retryable: false },
    });
    assert.equal((await fetchOne())?.id, jobs[2]!.id);
  });

  it('enqueue: other jobs of the same queue are not held back', async () => {
    await engine.cron.register(cronBody({ overlap_policy: 'enqueue' }));
    clock.advance(MINUTE);
    await engine.cron.tick();
    assert.ok(await fetchOne());
    clock.advance(MINUTE);
    await engine.cron.tick();
    const other = await engine.enqueue({
      type: 'other.job',
      args: [],
      options: { queue: 'crons' },
    });
    assert.equal(other.status, 'created');
    assert.equal((await fetchOne())?.type, 'other.job');
  });
});

describe('template options', () => {
  it("a template's unique policy is enforced when the cron fires", async () => {
    await engine.cron.register(
      cronBody({
        overlap_policy: 'allow',
        job_template: {
          type: 'report.build',
          args: [],
          options: { queue: 'crons', unique: { keys: ['type'], on_conflict: 'reject' } },
        },
      }),
    );
    const holder = await engine.enqueue({
      type: 'report.build',
      args: [],
      options: { queue: 'crons', unique: { keys: ['type'], on_conflict: 'reject' } },
    });
    assert.equal(holder.status, 'created');
    clock.advance(MINUTE);
    await engine.cron.tick();
    const unique = (await allJobs()).filter((j) => j.unique !== undefined);
    assert.equal(unique.length, 1, 'the cron run must not duplicate a unique job');
  });
});

describe('exactly once across processes', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ojs-cron-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('two engines over the same SQLite file ticking together enqueue one job per occurrence', async () => {
    const path = join(dir, 'ojs.db');
    const storeA = new SqliteStore({ path });
    const storeB = new SqliteStore({ path });
    await storeA.init();
    await storeB.init();
    const shared = new ManualClock(T0);
    const a = new Engine({ store: storeA, clock: shared, testMode: true });
    const b = new Engine({ store: storeB, clock: shared, testMode: true });
    try {
      await a.cron.register(cronBody({ overlap_policy: 'allow' }));
      assert.equal((await b.cron.get('nightly.report')).name, 'nightly.report');
      for (let minute = 1; minute <= 3; minute++) {
        shared.advance(MINUTE);
        const fired = await Promise.all([a.cron.tick(), b.cron.tick()]);
        assert.equal(fired[0] + fired[1], 1, `minute ${minute}: exactly one tick fired`);
        assert.equal((await allJobs(a)).length, minute);
        assert.equal((await allJobs(b)).length, minute);
      }
      // A catch-up after downtime is exactly-once too.
      shared.advance(30 * MINUTE);
      await Promise.all([b.cron.tick(), a.cron.tick(), b.cron.tick()]);
      const jobs = await allJobs(a);
      assert.equal(jobs.length, 4);
      assert.equal(new Set(jobs.map((j) => j.meta.cron_triggered_at)).size, 4);
      const cron = await a.cron.get('nightly.report');
      assert.equal(cron.run_count, 4);
      assert.equal((await eventsOf('cron.triggered', b)).length, 4);
    } finally {
      await a.stop();
      await b.stop();
      await storeA.close();
      await storeB.close();
    }
  });
});
