/**
 * StreamJobs, StreamEvents, cross-protocol work and shutdown, on SQLite and
 * PostgreSQL: a stream never holds more than max_concurrent unsettled
 * jobs; a dropped stream's jobs come back after their visibility timeout;
 * enqueue over gRPC -> fetch over HTTP -> ack over gRPC and the reverse
 * show the same events on both bindings; shutdown ends streams with
 * UNAVAILABLE.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startLiveServer } from '../../server/test/stores.ts';
import {
  type GrpcCtx,
  type Msg,
  newClient,
  startGrpcCtx,
  storeKinds,
  toMetadata,
} from './helpers.ts';

const kinds = await storeKinds();

type Stream = grpc.ClientReadableStream<Msg>;

function open(client: grpc.Client, name: 'StreamJobs' | 'StreamEvents', request: Msg): Stream {
  const stream = (client as unknown as Record<string, (r: Msg, m: grpc.Metadata) => Stream>)[
    name
  ]!.call(client, request, toMetadata());
  // A client-side cancel() ends the call with CANCELLED: expected, not a failure.
  stream.on('error', () => {});
  return stream;
}

/** Resolves with the first message matching `match` (rejects on a stream error). */
function next(stream: Stream, match: (m: Msg) => boolean = () => true): Promise<Msg> {
  return new Promise((resolve, reject) => {
    const onData = (m: Msg) => {
      if (!match(m)) return;
      stream.off('data', onData);
      stream.off('error', onError);
      resolve(m);
    };
    const onError = (e: Error) => {
      stream.off('data', onData);
      reject(e);
    };
    stream.on('data', onData);
    stream.on('error', onError);
  });
}

function statusOf(stream: Stream): Promise<grpc.ServiceError> {
  return new Promise((resolve) => stream.once('error', resolve));
}

