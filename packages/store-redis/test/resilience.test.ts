/**
 * The Redis store when Redis goes away, on a redis-server of the test's own
 * (redis-server.ts; the shared one is never touched):
 * - while Redis is stopped every store call fails at once with OjsError
 *   backend_unavailable, far under the 10 s command timeout; while it is
 *   frozen (SIGSTOP, connections open) a call fails at the command timeout,
 *   it never hangs, and a write says its outcome is unknown;
 * - when Redis is back on the same port the store reconnects by itself
 *   (reads, writes after the function library was lost, the wake-up
 *   subscription);
 * - through HTTP (startServer with the redis:// spec): health and readiness
 *   answer 503 and an enqueue 503 in the error envelope, promptly, and
 *   200/201 again once Redis is back;
 * - an `ojs serve` started while Redis is unreachable keeps retrying and
 *   becomes ready when Redis starts.
 * Latencies are printed as diagnostics (the figures the report quotes).
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { type JobRecord, jobEvent, OjsError, parseEnqueueRequest } from '@ojs/core';
import { type ServerProcess, startServerProcess } from '../../../scripts/lib.ts';
import { type RunningServer, startServer } from '../../server/src/serve.ts';
import { RedisStore } from '../src/index.ts';
import { type RedisServer, redisServer, redisServerMissing } from './redis-server.ts';

/** "Fail fast": a bound far under the store's 10 s command timeout, generous for a loaded machine. */
const FAST_MS = 2_000;
const COMMAND_TIMEOUT_MS = 10_000;

const skip = redisServerMissing();

/** A job as the engine builds it from an enqueue request. */
function newJob(body: Record<string, unknown> = {}): JobRecord {
  return parseEnqueueRequest({ type: 'resilience.job', args: [], ...body }, Date.now(), {
    visibilityTimeoutMs: 30_000,
  });
}

function isUnavailable(error: unknown): boolean {
  return error instanceof OjsError && error.code === 'backend_unavailable';
}

/** How long `call` took to reject, asserting it rejected with backend_unavailable. */
async function rejectsUnavailable(label: string, call: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  let outcome: unknown;
  try {
    outcome = await call();
  } catch (error) {
    assert.ok(
      isUnavailable(error),
      `${label}: expected backend_unavailable, got ${String((error as Error).stack ?? error)}`,
    );
    return performance.now() - started;
  }
  assert.fail(`${label}: succeeded while Redis is down (${JSON.stringify(outcome)})`);
}

/** Polls `probe` until it is true (a condition with a deadline, not a sleep as proof). */
async function until(
  what: string,
  probe: () => Promise<boolean>,
  deadlineMs: number,
): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await probe().catch(() => false)) return performance.now() - started;
    if (performance.now() - started > deadlineMs)
      assert.fail(`${what}: not within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `promise`, or a failure naming what did not happen within `deadlineMs`. */
async function within<T>(promise: Promise<T>, deadlineMs: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what()} (after ${deadlineMs} ms)`)), deadlineMs);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function ms(n: number): string {
  return `${n.toFixed(1)} ms`;
}

