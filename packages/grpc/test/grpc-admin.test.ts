/**
 * The Level 1-4 RPCs beyond the job lifecycle through a client generated
 * from our .proto, on SQLite and PostgreSQL: EnqueueBatch, queues, dead
 * letter, cron, workflows; API keys and roles in metadata; grpc.health.v1
 * and reflection.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { type GrpcCtx, type Msg, startGrpcCtx, storeKinds, unary, v } from './helpers.ts';

const kinds = await storeKinds();

async function deadLetter(ctx: GrpcCtx, queue: string, type: string): Promise<string> {
  const { job } = await ctx.call('Enqueue', {
    type,
    args: [],
    options: { queue, retry: { max_attempts: 1, on_exhaustion: 'dead_letter' } },
  });
  await ctx.call('Fetch', { queues: [queue], worker_id: 'w' });
  const r = await ctx.call('Nack', { job_id: job.id, error: { code: 'E', message: 'dead' } });
  assert.equal(r.state, 'JOB_STATE_DISCARDED');
  return job.id;
}

for (const kind of kinds) {
  describe(`gRPC Level 1-4 RPCs on ${kind}`, () => {
    let ctx: GrpcCtx;
    before(async () => {
      ctx = await startGrpcCtx(kind);
    });
    after(async () => ctx?.close());

    test('EnqueueBatch applies default_options, per-entry overrides, and is atomic', async () => {
      const batch = await ctx.call('EnqueueBatch', {
        jobs: [
          { type: 'batch.a', args: [v.num(1)] },
          { type: 'batch.b', args: [v.num(2)], options: { queue: 'batch-other', priority: 3 } },
        ],
        default_options: { queue: 'batch-q', tags: ['bulk'] },
      });
      assert.equal(batch.count, 2);
      assert.deepEqual(batch.errors, {});
      assert.equal(batch.jobs[0].queue, 'batch-q');
      assert.deepEqual(batch.jobs[0].tags, ['bulk']);
      assert.equal(batch.jobs[1].queue, 'batch-other');
      assert.equal(batch.jobs[1].priority, 3);
      assert.deepEqual(batch.jobs[1].tags, ['bulk']);
      // One bad entry: nothing stored, the error names the entry.
      const before = (await ctx.http('GET', '/ojs/v1/jobs?queue=batch-atomic')).body.jobs.length;
      const bad = await ctx.fail('EnqueueBatch', {
        jobs: [
          { type: 'ok.job', args: [], options: { queue: 'batch-atomic' } },
          { type: 'Bad Type', args: [], options: { queue: 'batch-atomic' } },
        ],
      });
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
      assert.match(bad.message, /jobs\[1\]/);
      assert.equal(bad.errorInfo?.metadata.index, '1');
      const afterCount = (await ctx.http('GET', '/ojs/v1/jobs?queue=batch-atomic')).body.jobs
        .length;
      assert.equal(afterCount, before);
    });

    test('ListQueues, QueueStats, PauseQueue and ResumeQueue', async () => {
      await ctx.call('Enqueue', { type: 'q.job', args: [], options: { queue: 'stats-q' } });
      await ctx.call('Enqueue', { type: 'q.job', args: [], options: { queue: 'stats-q' } });
      const listed = await ctx.call('ListQueues', {});
      const queue = listed.queues.find((q: Msg) => q.name === 'stats-q');
      assert.equal(Number(queue.available_count), 2);
      assert.ok(listed.queues.some((q: Msg) => q.name === 'default'));
      // Paging with a cursor walks every queue once.
      const names: string[] = [];
      let cursor = '';
      for (let i = 0; i < 50; i++) {
        const page = await ctx.call('ListQueues', { limit: 1, cursor });
        names.push(...page.queues.map((q: Msg) => q.name));
        cursor = page.next_cursor ?? '';
        if (cursor === '') break;
      }
      assert.deepEqual(
        names,
        listed.queues.map((q: Msg) => q.name),
      );

      const stats = await ctx.call('QueueStats', { queue: 'stats-q' });
      assert.equal(stats.queue, 'stats-q');
      assert.equal(Number(stats.stats.available), 2);
      assert.notEqual(stats.stats.paused, true);

      assert.deepEqual(await ctx.call('PauseQueue', { queue: 'stats-q' }), {});
      assert.equal((await ctx.call('QueueStats', { queue: 'stats-q' })).stats.paused, true);
      assert.deepEqual((await ctx.call('Fetch', { queues: ['stats-q'] })).jobs, []);
      // The pause is shared with HTTP.
      const http = (await ctx.http('GET', '/ojs/v1/queues/stats-q/stats')).body;
      assert.equal(http.queue.paused, true);
      await ctx.call('ResumeQueue', { queue: 'stats-q' });
      assert.equal((await ctx.call('Fetch', { queues: ['stats-q'] })).jobs.length, 1);

      const bad = await ctx.fail('QueueStats', { queue: 'Bad Queue!' });
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
    });

    test('ListDeadLetter, RetryDeadLetter and DeleteDeadLetter', async () => {
      const first = await deadLetter(ctx, 'dlq-q', 'dead.one');
      const second = await deadLetter(ctx, 'dlq-q', 'dead.two');
      const listed = await ctx.call('ListDeadLetter', { queue: 'dlq-q' });
      assert.equal(Number(listed.total_count), 2);
      assert.deepEqual(listed.jobs.map((j: Msg) => j.id).sort(), [first, second].sort());
      const paged = await ctx.call('ListDeadLetter', { queue: 'dlq-q', limit: 1 });
      assert.equal(paged.jobs.length, 1);
      assert.equal(paged.next_cursor, '1');
      const rest = await ctx.call('ListDeadLetter', { queue: 'dlq-q', limit: 1, cursor: '1' });
      assert.equal(rest.jobs.length, 1);
      assert.equal(rest.next_cursor ?? '', '');

      const retried = (await ctx.call('RetryDeadLetter', { job_id: first })).job;
      assert.equal(retried.state, 'JOB_STATE_AVAILABLE');
      assert.deepEqual(await ctx.call('DeleteDeadLetter', { job_id: second }), {});
      assert.equal((await ctx.fail('GetJob', { job_id: second })).code, grpc.status.NOT_FOUND);
      const gone = await ctx.fail('DeleteDeadLetter', { job_id: second });
      assert.equal(gone.code, grpc.status.NOT_FOUND);
      assert.equal(
        Number((await ctx.call('ListDeadLetter', { queue: 'dlq-q' })).total_count ?? 0),
        0,
      );
    });

    test('RegisterCron, ListCron and UnregisterCron; overlap policy kept on re-register', async () => {
      const registered = await ctx.call('RegisterCron', {
        name: 'nightly-report',
        cron: '0 3 * * *',
        timezone: 'Europe/Paris',
        type: 'report.build',
        args: [v.str('daily')],
        options: { queue: 'reports', max_attempts: 2 },
      });
      assert.equal(registered.name, 'nightly-report');
      assert.ok(Number(registered.next_run_at.seconds) * 1000 > Date.now());
      const entry = (await ctx.call('ListCron', {})).entries.find(
        (e: Msg) => e.name === 'nightly-report',
      );
      assert.equal(entry.cron, '0 3 * * *');
      assert.equal(entry.timezone, 'Europe/Paris');
      assert.equal(entry.type, 'report.build');
      assert.equal(entry.args[0].stringValue, 'daily');
      assert.equal(entry.options.queue, 'reports');
      assert.equal(entry.options.max_attempts, 2);
      assert.equal(entry.last_run_at, undefined);
      // HTTP sees the same entry, with the default overlap policy.
      const http = (await ctx.http('GET', '/ojs/v1/cron/nightly-report')).body.cron;
      assert.equal(http.overlap_policy, 'skip');
      // An overlap policy set over HTTP survives a gRPC re-registration.
      await ctx.http('POST', '/ojs/v1/cron', {
        name: 'nightly-report',
        cron: '0 3 * * *',
        type: 'report.build',
        overlap_policy: 'allow',
      });
      await ctx.call('RegisterCron', {
        name: 'nightly-report',
        cron: '0 4 * * *',
        type: 'report.build',
      });
      const updated = (await ctx.http('GET', '/ojs/v1/cron/nightly-report')).body.cron;
      assert.equal(updated.overlap_policy, 'allow');
      assert.equal(updated.cron, '0 4 * * *');

      const bad = await ctx.fail('RegisterCron', { name: 'x', cron: 'not a cron', type: 'a.b' });
      assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);

      assert.deepEqual(await ctx.call('UnregisterCron', { name: 'nightly-report' }), {});
      assert.equal(
        (await ctx.call('ListCron', {})).entries.some((e: Msg) => e.name === 'nightly-report'),
        false,
      );
      const gone = await ctx.fail('UnregisterCron', { name: 'nightly-report' });
      assert.equal(gone.code, grpc.status.NOT_FOUND);
    });

    test('CreateWorkflow (DAG), GetWorkflow as steps run, CancelWorkflow', async () => {
      const created = (
        await ctx.call('CreateWorkflow', {
          name: 'etl',
          steps: [
            {
              id: 'extract',
              type: 'etl.extract',
              args: [v.str('src')],
              options: { queue: 'wf-q' },
            },
            {
              id: 'transform',
              type: 'etl.transform',
              depends_on: ['extract'],
              options: { queue: 'wf-q' },
            },
            { id: 'load', type: 'etl.load', depends_on: ['transform'], options: { queue: 'wf-q' } },
          ],
        })
      ).workflow;
      assert.equal(created.name, 'etl');
      assert.equal(created.state, 'WORKFLOW_STATE_RUNNING');
      assert.deepEqual(
        created.steps.map((s: Msg) => [s.id, s.state]),
        [
          ['extract', 'WORKFLOW_STEP_STATE_PENDING'],
          ['transform', 'WORKFLOW_STEP_STATE_WAITING'],
          ['load', 'WORKFLOW_STEP_STATE_WAITING'],
        ],
      );
      assert.deepEqual(created.steps[1].depends_on, ['extract']);
      const [job] = (await ctx.call('Fetch', { queues: ['wf-q'], worker_id: 'w' })).jobs;
      assert.equal(job.type, 'etl.extract');
      assert.equal(job.workflow_id, created.id);
      let got = (await ctx.call('GetWorkflow', { workflow_id: created.id })).workflow;
      assert.equal(got.steps[0].state, 'WORKFLOW_STEP_STATE_ACTIVE');
      assert.equal(got.steps[0].job_id, job.id);
      await ctx.call('Ack', { job_id: job.id });
      got = (await ctx.call('GetWorkflow', { workflow_id: created.id })).workflow;
      assert.equal(got.steps[0].state, 'WORKFLOW_STEP_STATE_COMPLETED');
      assert.equal(got.steps[1].state, 'WORKFLOW_STEP_STATE_PENDING');

      const cancelled = (await ctx.call('CancelWorkflow', { workflow_id: created.id })).workflow;
      assert.equal(cancelled.state, 'WORKFLOW_STATE_CANCELLED');
      assert.ok(Number(cancelled.completed_at.seconds) > 0);
      const again = await ctx.fail('CancelWorkflow', { workflow_id: created.id });
      assert.equal(again.code, grpc.status.FAILED_PRECONDITION);

      const missing = await ctx.fail('GetWorkflow', { workflow_id: 'nope' });
      assert.equal(missing.code, grpc.status.NOT_FOUND);
      const cycle = await ctx.fail('CreateWorkflow', {
        name: 'loop',
        steps: [
          { id: 'a', type: 'x.a', depends_on: ['b'] },
          { id: 'b', type: 'x.b', depends_on: ['a'] },
        ],
      });
      assert.equal(cycle.code, grpc.status.INVALID_ARGUMENT);
    });

    test('a chain made over HTTP reads over gRPC as a DAG', async () => {
      const made = await ctx.http('POST', '/ojs/v1/workflows', {
        type: 'chain',
        name: 'http-chain',
        steps: [
          { type: 'c.one', args: [] },
          { type: 'c.two', args: [] },
        ],
      });
      assert.equal(made.status, 201);
      const wf = (await ctx.call('GetWorkflow', { workflow_id: made.body.workflow.id })).workflow;
      assert.deepEqual(
        wf.steps.map((s: Msg) => [s.id, s.type, s.depends_on]),
        [
          ['0', 'c.one', []],
          ['1', 'c.two', ['0']],
        ],
      );
    });
  });
}

describe('gRPC auth, health and reflection', () => {
  let ctx: GrpcCtx;
  const keys = {
    admin: 'admin-key-0123456789',
    producer: 'producer-key-0123456789',
    worker: 'worker-key-0123456789',
  };
  before(async () => {
    ctx = await startGrpcCtx('sqlite', {
      apiKeys: `admin:${keys.admin},producer:${keys.producer},worker:${keys.worker}`,
    });
  });
  after(async () => ctx?.close());

  test('API keys: authorization Bearer or x-ojs-api-key, with the HTTP roles', async () => {
    const anonymous = await ctx.fail('Enqueue', { type: 'a.b', args: [] });
    assert.equal(anonymous.code, grpc.status.UNAUTHENTICATED);
    assert.equal(anonymous.errorInfo?.reason, 'unauthenticated');
    const wrong = await ctx.fail('Health', {}, { authorization: 'Bearer nope-nope-nope-nope' });
    assert.equal(wrong.code, grpc.status.UNAUTHENTICATED);

    const { job } = await ctx.call(
      'Enqueue',
      { type: 'a.b', args: [] },
      { authorization: `Bearer ${keys.producer}` },
    );
    const denied = await ctx.fail(
      'Fetch',
      { queues: ['default'] },
      { 'x-ojs-api-key': keys.producer },
    );
    assert.equal(denied.code, grpc.status.PERMISSION_DENIED);
    assert.equal(denied.errorInfo?.reason, 'permission_denied');
    const fetched = await ctx.call(
      'Fetch',
      { queues: ['default'] },
      { 'x-ojs-api-key': keys.worker },
    );
    assert.equal(fetched.jobs[0].id, job.id);
    const adminOnly = await ctx.fail(
      'PauseQueue',
      { queue: 'default' },
      { 'x-ojs-api-key': keys.worker },
    );
    assert.equal(adminOnly.code, grpc.status.PERMISSION_DENIED);
    await ctx.call('PauseQueue', { queue: 'default' }, { 'x-ojs-api-key': keys.admin });
    assert.equal(
      (await ctx.call('Manifest', {}, { 'x-ojs-api-key': keys.worker })).conformance_level,
      4,
    );
  });

  test('grpc.health.v1 reports SERVING for "" and ojs.v1.OJSService', async () => {
    const definition = protoLoader.loadSync(
      new URL(
        '../../../node_modules/grpc-health-check/proto/health/v1/health.proto',
        import.meta.url,
      ).pathname,
      { keepCase: true, enums: String },
    );
    const Health = (
      grpc.loadPackageDefinition(definition) as unknown as {
        grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
      }
    ).grpc.health.v1.Health;
    const client = new Health(ctx.grpcAddress, grpc.credentials.createInsecure());
    try {
      for (const service of ['', 'ojs.v1.OJSService']) {
        const answer = await unary(client, 'Check', { service });
        assert.equal(answer.status, 'SERVING');
      }
    } finally {
      client.close();
    }
  });

  // Built on the first reflection call (decision 0121): each version
  // answers from the server's own package, the first call included.
  for (const version of ['v1alpha', 'v1'] as const) {
    test(`server reflection (${version}) lists ojs.v1.OJSService and finds its file`, async () => {
      const definition = protoLoader.loadSync(
        new URL(
          `../../../node_modules/@grpc/reflection/build/proto/grpc/reflection/${version}/reflection.proto`,
          import.meta.url,
        ).pathname,
        { keepCase: true },
      );
      const Reflection = (
        grpc.loadPackageDefinition(definition) as unknown as {
          grpc: { reflection: Record<string, { ServerReflection: grpc.ServiceClientConstructor }> };
        }
      ).grpc.reflection[version]!.ServerReflection;
      const client = new Reflection(ctx.grpcAddress, grpc.credentials.createInsecure());
      try {
        const stream = (
          client as unknown as { ServerReflectionInfo(): grpc.ClientDuplexStream<Msg, Msg> }
        ).ServerReflectionInfo();
        const answers: Msg[] = [];
        const both = new Promise<void>((resolve, reject) => {
          stream.on('data', (answer: Msg) => {
            answers.push(answer);
            if (answers.length === 2) resolve();
          });
          stream.once('error', reject);
        });
        stream.write({ list_services: '' });
        stream.write({ file_containing_symbol: 'ojs.v1.OJSService' });
        await both;
        stream.end();
        const services = answers[0]!.list_services_response.service.map((s: Msg) => s.name);
        assert.ok(services.includes('ojs.v1.OJSService'), services.join(','));
        assert.ok(services.includes('ojsts.v1.WorkerExtensions'), services.join(','));
        const files = answers[1]!.file_descriptor_response?.file_descriptor_proto as Buffer[];
        assert.ok(files.length > 0, JSON.stringify(answers[1]));
        assert.ok(
          files.some((file) => file.toString('latin1').includes('OJSService')),
          'a descriptor holds the service',
        );
      } finally {
        client.close();
      }
    });
  }
});
