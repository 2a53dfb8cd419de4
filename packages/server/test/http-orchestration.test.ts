/**
 * Orchestration over HTTP (Levels 2-4): workflows, cron, unique jobs, batch
 * enqueue, pause/resume, queue stats, priority, rate limits and queue
 * concurrency. buildApp + inject over an in-memory SQLite store and an
 * Engine on a ManualClock; background services are never started, time
 * moves only when a test moves it, and cron ticks are called directly.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { isUuidv7, ManualClock } from '@ojs/core';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.ts';

const OJS_MEDIA_TYPE = 'application/openjobspec+json';
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const MINUTE = 60_000;

type Obj = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are read dynamically in assertions.
type Json = any;

let store: SqliteStore;
let clock: ManualClock;
let engine: Engine;
let app: FastifyInstance;

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  clock = new ManualClock(T0);
  engine = new Engine({ store, clock, testMode: true, random: () => 0.5 });
  app = await buildApp({ testMode: true }, engine);
});

afterEach(async () => {
  await app.close();
  await engine.stop();
  await store.close();
});

function req(
  method: InjectOptions['method'],
  url: string,
  payload?: unknown,
): Promise<LightMyRequestResponse> {
  const options: InjectOptions = { method, url };
  if (payload !== undefined) {
    options.payload = JSON.stringify(payload);
    options.headers = { 'content-type': 'application/json' };
  }
  return app.inject(options);
}

async function enqueue(body: Obj): Promise<Json> {
  const res = await req('POST', '/ojs/v1/jobs', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().job;
}

async function fetchJobs(queues: string[], extra: Obj = {}): Promise<Json[]> {
  const res = await req('POST', '/ojs/v1/workers/fetch', { queues, worker_id: 'w1', ...extra });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().jobs;
}

async function fetchOne(queue: string): Promise<Json | undefined> {
  return (await fetchJobs([queue]))[0];
}

async function ack(jobId: string, result?: unknown): Promise<void> {
  const res = await req('POST', '/ojs/v1/workers/ack', { job_id: jobId, result });
  assert.equal(res.statusCode, 200, res.body);
}

async function nackFatal(jobId: string, message = 'boom'): Promise<void> {
  const res = await req('POST', '/ojs/v1/workers/nack', {
    job_id: jobId,
    error: { code: 'handler_error', message, retryable: false },
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().state, 'discarded');
}

async function getJob(id: string): Promise<Json> {
  const res = await req('GET', `/ojs/v1/jobs/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().job;
}

/** Asserts an error response (status, code when given, wire headers) and returns `error`. */
function assertError(res: LightMyRequestResponse, status: number | number[], code?: string): Json {
  const statuses = Array.isArray(status) ? status : [status];
  assert.ok(statuses.includes(res.statusCode), `status ${res.statusCode}: ${res.body}`);
  assert.equal(res.headers['content-type'], OJS_MEDIA_TYPE);
  assert.equal(res.headers['ojs-version'], '1.0');
  const { error } = res.json();
  assert.equal(typeof error, 'object', res.body);
  if (code !== undefined) assert.equal(error.code, code, res.body);
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  assert.equal(typeof error.retryable, 'boolean');
  return error;
}

/** Everything a write could leave behind: every event, every queue and its counts. */
async function snapshot(): Promise<string> {
  const events = await engine.listEvents({ limit: 1_000_000 });
  const queues = await store.listQueues();
  const stats = [];
  for (const q of queues) stats.push(await store.queueStats(q.name, clock.now()));
  const crons = await store.listCrons();
  return JSON.stringify({ events, queues, stats, crons });
}

async function jobCount(): Promise<number> {
  return (await engine.listEvents({ types: ['job.enqueued'], limit: 1_000_000 })).length;
}

// ---------------------------------------------------------------------------------------------

