/**
 * The Level 0/1 RPCs through a client generated from our .proto, on SQLite
 * and PostgreSQL: Manifest, Health, Enqueue, GetJob, Fetch, Ack, Nack,
 * CancelJob, ActivateJob, Heartbeat; request ids, the status mapping with
 * ErrorInfo, and the manifest listing grpc only when served.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startLiveServer } from '../../server/test/stores.ts';
import { extensionsClientConstructor } from '../src/proto.ts';
import { errorDetails } from '../src/status.ts';
import { type GrpcCtx, type Msg, method, startGrpcCtx, storeKinds, unary, v } from './helpers.ts';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`gRPC jobs on ${kind}`, () => {
    let ctx: GrpcCtx;
    before(async () => {
      ctx = await startGrpcCtx(kind);
    });
    after(async () => ctx?.close());

    test('Manifest equals the HTTP manifest where the protocol has the field', async () => {
      const m = await ctx.call('Manifest');
      const http = (await ctx.http('GET', '/ojs/manifest')).body;
      assert.deepEqual(m.protocols, ['http', 'grpc']);
      assert.deepEqual(http.protocols, ['http', 'grpc']);
      assert.equal(http.endpoints.grpc.port, ctx.server.grpcPort);
      assert.equal(m.ojs_version, http.ojs_version);
      assert.equal(m.conformance_level, http.conformance_level);
      assert.equal(m.backend, http.backend);
      assert.deepEqual(m.implementation, {
        name: http.implementation.name,
        version: http.implementation.version,
        language: http.implementation.language,
      });
      assert.ok(m.extensions.includes('dead-letter'));
      assert.equal(m.schema_validation, true);
    });

    test('Health answers OK with the backend', async () => {
      const h = await ctx.call('Health');
      assert.equal(h.status, 'HEALTH_STATUS_OK');
      assert.equal(h.details.fields.backend.stringValue, kind);
      assert.ok(Number(h.timestamp.seconds) > 0);
    });

    test('Enqueue -> GetJob -> Fetch -> Ack round trip with options', async () => {
      const enq = await ctx.call('Enqueue', {
        type: 'email.send',
        args: [v.str('a@b.c'), v.num(3), { structValue: v.struct({ k: v.str('x') }) }],
        options: {
          queue: 'grpc-q',
          priority: 5,
          tags: ['t1'],
          meta: v.struct({ tenant: v.str('acme') }),
          trace_id: 'trace-1',
          timeout: { seconds: 60 },
          ttl: { seconds: 3600 },
          retry: { max_attempts: 7, initial_interval: { seconds: 2 } },
        },
      });
      const job = enq.job;
      const expires = Number(job.expires_at.seconds) - Number(job.created_at.seconds);
      assert.ok(expires >= 3599 && expires <= 3601, `ttl became ${expires} s`);
      assert.match(job.id, /^[0-9a-f-]{36}$/);
      assert.equal(job.state, 'JOB_STATE_AVAILABLE');
      assert.equal(job.queue, 'grpc-q');
      assert.equal(job.priority, 5);
      assert.equal(job.max_attempts, 7);
      assert.equal(job.retry_policy.max_attempts, 7);
      assert.equal(Number(job.retry_policy.initial_interval.seconds), 2);
      assert.equal(Number(job.timeout.seconds), 60);
      assert.deepEqual(job.tags, ['t1']);
      assert.equal(job.trace_id, 'trace-1');
      assert.equal(job.specversion, '1.0');
      assert.equal(job.meta.fields.tenant.stringValue, 'acme');
      assert.equal(job.args[2].structValue.fields.k.stringValue, 'x');

      const got = (await ctx.call('GetJob', { job_id: job.id })).job;
      assert.equal(got.id, job.id);
      // Same job over HTTP.
      const http = (await ctx.http('GET', `/ojs/v1/jobs/${job.id}`)).body.job;
      assert.deepEqual(http.args, ['a@b.c', 3, { k: 'x' }]);
      assert.equal(http.meta.trace_id, 'trace-1');
      assert.equal(http.timeout_ms, 60_000);

      const fetched = await ctx.call('Fetch', { queues: ['grpc-q'], count: 5, worker_id: 'w-1' });
      assert.equal(fetched.jobs.length, 1);
      assert.equal(fetched.jobs[0].state, 'JOB_STATE_ACTIVE');
      assert.equal(fetched.jobs[0].attempt, 1);
      assert.ok(Number(fetched.jobs[0].started_at.seconds) > 0);

      const ack = await ctx.call('Ack', {
        job_id: job.id,
        result: v.struct({ sent: { boolValue: true } }),
      });
      assert.equal(ack.acknowledged, true);
      const done = (await ctx.call('GetJob', { job_id: job.id })).job;
      assert.equal(done.state, 'JOB_STATE_COMPLETED');
      assert.equal(done.result.fields.sent.boolValue, true);
      assert.ok(Number(done.completed_at.seconds) > 0);
    });

    test('Fetch returns nothing from an empty queue; x-ojs-wait-ms long-polls until a job arrives', async () => {
      assert.deepEqual((await ctx.call('Fetch', { queues: ['empty-q'] })).jobs, []);
      const waiting = ctx.call(
        'Fetch',
        { queues: ['poll-q'], worker_id: 'w' },
        { 'x-ojs-wait-ms': '10000' },
      );
      // The enqueue is sent once the poll is in; the poll answers with it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const enq = await ctx.call('Enqueue', {
        type: 'poll.me',
        args: [],
        options: { queue: 'poll-q' },
      });
      const got = await waiting;
      assert.equal(got.jobs.length, 1);
      assert.equal(got.jobs[0].id, enq.job.id);
    });

    test('a long poll answers before the call deadline instead of failing it', async () => {
      // An answer at all proves it: past the 1.5 s deadline the call fails with DEADLINE_EXCEEDED.
      const answer = await unary(
        ctx.client,
        'Fetch',
        { queues: ['deadline-q'] },
        { 'x-ojs-wait-ms': '20000' },
        1500,
      );
      assert.deepEqual(answer.jobs, []);
      const bad = await ctx.fail('Fetch', { queues: ['deadline-q'] }, { 'x-ojs-wait-ms': 'soon' });
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(bad.badRequest?.field_violations[0]?.field, 'x-ojs-wait-ms');
    });

    test('Nack retries with next_attempt_at, then discards when attempts are spent', async () => {
      const { job } = await ctx.call('Enqueue', {
        type: 'flaky.job',
        args: [],
        options: { queue: 'nack-q', max_attempts: 2 },
      });
      await ctx.call('Fetch', { queues: ['nack-q'], worker_id: 'w' });
      const first = await ctx.call('Nack', {
        job_id: job.id,
        error: { code: 'TimeoutError', message: 'slow', backtrace: 'a\nb' },
      });
      assert.equal(first.state, 'JOB_STATE_RETRYABLE');
      assert.ok(Number(first.next_attempt_at.seconds) > 0);
      const stored = (await ctx.call('GetJob', { job_id: job.id })).job;
      assert.equal(stored.errors.length, 1);
      assert.equal(stored.errors[0].code, 'TimeoutError');
      assert.equal(stored.errors[0].message, 'slow');
      assert.equal(stored.errors[0].backtrace, 'a\nb');
      // Make it due now and fail the last attempt.
      await ctx.server.engine.store.promoteDueJobs(Date.now() + 3_600_000);
      const again = await ctx.call('Fetch', { queues: ['nack-q'], worker_id: 'w' });
      assert.equal(again.jobs[0].attempt, 2);
      const last = await ctx.call('Nack', { job_id: job.id, error: { code: 'E', message: 'no' } });
      assert.equal(last.state, 'JOB_STATE_DISCARDED');
      assert.equal(last.next_attempt_at, undefined);
    });

    test('Nack with details.retryable=false discards at once', async () => {
      const { job } = await ctx.call('Enqueue', {
        type: 'bad.job',
        args: [],
        options: { queue: 'nr-q' },
      });
      await ctx.call('Fetch', { queues: ['nr-q'] });
      const r = await ctx.call('Nack', {
        job_id: job.id,
        error: {
          code: 'Fatal',
          message: 'x',
          details: v.struct({ retryable: { boolValue: false } }),
        },
      });
      assert.equal(r.state, 'JOB_STATE_DISCARDED');
    });

    test('CancelJob keeps the reason in meta and the event', async () => {
      const { job } = await ctx.call('Enqueue', {
        type: 'to.cancel',
        args: [],
        options: { queue: 'c-q' },
      });
      const cancelled = (await ctx.call('CancelJob', { job_id: job.id, reason: 'user asked' })).job;
      assert.equal(cancelled.state, 'JOB_STATE_CANCELLED');
      assert.equal(cancelled.meta.fields.cancel_reason.stringValue, 'user asked');
      const events = (await ctx.http('GET', `/ojs/v1/events?types=job.cancelled`)).body
        .events as Msg[];
      const event = events.find((e) => e.data.job_id === job.id);
      assert.equal(event.data.reason, 'user asked');
    });

    test('ActivateJob (extension) releases a job enqueued pending', async () => {
      const { job } = await ctx.call('Enqueue', {
        type: 'staged.job',
        args: [],
        options: { queue: 'p-q', pending: true },
      });
      assert.equal(job.state, 'JOB_STATE_PENDING');
      assert.deepEqual((await ctx.call('Fetch', { queues: ['p-q'] })).jobs, []);
      const active = (await ctx.call('ActivateJob', { job_id: job.id })).job;
      assert.equal(active.state, 'JOB_STATE_AVAILABLE');
      assert.equal((await ctx.call('Fetch', { queues: ['p-q'] })).jobs.length, 1);
    });

    test('Heartbeat extends a job lease (per-job id) and reports a worker (worker id)', async () => {
      const { job } = await ctx.call('Enqueue', {
        type: 'long.job',
        args: [],
        options: { queue: 'hb-q' },
      });
      const fetched = (await ctx.call('Fetch', { queues: ['hb-q'], worker_id: 'w-hb' })).jobs[0];
      const beat = await ctx.call('Heartbeat', {
        id: job.id,
        worker_id: 'w-hb',
        extend_by: { seconds: 600 },
        current_state: 'WORKER_STATE_RUNNING',
      });
      assert.equal(beat.directed_state, 'WORKER_STATE_RUNNING');
      const deadline = Number(beat.new_deadline.seconds);
      assert.ok(deadline >= Math.floor(Date.now() / 1000) + 590, `deadline ${deadline}`);
      assert.ok(deadline > Number(fetched.started_at.seconds));
      const worker = await ctx.call('Heartbeat', { id: 'w-hb', worker_id: 'w-hb' });
      assert.equal(worker.directed_state, 'WORKER_STATE_RUNNING');
      assert.equal(worker.new_deadline, undefined);
      // Another worker's beat does not extend it.
      const other = await ctx.fail('Heartbeat', { id: job.id, worker_id: 'w-other' });
      assert.equal(other.code, grpc.status.FAILED_PRECONDITION);
      // A cancelled job's beat tells the worker to stop.
      await ctx.call('CancelJob', { job_id: job.id });
      const stop = await ctx.fail('Heartbeat', { id: job.id, worker_id: 'w-hb' });
      assert.equal(stop.code, grpc.status.FAILED_PRECONDITION);
      assert.equal(stop.errorInfo?.metadata.current_state, 'cancelled');
    });

    test('fair scheduling and drain: x-ojs-pool reaches an isolated pool; a QUIET beat stops fetches', async () => {
      const put = await ctx.http('PUT', '/ojs/v1/admin/pools/g-iso', {
        queues: ['g-secret'],
        isolated: true,
      });
      assert.equal(put.status, 201);
      await ctx.call('Enqueue', { type: 'g.job', args: [], options: { queue: 'g-secret' } });
      await ctx.call('Enqueue', { type: 'g.job', args: [], options: { queue: 'g-secret' } });
      const outsider = await ctx.call('Fetch', { queues: ['g-secret'], worker_id: 'g-out' });
      assert.equal(outsider.jobs.length, 0);
      const insider = await ctx.call(
        'Fetch',
        { queues: [], worker_id: 'g-in', count: 1 },
        { 'x-ojs-pool': 'g-iso' },
      );
      assert.equal(insider.jobs[0].queue, 'g-secret');
      const beat = await ctx.call('Heartbeat', {
        id: 'g-in',
        worker_id: 'g-in',
        current_state: 'WORKER_STATE_QUIET',
      });
      assert.equal(beat.directed_state, 'WORKER_STATE_RUNNING');
      const quiet = await ctx.call(
        'Fetch',
        { queues: ['g-secret'], worker_id: 'g-in' },
        { 'x-ojs-pool': 'g-iso' },
      );
      assert.equal(quiet.jobs.length, 0);
      assert.equal((await ctx.http('GET', '/ojs/v1/workers/g-in/health')).status, 503);
      const bad = await ctx.fail('Fetch', { queues: ['q'] }, { 'x-ojs-pool': 'Bad Pool!' });
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
    });

    test('errors map to statuses with ErrorInfo (and BadRequest for validation)', async () => {
      const bad = await ctx.fail(
        'Enqueue',
        { type: 'Not A Type', args: [] },
        { 'x-ojs-request-id': 'req-abc' },
      );
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(bad.errorInfo?.domain, 'openjobspec.org');
      assert.equal(bad.errorInfo?.reason, 'invalid_payload');
      assert.equal(bad.errorInfo?.metadata.retryable, 'false');
      assert.equal(bad.errorInfo?.metadata.request_id, 'req-abc');
      assert.equal(bad.badRequest?.field_violations[0]?.field, 'type');

      const missing = await ctx.fail('GetJob', { job_id: '019a0000-0000-7000-8000-000000000000' });
      assert.equal(missing.code, grpc.status.NOT_FOUND);
      assert.equal(missing.errorInfo?.reason, 'not_found');

      const negative = await ctx.fail('Enqueue', {
        type: 'a.b',
        args: [],
        options: { timeout: { seconds: -5 } },
      });
      assert.equal(negative.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(negative.errorInfo?.metadata.field, 'options.timeout');

      const none = await ctx.fail('GetJob', {});
      assert.equal(none.code, grpc.status.INVALID_ARGUMENT);

      const { job } = await ctx.call('Enqueue', {
        type: 'twice.acked',
        args: [],
        options: { queue: 'e-q' },
      });
      const notActive = await ctx.fail('Ack', { job_id: job.id });
      assert.equal(notActive.code, grpc.status.FAILED_PRECONDITION);
      assert.equal(notActive.errorInfo?.reason, 'conflict');

      const unique = { key: ['type'], on_conflict: 'UNIQUE_CONFLICT_ACTION_REJECT' };
      await ctx.call('Enqueue', { type: 'only.once', args: [], options: { unique } });
      const dup = await ctx.fail('Enqueue', { type: 'only.once', args: [], options: { unique } });
      assert.equal(dup.code, grpc.status.ALREADY_EXISTS);
      assert.equal(dup.errorInfo?.reason, 'duplicate');
    });

    test('concurrent Enqueue and Ack calls are answered one by one (batched underneath)', async () => {
      const calls = Array.from({ length: 40 }, (_, i) =>
        i === 7
          ? ctx.fail('Enqueue', { type: 'Bad Type', args: [] })
          : ctx.call('Enqueue', {
              type: 'many.job',
              args: [v.num(i)],
              options: { queue: 'many-q' },
            }),
      );
      const answers = await Promise.all(calls);
      assert.equal(answers[7].code, grpc.status.INVALID_ARGUMENT);
      const ids = answers.filter((_, i) => i !== 7).map((a) => a.job.id);
      assert.equal(new Set(ids).size, 39);
      const fetched = await ctx.call('Fetch', {
        queues: ['many-q'],
        count: 39,
        worker_id: 'w-many',
      });
      assert.equal(fetched.jobs.length, 39);
      // One ack of a job that is not active fails alone; the others complete.
      const acked = await Promise.allSettled([
        ...fetched.jobs.map((j: Msg) =>
          ctx.call('Ack', { job_id: j.id }, { 'x-ojs-worker-id': 'w-many', 'x-ojs-attempt': '1' }),
        ),
        ctx.call('Ack', { job_id: fetched.jobs[0].id }, { 'x-ojs-worker-id': 'w-other' }),
      ]);
      assert.equal(acked.filter((r) => r.status === 'fulfilled').length, 39);
      const refused = acked.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      assert.equal(refused.reason.code, grpc.status.FAILED_PRECONDITION);
      for (const id of ids.slice(0, 5)) {
        assert.equal((await ctx.call('GetJob', { job_id: id })).job.state, 'JOB_STATE_COMPLETED');
      }
    });

    test('AckBatch (ojsts.v1.WorkerExtensions) settles each item on its own', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push(
          (await ctx.call('Enqueue', { type: 'ab.job', args: [], options: { queue: 'ab-q' } })).job
            .id,
        );
      }
      const fetched = (await ctx.call('Fetch', { queues: ['ab-q'], count: 3, worker_id: 'w-ab' }))
        .jobs;
      assert.equal(fetched.length, 3);
      const client = new (extensionsClientConstructor())(
        ctx.grpcAddress,
        grpc.credentials.createInsecure(),
      );
      try {
        const answer = await unary(client, 'AckBatch', {
          acks: [
            { job_id: ids[0], worker_id: 'w-ab', attempt: 1, result: v.struct({ n: v.num(1) }) },
            { job_id: ids[1], worker_id: 'w-intruder', attempt: 1 },
          ],
          nacks: [
            { job_id: ids[2], worker_id: 'w-ab', attempt: 1, error: { code: 'E', message: 'x' } },
          ],
        });
        assert.deepEqual(
          answer.results.map((r: Msg) => [r.job_id, r.status, r.state ?? r.error_code]),
          [
            [ids[0], 'ok', 'JOB_STATE_COMPLETED'],
            [ids[1], 'conflict', 'conflict'],
            [ids[2], 'ok', 'JOB_STATE_RETRYABLE'],
          ],
        );
        assert.equal((await ctx.call('GetJob', { job_id: ids[1] })).job.state, 'JOB_STATE_ACTIVE');
        await assert.rejects(unary(client, 'AckBatch', {}), (e: grpc.ServiceError) => {
          assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
          assert.equal(e.details, 'Send at least one item in acks or nacks.');
          assert.equal(errorDetails(e.metadata).errorInfo?.metadata.field, 'acks');
          return true;
        });
        const tooMany = Array.from({ length: 1001 }, () => ({
          job_id: ids[0],
          worker_id: 'w-ab',
          attempt: 1,
        }));
        await assert.rejects(
          unary(client, 'AckBatch', { acks: tooMany }),
          (e: grpc.ServiceError) => {
            assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
            assert.equal(
              e.details,
              'A batched acknowledgement holds at most 1000 items (got 1001).',
            );
            const metadata = errorDetails(e.metadata).errorInfo?.metadata;
            assert.deepEqual(
              [metadata?.field, metadata?.max, metadata?.actual],
              ['acks', '1000', '1001'],
            );
            return true;
          },
        );
        await assert.rejects(
          unary(client, 'AckBatch', { acks: [{ attempt: 1 }] }),
          /acks\[0\]\.job_id/,
        );
      } finally {
        client.close();
      }
    });

    test('EnqueueMany (ojsts.v1.WorkerExtensions) answers each item as its own Enqueue would', async () => {
      const client = new (extensionsClientConstructor())(
        ctx.grpcAddress,
        grpc.credentials.createInsecure(),
      );
      try {
        const id = '019a0000-0000-7000-8000-00000000e001';
        const unique = { key: ['type'], on_conflict: 'UNIQUE_CONFLICT_ACTION_IGNORE' };
        const held = await ctx.call('Enqueue', {
          type: 'em.unique',
          args: [],
          options: { queue: 'em-q', unique },
        });
        const answer = await unary(client, 'EnqueueMany', {
          items: [
            { id, job: { type: 'em.job', args: [v.num(1)], options: { queue: 'em-q' } } },
            { job: { type: 'Bad Type', args: [] } },
            { id, job: { type: 'em.job', args: [v.num(2)], options: { queue: 'em-q' } } },
            { id: 'not-a-uuid', job: { type: 'em.job', args: [] } },
            { job: { type: 'em.unique', args: [], options: { queue: 'em-q', unique } } },
            { job: { type: 'em.job', args: [v.num(3)], options: { queue: 'em-q' } } },
          ],
        });
        const results = answer.results as Msg[];
        assert.deepEqual(
          results.map((r) => [r.status, r.error_code ?? r.job?.queue]),
          [
            ['created', 'em-q'],
            ['error', 'invalid_payload'],
            ['error', 'duplicate'],
            ['error', 'invalid_request'],
            ['existing', 'em-q'],
            ['created', 'em-q'],
          ],
        );
        assert.equal(results[0].job.id, id);
        assert.equal(results[4].job.id, held.job.id);
        // A refused item says what its Enqueue call's status would say.
        assert.equal(results[2].code, grpc.status.ALREADY_EXISTS);
        assert.equal(results[2].error_metadata.existing_job_id, id);
        assert.equal(results[1].code, grpc.status.INVALID_ARGUMENT);
        assert.equal(results[3].error_metadata.field, 'id');
        assert.equal(results[1].error_metadata.retryable, 'false');
        // Stored: the created items only, each once.
        const stored = await ctx.call('Fetch', { queues: ['em-q'], count: 10, worker_id: 'w-em' });
        assert.deepEqual(
          stored.jobs.map((j: Msg) => j.id).sort(),
          [held.job.id, id, results[5].job.id].sort(),
        );
        await assert.rejects(unary(client, 'EnqueueMany', {}), (e: grpc.ServiceError) => {
          assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
          assert.equal(errorDetails(e.metadata).errorInfo?.reason, 'invalid_payload');
          return true;
        });
        const tooMany = Array.from({ length: 1001 }, () => ({ job: { type: 'em.job' } }));
        await assert.rejects(
          unary(client, 'EnqueueMany', { items: tooMany }),
          (e: grpc.ServiceError) => {
            const metadata = errorDetails(e.metadata).errorInfo?.metadata;
            assert.deepEqual([metadata?.field, metadata?.max], ['items', '1000']);
            return true;
          },
        );
      } finally {
        client.close();
      }
    });

    test('the request id is echoed in response metadata', async () => {
      const headers = await new Promise<grpc.Metadata>((resolve, reject) => {
        const call = method(ctx.client, 'Health').call(
          ctx.client,
          {},
          (() => {
            const m = new grpc.Metadata();
            m.set('x-ojs-request-id', 'req-echo-1');
            return m;
          })(),
          (error: Error | null) => error && reject(error),
        );
        call.on('metadata', resolve);
      });
      assert.equal(headers.get('x-ojs-request-id')[0], 'req-echo-1');
      assert.equal(headers.get('x-ojs-conformance-level')[0], '4');
    });
  });
}

describe('gRPC off', () => {
  test('--no-grpc: the manifest lists http only', async () => {
    const server = await startLiveServer('sqlite', { grpc: false });
    try {
      assert.equal(server.grpcPort, undefined);
      const manifest = (await (await fetch(`${server.url}/ojs/manifest`)).json()) as Msg;
      assert.deepEqual(manifest.protocols, ['http']);
      assert.equal(manifest.endpoints.grpc, undefined);
    } finally {
      await server.close();
    }
  });
});
