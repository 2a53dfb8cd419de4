/**
 * The SDK over the gRPC binding (GrpcTransport): the client API and a
 * worker, with typed errors, against a real server on each store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  DuplicateJobError,
  type Job,
  JobNotFoundError,
  OjsClient,
  OjsError,
  RateLimitedError,
  TimeoutError,
  UnsupportedFeatureError,
  ValidationError,
} from '@ojs/sdk';
import { GrpcTransport } from '@ojs/sdk/grpc';
import { LOADER_OPTIONS, PROTO_FILES } from '@ojs/sdk/proto-wire';
import { startTestServer, type TestServer, testStores } from './helpers.ts';

type Obj = Record<string, unknown>;
type Done = (error: Error | null, response?: Obj) => void;

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

    test("a worker's beat is one HeartbeatMany: extended, cancelled and lost jobs", async () => {
      const transport = server.transport('grpc')!;
      const queue = 'sdk-beat';
      const [a, b, c] = await Promise.all(
        ['a', 'b', 'c'].map((type) => client.enqueue(`beat.${type}`, [], { queue })),
      );
      const fetched = await transport.fetchJobs({ queues: [queue], count: 3, worker_id: 'w-beat' });
      assert.equal(fetched.length, 3);
      await client.cancel(b!.id);
      const beat = await transport.heartbeat({
        worker_id: 'w-beat',
        state: 'running',
        active_jobs: [],
        active_job_ids: [a!.id, b!.id, c!.id, '019a0000-0000-7000-8000-00000000beef'],
        visibility_timeout_ms: 120_000,
      });
      assert.equal(beat.directive, 'running');
      assert.deepEqual([...(beat.jobsExtended ?? [])].sort(), [a!.id, c!.id].sort());
      assert.deepEqual(beat.jobsCancelled, [b!.id]);
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

    test('concurrent enqueues are answered each on its own (one EnqueueMany)', async () => {
      const unique = { keys: ['type' as const], onConflict: 'reject' as const };
      const first = await client.enqueue('many.unique', [], { unique, queue: 'sdk-many' });
      const outcomes = await Promise.allSettled([
        client.enqueue('many.ok', [1], { queue: 'sdk-many' }),
        client.enqueue('Bad Type', [], { queue: 'sdk-many' }),
        client.enqueue('many.unique', [], { unique, queue: 'sdk-many' }),
        client.enqueue('many.ok', [2], { queue: 'sdk-many' }),
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
      );
      assert.ok((outcomes[1] as PromiseRejectedResult).reason instanceof ValidationError);
      const duplicate = (outcomes[2] as PromiseRejectedResult).reason;
      assert.ok(duplicate instanceof DuplicateJobError);
      assert.equal(duplicate.existingJobId, first!.id);
      const created = [outcomes[0], outcomes[3]].map(
        (o) => (o as PromiseFulfilledResult<Job | null>).value!,
      );
      assert.deepEqual(
        created.map((job) => [job.state, job.args]),
        [
          ['available', [1]],
          ['available', [2]],
        ],
      );
      assert.equal((await client.getJob(created[1]!.id)).id, created[1]!.id);
      assert.equal((await client.queueStats('sdk-many')).available, 3);
    });

    test('an address is required', () => {
      assert.throws(() => new GrpcTransport({ address: '' }), TypeError);
    });
  });
}

/** Waits for a condition the server side reaches (an event, not a duration). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * A stand-in server that counts calls: the pushes of one turn go as one
 * EnqueueMany; a server without it (UNIMPLEMENTED) gets them one Enqueue
 * each, and later pushes too.
 */
