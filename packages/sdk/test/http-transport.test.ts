import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  BackendError,
  ConflictError,
  ConnectionError,
  HttpTransport,
  NotFoundError,
  OjsClient,
  RateLimitedError,
  TimeoutError,
  UnsupportedFeatureError,
  ValidationError,
} from '@ojs/sdk';
import { normalizeBaseUrl, parseRetryAfter } from '../src/http.ts';
import { startTestServer, type TestServer } from './helpers.ts';

type Handler = (url: string, init: RequestInit) => Promise<Response> | Response;

/** A fetch that answers from a script and records the calls. */
function scriptedFetch(...steps: Handler[]) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const fetchImpl = (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = String(input);
    calls.push({ url, init });
    const step = steps[Math.min(calls.length - 1, steps.length - 1)]!;
    return step(url, init);
  }) as typeof fetch;
  return { fetchImpl, calls };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/openjobspec+json', ...headers },
  });

const netError = (code: string) => {
  const error = new TypeError('fetch failed');
  (error as { cause?: unknown }).cause = Object.assign(new Error(code), { code });
  return error;
};

const fastRetry = { initialDelayMs: 1, maxDelayMs: 5 };
const job = {
  id: '01900000-0000-7000-8000-000000000001',
  type: 'a.b',
  state: 'available',
  args: [],
  meta: {},
  queue: 'default',
  attempt: 0,
};

describe('HttpTransport retries', () => {
  it('retries 503 and 429 (honouring Retry-After) then succeeds', async () => {
    const { fetchImpl, calls } = scriptedFetch(
      () =>
        json(
          503,
          { error: { code: 'backend_unavailable', message: 'down', retryable: true } },
          { 'retry-after': '0' },
        ),
      () =>
        json(
          429,
          { error: { code: 'rate_limited', message: 'slow down' } },
          { 'retry-after': '0.05' },
        ),
      () => json(201, { job }),
    );
    const client = new OjsClient({ url: 'http://ojs.test', fetch: fetchImpl, retry: fastRetry });
    const started = Date.now();
    const created = await client.enqueue('a.b', [], { id: job.id });
    assert.equal(created?.id, job.id);
    assert.equal(calls.length, 3);
    assert.ok(Date.now() - started >= 45, 'waited for Retry-After');
    // The same body (same client-generated id) every time.
    assert.equal(calls[0]!.init.body, calls[2]!.init.body);
    const sent = JSON.parse(String(calls[0]!.init.body));
    assert.equal(sent.id, job.id);
    assert.equal(
      (calls[0]!.init.headers as Record<string, string>)['Content-Type'],
      'application/openjobspec+json',
    );
  });

  it('gives up after maxRetries with the last error', async () => {
    const { fetchImpl, calls } = scriptedFetch(() =>
      json(
        503,
        { error: { code: 'backend_unavailable', message: 'down' } },
        { 'retry-after': '0' },
      ),
    );
    const transport = new HttpTransport({
      url: 'http://ojs.test',
      fetch: fetchImpl,
      retry: { ...fastRetry, maxRetries: 2 },
    });
    await assert.rejects(transport.getJob('x'), (error: unknown) => {
      assert.ok(error instanceof BackendError);
      assert.equal(error.attempt, 3);
      assert.equal(error.operation, 'get_job');
      return true;
    });
    assert.equal(calls.length, 3);
  });

  it('never retries validation errors', async () => {
    const { fetchImpl, calls } = scriptedFetch(() =>
      json(400, { error: { code: 'invalid_payload', message: 'bad', retryable: true } }),
    );
    const client = new OjsClient({ url: 'http://ojs.test', fetch: fetchImpl, retry: fastRetry });
    await assert.rejects(client.enqueue('a.b', []), ValidationError);
    assert.equal(calls.length, 1);
  });

  it('retries a refused connection even for FETCH, but not an ambiguous failure', async () => {
    const refused = scriptedFetch(
      () => {
        throw netError('ECONNREFUSED');
      },
      () => json(200, { jobs: [] }),
    );
    const transport = new HttpTransport({
      url: 'http://ojs.test',
      fetch: refused.fetchImpl,
      retry: fastRetry,
    });
    assert.deepEqual(await transport.fetchJobs({ queues: ['default'], count: 1 }), []);
    assert.equal(refused.calls.length, 2);

    const reset = scriptedFetch(() => {
      throw netError('ECONNRESET');
    });
    const transport2 = new HttpTransport({
      url: 'http://ojs.test',
      fetch: reset.fetchImpl,
      retry: fastRetry,
    });
    await assert.rejects(transport2.fetchJobs({ queues: ['default'], count: 1 }), ConnectionError);
    assert.equal(reset.calls.length, 1, 'a claimed-but-lost fetch is not repeated');
    // ...while an idempotent read is.
    await assert.rejects(transport2.getJob('x'), ConnectionError);
    assert.equal(reset.calls.length, 1 + 6);
  });

  it('times out slow requests and retries idempotent ones', async () => {
    let count = 0;
    const fetchImpl = (async (_url: string, init: RequestInit) => {
      count++;
      if (count === 1) {
        return new Promise<Response>((_resolve, reject) => {
          init.signal?.addEventListener('abort', () =>
            reject(new DOMException('aborted', 'AbortError')),
          );
        });
      }
      return json(200, { job });
    }) as typeof fetch;
    const transport = new HttpTransport({
      url: 'http://ojs.test',
      fetch: fetchImpl,
      timeoutMs: 30,
      retry: fastRetry,
    });
    assert.equal((await transport.getJob(job.id)).id, job.id);
    assert.equal(count, 2);

    const never = (async (_url: string, init: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init.signal?.addEventListener('abort', () =>
          reject(new DOMException('aborted', 'AbortError')),
        );
      })) as typeof fetch;
    const slow = new HttpTransport({
      url: 'http://ojs.test',
      fetch: never,
      timeoutMs: 20,
      retry: false,
    });
    await assert.rejects(slow.getJob('x'), TimeoutError);
  });

  it('rejects with the caller abort reason, without retrying', async () => {
    const never = (async (_url: string, init: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init.signal?.addEventListener('abort', () =>
          reject(new DOMException('aborted', 'AbortError')),
        );
      })) as typeof fetch;
    const transport = new HttpTransport({ url: 'http://ojs.test', fetch: never });
    const controller = new AbortController();
    const pending = transport.getJob('x', { signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    await assert.rejects(pending, /caller gave up/);
  });

  it('reports rate limits with retryAfterMs when retries are off', async () => {
    const { fetchImpl } = scriptedFetch(() =>
      json(429, { error: { code: 'rate_limited', message: 'slow' } }, { 'retry-after': '2' }),
    );
    const transport = new HttpTransport({ url: 'http://ojs.test', fetch: fetchImpl, retry: false });
    await assert.rejects(transport.getJob('x'), (error: unknown) => {
      assert.ok(error instanceof RateLimitedError);
      assert.equal(error.retryAfterMs, 2000);
      return true;
    });
  });

  it('normalises base URLs and parses Retry-After', () => {
    assert.equal(normalizeBaseUrl('http://h:1/'), 'http://h:1');
    assert.equal(normalizeBaseUrl('http://h:1/ojs/v1/'), 'http://h:1');
    assert.equal(normalizeBaseUrl('http://h:1/base/ojs'), 'http://h:1/base');
    assert.equal(parseRetryAfter('3'), 3000);
    assert.equal(parseRetryAfter('1.5'), 1500);
    assert.equal(parseRetryAfter(null), undefined);
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now), 10_000);
  });
});