describe('Redis store while Redis is down and back', { skip, timeout: 60_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;
  const backgroundErrors: string[] = [];
  let seeded: JobRecord;

  before(async () => {
    redis = await redisServer();
    await redis.start();
    store = new RedisStore({
      url: redis.url,
      prefix: 'resilience',
      log: () => {},
      onError: (error, context) => backgroundErrors.push(`${context}: ${error.message}`),
    });
    await store.init();
    const [result] = await store.insertJobs([newJob({ options: { queue: 'r' } })], [], Date.now());
    assert.equal(result?.status, 'inserted');
    seeded = (result as { job: JobRecord }).job;
  });

  after(async () => {
    await store?.close();
    await redis?.dispose();
  });

  it('every call fails fast with backend_unavailable while Redis is stopped', async (t) => {
    const closing = new RedisStore({ url: redis.url, prefix: 'resilience', log: () => {} });
    await closing.init();
    closing.onJobsAvailable(() => {});
    await redis.kill('SIGTERM');
    const now = Date.now();
    const calls: [string, () => Promise<unknown>][] = [
      ['ping', () => store.ping()],
      ['getJob', () => store.getJob(seeded.id)],
      ['insertJobs', () => store.insertJobs([newJob({ options: { queue: 'r' } })], [], now)],
      [
        'insertJobs (unique)',
        () =>
          store.insertJobs(
            [newJob({ options: { queue: 'r', unique: { keys: ['type'], period: 'PT1M' } } })],
            [],
            now,
          ),
      ],
      ['claimJobs', () => store.claimJobs({ queues: ['r'], count: 1, workerId: 'w', now })],
      [
        'settleJobs',
        () =>
          store.settleJobs({
            items: [{ id: seeded.id, settlement: { kind: 'complete' } }],
            now,
          }),
      ],
      ['extendLeases', () => store.extendLeases([{ id: seeded.id }], now)],
      ['promoteDueJobs', () => store.promoteDueJobs(now)],
      ['listQueues', () => store.listQueues()],
      ['queueStats', () => store.queueStats('r', now)],
      ['countJobsByQueue', () => store.countJobsByQueue()],
      ['listJobs', () => store.listJobs({ filter: {}, limit: 10, order: 'asc' })],
      ['listEvents', () => store.listEvents({ limit: 10 })],
      ['appendEvents', () => store.appendEvents([jobEvent('job.progress', seeded, {}, now)])],
      ['getSetting', () => store.getSetting('ns', 'k')],
      ['putSetting', () => store.putSetting('ns', 'k', { a: 1 }, null, now)],
      ['listCrons', () => store.listCrons()],
      ['setQueuePaused', () => store.setQueuePaused('r', true, now)],
    ];
    const figures: string[] = [];
    let worst = 0;
    for (const [label, call] of calls) {
      const took = await rejectsUnavailable(label, call);
      figures.push(`${label} ${ms(took)}`);
      worst = Math.max(worst, took);
    }
    // Many at once (a burst of requests during the outage): none waits on another.
    const burstStarted = performance.now();
    const burst = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        rejectsUnavailable(`burst ${i}`, () =>
          i % 2 === 0 ? store.getJob(seeded.id) : store.ping(),
        ),
      ),
    );
    const burstTook = performance.now() - burstStarted;
    t.diagnostic(`sequential calls while stopped: ${figures.join(', ')}`);
    t.diagnostic(
      `worst single call ${ms(worst)}; 200 concurrent calls all rejected in ${ms(burstTook)} (max ${ms(Math.max(...burst))})`,
    );
    assert.ok(worst < FAST_MS, `a call took ${ms(worst)} (bound ${FAST_MS} ms)`);
    assert.ok(burstTook < FAST_MS, `the burst took ${ms(burstTook)} (bound ${FAST_MS} ms)`);
    // Closing while Redis is down (a SIGTERM during the outage) does not wait for it either.
    const other = new RedisStore({ url: redis.url, prefix: 'resilience', log: () => {} });
    await assert.rejects(other.init(), isUnavailable);
    const closeStarted = performance.now();
    await closing.close();
    const closeMs = performance.now() - closeStarted;
    t.diagnostic(`close() of a store while Redis is stopped: ${ms(closeMs)}`);
    assert.ok(closeMs < FAST_MS, `close took ${ms(closeMs)}`);
    // A write that never left the process does not claim an unknown outcome.
    const error = await store.insertJobs([newJob()], [], now).then(
      () => assert.fail('insert succeeded while Redis is down'),
      (e: unknown) => e as OjsError,
    );
    assert.equal(error.details?.backend, 'redis');
    assert.equal(error.details?.outcome, undefined, error.message);
  });

  it('reconnects by itself once Redis is back on the same port', async (t) => {
    // Redis ran without persistence: it comes back empty, without the function library.
    let woken: () => void;
    const wokenAfterRestart = new Promise<void>((resolve) => {
      woken = resolve;
    });
    store.onJobsAvailable(() => woken());
    await redis.start();
    const reconnect = await until(
      'store.ping after the restart',
      () => store.ping().then(() => true),
      15_000,
    );
    t.diagnostic(`first successful ping ${ms(reconnect)} after Redis was ready`);
    // Reads, then writes (the apply function is loaded again), then a claim.
    assert.equal(await store.getJob(seeded.id), null, 'Redis came back empty');
    const job = newJob({ options: { queue: 'back' } });
    const [inserted] = await store.insertJobs([job], [], store.clock.now());
    assert.equal(inserted?.status, 'inserted');
    const claimed = await store.claimJobs({
      queues: ['back'],
      count: 1,
      workerId: 'w',
      now: store.clock.now(),
    });
    assert.deepEqual(
      claimed.map((j) => j.id),
      [job.id],
    );
    // The wake-up subscription came back too (resubscribed, or the insert's message).
    await wokenAfterRestart;
    assert.ok(reconnect < FAST_MS, `reconnect took ${ms(reconnect)}`);
  });

  it('a frozen Redis (SIGSTOP): a write fails at the command timeout, never hangs, and says its outcome is unknown', async (t) => {
    const job = newJob({ options: { queue: 'frozen' } });
    redis.freeze();
    let took: number;
    let error: OjsError;
    try {
      const started = performance.now();
      error = await store.insertJobs([job], [], store.clock.now()).then(
        () => assert.fail('an insert succeeded on a frozen Redis'),
        (e: unknown) => e as OjsError,
      );
      took = performance.now() - started;
    } finally {
      redis.thaw();
    }
    t.diagnostic(`an insert to a frozen Redis rejected after ${ms(took)}`);
    assert.ok(isUnavailable(error), String(error));
    assert.equal(error.details?.outcome, 'unknown', error.message);
    assert.ok(
      took >= COMMAND_TIMEOUT_MS - 100 && took < COMMAND_TIMEOUT_MS + FAST_MS,
      `took ${ms(took)}`,
    );
    // Thawed, Redis runs what it had received: the insert whose outcome was
    // "unknown" did happen, once, and the store works on.
    await until('store.ping after SIGCONT', () => store.ping().then(() => true), 15_000);
    const stored = await store.getJob(job.id);
    assert.equal(stored?.state, 'available');
    const again = await store.insertJobs([job], [], store.clock.now());
    assert.equal(again[0]?.status, 'duplicate_id', 'a client retry of that insert is refused');
  });
});

