/**
 * FETCH long poll over real HTTP: an empty fetch with wait_ms waits, and an
 * enqueue wakes it before the deadline.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type RunningServer, startServer } from '../src/index.ts';

const post = async (url: string, body: unknown) => {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/openjobspec+json' },
    body: JSON.stringify(body),
  });
  return (await response.json()) as { jobs: { id: string }[] };
};

describe('long-poll fetch', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ port: 0, store: ':memory:', testMode: true, logLevel: 'silent' });
  });
  after(() => server.close());
  const enqueue = async (queue: string) =>
    (await (
      await fetch(`${server.url}/ojs/v1/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/openjobspec+json' },
        body: JSON.stringify({ type: 'lp.test', args: [], options: { queue } }),
      })
    ).json()) as { job: { id: string } };

  it('waits for wait_ms when nothing is available', async () => {
    const started = performance.now();
    const result = await post(`${server.url}/ojs/v1/workers/fetch`, {
      queues: ['lp-empty'],
      wait_ms: 300,
    });
    assert.deepEqual(result.jobs, []);
    assert.ok(performance.now() - started >= 280, 'the fetch returned before its wait');
  });

  it('is woken by an enqueue and returns the job', async () => {
    const waiting = post(`${server.url}/ojs/v1/workers/fetch`, {
      queues: ['lp-wake'],
      wait_ms: 10_000,
    });
    // Enqueue once the fetch is parked on the notifier (a signal, not a sleep).
    while (server.engine.notifier.waiting === 0) await new Promise((r) => setImmediate(r));
    const enqueued = await enqueue('lp-wake');
    const result = await waiting;
    assert.equal(result.jobs[0]?.id, enqueued.job.id);
  });

  it('stops waiting when its client goes away, and claims nothing for it', async () => {
    const gone = new AbortController();
    const abandoned = fetch(`${server.url}/ojs/v1/workers/fetch`, {
      method: 'POST',
      headers: { 'content-type': 'application/openjobspec+json' },
      body: JSON.stringify({ queues: ['lp-gone'], worker_id: 'lp-gone-1', wait_ms: 10_000 }),
      signal: gone.signal,
    }).catch((error: unknown) => error);
    while (server.engine.notifier.waiting === 0) await new Promise((r) => setImmediate(r));
    gone.abort();
    assert.equal(((await abandoned) as Error).name, 'AbortError');
    // The server sees the connection close and ends the wait (a signal, not a sleep).
    while (server.engine.notifier.waiting > 0) await new Promise((r) => setImmediate(r));
    const enqueued = await enqueue('lp-gone');
    // The job is still there for the next fetch: the abandoned one did not take it.
    const next = await post(`${server.url}/ojs/v1/workers/fetch`, {
      queues: ['lp-gone'],
      worker_id: 'lp-gone-2',
    });
    assert.equal(next.jobs[0]?.id, enqueued.job.id);
  });
});