describe('GrpcTransport push coalescing', () => {
  async function stubServer(withEnqueueMany: boolean) {
    const grpc = await import('@grpc/grpc-js');
    const loader = await import('@grpc/proto-loader');
    const definition = loader.loadSync(PROTO_FILES, {
      ...LOADER_OPTIONS,
      includeDirs: [fileURLToPath(new URL('../proto', import.meta.url))],
    });
    const calls: string[] = [];
    const job = (type: unknown, id: unknown) => ({
      id: typeof id === 'string' && id !== '' ? id : '019a0000-0000-7000-8000-0000000000ff',
      type,
      queue: 'default',
      state: 'JOB_STATE_AVAILABLE',
    });
    const server = new grpc.Server();
    server.addService(definition['ojs.v1.OJSService'] as never, {
      Enqueue: (call: { request: Obj; metadata: { get(k: string): unknown[] } }, done: Done) => {
        calls.push('Enqueue');
        done(null, { job: job(call.request.type, call.metadata.get('x-ojs-idempotency-key')[0]) });
      },
      // Never answered: the caller's abort or deadline ends the call.
      GetJob: (call: { on(event: 'cancelled', listener: () => void): void }) => {
        calls.push('GetJob');
        call.on('cancelled', () => calls.push('GetJob cancelled'));
      },
      Heartbeat: (call: { request: Obj }, done: Done) => {
        calls.push(`Heartbeat(${call.request.id})`);
        if (call.request.id === 'lost') {
          done({ code: grpc.status.FAILED_PRECONDITION, details: 'not yours' } as never);
          return;
        }
        done(null, { directed_state: 'WORKER_STATE_QUIET' });
      },
    });
    if (withEnqueueMany) {
      // AckBatch answers bytes that are not an AckBatchResponse (a truncated field).
      const extensions = definition['ojsts.v1.WorkerExtensions'] as unknown as Record<string, Obj>;
      const service = {
        ...extensions,
        AckBatch: { ...extensions.AckBatch, responseSerialize: () => Buffer.from([0x0a, 0x7f]) },
      };
      server.addService(service as never, {
        AckBatch: (_call: unknown, done: Done) => {
          calls.push('AckBatch');
          done(null, {});
        },
        EnqueueMany: (call: { request: { items: Obj[] } }, done: Done) => {
          calls.push(`EnqueueMany(${call.request.items.length})`);
          done(null, {
            results: call.request.items.map((item) =>
              (item.job as Obj).type === 'refused'
                ? {
                    status: 'error',
                    code: grpc.status.RESOURCE_EXHAUSTED,
                    error_code: 'QUEUE_FULL',
                    error_message: 'full',
                    error_metadata: { retryable: 'true', queue: 'default' },
                  }
                : { status: 'created', job: job((item.job as Obj).type, item.id) },
            ),
          });
        },
      });
    }
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    const transport = new GrpcTransport({ address: `127.0.0.1:${port}` });
    return {
      calls,
      address: `127.0.0.1:${port}`,
      transport,
      client: new OjsClient({ transport }),
      close: async () => {
        await transport.close();
        server.forceShutdown();
      },
    };
  }

  test('a server without HeartbeatMany gets one Heartbeat per id, then always', async () => {
    const stub = await stubServer(false);
    try {
      const request = {
        worker_id: 'w',
        state: 'running' as const,
        active_jobs: [],
        active_job_ids: ['j1', 'lost'],
      };
      const beat = await stub.transport.heartbeat(request);
      assert.equal(beat.directive, 'quiet');
      // A refused beat that is not a cancellation: the job is no longer this worker's.
      assert.deepEqual(beat.jobsExtended, ['j1']);
      await stub.transport.heartbeat({ ...request, active_job_ids: [] });
      assert.deepEqual(stub.calls, [
        'Heartbeat(w)',
        'Heartbeat(j1)',
        'Heartbeat(lost)',
        'Heartbeat(w)',
      ]);
    } finally {
      await stub.close();
    }
  });

  test('the pushes of one turn go as one EnqueueMany, each answered on its own', async () => {
    const stub = await stubServer(true);
    try {
      const outcomes = await Promise.allSettled([
        stub.client.enqueue('a', []),
        stub.client.enqueue('refused', []),
        stub.client.enqueue('c', []),
      ]);
      assert.deepEqual(stub.calls, ['EnqueueMany(3)']);
      assert.equal((outcomes[0] as PromiseFulfilledResult<Job>).value.type, 'a');
      const refused = (outcomes[1] as PromiseRejectedResult).reason;
      assert.ok(refused instanceof RateLimitedError);
      assert.equal(refused.code, 'queue_full');
      assert.equal(refused.details.queue, 'default');
      assert.equal(refused.retryable, true);
      assert.equal((outcomes[2] as PromiseFulfilledResult<Job>).value.type, 'c');
      // A push that cannot become a message fails alone; the others still go together.
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const mixed = await Promise.allSettled([
        stub.client.enqueue('e', []),
        stub.client.enqueue('cyclic', [cyclic]),
        stub.client.enqueue('f', []),
      ]);
      assert.deepEqual(
        mixed.map((o) => o.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      assert.deepEqual(stub.calls, ['EnqueueMany(3)', 'EnqueueMany(2)']);
      // A lone push is a plain Enqueue.
      await stub.client.enqueue('d', []);
      assert.deepEqual(stub.calls, ['EnqueueMany(3)', 'EnqueueMany(2)', 'Enqueue']);
    } finally {
      await stub.close();
    }
  });

  // The call's deadline is 30 s: without the abort reaching grpc-js, this test times out.
  test('a call ends on its abort signal or deadline; an unreadable reply is an internal error', {
    timeout: 15_000,
  }, async () => {
    const stub = await stubServer(true);
    try {
      const controller = new AbortController();
      const aborted = stub.transport.getJob('j', { signal: controller.signal });
      await until(() => stub.calls.includes('GetJob'));
      controller.abort(new Error('stop'));
      await assert.rejects(aborted, { message: 'stop' });
      await until(() => stub.calls.includes('GetJob cancelled'));
      const late = new GrpcTransport({ address: stub.address, timeoutMs: 50 });
      await assert.rejects(late.getJob('j'), TimeoutError);
      await late.close();
      await assert.rejects(
        stub.transport.ackBatch({ acks: [{ job_id: 'j', worker_id: 'w', attempt: 1 }], nacks: [] }),
        (e) =>
          e instanceof OjsError &&
          e.code === 'internal_error' &&
          /Response message parsing error/.test(e.message),
      );
    } finally {
      await stub.close();
    }
  });

  test('a server without EnqueueMany gets one Enqueue per push, from then on', async () => {
    const stub = await stubServer(false);
    try {
      const jobs = await Promise.all([stub.client.enqueue('a', []), stub.client.enqueue('b', [])]);
      assert.deepEqual(
        jobs.map((job) => job?.type),
        ['a', 'b'],
      );
      await Promise.all([stub.client.enqueue('c', []), stub.client.enqueue('d', [])]);
      assert.deepEqual(stub.calls, ['Enqueue', 'Enqueue', 'Enqueue', 'Enqueue']);
    } finally {
      await stub.close();
    }
  });
});