for (const kind of kinds) {
  describe(`gRPC streams on ${kind}`, () => {
    let ctx: GrpcCtx;
    before(async () => {
      ctx = await startGrpcCtx(kind);
    });
    after(async () => ctx?.close());

    test('StreamJobs never holds more than max_concurrent unsettled jobs', async () => {
      const total = 12;
      const max = 3;
      await ctx.call('EnqueueBatch', {
        jobs: Array.from({ length: total }, () => ({ type: 'stream.job', args: [] })),
        default_options: { queue: 'stream-q' },
      });
      const stream = open(ctx.client, 'StreamJobs', {
        queues: ['stream-q'],
        worker_id: 'stream-w',
        max_concurrent: max,
      });
      const held = new Set<string>();
      let peak = 0;
      let acked = 0;
      await new Promise<void>((resolve, reject) => {
        stream.on('error', reject);
        stream.on('data', async (job: Msg) => {
          try {
            assert.equal(job.state, 'JOB_STATE_ACTIVE');
            held.add(job.id);
            peak = Math.max(peak, held.size);
            assert.ok(held.size <= max, `${held.size} jobs held`);
            // The store agrees: never more active jobs under this worker.
            const active = (await ctx.http('GET', '/ojs/v1/jobs?queue=stream-q&state=active')).body
              .jobs as Msg[];
            assert.ok(active.length <= max, `${active.length} active`);
            // Settle after a turn, every third job by NACK.
            await new Promise((r) => setTimeout(r, 5));
            held.delete(job.id);
            if (acked % 3 === 2) {
              await ctx.call('Nack', {
                job_id: job.id,
                error: {
                  code: 'E',
                  message: 'x',
                  details: { fields: { retryable: { boolValue: false } } },
                },
              });
            } else await ctx.call('Ack', { job_id: job.id });
            if (++acked === total) resolve();
          } catch (error) {
            reject(error);
          }
        });
      });
      stream.cancel();
      assert.equal(peak, max);
    });

    test('a job delivered by StreamJobs and acked over HTTP frees its slot', async () => {
      const a = (await ctx.call('Enqueue', { type: 's.one', args: [], options: { queue: 's1-q' } }))
        .job;
      const b = (await ctx.call('Enqueue', { type: 's.two', args: [], options: { queue: 's1-q' } }))
        .job;
      const stream = open(ctx.client, 'StreamJobs', { queues: ['s1-q'], worker_id: 'w-s1' });
      const first = await next(stream);
      assert.equal(first.id, a.id);
      const second = next(stream);
      const ack = await ctx.http('POST', '/ojs/v1/workers/ack', { job_id: a.id });
      assert.equal(ack.status, 200);
      assert.equal((await second).id, b.id);
      stream.cancel();
    });

    test('a dropped stream leaves its jobs leased; they come back after the visibility timeout', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const { job } = await ctx.call('Enqueue', {
          type: 'drop.me',
          args: [],
          options: { queue: 'drop-q', visibility_timeout: { seconds: 1 } },
        });
        ids.push(job.id);
      }
      const stream = open(ctx.client, 'StreamJobs', {
        queues: ['drop-q'],
        worker_id: 'w-gone',
        max_concurrent: 2,
      });
      const got = [await next(stream), await next(stream)];
      assert.deepEqual(got.map((j) => j.id).sort(), [...ids].sort());
      stream.cancel();
      // Another worker long-polls over HTTP: the reaper makes them available again.
      const back: Msg[] = [];
      while (back.length < 2) {
        const r = await ctx.http('POST', '/ojs/v1/workers/fetch', {
          queues: ['drop-q'],
          worker_id: 'w-next',
          count: 2,
          wait_ms: 5000,
        });
        back.push(...r.body.jobs);
      }
      assert.deepEqual(back.map((j) => j.id).sort(), [...ids].sort());
      for (const job of back) assert.equal(job.attempt, 2);
    });

    test('a paused queue keeps the stream open and delivers after resume', async () => {
      await ctx.call('PauseQueue', { queue: 'paused-q' });
      const { job } = await ctx.call('Enqueue', {
        type: 'p.job',
        args: [],
        options: { queue: 'paused-q' },
      });
      const stream = open(ctx.client, 'StreamJobs', { queues: ['paused-q'], worker_id: 'w-p' });
      const delivered = next(stream);
      // The stream is served (response headers came) while the queue is paused.
      await new Promise((resolve) => stream.once('metadata', resolve));
      const stats = await ctx.call('QueueStats', { queue: 'paused-q' });
      assert.equal(Number(stats.stats.available), 1);
      await ctx.call('ResumeQueue', { queue: 'paused-q' });
      assert.equal((await delivered).id, job.id);
      stream.cancel();
    });

    test('StreamJobs without worker_id is INVALID_ARGUMENT', async () => {
      const stream = open(ctx.client, 'StreamJobs', { queues: ['x-q'] });
      stream.on('data', () => assert.fail('no job expected'));
      const error = await statusOf(stream);
      assert.equal(error.code, grpc.status.INVALID_ARGUMENT);
    });

    for (const [name, enqueueOver, fetchOver, ackOver] of [
      ['gRPC -> HTTP -> gRPC', 'grpc', 'http', 'grpc'],
      ['HTTP -> gRPC -> HTTP', 'http', 'grpc', 'http'],
    ] as const) {
      test(`cross-protocol enqueue/fetch/ack ${name}; the same events on both bindings`, async () => {
        const queue = `x-${enqueueOver}-q`;
        const events = open(ctx.client, 'StreamEvents', { queues: [queue] });
        const streamed: Msg[] = [];
        events.on('data', (e: Msg) => streamed.push(e));
        // Response headers come once the stream has fixed where its events start.
        await new Promise((resolve) => events.once('metadata', resolve));

        let id: string;
        if (enqueueOver === 'grpc') {
          id = (
            await ctx.call('Enqueue', {
              type: 'cross.job',
              args: [{ numberValue: 1 }],
              options: { queue },
            })
          ).job.id;
        } else {
          id = (
            await ctx.http('POST', '/ojs/v1/jobs', {
              type: 'cross.job',
              args: [1],
              options: { queue },
            })
          ).body.job.id;
        }
        if (fetchOver === 'http') {
          const r = await ctx.http('POST', '/ojs/v1/workers/fetch', {
            queues: [queue],
            worker_id: 'x-w',
          });
          assert.equal(r.body.jobs[0].id, id);
        } else {
          const r = await ctx.call('Fetch', { queues: [queue], worker_id: 'x-w' });
          assert.equal(r.jobs[0].id, id);
          assert.equal(r.jobs[0].args[0].numberValue, 1);
        }
        if (ackOver === 'grpc') {
          await ctx.call('Ack', { job_id: id, result: { fields: { ok: { boolValue: true } } } });
        } else {
          const r = await ctx.http('POST', '/ojs/v1/workers/ack', {
            job_id: id,
            result: { ok: true },
          });
          assert.equal(r.status, 200);
        }
        assert.equal((await ctx.call('GetJob', { job_id: id })).job.state, 'JOB_STATE_COMPLETED');
        assert.equal((await ctx.http('GET', `/ojs/v1/jobs/${id}`)).body.job.result.ok, true);

        const completed = streamed.some((e) => e.type === 'job.completed' && e.job_id === id)
          ? undefined
          : await next(events, (e) => e.type === 'job.completed' && e.job_id === id);
        assert.ok(completed === undefined || completed.job_id === id);
        events.cancel();
        const http = (await ctx.http('GET', `/ojs/v1/events?queues=${queue}&limit=100`)).body
          .events as Msg[];
        const httpOfJob = http.filter((e) => e.data.job_id === id);
        const grpcOfJob = streamed.filter((e) => e.job_id === id);
        assert.deepEqual(
          grpcOfJob.map((e) => [e.id, e.type, e.queue, e.job_type]),
          httpOfJob.map((e) => [e.id, e.type, e.data.queue, e.data.job_type]),
        );
        assert.deepEqual(
          grpcOfJob.map((e) => e.type),
          ['job.enqueued', 'job.started', 'job.completed'],
        );
        assert.equal(
          Number(grpcOfJob[0].timestamp.seconds),
          Math.floor(Date.parse(httpOfJob[0].time) / 1000),
        );
      });
    }

    test('StreamEvents filters by event type and job id (ANDed)', async () => {
      const a = (await ctx.call('Enqueue', { type: 'f.job', args: [], options: { queue: 'f-q' } }))
        .job;
      const events = open(ctx.client, 'StreamEvents', {
        event_types: ['job.cancelled'],
        job_id: a.id,
      });
      await new Promise((resolve) => events.once('metadata', resolve));
      const b = (await ctx.call('Enqueue', { type: 'f.job', args: [], options: { queue: 'f-q' } }))
        .job;
      const got = next(events);
      await ctx.call('CancelJob', { job_id: b.id });
      await ctx.call('CancelJob', { job_id: a.id, reason: 'stop' });
      const event = await got;
      assert.equal(event.type, 'job.cancelled');
      assert.equal(event.job_id, a.id);
      assert.equal(event.data.fields.reason.stringValue, 'stop');
      events.cancel();
    });
  });
}

describe('gRPC shutdown', () => {
  test('closing the server ends StreamJobs and StreamEvents with UNAVAILABLE', async () => {
    const server = await startLiveServer('sqlite', { testMode: true });
    const client = newClient(`127.0.0.1:${server.grpcPort}`);
    try {
      const jobs = open(client, 'StreamJobs', { queues: ['sd-q'], worker_id: 'w-sd' });
      const events = open(client, 'StreamEvents', {});
      await Promise.all([
        new Promise((resolve) => jobs.once('metadata', resolve)),
        new Promise((resolve) => events.once('metadata', resolve)),
      ]);
      const ended = Promise.all([statusOf(jobs), statusOf(events)]);
      await server.close();
      const [a, b] = await ended;
      assert.equal(a.code, grpc.status.UNAVAILABLE);
      assert.equal(b.code, grpc.status.UNAVAILABLE);
    } finally {
      client.close();
    }
  });
});
