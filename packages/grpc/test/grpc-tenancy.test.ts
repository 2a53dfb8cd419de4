/**
 * Multi-tenancy over gRPC on every store: every job RPC called with
 * metadata x-ojs-tenant of the job's own tenant, of another tenant, and
 * with none. The foreign call gets NOT_FOUND (or an empty answer) and
 * changes nothing the store shows; the others act, as over HTTP
 * (server/test/tenancy.test.ts), through the same engine operations.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { snapshot } from '../../server/test/helpers.ts';
import { type GrpcCtx, type Msg, startGrpcCtx, storeKinds } from './helpers.ts';

const kinds = await storeKinds();

const OWN = 'tenant-own';
const FOREIGN = 'tenant-foreign';
type Caller = 'own' | 'foreign' | 'none';

function metadataOf(caller: Caller): Record<string, string> {
  if (caller === 'own') return { 'x-ojs-tenant': OWN };
  if (caller === 'foreign') return { 'x-ojs-tenant': FOREIGN };
  return {};
}

type State = 'available' | 'active' | 'dead' | 'pending' | 'workflow';

interface RpcCase {
  name: string;
  state: State;
  run(ctx: GrpcCtx, job: { id: string; queue: string }, md: Record<string, string>): Promise<Msg>;
  /** How a foreign call's answer shows nothing (default: NOT_FOUND). */
  foreign?: (answer: Msg) => void;
}

const RPCS: RpcCase[] = [
  {
    name: 'GetJob',
    state: 'available',
    run: (ctx, job, md) => ctx.call('GetJob', { job_id: job.id }, md),
  },
  {
    name: 'CancelJob',
    state: 'available',
    run: (ctx, job, md) => ctx.call('CancelJob', { job_id: job.id }, md),
  },
  {
    name: 'ActivateJob',
    state: 'pending',
    run: (ctx, job, md) => ctx.call('ActivateJob', { job_id: job.id }, md),
  },
  {
    name: 'Fetch',
    state: 'available',
    run: (ctx, job, md) => ctx.call('Fetch', { queues: [job.queue], worker_id: 'x' }, md),
    foreign: (answer) => assert.deepEqual(answer.jobs ?? [], []),
  },
  {
    name: 'Ack',
    state: 'active',
    run: (ctx, job, md) => ctx.call('Ack', { job_id: job.id }, md),
  },
  {
    name: 'Nack',
    state: 'active',
    run: (ctx, job, md) =>
      ctx.call('Nack', { job_id: job.id, error: { code: 'E', message: 'x' } }, md),
  },
  {
    name: 'Heartbeat',
    state: 'active',
    run: (ctx, job, md) =>
      ctx.call('Heartbeat', { id: job.id, worker_id: 'w', extend_by: { seconds: 900 } }, md),
  },
  {
    name: 'QueueStats',
    state: 'available',
    run: (ctx, job, md) => ctx.call('QueueStats', { queue: job.queue }, md),
    foreign: (answer) => assert.equal(Number(answer.stats.available ?? 0), 0),
  },
  {
    name: 'ListDeadLetter',
    state: 'dead',
    run: (ctx, job, md) => ctx.call('ListDeadLetter', { queue: job.queue }, md),
    foreign: (answer) => assert.deepEqual(answer.jobs ?? [], []),
  },
  {
    name: 'RetryDeadLetter',
    state: 'dead',
    run: (ctx, job, md) => ctx.call('RetryDeadLetter', { job_id: job.id }, md),
  },
  {
    name: 'DeleteDeadLetter',
    state: 'dead',
    run: (ctx, job, md) => ctx.call('DeleteDeadLetter', { job_id: job.id }, md),
  },
  {
    name: 'GetWorkflow',
    state: 'workflow',
    run: (ctx, job, md) => ctx.call('GetWorkflow', { workflow_id: job.id }, md),
  },
  {
    name: 'CancelWorkflow',
    state: 'workflow',
    run: (ctx, job, md) => ctx.call('CancelWorkflow', { workflow_id: job.id }, md),
  },
];

let seq = 0;

async function prepare(ctx: GrpcCtx, state: State): Promise<{ id: string; queue: string }> {
  const queue = `gmt-${++seq}`;
  const own = metadataOf('own');
  if (state === 'workflow') {
    const { workflow } = await ctx.call(
      'CreateWorkflow',
      {
        name: 'mt',
        steps: [
          { id: 'a', type: 'mt.a', options: { queue } },
          { id: 'b', type: 'mt.b', depends_on: ['a'], options: { queue } },
        ],
      },
      own,
    );
    return { id: workflow.id, queue };
  }
  const options: Msg = { queue };
  if (state === 'pending') options.pending = true;
  if (state === 'dead') options.retry = { max_attempts: 1, on_exhaustion: 'dead_letter' };
  // A NACKed job is not retried: the live server's promoter would change it later.
  if (state === 'active') options.retry = { max_attempts: 1 };
  const { job } = await ctx.call('Enqueue', { type: 'mt.job', args: [], options }, own);
  assert.equal(job.meta.fields.tenant_id.stringValue, OWN);
  if (state === 'active' || state === 'dead') {
    const fetched = await ctx.call('Fetch', { queues: [queue], worker_id: 'w' }, own);
    assert.equal(fetched.jobs[0].id, job.id);
  }
  if (state === 'dead') {
    await ctx.call('Nack', { job_id: job.id, error: { code: 'E', message: 'dead' } }, own);
  }
  return { id: job.id, queue };
}

