/**
 * Observability of the server (issue 16): health, readiness and liveness
 * without an API key; the request id echoed; GET /metrics with exact
 * counters after a known workload on every store; the job lifecycle log.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ErrorThrottle, LifecycleLog } from '@ojs/engine';
import { pino } from 'pino';
import { setup } from './helpers.ts';
import { type LiveServer, startLiveServer, storeKinds } from './stores.ts';

const ADMIN = 'admin-key-0123456789';

/** A pino logger whose lines are kept in memory (parsed). */
function memoryLogger(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

/** Value of one sample line of a Prometheus text exposition, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort();
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const have = (match[2] ?? '')
      .split(',')
      .filter((pair) => pair !== '')
      .sort();
    if (wanted.every((pair) => have.includes(pair)) && have.length === wanted.length) {
      return Number(match[3]);
    }
  }
  return undefined;
}

describe('health, readiness and liveness', () => {
  it('answer without an API key when keys are on, and echo the request id', async () => {
    const ctx = await setup();
    try {
      // Same engine behind an app with keys.
      const { buildApp } = await import('../src/app.ts');
      const app = await buildApp({ auth: { keys: [{ key: ADMIN, role: 'admin' }] } }, ctx.engine);
      for (const path of ['/ojs/v1/health', '/health', '/ojs/v1/ready', '/ready', '/live']) {
        const res = await app.inject({
          method: 'GET',
          url: path,
          headers: { 'x-request-id': 'probe-1' },
        });
        assert.equal(res.statusCode, 200, path);
        assert.equal(res.headers['x-request-id'], 'probe-1', path);
      }
      assert.equal((await app.inject({ method: 'GET', url: '/ojs/v1/queues' })).statusCode, 401);
      assert.equal((await app.inject({ method: 'POST', url: '/health' })).statusCode, 401);
      const health = (await app.inject({ method: 'GET', url: '/health' })).json();
      assert.equal(health.status, 'ok');
      assert.deepEqual(Object.keys(health.backend).sort(), ['latency_ms', 'status', 'type']);
      await app.close();
    } finally {
      await ctx.close();
    }
  });

  it('readiness is 503 while the server drains, liveness stays 200', async () => {
    const ctx = await setup();
    try {
      assert.deepEqual((await ctx.req('GET', '/ojs/v1/ready')).json(), { status: 'ready' });
      ctx.engine.beginDrain();
      const ready = await ctx.req('GET', '/ready');
      assert.equal(ready.statusCode, 503);
      assert.deepEqual(ready.json(), { status: 'not_ready', reason: 'draining' });
      assert.equal((await ctx.req('GET', '/live')).statusCode, 200);
    } finally {
      await ctx.close();
    }
  });

  it('readiness and health are 503 while the store is unreachable, without its error text', async () => {
    const ctx = await setup();
    await ctx.store.close();
    const ready = await ctx.req('GET', '/ojs/v1/ready');
    assert.equal(ready.statusCode, 503);
    assert.deepEqual(ready.json(), { status: 'not_ready', reason: 'store_unreachable' });
    const health = await ctx.req('GET', '/ojs/v1/health');
    assert.equal(health.statusCode, 503);
    assert.equal(health.json().backend.status, 'unhealthy');
    assert.equal(health.json().backend.error, 'store unreachable');
    assert.equal((await ctx.req('GET', '/live')).statusCode, 200);
    await ctx.app.close();
  });
});

for (const kind of await storeKinds()) {
  describe(`GET /metrics after a known workload (${kind})`, () => {
    let server: LiveServer;
    before(async () => {
      server = await startLiveServer(kind, { testMode: true });
    });
    after(() => server.close());

    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.ok(res.ok, `${path}: ${res.status} ${await res.clone().text()}`);
      return (await res.json()) as Record<string, unknown>;
    };

    it('100 enqueued, 90 completed, 10 discarded: exact counters, depths and histograms', async () => {
      const jobs = Array.from({ length: 100 }, (_, i) => ({
        type: 'obs.work',
        args: [i],
        options: { queue: 'obs', retry: { max_attempts: 1 } },
      }));
      await post('/ojs/v1/jobs/batch', { jobs: jobs.slice(0, 50) });
      for (const job of jobs.slice(50)) await post('/ojs/v1/jobs', job);
      const fetched = (await post('/ojs/v1/workers/fetch', {
        queues: ['obs'],
        count: 100,
        worker_id: 'w1',
      })) as { jobs: { id: string; attempt: number }[] };
      assert.equal(fetched.jobs.length, 100);
      for (const [i, job] of fetched.jobs.entries()) {
        if (i < 90) {
          await post('/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w1', attempt: 1 });
        } else {
          await post('/ojs/v1/workers/nack', {
            job_id: job.id,
            worker_id: 'w1',
            attempt: 1,
            error: { code: 'boom', message: 'secret args 42' },
          });
        }
      }
      const res = await fetch(`${server.url}/metrics`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'text/plain');
      const text = await res.text();
      const job = { queue: 'obs', type: 'obs.work' };
      assert.equal(sample(text, 'ojs_job_enqueued_total', job), 100);
      assert.equal(sample(text, 'ojs_job_started_total', job), 100);
      assert.equal(sample(text, 'ojs_job_completed_total', job), 90);
      assert.equal(sample(text, 'ojs_job_failed_total', job), 10);
      assert.equal(sample(text, 'ojs_job_retried_total', job), 0);
      assert.equal(sample(text, 'ojs_job_queue_time_seconds_count', job), 100);
      assert.equal(
        sample(text, 'ojs_job_duration_seconds_count', { ...job, state: 'completed' }),
        90,
      );
      assert.equal(
        sample(text, 'ojs_job_duration_seconds_count', { ...job, state: 'discarded' }),
        10,
      );
      assert.equal(sample(text, 'ojs_queue_depth', { queue: 'obs', state: 'completed' }), 90);
      assert.equal(sample(text, 'ojs_queue_depth', { queue: 'obs', state: 'discarded' }), 10);
      assert.equal(sample(text, 'ojs_queue_depth', { queue: 'obs', state: 'available' }), 0);
      assert.equal(sample(text, 'ojs_workers_busy', { queue: 'obs' }), 0);
      const http = (route: string, status = '200') =>
        sample(text, 'ojs_http_request_duration_seconds_count', {
          method: 'POST',
          route,
          status_code: status,
        });
      assert.equal(http('/ojs/v1/workers/ack'), 90);
      assert.equal(http('/ojs/v1/workers/nack'), 10);
      assert.equal(http('/ojs/v1/jobs', '201'), 50);
      assert.ok(
        (sample(text, 'ojs_store_operation_duration_seconds_count', { operation: 'claimJobs' }) ??
          0) >= 1,
      );
      // Cancels count, whichever way they come: five in bulk, one alone.
      const cancel = Array.from({ length: 6 }, () => ({
        type: 'obs.cancel',
        args: [],
        options: { queue: 'obs-cancel' },
      }));
      const { jobs: toCancel } = (await post('/ojs/v1/jobs/batch', { jobs: cancel })) as {
        jobs: { id: string }[];
      };
      const single = await fetch(`${server.url}/ojs/v1/jobs/${toCancel[5]!.id}`, {
        method: 'DELETE',
      });
      assert.equal(single.status, 200);
      const bulk = (await post('/ojs/v1/admin/jobs/bulk/cancel', {
        filter: { queue: 'obs-cancel', state: 'available' },
        confirm: true,
      })) as { succeeded: number };
      assert.equal(bulk.succeeded, 5);
      const after = await (await fetch(`${server.url}/metrics`)).text();
      assert.equal(
        sample(after, 'ojs_job_cancelled_total', { queue: 'obs-cancel', type: 'obs.cancel' }),
        6,
      );
      // Labels stay low-cardinality: no job id, no error message.
      assert.doesNotMatch(text, /secret args/);
      assert.doesNotMatch(text, new RegExp(fetched.jobs[0]!.id));
    });
  });
}

describe('job lifecycle log', () => {
  it('logs each change with id, type, queue, state and attempt, never args or meta', async () => {
    const { logger, lines } = memoryLogger();
    const ctx = await setup();
    ctx.engine.observers.add(new LifecycleLog(logger));
    try {
      const job = await ctx.enqueue({
        type: 'log.work',
        args: ['private-arg'],
        meta: { user: 'private-meta' },
        options: { queue: 'logq', retry: { max_attempts: 2 } },
      });
      const id = job.id as string;
      await ctx.fetch({ queues: ['logq'], worker_id: 'w' });
      await ctx.req('POST', '/ojs/v1/workers/nack', {
        job_id: id,
        error: { code: 'boom', message: 'failed on private-arg' },
      });
      const messages = lines.map((line) => [line.msg, line['ojs.job.state'], line.level]);
      assert.deepEqual(messages, [
        ['job enqueued', 'available', 30],
        ['job started', 'active', 30],
        ['job failed', 'retryable', 40],
      ]);
      for (const line of lines) {
        assert.equal(line['ojs.job.id'], id);
        assert.equal(line['ojs.job.type'], 'log.work');
        assert.equal(line['ojs.job.queue'], 'logq');
      }
      assert.equal(lines[2]!['ojs.job.attempt'], 1);
      assert.equal(lines[2]!.error_code, 'boom');
      assert.equal(typeof lines[2]!.duration_ms, 'number');
      assert.doesNotMatch(JSON.stringify(lines), /private/);
    } finally {
      await ctx.close();
    }
  });

  it('routine lines can be moved to debug; failures stay at warn and error', async () => {
    const { logger, lines } = memoryLogger('info');
    const ctx = await setup();
    ctx.engine.observers.add(new LifecycleLog(logger, 'debug'));
    try {
      const job = await ctx.enqueue({
        type: 'log.work',
        args: [],
        options: { queue: 'q', retry: { max_attempts: 1 } },
      });
      await ctx.fetch({ queues: ['q'] });
      await ctx.req('POST', '/ojs/v1/workers/nack', { job_id: job.id, error: { message: 'x' } });
      assert.deepEqual(
        lines.map((line) => [line.msg, line.level]),
        [['job discarded', 50]],
      );
    } finally {
      await ctx.close();
    }
  });
});

describe('request logs', () => {
  it('are off by default and, with logRequests, one line per request through the engine logger', async () => {
    const { logger, lines } = memoryLogger();
    const { SqliteStore } = await import('@ojs/store-sqlite');
    const { Engine } = await import('@ojs/engine');
    const { buildApp } = await import('../src/app.ts');
    const store = new SqliteStore({ path: ':memory:' });
    await store.init();
    const engine = new Engine({ store, logger });
    const quiet = await buildApp({}, engine);
    await quiet.inject({ method: 'GET', url: '/ojs/v1/health' });
    assert.equal(lines.length, 0);
    await quiet.close();
    const app = await buildApp({ logRequests: true }, engine);
    await app.inject({
      method: 'GET',
      url: '/ojs/v1/queues',
      headers: { 'x-request-id': 'req-7' },
    });
    const completed = lines.find((line) => line.msg === 'request completed');
    assert.equal(completed?.reqId, 'req-7');
    assert.equal((completed?.res as { statusCode: number } | undefined)?.statusCode, 200);
    await app.close();
    await store.close();
  });
});

describe('log and metrics configuration', () => {
  it('reads levels, formats and switches, and names a typo', async () => {
    const { optionsFromEnv, parseLogFormat, parseLogLevel } = await import('../src/serve.ts');
    assert.equal(parseLogLevel('debug'), 'debug');
    assert.equal(parseLogFormat('pretty'), 'pretty');
    assert.throws(() => parseLogLevel('verbose'), /Log level must be one of .* \(got 'verbose'\)/);
    assert.throws(() => parseLogFormat('xml'), /Log format must be one of json, pretty/);
    assert.deepEqual(
      optionsFromEnv({
        OJS_LOG_LEVEL: 'warn',
        OJS_LOG_FORMAT: 'json',
        OJS_LOG_REQUESTS: 'on',
        OJS_METRICS: 'off',
      }),
      { logLevel: 'warn', logFormat: 'json', logRequests: true, metrics: false },
    );
    assert.throws(() => optionsFromEnv({ OJS_METRICS: 'maybe' }), /OJS_METRICS must be on or off/);
  });

  it('--metrics off: no /metrics route and the manifest says so', async () => {
    const server = await startLiveServer('sqlite', { metrics: false });
    try {
      assert.equal((await fetch(`${server.url}/metrics`)).status, 404);
      const manifest = (await (await fetch(`${server.url}/ojs/manifest`)).json()) as {
        capabilities: { metrics: boolean };
      };
      assert.equal(manifest.capabilities.metrics, false);
    } finally {
      await server.close();
    }
  });
});

describe('job lifecycle log levels', () => {
  it('a logger at error still gets the discarded job; one at warn its failed attempts too', async () => {
    for (const [level, expected] of [
      ['error', [['job discarded', 50]]],
      [
        'warn',
        [
          ['job failed', 40],
          ['job discarded', 50],
        ],
      ],
    ] as const) {
      const { logger, lines } = memoryLogger(level);
      const ctx = await setup();
      ctx.engine.observers.add(new LifecycleLog(logger));
      try {
        const job = await ctx.enqueue({
          type: 'log.work',
          args: [],
          options: {
            queue: 'lv',
            retry: { max_attempts: 2, initial_interval: 'PT1S', jitter: false },
          },
        });
        for (let attempt = 1; attempt <= 2; attempt++) {
          ctx.clock.advance(5000);
          await ctx.engine.promoteDueJobs();
          await ctx.fetch({ queues: ['lv'] });
          await ctx.req('POST', '/ojs/v1/workers/nack', {
            job_id: job.id,
            error: { message: 'x' },
          });
        }
        assert.deepEqual(
          lines.map((line) => [line.msg, line.level]),
          expected,
          level,
        );
      } finally {
        await ctx.close();
      }
    }
  });
});

describe('background failures', () => {
  it('are logged once per outage, summarised, and the recovery is logged', () => {
    const { logger, lines } = memoryLogger();
    let now = 0;
    const throttle = new ErrorThrottle(logger, 30_000, () => now);
    for (let i = 0; i < 100; i++) {
      throttle.failed('promoter', new Error('connection refused'));
      now += 100; // 10 seconds of ticks every 100 ms
    }
    assert.equal(lines.length, 1);
    now += 25_000;
    throttle.failed('promoter', new Error('connection refused'));
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.suppressed, 99);
    throttle.succeeded('promoter');
    throttle.succeeded('promoter');
    assert.equal(lines.length, 3);
    assert.equal(lines[2]!.msg, 'background task recovered');
  });
});
