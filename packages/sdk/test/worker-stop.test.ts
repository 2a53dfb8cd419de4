/**
 * An idle HTTP worker stops at once: stop() announces `terminate` in a
 * heartbeat and the server answers the worker's waiting long polls right
 * away, instead of after wait_ms. The answer is an ordinary response, so a
 * job claimed in that instant is delivered and requeued: none is stranded.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OjsClient, OjsWorker } from '@ojs/sdk';
import { type RunningServer, startServer } from '@ojs/server';
import { waitFor } from './helpers.ts';

describe('worker stop during an idle long poll (HTTP)', () => {
  let server: RunningServer;
  let client: OjsClient;
  before(async () => {
    // The server's cap on wait_ms (30 s) is what an idle worker would wait out.
    server = await startServer({ port: 0, store: ':memory:', testMode: true });
    client = new OjsClient({ url: server.url });
  });
  after(() => server.close());

  const idleWorker = (queue: string) =>
    new OjsWorker({
      url: server.url,
      queues: [queue],
      pollWaitMs: 30_000,
      handleSignals: false,
      heartbeatIntervalMs: 60_000,
    });

  it('ends the waiting fetch at once (well inside its 30 s wait)', {
    timeout: 10_000,
  }, async () => {
    const worker = idleWorker('idle-a');
    worker.register('noop.run', async () => null);
    await worker.start();
    // The worker keeps two fetches in flight: both wait.
    await waitFor(() => server.engine.waitingFetchCount === 2, { what: 'the long polls' });
    await worker.stop();
    assert.equal(server.engine.waitingFetchCount, 0);
  });

  it('never strands a job pushed as it stops: it is available again', {
    timeout: 10_000,
  }, async () => {
    const worker = idleWorker('idle-b');
    worker.register('noop.run', async () => {
      throw new Error('the stopping worker must not run it');
    });
    await worker.start();
    // The worker keeps two fetches in flight: both wait.
    await waitFor(() => server.engine.waitingFetchCount === 2, { what: 'the long polls' });
    // The push wakes the long poll as the terminate heartbeat ends it: either
    // the fetch claims the job (the worker requeues it) or it never does.
    const [job] = await Promise.all([
      client.enqueue('noop.run', [], { queue: 'idle-b' }),
      worker.stop(),
    ]);
    assert.ok(job);
    const now = await client.getJob(job.id);
    assert.equal(now.state, 'available');
  });
});