for (const kind of kinds) {
  describe(`gRPC multi-tenancy on ${kind}: every job RPC x (own, foreign, no tenant)`, () => {
    let ctx: GrpcCtx;
    before(async () => {
      ctx = await startGrpcCtx(kind);
    });
    after(async () => ctx?.close());

    for (const rpc of RPCS) {
      for (const caller of ['own', 'foreign', 'none'] as Caller[]) {
        test(`${rpc.name} as ${caller}`, async () => {
          const job = await prepare(ctx, rpc.state);
          const before = await snapshot(ctx.server.engine);
          if (caller === 'foreign') {
            if (rpc.foreign !== undefined) {
              rpc.foreign(await rpc.run(ctx, job, metadataOf(caller)));
            } else {
              const failure = await rpc.run(ctx, job, metadataOf(caller)).then(
                () => assert.fail(`${rpc.name} succeeded for another tenant`),
                (error: grpc.ServiceError) => error,
              );
              assert.equal(failure.code, grpc.status.NOT_FOUND, failure.details);
            }
            const after = await snapshot(ctx.server.engine);
            assert.equal(after, before, `${rpc.name} changed the store`);
          } else {
            const answer = await rpc.run(ctx, job, metadataOf(caller));
            if (rpc.foreign !== undefined && rpc.name !== 'QueueStats') {
              assert.ok((answer.jobs ?? []).length > 0, `${rpc.name} showed nothing`);
            }
          }
        });
      }
    }

    test('Enqueue: metadata and meta.tenant_id disagree -> INVALID_ARGUMENT, nothing stored', async () => {
      const before = await snapshot(ctx.server.engine);
      const failure = await ctx.fail(
        'Enqueue',
        {
          type: 't',
          args: [],
          options: { meta: { fields: { tenant_id: { stringValue: 'b' } } } },
        },
        { 'x-ojs-tenant': 'a' },
      );
      assert.equal(failure.code, grpc.status.INVALID_ARGUMENT);
      const bad = await ctx.fail('Enqueue', { type: 't', args: [] }, { 'x-ojs-tenant': '!bad' });
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(await snapshot(ctx.server.engine), before);
    });

    test("StreamJobs and StreamEvents with a tenant carry that tenant's jobs only", async () => {
      type Stream = grpc.ClientReadableStream<Msg>;
      const open = (name: string, request: Msg, tenant: string): Stream => {
        const metadata = new grpc.Metadata();
        metadata.set('x-ojs-tenant', tenant);
        const stream = (
          ctx.client as unknown as Record<string, (r: Msg, m: grpc.Metadata) => Stream>
        )[name]!.call(ctx.client, request, metadata);
        stream.on('error', () => {});
        return stream;
      };
      const first = (stream: Stream) =>
        new Promise<Msg>((resolve) => stream.once('data', (m: Msg) => resolve(m)));
      const events = open('StreamEvents', { queues: ['gs-q'] }, 'gs-a');
      // The event stream fixes its start before it answers: wait for its headers.
      await new Promise((resolve) => events.once('metadata', resolve));
      const foreign = await ctx.call(
        'Enqueue',
        { type: 's', args: [], options: { queue: 'gs-q' } },
        { 'x-ojs-tenant': 'gs-b' },
      );
      const own = await ctx.call(
        'Enqueue',
        { type: 's', args: [], options: { queue: 'gs-q' } },
        { 'x-ojs-tenant': 'gs-a' },
      );
      const event = await first(events);
      assert.equal(event.job_id, own.job.id, 'the other tenant was enqueued first');
      events.cancel();
      const jobs = open('StreamJobs', { queues: ['gs-q'], worker_id: 'w-gs' }, 'gs-a');
      const delivered = await first(jobs);
      assert.equal(delivered.id, own.job.id);
      jobs.cancel();
      const still = await ctx.call('GetJob', { job_id: foreign.job.id });
      assert.equal(still.job.state, 'JOB_STATE_AVAILABLE');
    });

    test('EnqueueBatch and EnqueueMany carry the tenant', async () => {
      const md = { 'x-ojs-tenant': 'grpc-batch' };
      const batch = await ctx.call(
        'EnqueueBatch',
        {
          jobs: [
            { type: 't', args: [] },
            { type: 't', args: [] },
          ],
        },
        md,
      );
      for (const job of batch.jobs)
        assert.equal(job.meta.fields.tenant_id.stringValue, 'grpc-batch');
      const stats = await ctx.http('GET', '/ojs/v1/admin/tenants/grpc-batch/stats');
      assert.equal(stats.body.total_jobs, 2);
    });
  });
}