describe('workflows', () => {
  const chainBody = {
    type: 'chain',
    name: 'etl',
    steps: [
      { type: 'etl.extract', args: ['src'], options: { queue: 'wf' } },
      { type: 'etl.transform', args: [], options: { queue: 'wf' } },
      { type: 'etl.load', args: ['dst'], options: { queue: 'wf' } },
    ],
  };

  it('POST chain -> 201 + Location, running, steps_total; only step 0 fetchable', async () => {
    const res = await req('POST', '/ojs/v1/workflows', chainBody);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.headers['content-type'], OJS_MEDIA_TYPE);
    const { workflow } = res.json();
    assert.ok(isUuidv7(workflow.id), 'plain UUIDv7 id');
    assert.equal(res.headers.location, `/ojs/v1/workflows/${workflow.id}`);
    assert.equal(workflow.type, 'chain');
    assert.equal(workflow.name, 'etl');
    assert.equal(workflow.state, 'running');
    assert.equal(workflow.steps_total, 3);
    assert.equal(workflow.steps_completed, 0);
    assert.deepEqual(
      workflow.steps.map((s: Json) => s.state),
      ['pending', 'waiting', 'waiting'],
    );

    const [first] = await fetchJobs(['wf'], { count: 10 });
    assert.equal(first.type, 'etl.extract');
    assert.equal(first.workflow_id, workflow.id);
    assert.equal((await fetchJobs(['wf'])).length, 0, 'later steps wait');

    await ack(first.id, { rows: 3 });
    const second = await fetchOne('wf');
    assert.equal(second.type, 'etl.transform');
    assert.deepEqual(second.parent_results, [{ rows: 3 }]);

    const get = await req('GET', `/ojs/v1/workflows/${workflow.id}`);
    assert.equal(get.statusCode, 200);
    assert.equal(get.json().workflow.steps_completed, 1);
    assert.equal(get.json().workflow.state, 'running');

    await ack(second.id, 'x');
    await ack((await fetchOne('wf')).id, 'y');
    const done = (await req('GET', `/ojs/v1/workflows/${workflow.id}`)).json().workflow;
    assert.equal(done.state, 'completed');
    assert.equal(done.steps_completed, 3);
  });

  it('POST group and batch -> 201 with jobs_total; every job enqueued at once', async () => {
    const group = await req('POST', '/ojs/v1/workflows', {
      type: 'group',
      name: 'fan',
      jobs: [
        { type: 'g.a', args: [], options: { queue: 'g' } },
        { type: 'g.b', args: [], options: { queue: 'g' } },
      ],
    });
    assert.equal(group.statusCode, 201, group.body);
    assert.equal(group.json().workflow.type, 'group');
    assert.equal(group.json().workflow.jobs_total, 2);
    assert.equal(group.json().workflow.jobs_completed, 0);
    assert.equal(group.json().workflow.state, 'running');

    const batch = await req('POST', '/ojs/v1/workflows', {
      type: 'batch',
      jobs: [
        { type: 'b.a', args: [1], options: { queue: 'b' } },
        { type: 'b.b', args: [2], options: { queue: 'b' } },
        { type: 'b.c', args: [3], options: { queue: 'b' } },
      ],
      callbacks: {
        on_complete: { type: 'b.done', args: ['all'], options: { queue: 'cb' } },
        on_failure: { type: 'b.failed', args: [], options: { queue: 'cb' } },
      },
    });
    assert.equal(batch.statusCode, 201, batch.body);
    const wf = batch.json().workflow;
    assert.equal(wf.type, 'batch');
    assert.equal(wf.jobs_total, 3);
    assert.equal(wf.state, 'running');

    const jobs = await fetchJobs(['b'], { count: 10 });
    assert.deepEqual(
      jobs.map((j) => j.type),
      ['b.a', 'b.b', 'b.c'],
    );
    await ack(jobs[0].id, 'a');
    await nackFatal(jobs[1].id);
    assert.equal((await fetchJobs(['cb'])).length, 0, 'no callback before all are terminal');
    await ack(jobs[2].id, 'c');
    const callbacks = await fetchJobs(['cb'], { count: 10 });
    assert.deepEqual(callbacks.map((j) => j.type).sort(), ['b.done', 'b.failed']);
    const onComplete = callbacks.find((j) => j.type === 'b.done');
    assert.deepEqual(onComplete.args, ['all']);
    for (const job of callbacks) await ack(job.id);
    const done = (await req('GET', `/ojs/v1/workflows/${wf.id}`)).json().workflow;
    assert.equal(done.state, 'completed');
    assert.equal(done.jobs_completed, 2);
    assert.equal(done.jobs_failed, 1);
  });

  it('GET/DELETE of an unknown workflow -> 404 not_found', async () => {
    const id = '01900000-0000-7000-8000-00000000beef';
    assertError(await req('GET', `/ojs/v1/workflows/${id}`), 404, 'not_found');
    assertError(await req('DELETE', `/ojs/v1/workflows/${id}`), 404, 'not_found');
  });

  it('DELETE cancels the workflow and its enqueued step; a second DELETE is 409', async () => {
    const created = (await req('POST', '/ojs/v1/workflows', chainBody)).json().workflow;
    const [first] = await fetchJobs(['wf']);
    await ack(first.id, 1);
    const next = created.steps[1]; // waiting at creation
    assert.equal(next.job_id, null);
    const running = (await req('GET', `/ojs/v1/workflows/${created.id}`)).json().workflow;
    const enqueuedStep = running.steps[1].job_id;
    assert.equal(typeof enqueuedStep, 'string');

    const res = await req('DELETE', `/ojs/v1/workflows/${created.id}`);
    assert.equal(res.statusCode, 200, res.body);
    const { workflow } = res.json();
    assert.equal(workflow.id, created.id);
    assert.equal(workflow.state, 'cancelled');
    assert.equal(typeof workflow.cancelled_at, 'string');
    assert.deepEqual(
      workflow.steps.map((s: Json) => s.state),
      ['completed', 'cancelled', 'cancelled'],
    );
    assert.equal((await getJob(enqueuedStep)).state, 'cancelled');
    assert.deepEqual(await fetchJobs(['wf']), [], 'the cancelled step is never fetchable');

    assertError(await req('DELETE', `/ojs/v1/workflows/${created.id}`), 409, 'conflict');
  });

  const badBodies: [string, unknown, number, string | undefined, RegExp][] = [
    [
      'unknown type',
      { type: 'dag', steps: [{ type: 'a.b', args: [] }] },
      400,
      'invalid_request',
      /type/,
    ],
    ['chain without steps', { type: 'chain', name: 'x' }, 400, 'invalid_request', /steps/],
    ['chain with empty steps', { type: 'chain', steps: [] }, 400, 'invalid_request', /steps/],
    ['group with empty jobs', { type: 'group', jobs: [] }, 400, 'invalid_request', /jobs/],
    [
      'invalid step job',
      {
        type: 'chain',
        steps: [
          { type: 'ok.one', args: [], options: { queue: 'wf' } },
          { type: 'Not Valid', args: [] },
        ],
      },
      400,
      undefined,
      /steps\[1\]/,
    ],
    [
      'step args not an array',
      {
        type: 'group',
        jobs: [
          { type: 'ok.one', args: [] },
          { type: 'ok.two', args: {} },
        ],
      },
      400,
      undefined,
      /jobs\[1\]/,
    ],
    [
      'batch without callbacks',
      { type: 'batch', jobs: [{ type: 'ok.one', args: [], options: { queue: 'wf' } }] },
      400,
      'invalid_request',
      /callbacks/,
    ],
    [
      'nested six levels deep',
      (function nest(depth: number): Obj {
        const leaf = { type: 'ok.two', args: [] };
        return { type: 'chain', steps: [depth === 1 ? leaf : nest(depth - 1)] };
      })(6),
      400,
      'invalid_request',
      /nest at most 5 levels/,
    ],
    [
      'an invalid job in a nested workflow',
      {
        type: 'chain',
        steps: [
          { type: 'ok.one', args: [] },
          {
            type: 'group',
            jobs: [
              { type: 'ok.two', args: [] },
              { type: 'Bad Type', args: [] },
            ],
          },
        ],
      },
      400,
      'invalid_request',
      /^steps\[1\]\.jobs\[1\]: /,
    ],
    ['array body', [{ type: 'chain' }], 400, 'invalid_payload', /object/],
  ];
  for (const [label, body, status, code, pattern] of badBodies) {
    it(`bad workflow (${label}) -> ${status} with an error body; nothing stored`, async () => {
      const before = await snapshot();
      const res = await req('POST', '/ojs/v1/workflows', body);
      const error = assertError(res, status, code);
      assert.match(error.message, pattern);
      assert.equal(await snapshot(), before, 'no job, no workflow, no event');
      assert.equal(await jobCount(), 0);
    });
  }

  it('a step with an invalid retry policy is a 400 workflow validation error', async () => {
    const before = await snapshot();
    const res = await req('POST', '/ojs/v1/workflows', {
      type: 'chain',
      steps: [{ type: 'a.b', args: [], options: { retry: { max_attempts: -1 } } }],
    });
    assert.equal(await snapshot(), before);
    assertError(res, 400);
  });

  it('batch callbacks are enqueued once even when a dead-lettered job is retried and completes while they run', async () => {
    const res = await req('POST', '/ojs/v1/workflows', {
      type: 'batch',
      jobs: [
        {
          type: 'b.a',
          args: [],
          options: { queue: 'b', retry: { max_attempts: 1, on_exhaustion: 'dead_letter' } },
        },
        { type: 'b.b', args: [], options: { queue: 'b' } },
      ],
      callbacks: { on_complete: { type: 'b.done', args: [], options: { queue: 'cb' } } },
    });
    assert.equal(res.statusCode, 201, res.body);
    const [a, b] = await fetchJobs(['b'], { count: 2 });
    await nackFatal(a.id);
    await ack(b.id);
    assert.equal((await fetchJobs(['cb'])).length, 1, 'on_complete fired');
    const retry = await req('POST', `/ojs/v1/dead-letter/${a.id}/retry`, {});
    assert.equal(retry.statusCode, 200, retry.body);
    const again = await fetchOne('b');
    assert.equal(again.id, a.id);
    await ack(a.id, 'second time');
    assert.deepEqual(await fetchJobs(['cb']), [], 'on_complete must not be enqueued twice');
  });
});