describe('idempotent retries against the real server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  /** Real fetch whose response is lost (connection reset) on the listed call numbers. */
  function lossy(lose: Set<number>) {
    let n = 0;
    return (async (input: string | URL | Request, init?: RequestInit) => {
      n++;
      const response = await fetch(input, init);
      if (lose.has(n)) {
        await response.text();
        throw netError('ECONNRESET');
      }
      return response;
    }) as typeof fetch;
  }

  it('a PUSH whose response was lost is retried and creates exactly one job', async () => {
    const client = new OjsClient({ url: server.url, fetch: lossy(new Set([1])), retry: fastRetry });
    const job = await client.enqueue('idem.push', ['x'], { queue: 'idem' });
    assert.ok(job);
    assert.equal(job.state, 'available');
    const events = await server.engine.listEvents({
      types: ['job.enqueued'],
      queues: ['idem'],
      limit: 100,
    });
    assert.equal(events.length, 1);
    assert.equal(
      (events[0] as { subject?: string; data?: { job_id?: string } }).data?.job_id ??
        events[0]!.subject,
      job.id,
    );
  });

  it('a batch whose response was lost is retried without duplicates', async () => {
    const client = new OjsClient({ url: server.url, fetch: lossy(new Set([1])), retry: fastRetry });
    const jobs = await client.enqueueBatch([
      { type: 'idem.batch', args: [1], options: { queue: 'idem-batch' } },
      { type: 'idem.batch', args: [2], options: { queue: 'idem-batch' } },
    ]);
    assert.equal(jobs.length, 2);
    const stats = await client.queueStats('idem-batch');
    assert.equal(stats.available, 2);
  });

  it('an ACK whose response was lost counts as done', async () => {
    const client = new OjsClient({ url: server.url });
    const created = await client.enqueue('idem.ack', [], { queue: 'idem-ack' });
    const transport = new HttpTransport({
      url: server.url,
      fetch: lossy(new Set([2])),
      retry: fastRetry,
    });
    const [fetched] = await transport.fetchJobs({
      queues: ['idem-ack'],
      count: 1,
      worker_id: 'w1',
    });
    assert.equal(fetched?.id, created?.id);
    const ack = await transport.ack({ job_id: fetched!.id, worker_id: 'w1', result: { ok: 1 } });
    assert.equal(ack.state, 'completed');
    assert.equal((await client.getJob(fetched!.id)).state, 'completed');
  });

  it('a unique-key duplicate (another job) is still an error', async () => {
    const client = new OjsClient({ url: server.url, retry: fastRetry });
    const first = await client.enqueue('idem.unique', ['k'], {
      unique: { keys: ['type', 'args'], onConflict: 'reject' },
    });
    assert.ok(first);
    await assert.rejects(
      client.enqueue('idem.unique', ['k'], {
        unique: { keys: ['type', 'args'], onConflict: 'reject' },
      }),
      (error: unknown) => (error as { existingJobId?: string }).existingJobId === first.id,
    );
  });
});