/**
 * BUG (reported, not fixed here): with enableAutoPipelining ioredis runs one
 * pipeline at a time per connection and starts a command's commandTimeout
 * only when its pipeline is sent. Against a frozen Redis, every call issued
 * while the first pipeline waits goes out in the next pipeline once the
 * first timed out, and times out in its turn: such a call rejects after up
 * to twice the command timeout (about 20 s with the default 10 s; an insert
 * issued with a read in flight took 20.0 s), not at the timeout. Shown with
 * a 500 ms command timeout to keep the run short.
 */
describe('calls of successive turns against a frozen Redis', { skip, timeout: 60_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;
  const TIMEOUT = 500;

  before(async () => {
    redis = await redisServer();
    await redis.start();
    store = new RedisStore({
      url: redis.url,
      prefix: 'frozen-turns',
      log: () => {},
      redis: { commandTimeout: TIMEOUT },
    });
    await store.init();
  });

  after(async () => {
    redis?.thaw();
    await store?.close();
    await redis?.dispose();
  });

  it('each call is bounded by the command timeout, however many turns are waiting', {}, async (t) => {
    redis.freeze();
    const started = performance.now();
    const took: number[] = [];
    const calls: Promise<void>[] = [];
    try {
      // Five calls, one per event-loop turn, as five requests arriving 1 ms apart
      // (the 1 ms timer only separates the turns; nothing waits on it as proof).
      for (let i = 0; i < 5; i++) {
        calls.push(
          store.ping().then(
            () => assert.fail('ping succeeded on a frozen Redis'),
            (error: unknown) => {
              assert.ok(isUnavailable(error), String(error));
              took.push(performance.now() - started);
            },
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await Promise.all(calls);
    } finally {
      redis.thaw();
    }
    t.diagnostic(`rejected after ${took.map(ms).join(', ')} (command timeout ${TIMEOUT} ms)`);
    for (const [i, value] of took.entries()) {
      assert.ok(value < TIMEOUT * 1.5, `call ${i} took ${ms(value)}`);
    }
  });
});

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

const enqueue = (url: string, queue: string) =>
  fetch(`${url}/ojs/v1/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'resilience.work', args: [1], options: { queue } }),
  });

/** The error envelope of an unreachable store (HB §16.1 plus type, hint, docs_url). */
async function assertUnavailableBody(res: Response, label: string): Promise<void> {
  const body = await json(res);
  assert.equal(res.status, 503, `${label}: ${JSON.stringify(body)}`);
  assert.match(String(res.headers.get('content-type')), /^application\/openjobspec\+json/);
  const error = body.error as Record<string, unknown>;
  assert.equal(error.code, 'backend_unavailable', label);
  assert.equal(error.type, 'backend_unavailable');
  assert.equal(error.retryable, true);
  assert.equal(typeof error.message, 'string');
  assert.equal(typeof error.request_id, 'string');
  assert.equal(typeof error.hint, 'string');
  assert.match(String(error.docs_url), /backend_unavailable$/);
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await fn();
  return [value, performance.now() - started];
}

describe('the HTTP server on Redis while Redis is down and back', { skip, timeout: 60_000 }, () => {
  let redis: RedisServer;
  let server: RunningServer;

  before(async () => {
    redis = await redisServer();
    await redis.start();
    server = await startServer({
      store: `${redis.url}/0?prefix=http`,
      port: 0,
      grpc: false,
      logLevel: 'silent',
      dashboard: false,
    });
  });

  after(async () => {
    await server?.close();
    await redis?.dispose();
  });

  it('health, readiness and enqueue answer 503 promptly, then 200/201 once Redis is back', async (t) => {
    assert.equal((await fetch(`${server.url}/ojs/v1/health`)).status, 200);
    assert.equal((await enqueue(server.url, 'h')).status, 201);

    await redis.kill('SIGTERM');
    const [health, healthMs] = await timed(() => fetch(`${server.url}/ojs/v1/health`));
    const healthBody = await json(health);
    assert.equal(health.status, 503, JSON.stringify(healthBody));
    assert.equal(healthBody.status, 'error');
    assert.deepEqual(
      {
        type: (healthBody.backend as Record<string, unknown>).type,
        status: (healthBody.backend as Record<string, unknown>).status,
      },
      { type: 'redis', status: 'unhealthy' },
    );
    assert.doesNotMatch(
      JSON.stringify(healthBody),
      /127\.0\.0\.1|ECONN|Stream/,
      'no store error text',
    );
    const [ready, readyMs] = await timed(() => fetch(`${server.url}/ojs/v1/ready`));
    assert.equal(ready.status, 503);
    assert.deepEqual(await json(ready), { status: 'not_ready', reason: 'store_unreachable' });
    const live = await fetch(`${server.url}/ojs/v1/live`);
    assert.equal(live.status, 200, 'liveness never touches the store');
    const [post, postMs] = await timed(() => enqueue(server.url, 'h'));
    await assertUnavailableBody(post, 'POST /ojs/v1/jobs');
    const [get, getMs] = await timed(() => fetch(`${server.url}/ojs/v1/jobs/some-id`));
    await assertUnavailableBody(get, 'GET /ojs/v1/jobs/:id');
    const [fetched, fetchMs] = await timed(() =>
      fetch(`${server.url}/ojs/v1/workers/fetch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ queues: ['h'], worker_id: 'w' }),
      }),
    );
    await assertUnavailableBody(fetched, 'POST /ojs/v1/workers/fetch');
    t.diagnostic(
      `while Redis is down: health 503 in ${ms(healthMs)}, ready 503 in ${ms(readyMs)}, enqueue 503 in ${ms(postMs)}, get 503 in ${ms(getMs)}, fetch 503 in ${ms(fetchMs)}`,
    );
    for (const [label, took] of [
      ['health', healthMs],
      ['ready', readyMs],
      ['enqueue', postMs],
      ['get', getMs],
      ['fetch', fetchMs],
    ] as const) {
      assert.ok(took < FAST_MS, `${label} took ${ms(took)}`);
    }

    await redis.start();
    const back = await until(
      'GET /ojs/v1/ready 200',
      async () => (await fetch(`${server.url}/ojs/v1/ready`)).status === 200,
      15_000,
    );
    t.diagnostic(`ready again ${ms(back)} after Redis was ready`);
    assert.equal((await fetch(`${server.url}/ojs/v1/health`)).status, 200);
    const created = await enqueue(server.url, 'h');
    const body = await json(created);
    assert.equal(created.status, 201, JSON.stringify(body));
    const id = (body.job as { id: string }).id;
    const res = await fetch(`${server.url}/ojs/v1/jobs/${id}`);
    assert.equal(res.status, 200);
  });
});