// ---------------------------------------------------------------------------------------------

describe('cron over HTTP', () => {
  const cronBody = (overrides: Obj = {}) => ({
    name: 'minutely',
    expression: '* * * * *',
    timezone: 'UTC',
    job_template: { type: 'cron.job', args: [1, 'a'], options: { queue: 'cron-q' } },
    ...overrides,
  });

  it('POST -> 201 {cron}, again -> 200; GET list and one; the cron fires into its queue', async () => {
    const res = await req('POST', '/ojs/v1/cron', cronBody());
    assert.equal(res.statusCode, 201, res.body);
    const { cron, cron_job } = res.json();
    assert.deepEqual(cron_job, cron);
    assert.equal(cron.name, 'minutely');
    assert.equal(cron.expression, '* * * * *');
    assert.equal(cron.timezone, 'UTC');
    assert.equal(cron.overlap_policy, 'skip');
    assert.equal(cron.enabled, true);
    assert.equal(cron.created_at, new Date(T0).toISOString());
    assert.equal(cron.next_run_at, new Date(T0 + MINUTE).toISOString());
    assert.equal(cron.rev, undefined, 'internal fields stay internal');

    clock.advance(1000);
    const update = await req('POST', '/ojs/v1/cron', cronBody({ expression: '*/2 * * * *' }));
    assert.equal(update.statusCode, 200, update.body);
    assert.equal(update.json().cron.expression, '*/2 * * * *');
    assert.equal(update.json().cron.created_at, new Date(T0).toISOString());

    const list = await req('GET', '/ojs/v1/cron');
    assert.equal(list.statusCode, 200);
    assert.equal(list.json().crons.length, 1);
    assert.equal(list.json().count, 1);
    assert.equal(list.json().crons[0].name, 'minutely');

    const one = await req('GET', '/ojs/v1/cron/minutely');
    assert.equal(one.statusCode, 200);
    assert.equal(one.json().cron.expression, '*/2 * * * *');

    clock.advance(2 * MINUTE);
    await engine.cron.tick();
    const job = await fetchOne('cron-q');
    assert.equal(job.type, 'cron.job');
    assert.deepEqual(job.args, [1, 'a']);
    assert.equal(job.meta.cron_name, 'minutely');
  });

  it('PATCH toggles enabled (disabled -> next_run_at null); unknown names -> 404', async () => {
    await req('POST', '/ojs/v1/cron', cronBody());
    const off = await req('PATCH', '/ojs/v1/cron/minutely', { enabled: false });
    assert.equal(off.statusCode, 200, off.body);
    assert.equal(off.json().cron.enabled, false);
    assert.equal(off.json().cron.next_run_at, null);
    clock.advance(5 * MINUTE);
    assert.equal(await engine.cron.tick(), 0);
    assert.deepEqual(await fetchJobs(['cron-q']), []);

    const on = await req('PATCH', '/ojs/v1/cron/minutely', { enabled: true });
    assert.equal(on.json().cron.enabled, true);
    assert.equal(on.json().cron.next_run_at, new Date(clock.now() + MINUTE).toISOString());

    assertError(
      await req('PATCH', '/ojs/v1/cron/minutely', { enabled: 'no' }),
      400,
      'invalid_request',
    );
    assertError(await req('PATCH', '/ojs/v1/cron/nope', { enabled: false }), 404, 'not_found');
    assertError(await req('GET', '/ojs/v1/cron/nope'), 404, 'not_found');
    assertError(await req('DELETE', '/ojs/v1/cron/nope'), 404, 'not_found');
  });

  it('DELETE -> 200 {deleted, name, cron}; then 404 and gone from the list', async () => {
    await req('POST', '/ojs/v1/cron', cronBody());
    const res = await req('DELETE', '/ojs/v1/cron/minutely');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().deleted, true);
    assert.equal(res.json().name, 'minutely');
    assert.equal(res.json().cron.name, 'minutely');
    assertError(await req('DELETE', '/ojs/v1/cron/minutely'), 404, 'not_found');
    assert.deepEqual((await req('GET', '/ojs/v1/cron')).json().crons, []);
  });

  for (const [label, overrides, pattern] of [
    ['not a valid cron', { expression: 'not a valid cron' }, /found 4 fields/],
    ['seven fields', { expression: '0 0 0 0 0 0 0' }, /found 7 fields/],
    ['out of range', { expression: '99 25 32 13 8' }, /out of range/],
    ['fixed offset zone', { timezone: '+05:00' }, /fixed UTC offset/],
    ['missing name', { name: undefined }, /name/],
    ['bad template', { job_template: { type: 'Bad', args: [] } }, /Bad/],
  ] as [string, Obj, RegExp][]) {
    it(`invalid cron (${label}) -> 400 and nothing stored`, async () => {
      const before = await snapshot();
      const error = assertError(await req('POST', '/ojs/v1/cron', cronBody(overrides)), 400);
      assert.match(error.message, pattern);
      assert.equal(await snapshot(), before);
      assert.deepEqual((await req('GET', '/ojs/v1/cron')).json().crons, []);
    });
  }
});