describe('HttpTransport.ackBatch', () => {
  const manifest = (endpoints?: Record<string, unknown>) =>
    json(200, { specversion: '1.0', ...(endpoints ? { endpoints } : {}) });
  const request = {
    acks: [
      { job_id: 'a1', worker_id: 'w', attempt: 1, result: 1 },
      { job_id: 'a2', worker_id: 'w', attempt: 2 },
    ],
    nacks: [
      {
        job_id: 'n1',
        worker_id: 'w',
        attempt: 1,
        error: { code: 'handler_error', message: 'x' },
      },
    ],
  };

  it("posts to the manifest's path and types every item's outcome", async () => {
    const { fetchImpl, calls } = scriptedFetch(
      () => manifest({ base_url: '/ojs/v1', ack_batch: 'workers/ack/batch' }),
      () =>
        json(200, {
          results: [
            { job_id: 'a1', status: 'ok', state: 'completed', attempt: 1 },
            {
              job_id: 'a2',
              status: 'conflict',
              error: {
                code: 'conflict',
                message: 'stale',
                details: { current_attempt: 3, attempt: 2 },
              },
            },
            { job_id: 'n1', status: 'not_found', error: { code: 'not_found', message: 'gone' } },
          ],
        }),
    );
    const transport = new HttpTransport({ url: 'http://ojs.test', fetch: fetchImpl });
    const { results } = await transport.ackBatch(request);
    assert.equal(calls[1]!.url, 'http://ojs.test/ojs/v1/workers/ack/batch');
    assert.deepEqual(JSON.parse(String(calls[1]!.init.body)), request);
    assert.deepEqual(results[0], { job_id: 'a1', status: 'ok', state: 'completed', attempt: 1 });
    const [, stale, gone] = results;
    assert.equal(stale!.status, 'conflict');
    assert.ok(stale!.status === 'conflict' && stale!.error instanceof ConflictError);
    assert.equal(stale!.status === 'conflict' && stale!.error.jobId, 'a2');
    assert.ok(gone!.status === 'not_found' && gone!.error instanceof NotFoundError);
    // The path is remembered: the next batch goes straight there.
    await transport.ackBatch(request).catch(() => {});
    assert.equal(calls.length, 3);
  });

  it('without endpoints.ack_batch it rejects with UnsupportedFeatureError', async () => {
    const { fetchImpl, calls } = scriptedFetch(() => manifest());
    const transport = new HttpTransport({ url: 'http://ojs.test', fetch: fetchImpl });
    await assert.rejects(transport.ackBatch(request), UnsupportedFeatureError);
    assert.equal(calls.length, 1, 'only the manifest was read');
  });

  it('retries a refused batch with backoff; after an ambiguous failure, a landed item is settled', async () => {
    const landed = (id: string, state: string) => ({
      job_id: id,
      status: 'conflict',
      error: { code: 'conflict', message: 'not active', details: { current_state: state } },
    });
    const { fetchImpl, calls } = scriptedFetch(
      () => manifest({ ack_batch: 'http://ojs.test/custom/ack-batch' }),
      () =>
        json(
          503,
          { error: { code: 'backend_unavailable', message: 'busy' } },
          { 'retry-after': '0' },
        ),
      () => {
        throw netError('ECONNRESET');
      },
      () =>
        json(200, {
          results: [landed('a1', 'completed'), landed('a2', 'active'), landed('n1', 'retryable')],
        }),
    );
    const transport = new HttpTransport({
      url: 'http://ojs.test',
      fetch: fetchImpl,
      retry: fastRetry,
    });
    const { results } = await transport.ackBatch(request);
    assert.equal(calls.length, 4);
    assert.ok(calls.slice(1).every((c) => c.url === 'http://ojs.test/custom/ack-batch'));
    assert.deepEqual(results[0], { job_id: 'a1', status: 'ok', state: 'completed' });
    // Still active: this conflict is not the landed first try (another attempt holds it).
    assert.equal(results[1]!.status, 'conflict');
    assert.deepEqual(results[2], { job_id: 'n1', status: 'ok', state: 'retryable' });
  });
});