describe('`ojs serve` started while Redis is unreachable', { skip, timeout: 120_000 }, () => {
  let redis: RedisServer;
  let serve: ServerProcess | undefined;

  before(async () => {
    // The port is chosen, nothing listens on it yet.
    redis = await redisServer();
  });

  after(async () => {
    await serve?.stop();
    await redis?.dispose();
  });

  it('answers 503 while Redis is unreachable, keeps retrying and becomes ready when Redis starts', async (t) => {
    // Pretty logs are written synchronously (JSON ones in 4 KiB chunks): each line is seen as it happens.
    serve = await startServerProcess(`${redis.url}/0?prefix=serve`, {
      OJS_LOG_LEVEL: 'warn',
      OJS_LOG_FORMAT: 'pretty',
    });
    let out = '';
    const waits: [string, () => void][] = [];
    const line = (text: string) =>
      new Promise<void>((resolve) => {
        waits.push([text, resolve]);
      });
    const retried = line('store still unavailable');
    const started = line('store reachable again; services started');
    serve.child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      for (const [text, resolve] of waits) if (out.includes(text)) resolve();
    });

    const ready = await fetch(`${serve.url}/ojs/v1/ready`);
    assert.equal(ready.status, 503);
    assert.deepEqual(await json(ready), { status: 'not_ready', reason: 'store_unreachable' });
    assert.equal((await fetch(`${serve.url}/ojs/v1/health`)).status, 503);
    assert.equal((await fetch(`${serve.url}/ojs/v1/live`)).status, 200);

    // It keeps retrying: a retry has failed before Redis starts.
    await within(retried, 15_000, () => `no "store still unavailable" line; stdout:\n${out}`);
    assert.equal((await fetch(`${serve.url}/ojs/v1/ready`)).status, 503);
    await redis.start();
    const redisReady = performance.now();
    // The process says so when its retry reached Redis (back-off 1 s, doubling to 30 s).
    await within(started, 45_000, () => `no "store reachable again" line; stdout:\n${out}`);
    t.diagnostic(`services started ${ms(performance.now() - redisReady)} after Redis was ready`);
    const ready2 = await fetch(`${serve.url}/ojs/v1/ready`);
    assert.equal(ready2.status, 200, JSON.stringify(await json(ready2)));
    assert.ok(!serve.crashed(), serve.logs());
    const created = await enqueue(serve.url, 'serve');
    assert.equal(created.status, 201, JSON.stringify(await json(created)));
    const fetched = await fetch(`${serve.url}/ojs/v1/workers/fetch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ queues: ['serve'], worker_id: 'w' }),
    });
    assert.equal(((await json(fetched)).jobs as unknown[]).length, 1);
  });

  it('an enqueue before the store ever initialised is 503 backend_unavailable, not 500', {}, async () => {
    // Runs against a fresh process: Redis is stopped again before it starts.
    await serve?.stop();
    await redis.kill('SIGTERM');
    serve = await startServerProcess(`${redis.url}/0?prefix=serve2`, { OJS_LOG_LEVEL: 'silent' });
    assert.equal((await fetch(`${serve.url}/ojs/v1/ready`)).status, 503);
    await assertUnavailableBody(await enqueue(serve.url, 'never'), 'POST /ojs/v1/jobs before init');
  });
});