// ---------------------------------------------------------------------------------------------

describe('unique jobs', () => {
  const uniqueJob = (unique: Obj, args: unknown[] = [{ user: 1 }], extra: Obj = {}) => ({
    type: 'email.send',
    args,
    options: { queue: 'uq', unique, ...extra },
  });

  it('reject: duplicate -> 409 duplicate with the existing id; other args are fine', async () => {
    const first = await enqueue(uniqueJob({ keys: ['type', 'args'], on_conflict: 'reject' }));
    const before = await snapshot();
    const res = await req('POST', '/ojs/v1/jobs', uniqueJob({ keys: ['type', 'args'] }));
    const error = assertError(res, 409, 'duplicate');
    assert.equal(error.retryable, false);
    assert.equal(error.details.existing_job_id, first.id);
    assert.equal(await snapshot(), before, 'nothing stored');
    await enqueue(uniqueJob({ keys: ['type', 'args'] }, [{ user: 2 }]));
  });

  it('ignore: duplicate -> 200 with the existing job', async () => {
    const first = await enqueue(uniqueJob({ on_conflict: 'ignore' }));
    const res = await req('POST', '/ojs/v1/jobs', uniqueJob({ on_conflict: 'ignore' }));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().job.id, first.id);
    assert.equal(res.json().job.state, 'available');
    assert.equal(await jobCount(), 1);
  });

  it('ignore: the 200 body says "deduplicated": true', async () => {
    await enqueue(uniqueJob({ on_conflict: 'ignore' }));
    const res = await req('POST', '/ojs/v1/jobs', uniqueJob({ on_conflict: 'ignore' }));
    assert.equal(res.json().deduplicated, true);
  });

  it('replace: 201 with a new job, the old one cancelled', async () => {
    const first = await enqueue(uniqueJob({ on_conflict: 'replace' }));
    const res = await req('POST', '/ojs/v1/jobs', uniqueJob({ on_conflict: 'replace' }));
    assert.equal(res.statusCode, 201, res.body);
    const second = res.json().job;
    assert.notEqual(second.id, first.id);
    assert.equal(second.state, 'available');
    assert.equal((await getJob(first.id)).state, 'cancelled');
    const fetched = await fetchJobs(['uq'], { count: 5 });
    assert.deepEqual(
      fetched.map((j) => j.id),
      [second.id],
    );
  });

  it('states filter: only listed states conflict', async () => {
    const onlyAvailable = { keys: ['type'], states: ['available'] };
    const first = await enqueue(uniqueJob(onlyAvailable));
    assertError(await req('POST', '/ojs/v1/jobs', uniqueJob(onlyAvailable)), 409, 'duplicate');
    const claimed = await fetchOne('uq');
    assert.equal(claimed.id, first.id);
    // Active is not in states: no conflict.
    const second = await enqueue(uniqueJob(onlyAvailable));
    assert.equal(second.state, 'available');
  });

  it('default states: an active job blocks, a completed one does not; with completed listed it does', async () => {
    const first = await enqueue(uniqueJob({ keys: ['type'] }));
    await fetchOne('uq');
    assertError(await req('POST', '/ojs/v1/jobs', uniqueJob({ keys: ['type'] })), 409, 'duplicate');
    await ack(first.id);
    await enqueue(uniqueJob({ keys: ['type'] }));

    const withCompleted = { keys: ['type', 'queue'], states: ['completed', 'available', 'active'] };
    const job = await enqueue({
      ...uniqueJob(withCompleted),
      options: { queue: 'uq2', unique: withCompleted },
    });
    await fetchOne('uq2');
    await ack(job.id);
    const dup = await req('POST', '/ojs/v1/jobs', {
      ...uniqueJob(withCompleted),
      options: { queue: 'uq2', unique: withCompleted },
    });
    assertError(dup, 409, 'duplicate');
  });

  it('period: the lock expires after the period although the first job is still available', async () => {
    const policy = { keys: ['type'], period: 'PT2S' };
    const first = await enqueue(uniqueJob(policy));
    clock.advance(1999);
    assertError(await req('POST', '/ojs/v1/jobs', uniqueJob(policy)), 409, 'duplicate');
    clock.advance(1001);
    const second = await enqueue(uniqueJob(policy));
    assert.notEqual(second.id, first.id);
    assert.equal((await getJob(first.id)).state, 'available');
  });

  for (const [label, unique] of [
    ['unknown key', { keys: ['type', 'bogus'] }],
    ['unknown state', { states: ['available', 'sleeping'] }],
    ['malformed period', { period: 'two seconds' }],
    ['unknown on_conflict', { on_conflict: 'merge' }],
  ] as [string, Obj][]) {
    it(`invalid unique policy (${label}) -> 400 invalid_request, nothing stored`, async () => {
      const before = await snapshot();
      const error = assertError(
        await req('POST', '/ojs/v1/jobs', uniqueJob(unique)),
        400,
        'invalid_request',
      );
      assert.match(error.message, /options\.unique/);
      assert.equal(await snapshot(), before);
    });
  }

  it('keys containing meta without meta_keys -> 400 (features §2.3, scenario 9)', async () => {
    const before = await snapshot();
    assertError(
      await req('POST', '/ojs/v1/jobs', uniqueJob({ keys: ['type', 'meta'] })),
      400,
      'invalid_request',
    );
    assert.equal(await snapshot(), before);
  });

  it('args_keys naming a key absent from args -> 400 (features §2.3)', async () => {
    const before = await snapshot();
    const res = await req(
      'POST',
      '/ojs/v1/jobs',
      uniqueJob({ keys: ['type', 'args'], args_keys: ['missing'] }, [{ user: 1 }]),
    );
    assertError(res, 400, 'invalid_request');
    assert.equal(await snapshot(), before);
  });
});

