/**
 * Level 0 and Level 1 behaviour through the HTTP binding: PUSH, INFO,
 * FETCH, ACK, FAIL with retry timing, visibility and execution timeouts,
 * CANCEL, ACTIVATE, heartbeat, dead letter and event polling. Time only
 * moves when a test advances the ManualClock; background services are
 * stood in for by calling engine.expireLeases() / promoteDueJobs().
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  assertError,
  assertWireHeaders,
  type Ctx,
  type Json,
  OJS_MEDIA_TYPE,
  setup,
  snapshot,
  T0,
} from './helpers.ts';

const iso = (ms: number) => new Date(ms).toISOString();
const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let ctx: Ctx;

beforeEach(async () => {
  ctx = await setup();
});

afterEach(async () => {
  await ctx.close();
});

async function getJob(id: string): Promise<Json> {
  const res = await ctx.req('GET', `/ojs/v1/jobs/${id}`);
  assert.equal(res.statusCode, 200, res.body);
  assertWireHeaders(res);
  return res.json().job;
}

async function ack(body: Record<string, unknown>): Promise<Json> {
  const res = await ctx.req('POST', '/ojs/v1/workers/ack', body);
  assert.equal(res.statusCode, 200, res.body);
  assertWireHeaders(res);
  return res.json();
}

async function nack(body: Record<string, unknown>): Promise<Json> {
  const res = await ctx.req('POST', '/ojs/v1/workers/nack', body);
  assert.equal(res.statusCode, 200, res.body);
  assertWireHeaders(res);
  return res.json();
}

async function heartbeat(body: Record<string, unknown>): Promise<Json> {
  const res = await ctx.req('POST', '/ojs/v1/workers/heartbeat', body);
  assert.equal(res.statusCode, 200, res.body);
  assertWireHeaders(res);
  return res.json();
}

const boom = { code: 'handler_error', message: 'boom' };

describe('test fixture', () => {
  it('the store snapshot sees writes (so "unchanged" assertions mean something)', async () => {
    const s0 = await snapshot(ctx.engine);
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    const s1 = await snapshot(ctx.engine);
    assert.notEqual(s1, s0);
    await ctx.fetch({ queues: ['default'] });
    const s2 = await snapshot(ctx.engine);
    assert.notEqual(s2, s1);
    await ack({ job_id: job.id });
    assert.notEqual(await snapshot(ctx.engine), s2);
  });
});

describe('Level 0: PUSH and INFO', () => {
  it('201 with the job, Location, exact headers, and the fresh-job fields of the suite', async () => {
    const res = await ctx.req('POST', '/ojs/v1/jobs', {
      type: 'email.send',
      args: ['a@example.com', { n: 1, nested: [true, null] }],
      meta: { trace_id: 't-1', list: [1, 2] },
      x_custom_field: 'kept',
    });
    assert.equal(res.statusCode, 201, res.body);
    assertWireHeaders(res);
    const { job } = res.json();
    assert.equal(res.headers.location, `/ojs/v1/jobs/${job.id}`);
    assert.match(job.id, UUIDV7);
    assert.equal(job.type, 'email.send');
    assert.equal(job.queue, 'default');
    assert.equal(job.state, 'available');
    assert.equal(job.attempt, 0);
    assert.equal(job.priority, 0);
    assert.equal(job.max_attempts, 3);
    assert.equal(job.specversion, '1.0');
    assert.deepEqual(job.args, ['a@example.com', { n: 1, nested: [true, null] }]);
    assert.deepEqual(job.meta, { trace_id: 't-1', list: [1, 2] });
    assert.equal(job.x_custom_field, 'kept');
    assert.equal(job.created_at, iso(T0));
    assert.equal(job.enqueued_at, iso(T0));
    for (const absent of ['started_at', 'completed_at', 'error', 'result', 'errors']) {
      assert.equal(job[absent], undefined, absent);
    }
    for (const internal of ['rev', 'seq', 'extensions', 'lease_until', 'run_at']) {
      assert.equal(job[internal], undefined, internal);
    }
  });

  it('accepts the OJS media type and application/json with a charset', async () => {
    for (const contentType of [
      'application/openjobspec+json',
      'application/json; charset=utf-8',
      'Application/JSON',
    ]) {
      const res = await ctx.req('POST', '/ojs/v1/jobs', JSON.stringify({ type: 'a.b', args: [] }), {
        'content-type': contentType,
      });
      assert.equal(res.statusCode, 201, `${contentType}: ${res.body}`);
      assert.equal(res.headers['content-type'], OJS_MEDIA_TYPE);
    }
  });

  it('a client UUIDv7 id is kept', async () => {
    const id = '01900000-0000-7000-8000-000000000001';
    const job = await ctx.enqueue({ id, type: 'a.b', args: [] });
    assert.equal(job.id, id);
    assert.equal((await getJob(id)).id, id);
  });

  it('INFO is read-only: repeated reads are identical and change nothing', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [1] });
    const before = await snapshot(ctx.engine);
    const a = await ctx.req('GET', `/ojs/v1/jobs/${job.id}`);
    const b = await ctx.req('GET', `/ojs/v1/jobs/${job.id}`);
    assert.equal(a.body, b.body);
    assert.deepEqual(a.json().job, job);
    assert.equal(await snapshot(ctx.engine), before);
  });

  it('options are reflected on the job (queue, priority, tags, timeout_ms, metadata)', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: {
        queue: 'email',
        priority: 10,
        tags: ['x'],
        timeout_ms: 5000,
        metadata: { test_directive: 'quiet' },
        expires_at: '2099-12-31T23:59:59Z',
      },
    });
    assert.equal(job.queue, 'email');
    assert.equal(job.priority, 10);
    assert.deepEqual(job.tags, ['x']);
    assert.equal(job.timeout_ms, 5000);
    assert.deepEqual(job.meta, { test_directive: 'quiet' });
    assert.equal(job.expires_at, '2099-12-31T23:59:59Z');
  });

  it('GET /ojs/v1/queues lists default and every queue used', async () => {
    let res = await ctx.req('GET', '/ojs/v1/queues');
    assert.equal(res.statusCode, 200);
    assertWireHeaders(res);
    assert.deepEqual(
      res.json().queues.map((q: Json) => q.name),
      ['default'],
    );
    await ctx.enqueue({ type: 'a.b', args: [], options: { queue: 'email' } });
    res = await ctx.req('GET', '/ojs/v1/queues');
    const queues = res.json().queues;
    assert.deepEqual(queues.map((q: Json) => q.name).sort(), ['default', 'email']);
    for (const q of queues) assert.equal(q.status, 'active');
    assert.equal(res.json().pagination.total, 2);
  });

  it('GET /ojs/v1/health answers ok with the OJS headers', async () => {
    const res = await ctx.req('GET', '/ojs/v1/health');
    assert.equal(res.statusCode, 200);
    assertWireHeaders(res);
    assert.equal(res.json().status, 'ok');
    assert.equal(res.json().backend.status, 'ok');
  });
});

describe('Level 0: FETCH', () => {
  it('an empty queue answers 200 {"jobs": []}', async () => {
    const res = await ctx.req('POST', '/ojs/v1/workers/fetch', { queues: ['default'] });
    assert.equal(res.statusCode, 200);
    assertWireHeaders(res);
    assert.deepEqual(res.json(), { jobs: [] });
  });

  it('claims one job by default: active, attempt 1, started_at, worker_id, and `job` = jobs[0]', async () => {
    const a = await ctx.enqueue({ type: 'a.b', args: [1] });
    await ctx.enqueue({ type: 'a.b', args: [2] });
    ctx.clock.advance(250);
    const res = await ctx.req('POST', '/ojs/v1/workers/fetch', {
      queues: ['default'],
      worker_id: 'w1',
    });
    const body = res.json();
    assert.equal(body.jobs.length, 1);
    assert.deepEqual(body.job, body.jobs[0]);
    const job = body.jobs[0];
    assert.equal(job.id, a.id, 'FIFO');
    assert.equal(job.state, 'active');
    assert.equal(job.attempt, 1);
    assert.equal(job.started_at, iso(T0 + 250));
    assert.equal(job.worker_id, 'w1');
    const info = await getJob(a.id);
    assert.equal(info.state, 'active');
    assert.equal(info.attempt, 1);
  });

  it('a job is never handed out twice', async () => {
    await ctx.enqueue({ type: 'a.b', args: [] });
    const first = await ctx.fetch({ queues: ['default'] });
    const second = await ctx.fetch({ queues: ['default'] });
    assert.equal(first.length, 1);
    assert.deepEqual(second, []);
  });

  it('FIFO within a queue, priority descending first, queues in the given order', async () => {
    const low = await ctx.enqueue({ type: 'a.b', args: ['low'], options: { priority: -10 } });
    const n1 = await ctx.enqueue({ type: 'a.b', args: ['n1'] });
    const high = await ctx.enqueue({ type: 'a.b', args: ['high'], options: { priority: 10 } });
    const n2 = await ctx.enqueue({ type: 'a.b', args: ['n2'] });
    const urgent = await ctx.enqueue({ type: 'a.b', args: ['u'], options: { queue: 'urgent' } });
    const order: string[] = [];
    for (let i = 0; i < 5; i++) {
      const [job] = await ctx.fetch({ queues: ['urgent', 'default'] });
      order.push(job.id);
    }
    assert.deepEqual(order, [urgent.id, high.id, n1.id, n2.id, low.id]);
  });

  it('count claims several jobs at once, in order', async () => {
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await ctx.enqueue({ type: 'a.b', args: [i] })).id);
    const jobs = await ctx.fetch({ queues: ['default'], count: 3 });
    assert.deepEqual(
      jobs.map((j: Json) => j.id),
      ids.slice(0, 3),
    );
  });

  it('other queues are not touched', async () => {
    await ctx.enqueue({ type: 'a.b', args: [], options: { queue: 'other' } });
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
  });

  it('a pending job is not fetchable until ACTIVATE', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [], options: { pending: true } });
    assert.equal(job.state, 'pending');
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
    ctx.clock.advance(10);
    const res = await ctx.req('POST', `/ojs/v1/jobs/${job.id}/activate`, {});
    assert.equal(res.statusCode, 200);
    assertWireHeaders(res);
    const activated = res.json().job;
    assert.equal(activated.state, 'available');
    assert.equal(activated.previous_state, 'pending');
    assert.equal(activated.activated_at, iso(T0 + 10));
    const [fetched] = await ctx.fetch({ queues: ['default'] });
    assert.equal(fetched.id, job.id);
  });

  it('ACTIVATE also works without a body', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [], options: { pending: true } });
    const res = await ctx.req('POST', `/ojs/v1/jobs/${job.id}/activate`);
    assert.equal(res.statusCode, 200, res.body);
  });
});

describe('Level 0: ACK', () => {
  it('completes the job: flat response, result stored, completed_at, error cleared', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { retry: { initial_interval: 'PT1S', jitter: false } },
    });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    await nack({ job_id: job.id, worker_id: 'w1', error: boom });
    ctx.clock.advance(1000);
    await ctx.engine.promoteDueJobs();
    const [again] = await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    assert.equal(again.error.message, 'boom', 'precondition: the last error is visible');

    ctx.clock.advance(500);
    const body = await ack({ job_id: job.id, worker_id: 'w1', result: { sent: 3 } });
    assert.equal(body.acknowledged, true);
    assert.equal(body.id, job.id);
    assert.equal(body.job_id, job.id);
    assert.equal(body.state, 'completed');
    assert.equal(body.completed_at, iso(T0 + 1500));
    assert.equal(body.job.state, 'completed');

    const info = await getJob(job.id);
    assert.equal(info.state, 'completed');
    assert.deepEqual(info.result, { sent: 3 });
    assert.equal(info.completed_at, iso(T0 + 1500));
    assert.equal(info.error, undefined, 'ACK clears error');
    assert.equal(info.errors.length, 1, 'history is kept');
  });

  it('the per-job form POST /ojs/v1/jobs/:id/ack works too', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'] });
    const res = await ctx.req('POST', `/ojs/v1/jobs/${job.id}/ack`, { result: 'done' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().state, 'completed');
    assert.equal((await getJob(job.id)).result, 'done');
  });

  it('a completed job is never fetched again', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'] });
    await ack({ job_id: job.id });
    ctx.clock.advance(3_600_000);
    await ctx.engine.expireLeases();
    await ctx.engine.promoteDueJobs();
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
  });
});

describe('Level 0/1: FAIL and retry timing', () => {
  it('retries on the backoff schedule, then discards on exhaustion', async () => {
    const job = await ctx.enqueue({
      type: 'retry.test.exponential',
      args: [],
      options: { retry: { max_attempts: 3, initial_interval: 'PT1S', jitter: false } },
    });

    // attempt 1 fails -> retryable, 1000 ms
    const [a1] = await ctx.fetch({ queues: ['default'] });
    assert.equal(a1.attempt, 1);
    const r1 = await nack({ job_id: job.id, error: boom });
    assert.equal(r1.id, job.id);
    assert.equal(r1.state, 'retryable');
    assert.equal(r1.attempt, 1);
    assert.equal(r1.max_attempts, 3);
    assert.equal(r1.retry_delay_ms, 1000);
    assert.equal(r1.next_attempt_at, iso(T0 + 1000));
    assert.equal(r1.discarded_at, undefined);
    assert.equal((await getJob(job.id)).completed_at, undefined);

    ctx.clock.advance(999);
    await ctx.engine.promoteDueJobs();
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), [], 'not before the backoff');
    ctx.clock.advance(1);
    await ctx.engine.promoteDueJobs();
    const [a2] = await ctx.fetch({ queues: ['default'] });
    assert.equal(a2.id, job.id);
    assert.equal(a2.attempt, 2);
    assert.equal(a2.retry_delay_ms, 1000, 'the backoff that preceded this attempt');

    // attempt 2 fails -> 2000 ms
    const r2 = await nack({ job_id: job.id, error: { ...boom, message: 'boom 2' } });
    assert.equal(r2.state, 'retryable');
    assert.equal(r2.retry_delay_ms, 2000);
    ctx.clock.advance(1999);
    await ctx.engine.promoteDueJobs();
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
    ctx.clock.advance(1);
    await ctx.engine.promoteDueJobs();
    const [a3] = await ctx.fetch({ queues: ['default'] });
    assert.equal(a3.attempt, 3);
    assert.equal(a3.retry_delay_ms, 2000);

    // attempt 3 fails -> discarded
    const r3 = await nack({ job_id: job.id, error: { ...boom, message: 'boom 3' } });
    const now = iso(T0 + 3000);
    assert.equal(r3.state, 'discarded');
    assert.equal(r3.attempt, 3);
    assert.equal(r3.discarded_at, now);
    assert.equal(r3.completed_at, now);
    assert.equal(r3.next_attempt_at, undefined);

    const info = await getJob(job.id);
    assert.equal(info.state, 'discarded');
    assert.equal(info.completed_at, now);
    assert.equal(info.error.message, 'boom 3');
    assert.deepEqual(
      info.errors.map((e: Json) => [e.attempt, e.code, e.message]),
      [
        [1, 'handler_error', 'boom'],
        [2, 'handler_error', 'boom 2'],
        [3, 'handler_error', 'boom 3'],
      ],
    );
    assert.equal(info.errors[0].occurred_at, iso(T0));
    ctx.clock.advance(60_000);
    await ctx.engine.promoteDueJobs();
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), [], 'discarded is terminal');
  });

  it('fetch promotes a due retryable job by itself (lazy promotion)', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { retry: { initial_interval: 'PT1S', jitter: false } },
    });
    await ctx.fetch({ queues: ['default'] });
    await nack({ job_id: job.id, error: boom });
    ctx.clock.advance(1200);
    const [again] = await ctx.fetch({ queues: ['default'] });
    assert.equal(again?.id, job.id);
  });

  it('linear backoff: 1 s, 2 s', async () => {
    const job = await ctx.enqueue({
      type: 'retry.test.linear',
      args: [],
      options: {
        retry: {
          max_attempts: 5,
          initial_interval: 'PT1S',
          backoff_strategy: 'linear',
          jitter: false,
        },
      },
    });
    await ctx.fetch({ queues: ['default'] });
    assert.equal((await nack({ job_id: job.id, error: boom })).retry_delay_ms, 1000);
    ctx.clock.advance(1000);
    await ctx.engine.promoteDueJobs();
    await ctx.fetch({ queues: ['default'] });
    assert.equal((await nack({ job_id: job.id, error: boom })).retry_delay_ms, 2000);
  });

  it('retryable: false discards at once (completed_at set)', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'] });
    const r = await nack({ job_id: job.id, error: { ...boom, retryable: false } });
    assert.equal(r.state, 'discarded');
    assert.equal(r.attempt, 1);
    assert.equal(r.completed_at, iso(T0));
  });

  it('non_retryable_errors matches details.error_class', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { retry: { non_retryable_errors: ['Auth.*'] } },
    });
    await ctx.fetch({ queues: ['default'] });
    const r = await nack({
      job_id: job.id,
      error: { ...boom, details: { error_class: 'Auth.TokenExpired' } },
    });
    assert.equal(r.state, 'discarded');
    assert.equal((await getJob(job.id)).error.type, 'Auth.TokenExpired');
  });

  it('requeue: true hands the job back as available at once, no error recorded', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    const r = await nack({
      job_id: job.id,
      worker_id: 'w1',
      requeue: true,
      error: { code: 'handler_error', message: 'shutdown', retryable: false },
    });
    assert.equal(r.state, 'available');
    const info = await getJob(job.id);
    assert.equal(info.state, 'available');
    assert.equal(info.error, undefined);
    const [again] = await ctx.fetch({ queues: ['default'], worker_id: 'w2' });
    assert.equal(again.id, job.id);
  });

  it('requeue does not burn an attempt', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'] });
    await nack({ job_id: job.id, requeue: true, error: boom });
    const [again] = await ctx.fetch({ queues: ['default'] });
    assert.equal(again.attempt, 1);
  });
});

describe('Level 1: visibility timeout and execution timeout', () => {
  it('an unacknowledged job is available again after its visibility timeout', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { visibility_timeout_ms: 3000 },
    });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    ctx.clock.advance(2999);
    await ctx.engine.expireLeases();
    assert.equal((await getJob(job.id)).state, 'active');
    ctx.clock.advance(1);
    await ctx.engine.expireLeases();
    const info = await getJob(job.id);
    assert.equal(info.state, 'available', 'straight back to available, not retryable');
    assert.equal(info.error.code, 'visibility_timeout');
    assert.equal(info.completed_at, undefined);
    const [again] = await ctx.fetch({ queues: ['default'], worker_id: 'w2' });
    assert.equal(again.id, job.id);
    assert.equal(again.attempt, 2);
  });

  it('the fetch visibility_timeout_ms overrides the job default', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'], visibility_timeout_ms: 1000 });
    ctx.clock.advance(1000);
    await ctx.engine.expireLeases();
    assert.equal((await getJob(job.id)).state, 'available');
  });

  it('the visibility timeout on the last attempt discards (dead-lettered per policy)', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: {
        visibility_timeout_ms: 1000,
        retry: { max_attempts: 1, on_exhaustion: 'dead_letter' },
      },
    });
    await ctx.fetch({ queues: ['default'] });
    ctx.clock.advance(1000);
    await ctx.engine.expireLeases();
    const info = await getJob(job.id);
    assert.equal(info.state, 'discarded');
    assert.equal(info.completed_at, iso(T0 + 1000));
    const dlq = (await ctx.req('GET', '/ojs/v1/dead-letter')).json();
    assert.deepEqual(
      dlq.jobs.map((j: Json) => j.id),
      [job.id],
    );
  });

  it('timeout_ms: a job still running after it is a counted failure of type timeout', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { timeout_ms: 2000, retry: { jitter: false } },
    });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    ctx.clock.advance(1999);
    await ctx.engine.expireLeases();
    assert.equal((await getJob(job.id)).state, 'active');
    ctx.clock.advance(1);
    await ctx.engine.expireLeases();
    const info = await getJob(job.id);
    assert.equal(info.state, 'retryable');
    assert.equal(info.error.type, 'timeout');
    assert.equal(info.error.attempt, 1);
    assert.equal(info.retry_delay_ms, 1000);
    const late = await ctx.req('POST', '/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w1' });
    assertError(late, 409, 'conflict');
  });
});

describe('Level 1: heartbeat', () => {
  it('extends the lease: heartbeats every 2 s keep a 3 s job active', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { visibility_timeout_ms: 3000 },
    });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    for (let i = 0; i < 3; i++) {
      ctx.clock.advance(2000);
      await ctx.engine.expireLeases();
      const body = await heartbeat({
        worker_id: 'w1',
        active_jobs: [job.id],
        visibility_timeout_ms: 3000,
      });
      assert.equal(body.state, 'running');
      assert.equal(body.directive, '');
      assert.deepEqual(body.jobs_extended, [job.id]);
      assert.equal(body.server_time, iso(T0 + 2000 * (i + 1)));
    }
    ctx.clock.advance(2999);
    await ctx.engine.expireLeases();
    assert.equal((await getJob(job.id)).state, 'active');
    ctx.clock.advance(1);
    await ctx.engine.expireLeases();
    assert.equal((await getJob(job.id)).state, 'available');
  });

  it('without visibility_timeout_ms it extends by the job visibility timeout, from now', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { visibility_timeout_ms: 3000 },
    });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    ctx.clock.advance(2500);
    await heartbeat({ worker_id: 'w1', active_job_ids: [job.id] });
    ctx.clock.advance(2999);
    await ctx.engine.expireLeases();
    assert.equal((await getJob(job.id)).state, 'active');
    ctx.clock.advance(1);
    await ctx.engine.expireLeases();
    assert.equal((await getJob(job.id)).state, 'available');
  });

  it('accepts active_jobs, active_job_ids and job_id', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    for (const body of [
      { worker_id: 'w1', active_jobs: [job.id] },
      { worker_id: 'w1', active_jobs: 1, active_job_ids: [job.id] },
      { worker_id: 'w1', job_id: job.id },
    ]) {
      assert.deepEqual((await heartbeat(body)).jobs_extended, [job.id]);
    }
  });

  it('a worker that does not hold the lease extends nothing', async () => {
    const job = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { visibility_timeout_ms: 3000 },
    });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    ctx.clock.advance(2000);
    const body = await heartbeat({ worker_id: 'w2', active_jobs: [job.id] });
    assert.deepEqual(body.jobs_extended, []);
    ctx.clock.advance(1000);
    await ctx.engine.expireLeases();
    assert.equal((await getJob(job.id)).state, 'available');
  });

  it('unknown and non-active ids are ignored', async () => {
    const available = await ctx.enqueue({ type: 'a.b', args: [] });
    const body = await heartbeat({
      worker_id: 'w1',
      active_jobs: [available.id, '01900000-0000-7000-8000-00000000dead'],
    });
    assert.deepEqual(body.jobs_extended, []);
    assert.equal(body.state, 'running');
  });

  for (const directive of ['quiet', 'terminate'] as const) {
    it(`answers '${directive}' for a job with meta.test_directive '${directive}' (test mode)`, async () => {
      const job = await ctx.enqueue({
        type: 'a.b',
        args: [],
        options: { metadata: { test_directive: directive } },
      });
      await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
      const body = await heartbeat({ worker_id: 'w1', active_jobs: [job.id] });
      assert.equal(body.state, directive);
      assert.equal(body.directive, directive);
    });
  }

  it('the strongest directive wins across jobs', async () => {
    const q = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { metadata: { test_directive: 'quiet' } },
    });
    const t = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { metadata: { test_directive: 'terminate' } },
    });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1', count: 2 });
    assert.equal(
      (await heartbeat({ worker_id: 'w1', active_jobs: [q.id, t.id] })).state,
      'terminate',
    );
  });

  it('meta.test_directive is ignored outside test mode', async () => {
    const prod = await setup({ testMode: false });
    try {
      const job = await prod.enqueue({
        type: 'a.b',
        args: [],
        options: { metadata: { test_directive: 'quiet' } },
      });
      await prod.fetch({ queues: ['default'], worker_id: 'w1' });
      const res = await prod.req('POST', '/ojs/v1/workers/heartbeat', {
        worker_id: 'w1',
        active_jobs: [job.id],
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().state, 'running');
      assert.equal(res.json().directive, '');
      assert.deepEqual(res.json().jobs_extended, [job.id]);
    } finally {
      await prod.close();
    }
  });

  it('a cancelled active job is reported in jobs_cancelled, and its ACK is refused', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'], worker_id: 'w1' });
    const cancel = await ctx.req('DELETE', `/ojs/v1/jobs/${job.id}`);
    assert.equal(cancel.statusCode, 200);
    const body = await heartbeat({ worker_id: 'w1', active_jobs: [job.id] });
    assert.deepEqual(body.jobs_cancelled, [job.id]);
    assert.deepEqual(body.jobs_extended, []);
    const late = await ctx.req('POST', '/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w1' });
    assertError(late, 409, 'conflict');
  });
});

describe('Level 1: CANCEL', () => {
  it('available -> cancelled with cancelled_at, no completed_at; not fetchable', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    ctx.clock.advance(5);
    const res = await ctx.req('DELETE', `/ojs/v1/jobs/${job.id}`);
    assert.equal(res.statusCode, 200);
    assertWireHeaders(res);
    const cancelled = res.json().job;
    assert.equal(cancelled.id, job.id);
    assert.equal(cancelled.state, 'cancelled');
    assert.equal(cancelled.cancelled_at, iso(T0 + 5));
    assert.equal(cancelled.completed_at, undefined);
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
  });

  it('active -> cancelled at once, attempt and started_at kept', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'] });
    const cancelled = (await ctx.req('DELETE', `/ojs/v1/jobs/${job.id}`)).json().job;
    assert.equal(cancelled.state, 'cancelled');
    assert.equal(cancelled.attempt, 1);
    assert.equal(cancelled.started_at, iso(T0));
  });

  it('scheduled and retryable jobs can be cancelled', async () => {
    const scheduled = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { scheduled_at: '+PT1H' },
    });
    assert.equal(scheduled.state, 'scheduled');
    assert.equal(
      (await ctx.req('DELETE', `/ojs/v1/jobs/${scheduled.id}`)).json().job.state,
      'cancelled',
    );
    const retryable = await ctx.enqueue({ type: 'a.b', args: [] });
    await ctx.fetch({ queues: ['default'] });
    await nack({ job_id: retryable.id, error: boom });
    assert.equal(
      (await ctx.req('DELETE', `/ojs/v1/jobs/${retryable.id}`)).json().job.state,
      'cancelled',
    );
    ctx.clock.advance(3_600_000);
    await ctx.engine.promoteDueJobs();
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
  });

  it('the response carries previous_state', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [] });
    const cancelled = (await ctx.req('DELETE', `/ojs/v1/jobs/${job.id}`)).json().job;
    assert.equal(cancelled.previous_state, 'available');
  });
});

describe('Level 1: dead letter', () => {
  async function deadLetter(type = 'a.b', queue = 'default'): Promise<Json> {
    const job = await ctx.enqueue({
      type,
      args: [type],
      options: { queue, retry: { max_attempts: 1, on_exhaustion: 'dead_letter' } },
    });
    await ctx.fetch({ queues: [queue] });
    const r = await nack({ job_id: job.id, error: boom });
    assert.equal(r.state, 'discarded');
    return job;
  }

  it('lists dead-lettered jobs only (not discard-policy ones), with their errors', async () => {
    const dl = await deadLetter();
    const plain = await ctx.enqueue({
      type: 'a.b',
      args: [],
      options: { retry: { max_attempts: 1 } },
    });
    await ctx.fetch({ queues: ['default'] });
    assert.equal((await nack({ job_id: plain.id, error: boom })).state, 'discarded');

    const res = await ctx.req('GET', '/ojs/v1/dead-letter');
    assert.equal(res.statusCode, 200);
    assertWireHeaders(res);
    const body = res.json();
    assert.deepEqual(
      body.jobs.map((j: Json) => j.id),
      [dl.id],
    );
    const entry = body.jobs[0];
    assert.equal(entry.state, 'discarded');
    assert.equal(entry.errors.length, 1);
    assert.equal(entry.error.message, 'boom');
    assert.equal(body.pagination.total, 1);
    assert.equal(body.pagination.has_more, false);
  });

  it('filters by queue and paginates', async () => {
    const a = await deadLetter('a.one', 'q-a');
    await deadLetter('a.two', 'q-b');
    await deadLetter('a.three', 'q-b');
    const byQueue = (await ctx.req('GET', '/ojs/v1/dead-letter?queue=q-a')).json();
    assert.deepEqual(
      byQueue.jobs.map((j: Json) => j.id),
      [a.id],
    );
    const page = (await ctx.req('GET', '/ojs/v1/dead-letter?limit=2&offset=0')).json();
    assert.equal(page.jobs.length, 2);
    assert.equal(page.pagination.total, 3);
    assert.equal(page.pagination.has_more, true);
    const rest = (await ctx.req('GET', '/ojs/v1/dead-letter?limit=2&offset=2')).json();
    assert.equal(rest.jobs.length, 1);
    assert.equal(rest.pagination.has_more, false);
  });

  it('retry revives the job: same id, available, attempt 0, history kept; then fetch and ack', async () => {
    const job = await deadLetter();
    ctx.clock.advance(100);
    const res = await ctx.req('POST', `/ojs/v1/dead-letter/${job.id}/retry`, {});
    assert.equal(res.statusCode, 200, res.body);
    assertWireHeaders(res);
    const revived = res.json().job;
    assert.equal(revived.id, job.id);
    assert.equal(revived.state, 'available');
    assert.equal(revived.attempt, 0);
    assert.equal(revived.re_enqueued_at, iso(T0 + 100));
    assert.equal(revived.error, undefined);
    assert.equal(revived.errors.length, 1);
    assert.equal(revived.completed_at, undefined);
    assert.equal(revived.discarded_at, undefined);

    assert.deepEqual((await ctx.req('GET', '/ojs/v1/dead-letter')).json().jobs, []);
    const [fetched] = await ctx.fetch({ queues: ['default'] });
    assert.equal(fetched.id, job.id);
    assert.equal(fetched.attempt, 1);
    assert.equal((await ack({ job_id: job.id })).state, 'completed');
  });

  it('retry also works without a body', async () => {
    const job = await deadLetter();
    const res = await ctx.req('POST', `/ojs/v1/dead-letter/${job.id}/retry`);
    assert.equal(res.statusCode, 200, res.body);
  });

  it('delete removes the job for good', async () => {
    const job = await deadLetter();
    const res = await ctx.req('DELETE', `/ojs/v1/dead-letter/${job.id}`);
    assert.equal(res.statusCode, 200);
    assertWireHeaders(res);
    assert.deepEqual(res.json(), { deleted: true, job_id: job.id });
    assert.deepEqual((await ctx.req('GET', '/ojs/v1/dead-letter')).json().jobs, []);
    assertError(await ctx.req('GET', `/ojs/v1/jobs/${job.id}`), 404, 'not_found');
    assertError(await ctx.req('DELETE', `/ojs/v1/dead-letter/${job.id}`), 404, 'not_found');
  });
});

describe('Level 2 basics exercised through Level 1 paths', () => {
  it('a future scheduled_at is not fetchable until due', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [], options: { scheduled_at: '+PT2S' } });
    assert.equal(job.state, 'scheduled');
    assert.equal(job.scheduled_at, iso(T0 + 2000));
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
    ctx.clock.advance(2000);
    const [fetched] = await ctx.fetch({ queues: ['default'] });
    assert.equal(fetched.id, job.id);
  });

  it('an expired job is never fetched; it ends discarded without completed_at', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: [], options: { expires_at: '+PT2S' } });
    ctx.clock.advance(3000);
    assert.deepEqual(await ctx.fetch({ queues: ['default'] }), []);
    const info = await getJob(job.id);
    assert.equal(info.state, 'discarded');
    assert.equal(info.completed_at, undefined);
  });
});

describe('events endpoint', () => {
  async function events(query: string): Promise<Json> {
    const res = await ctx.req('GET', `/ojs/v1/events${query}`);
    assert.equal(res.statusCode, 200, res.body);
    assertWireHeaders(res);
    return res.json();
  }

  beforeEach(async () => {
    const a = await ctx.enqueue({ type: 'mail.send', args: [], options: { queue: 'mail' } });
    await ctx.enqueue({ type: 'sms.send', args: [], options: { queue: 'sms' } });
    await ctx.enqueue({ type: 'mail.digest', args: [], options: { queue: 'mail' } });
    ctx.clock.advance(40);
    await ctx.fetch({ queues: ['mail'] });
    ctx.clock.advance(10);
    await ack({ job_id: a.id });
  });

  it('filters by type and queue (suite query)', async () => {
    const body = await events('?types=job.enqueued&queues=mail&limit=10');
    assert.equal(body.events.length, 2);
    for (const e of body.events) {
      assert.equal(e.type, 'job.enqueued');
      assert.equal(e.data.queue, 'mail');
      assert.equal(typeof e.data.job_type, 'string');
      assert.equal(e.specversion, '1.0');
      assert.equal(typeof e.id, 'string');
      assert.equal(typeof e.time, 'string');
    }
    assert.deepEqual(
      body.events.map((e: Json) => e.data.job_type),
      ['mail.send', 'mail.digest'],
    );
  });

  it('accepts several comma-separated types', async () => {
    const body = await events('?types=job.started,job.completed');
    assert.deepEqual(
      body.events.map((e: Json) => e.type),
      ['job.started', 'job.completed'],
    );
    const completed = body.events[1];
    assert.equal(completed.data.job_type, 'mail.send');
    assert.equal(completed.data.queue, 'mail');
    assert.equal(completed.data.attempt, 1);
    assert.equal(completed.data.duration_ms, 10);
  });

  it('filters by job type', async () => {
    const body = await events('?job_types=sms.send');
    assert.ok(body.events.length > 0);
    for (const e of body.events) assert.equal(e.data.job_type, 'sms.send');
  });

  it('paginates with limit, has_more and the after cursor', async () => {
    const all = (await events('')).events;
    assert.equal(all.length, 5, 'three enqueued, one started, one completed');
    const first = await events('?limit=2');
    assert.equal(first.events.length, 2);
    assert.equal(first.has_more, true);
    assert.equal(first.cursor, first.events[1].id);
    const next = await events(`?limit=2&after=${first.cursor}`);
    assert.deepEqual(next.events, all.slice(2, 4));
    const last = await events(`?limit=2&after=${next.cursor}`);
    assert.deepEqual(last.events, all.slice(4));
    assert.equal(last.has_more, false);
  });

  it('an unknown queue or type yields an empty list', async () => {
    assert.deepEqual((await events('?queues=nowhere')).events, []);
    assert.deepEqual((await events('?types=job.nothing')).events, []);
  });

  it('a bad limit is a 400 invalid_request', async () => {
    assertError(await ctx.req('GET', '/ojs/v1/events?limit=0'), 400, 'invalid_request');
    assertError(await ctx.req('GET', '/ojs/v1/events?limit=abc'), 400, 'invalid_request');
  });
});

describe('test-mode reset hook', () => {
  it('POST /ojs/v1/admin/reset wipes everything in test mode', async () => {
    await ctx.enqueue({ type: 'a.b', args: [], options: { queue: 'x' } });
    const res = await ctx.req('POST', '/ojs/v1/admin/reset', {});
    assert.equal(res.statusCode, 200);
    assert.deepEqual(await ctx.fetch({ queues: ['x'] }), []);
    assert.deepEqual((await ctx.engine.listEvents({ limit: 100 })).length, 0);
  });

  it('is absent outside test mode', async () => {
    const prod = await setup({ testMode: false });
    try {
      await prod.enqueue({ type: 'a.b', args: [] });
      const before = await snapshot(prod.engine);
      assertError(await prod.req('POST', '/ojs/v1/admin/reset', {}), 404, 'not_found');
      assert.equal(await snapshot(prod.engine), before);
    } finally {
      await prod.close();
    }
  });
});
