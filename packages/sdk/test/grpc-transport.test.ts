/**
 * The SDK over the gRPC binding (GrpcTransport): the client API and a
 * worker, with typed errors, against a real server on each store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  DuplicateJobError,
  JobNotFoundError,
  type OjsClient,
  UnsupportedFeatureError,
  ValidationError,
} from '@ojs/sdk';
import { GrpcTransport } from '@ojs/sdk/grpc';
import { startTestServer, type TestServer, testStores } from './helpers.ts';

for (const store of await testStores()) {
  describe(`GrpcTransport (${store})`, () => {
    let server: TestServer;
    let client: OjsClient;
    before(async () => {
      server = await startTestServer({ store });
      client = server.client('grpc');
    });
    after(async () => {
      await client.close();
      await server.close();
    });

    test('enqueue, get, cancel with the HTTP wire shapes', async () => {
      const job = await client.enqueue('grpc.sdk', [1, 'two', { three: 3 }], {
        queue: 'sdk-q',
        priority: 4,
        timeoutMs: 5_000,
        retry: { maxAttempts: 5 },
        meta: { tenant: 'acme' },
        tags: ['a'],
      });
      assert.ok(job);
      assert.equal(job.state, 'available');
      assert.deepEqual(job.args, [1, 'two', { three: 3 }]);
      assert.equal(job.priority, 4);
      assert.equal(job.timeout_ms, 5_000);
      assert.equal(job.max_attempts, 5);
      assert.deepEqual(job.meta, { tenant: 'acme' });
      const got = await client.getJob(job.id);
      assert.equal(got.id, job.id);
      assert.equal(typeof got.created_at, 'string');
      // The same job over HTTP.
      const http = await server.client('http').getJob(job.id);
      assert.deepEqual(http.args, got.args);
      const cancelled = await client.cancel(job.id);
      assert.equal(cancelled.state, 'cancelled');
    });

    test('errors are the typed SDK errors', async () => {
      await assert.rejects(
        client.getJob('019a0000-0000-7000-8000-000000000000'),
        (e) => e instanceof JobNotFoundError || (e as Error).name === 'NotFoundError',
      );
      await assert.rejects(client.enqueue('Bad Type', []), ValidationError);
      const unique = { keys: ['type' as const], onConflict: 'reject' as const };
      await client.enqueue('only.once.sdk', [], { unique });
      await assert.rejects(client.enqueue('only.once.sdk', [], { unique }), DuplicateJobError);
      await assert.rejects(server.transport('grpc')!.listEvents({}), UnsupportedFeatureError);
    });

    test('a worker over gRPC runs, retries and completes jobs', async () => {
      const ok = await client.enqueue('sdk.ok', [2], { queue: 'sdk-work' });
      const flaky = await client.enqueue('sdk.flaky', [], {
        queue: 'sdk-work',
        retry: { maxAttempts: 2, initialInterval: 'PT0.1S' },
      });
      const worker = server.worker('grpc', { queues: ['sdk-work'], concurrency: 4 });
      let failures = 0;
      worker.register('sdk.ok', async (job) => ({ doubled: (job.args[0] as number) * 2 }));
      worker.register('sdk.flaky', async () => {
        if (failures++ === 0) throw new Error('first try fails');
        return 'second';
      });
      await worker.start();
      try {
        const deadline = Date.now() + 15_000;
        for (;;) {
          const [a, b] = await Promise.all([client.getJob(ok!.id), client.getJob(flaky!.id)]);
          if (a.state === 'completed' && b.state === 'completed') {
            assert.deepEqual(a.result, { doubled: 4 });
            assert.equal(b.result, 'second');
            assert.equal(b.attempt, 2);
            break;
          }
          assert.ok(Date.now() < deadline, `states ${a.state}/${b.state}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      } finally {
        await worker.stop();
      }
    });

    test('queues, cron and workflows', async () => {
      await client.enqueue('sdk.q', [], { queue: 'sdk-admin' });
      await client.pauseQueue('sdk-admin');
      assert.equal((await client.queueStats('sdk-admin')).paused, true);
      await client.resumeQueue('sdk-admin');
      const stats = await client.queueStats('sdk-admin');
      assert.equal(stats.paused, false);
      assert.equal(stats.available, 1);
      assert.ok((await client.listQueues()).some((q) => q.name === 'sdk-admin'));

      const cron = await client.registerCron({
        name: 'sdk-cron',
        expression: '*/5 * * * *',
        job: { type: 'sdk.tick', args: [1] },
      });
      assert.equal(cron.name, 'sdk-cron');
      assert.equal(cron.expression, '*/5 * * * *');
      assert.ok((await client.listCron()).some((c) => c.name === 'sdk-cron'));
      await client.unregisterCron('sdk-cron');

      const wf = await client.chain(
        [
          { type: 'sdk.one', args: [] },
          { type: 'sdk.two', args: [] },
        ],
        { name: 'sdk-chain' },
      );
      assert.equal(wf.state, 'running');
      const read = await client.getWorkflow(wf.id);
      assert.deepEqual(
        read.steps?.map((s) => (s as { depends_on?: string[] }).depends_on),
        [[], ['0']],
      );
      assert.equal((await client.cancelWorkflow(wf.id)).state, 'cancelled');
    });

    test('an address is required', () => {
      assert.throws(() => new GrpcTransport({ address: '' }), TypeError);
    });
  });
}