// ---------------------------------------------------------------------------------------------

describe('batch enqueue', () => {
  it('1000 jobs in one request -> 201 with 1000 jobs in order, all stored', async () => {
    const jobs = Array.from({ length: 1000 }, (_, i) => ({
      type: 'bulk.item',
      args: [i],
      options: { queue: 'bulk' },
    }));
    const res = await req('POST', '/ojs/v1/jobs/batch', { jobs });
    assert.equal(res.statusCode, 201, res.body.slice(0, 500));
    const body = res.json();
    assert.equal(body.jobs.length, 1000);
    assert.deepEqual(
      body.jobs.map((j: Json) => j.args[0]),
      jobs.map((_, i) => i),
    );
    assert.ok(body.jobs.every((j: Json) => isUuidv7(j.id) && j.state === 'available'));
    assert.equal(new Set(body.jobs.map((j: Json) => j.id)).size, 1000);
    const stats = (await req('GET', '/ojs/v1/queues/bulk/stats')).json();
    assert.equal(stats.queue.available, 1000);
    const firstThree = await fetchJobs(['bulk'], { count: 3 });
    assert.deepEqual(
      firstThree.map((j) => j.args[0]),
      [0, 1, 2],
      'FIFO in array order',
    );
  });

  it('one invalid job -> 400/422 naming it, and nothing is stored', async () => {
    const jobs: Obj[] = Array.from({ length: 10 }, (_, i) => ({ type: 'bulk.item', args: [i] }));
    jobs[7] = { args: [7] };
    const before = await snapshot();
    const error = assertError(await req('POST', '/ojs/v1/jobs/batch', { jobs }), [400, 422]);
    assert.match(error.message, /jobs\[7\]/);
    assert.equal(await snapshot(), before);
    assert.equal(await jobCount(), 0);
  });

  it('more than the maximum batch size -> 400, nothing stored', async () => {
    const jobs = Array.from({ length: engine.maxBatchSize + 1 }, () => ({ type: 'a.b', args: [] }));
    const before = await snapshot();
    const error = assertError(
      await req('POST', '/ojs/v1/jobs/batch', { jobs }),
      400,
      'invalid_request',
    );
    assert.match(error.message, new RegExp(`at most ${engine.maxBatchSize}`));
    assert.equal(await snapshot(), before);
  });

  it('an empty or missing jobs array -> 400', async () => {
    assertError(await req('POST', '/ojs/v1/jobs/batch', { jobs: [] }), 400);
    assertError(await req('POST', '/ojs/v1/jobs/batch', {}), 400);
  });
});

