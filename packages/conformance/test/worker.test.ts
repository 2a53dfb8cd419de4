import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { uuidv7 } from '@ojs/core';
import { startServer } from '@ojs/server';
import { STANDARD_HANDLERS } from '../src/seed-loader.ts';
import {
  BuiltinWorker,
  decide,
  produceResult,
  slowDurationMs,
  type WorkerEvent,
} from '../src/worker.ts';

describe('standard handlers (seed §5.4)', () => {
  it('decide() implements all nine', () => {
    const kinds = STANDARD_HANDLERS.map((h) => [h, decide(h, ['a'], 1, {}).kind]);
    assert.deepEqual(kinds, [
      ['test.echo', 'ack'],
      ['test.fail_once', 'nack'],
      ['test.fail_twice', 'nack'],
      ['test.fail_always', 'nack'],
      ['test.slow', 'slow'],
      ['test.timeout', 'hold'],
      ['test.panic', 'abandon'],
      ['test.produce', 'ack'],
      ['test.noop', 'ack'],
    ]);
    assert.deepEqual(decide('test.echo', [1, 'x'], 1, {}), { kind: 'ack', result: [1, 'x'] });
    assert.equal(decide('test.fail_once', [], 2, {}).kind, 'ack');
    assert.equal(decide('test.fail_twice', [], 2, {}).kind, 'nack');
    assert.equal(decide('test.fail_twice', [], 3, {}).kind, 'ack');
    assert.equal(decide('test.fail_always', [], 9, {}).kind, 'nack');
    assert.deepEqual(decide('test.noop', ['x'], 1, {}), { kind: 'ack' });
    assert.deepEqual(decide('test.fail_always', [], 1, {}), {
      kind: 'nack',
      code: 'handler_error',
      message: 'test.fail_always: deliberate failure on attempt 1',
      retryable: true,
    });
    assert.deepEqual(decide('other.type', [], 1, {}), {
      kind: 'nack',
      code: 'handler_not_found',
      message: 'no conformance handler for job type "other.type"',
      retryable: false,
    });
  });
  it('test.slow reads its duration from setup or args', () => {
    assert.equal(slowDurationMs([]), 1000);
    assert.equal(slowDurationMs([5]), 5000);
    assert.equal(slowDurationMs(['PT0.2S']), 200);
    assert.equal(slowDurationMs([{ duration_ms: 30 }]), 30);
    assert.equal(slowDurationMs([{ duration: 'PT2S' }]), 2000);
    assert.equal(slowDurationMs([5], { duration: 'PT3S' }), 3000);
    assert.equal(slowDurationMs([5], { duration_ms: 10 }), 10);
  });
  it('test.produce returns the configured result', () => {
    assert.equal(produceResult(['step1_output']), 'step1_output');
    assert.deepEqual(produceResult([1, 2]), [1, 2]);
    assert.deepEqual(produceResult([]), []);
    assert.deepEqual(produceResult(['x'], { result: { answer: 42 } }), { answer: 42 });
  });
});

describe('BuiltinWorker over the HTTP worker protocol', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    server = await startServer({ port: 0, store: ':memory:', testMode: true, logLevel: 'silent' });
  });
  after(() => server.close());

  async function enqueue(body: unknown): Promise<string> {
    const res = await fetch(`${server.url}/ojs/v1/jobs`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 201);
    return ((await res.json()) as { job: { id: string } }).job.id;
  }
  async function job(id: string): Promise<Record<string, unknown>> {
    const res = await fetch(`${server.url}/ojs/v1/jobs/${id}`);
    return ((await res.json()) as { job: Record<string, unknown> }).job;
  }
  async function until(events: WorkerEvent[], test: (e: WorkerEvent) => boolean, ms = 5000) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const found = events.find(test);
      if (found) return found;
      await sleep(20);
    }
    assert.fail(`no matching worker event in ${JSON.stringify(events)}`);
  }

  it('executes echo, retries fail_once and records the protocol timeline', async () => {
    const worker = new BuiltinWorker({ baseUrl: server.url, queues: ['w1'], fetchWaitMs: 200 });
    worker.start();
    try {
      const echo = await enqueue({ type: 'test.echo', args: ['hi', 2], options: { queue: 'w1' } });
      const flaky = await enqueue({
        type: 'test.fail_once',
        args: [],
        options: {
          queue: 'w1',
          retry: { max_attempts: 2, initial_interval: 'PT0.2S', jitter: false },
        },
      });
      const acked = await until(worker.events, (e) => e.kind === 'ack' && e.job_id === echo);
      assert.equal(acked.state, 'completed');
      assert.deepEqual((await job(echo)).result, ['hi', 2]);
      await until(worker.events, (e) => e.kind === 'ack' && e.job_id === flaky);
      assert.deepEqual(
        worker.eventsFor(flaky).map((e) => `${e.kind}:${e.attempt}:${e.state ?? ''}`),
        ['fetch:1:', 'nack:1:retryable', 'fetch:2:', 'ack:2:completed'],
      );
      assert.equal((await job(flaky)).state, 'completed');
    } finally {
      await worker.stop();
    }
  });

  it('heartbeats test.slow past its visibility timeout; panic drops the job', async () => {
    const worker = new BuiltinWorker({
      baseUrl: server.url,
      queues: ['w2'],
      config: { duration_ms: 1200 },
      fetchWaitMs: 200,
    });
    worker.start();
    try {
      const slow = await enqueue({
        type: 'test.slow',
        args: [],
        options: { queue: 'w2', visibility_timeout_ms: 500 },
      });
      const done = await until(worker.events, (e) => e.kind === 'ack' && e.job_id === slow);
      assert.equal(done.status, 200);
      assert.equal(worker.eventsFor(slow).filter((e) => e.kind === 'fetch').length, 1);
      const crash = await enqueue({ type: 'test.panic', args: [], options: { queue: 'w2' } });
      await until(worker.events, (e) => e.kind === 'abandon' && e.job_id === crash);
      assert.equal((await job(crash)).state, 'active');
    } finally {
      await worker.stop();
    }
  });

  it('limitAttempts stops fetching; stop() abandons held jobs', async () => {
    const worker = new BuiltinWorker({ baseUrl: server.url, queues: ['w3'], fetchWaitMs: 200 });
    worker.start();
    // The limit is set before the job exists: a fetch answered before the
    // enqueue's own reply must already see it.
    const held = uuidv7();
    worker.limitAttempts(held, 1);
    await enqueue({
      id: held,
      type: 'test.timeout',
      args: [],
      options: { queue: 'w3', visibility_timeout_ms: 300 },
    });
    await until(worker.events, (e) => e.kind === 'hold' && e.job_id === held);
    // Every fetch loop has ended: nothing can fetch the job again.
    await worker.fetchingEnded();
    // Its lease (300 ms) expires and it is available to any other worker.
    const deadline = Date.now() + 5000;
    while ((await job(held)).state !== 'available') {
      assert.ok(Date.now() < deadline, 'the held job never became available again');
      await sleep(20);
    }
    assert.equal(
      worker.eventsFor(held).filter((e) => e.kind === 'fetch').length,
      1,
      'not fetched again',
    );
    await worker.stop();
    assert.ok(worker.eventsFor(held).some((e) => e.kind === 'abandon'));
  });
});