// ---------------------------------------------------------------------------------------------

describe('queues: pause/resume and stats', () => {
  it('a paused queue still accepts jobs (201) but fetch returns nothing until resumed', async () => {
    const pause = await req('POST', '/ojs/v1/queues/never-seen/pause', {});
    assert.equal(pause.statusCode, 200, pause.body);
    assert.deepEqual(pause.json().queue, { name: 'never-seen', paused: true, status: 'paused' });
    const job = await enqueue({ type: 'p.job', args: [], options: { queue: 'never-seen' } });
    assert.equal(job.state, 'available');
    assert.deepEqual(await fetchJobs(['never-seen']), []);
    const stats = (await req('GET', '/ojs/v1/queues/never-seen/stats')).json();
    assert.equal(stats.queue.paused, true);
    assert.equal(stats.queue.available, 1);

    const resume = await req('POST', '/ojs/v1/queues/never-seen/resume');
    assert.equal(resume.statusCode, 200, resume.body);
    assert.equal(resume.json().queue.paused, false);
    assert.equal((await fetchOne('never-seen')).id, job.id);
  });

  it('a paused queue is skipped while another listed queue is served', async () => {
    await req('POST', '/ojs/v1/queues/first/pause', {});
    await enqueue({ type: 'p.one', args: [], options: { queue: 'first' } });
    const other = await enqueue({ type: 'p.two', args: [], options: { queue: 'second' } });
    const [job] = await fetchJobs(['first', 'second']);
    assert.equal(job.id, other.id);
  });

  it('stats count jobs per state exactly', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++)
      ids.push((await enqueue({ type: 's.job', args: [i], options: { queue: 'st' } })).id);
    const [a] = await fetchJobs(['st']);
    await ack(a.id);
    const [b] = await fetchJobs(['st']);
    await nackFatal(b.id);
    await fetchJobs(['st']);
    await req('DELETE', `/ojs/v1/jobs/${ids[4]}`);
    const res = await req('GET', '/ojs/v1/queues/st/stats');
    assert.equal(res.statusCode, 200);
    const { queue } = res.json();
    assert.equal(queue.name, 'st');
    assert.equal(queue.available, 1);
    assert.equal(queue.active, 1);
    assert.equal(queue.completed, 1);
    assert.equal(queue.discarded, 1);
    assert.equal(queue.cancelled, 1);
    const empty = (await req('GET', '/ojs/v1/queues/nothing-here/stats')).json();
    assert.equal(empty.queue.available, 0);
  });
});

// ---------------------------------------------------------------------------------------------

describe('priority, rate limits, concurrency', () => {
  it('higher priority first, FIFO within equal priority', async () => {
    const spec: [string, number][] = [
      ['n1', 0],
      ['h1', 10],
      ['l1', -10],
      ['h2', 10],
      ['n2', 0],
      ['l2', -10],
      ['h3', 10],
    ];
    for (const [name, priority] of spec) {
      await enqueue({ type: 'pri.job', args: [name], options: { queue: 'pri', priority } });
    }
    const order: string[] = [];
    for (let i = 0; i < spec.length; i++) order.push((await fetchOne('pri')).args[0]);
    assert.deepEqual(order, ['h1', 'h2', 'h3', 'n1', 'n2', 'l1', 'l2']);
    assert.deepEqual(await fetchJobs(['pri']), []);
  });

  it('rate_limit.max_per_second 1: second fetch empty, allowed again after the window', async () => {
    for (let i = 0; i < 3; i++) {
      await enqueue({
        type: 'rl.job',
        args: [i],
        options: { queue: 'rl', rate_limit: { max_per_second: 1 } },
      });
    }
    assert.equal((await fetchOne('rl')).args[0], 0);
    assert.deepEqual(await fetchJobs(['rl']), []);
    clock.advance(999);
    assert.deepEqual(await fetchJobs(['rl']), []);
    clock.advance(501);
    assert.equal((await fetchOne('rl')).args[0], 1);
    assert.deepEqual(await fetchJobs(['rl']), []);
    clock.advance(1000);
    assert.equal((await fetchOne('rl')).args[0], 2);
  });

  it('a rate-limited job is skipped and an unlimited one of the same queue is served', async () => {
    await enqueue({
      type: 'rl.a',
      args: [],
      options: { queue: 'mix', rate_limit: { max_per_second: 1 } },
    });
    await enqueue({
      type: 'rl.a',
      args: [],
      options: { queue: 'mix', rate_limit: { max_per_second: 1 } },
    });
    await enqueue({ type: 'free.b', args: [], options: { queue: 'mix' } });
    assert.equal((await fetchOne('mix')).type, 'rl.a');
    assert.equal((await fetchOne('mix')).type, 'free.b');
    assert.deepEqual(await fetchJobs(['mix']), []);
  });

  it('queue concurrency 1 (setQueueConfig): second fetch empty until the first is acked', async () => {
    await engine.store.setQueueConfig('conc', { concurrency: 1 }, clock.now());
    const first = await enqueue({ type: 'c.job', args: [1], options: { queue: 'conc' } });
    const second = await enqueue({ type: 'c.job', args: [2], options: { queue: 'conc' } });
    const fetched = await fetchJobs(['conc'], { count: 2 });
    assert.deepEqual(
      fetched.map((j) => j.id),
      [first.id],
    );
    assert.deepEqual(await fetchJobs(['conc']), []);
    await ack(first.id);
    assert.equal((await fetchOne('conc')).id, second.id);
    assert.deepEqual(await fetchJobs(['conc']), []);
  });
});
