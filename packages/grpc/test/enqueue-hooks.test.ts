/**
 * The server's enqueue hook chain as `ojs serve --enqueue-hook` configures
 * it (decision 0105): the built-in `ojs_validate` (on in test mode) and an
 * operator's module, run by every binding: HTTP single, batch and
 * push-many; gRPC Enqueue, EnqueueBatch and EnqueueMany; the SDK's
 * in-process transport. Refusals keep the hook's code, status, retryability
 * and Retry-After; a hook that throws or hangs is a 500, never a success.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { OjsClient, type OjsError as SdkError } from '@ojs/sdk';
import { InProcessTransport } from '@ojs/sdk/in-process';
import { extensionsClientConstructor } from '../src/proto.ts';
import { type GrpcCtx, type Msg, startGrpcCtx, unary, v } from './helpers.ts';

const HOOKS = fileURLToPath(new URL('./fixtures/enqueue-hooks.mjs', import.meta.url));

describe('server enqueue hooks', () => {
  let ctx: GrpcCtx;
  const http = (method: string, path: string, body?: unknown) => ctx.http(method, path, body);
  const count = async (queue: string) =>
    (await http('GET', `/ojs/v1/jobs?queue=${queue}`)).body.jobs.length as number;

  before(async () => {
    ctx = await startGrpcCtx('sqlite', { enqueueHooks: [HOOKS], enqueueHookTimeoutMs: 300 });
  });
  after(async () => ctx?.close());

  test('the chain is the built-in ojs_validate (test mode) then the module, in order', () => {
    assert.deepEqual(ctx.server.engine.enqueueMiddleware.names(), [
      'ojs_validate',
      'quota',
      'boom',
      'slow',
      'drop',
      'stamp',
    ]);
  });

  test('HTTP POST /jobs: ojs_validate 422, quota 429 + Retry-After, throw and hang 500; a pass is stamped', async () => {
    const q = 'hooks-single';
    const job = (meta?: object) => ({ type: 'hook.job', args: [1], options: { queue: q }, meta });
    const rejected = await http('POST', '/ojs/v1/jobs', job({ ojs_validate: true }));
    assert.equal(rejected.status, 422);
    assert.equal(typeof rejected.body.error.code, 'string');
    assert.equal(rejected.body.error.code, 'validation_error');
    assert.match(rejected.body.error.message, /ojs_validate/);

    const response = await fetch(`${ctx.server.url}/ojs/v1/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(job({ quota_exceeded: true })),
    });
    const quota = (await response.json()) as Msg;
    assert.equal(response.status, 429);
    assert.equal(response.headers.get('retry-after'), '7');
    assert.equal(quota.error.code, 'x_quota_exceeded');
    assert.equal(quota.error.retryable, true);
    assert.deepEqual(quota.error.details, { limit: 1, retry_after_seconds: 7, hook: 'quota' });

    const boom = await http('POST', '/ojs/v1/jobs', job({ boom: true }));
    assert.equal(boom.status, 500);
    assert.equal(boom.body.error.code, 'internal_error');
    assert.equal(boom.body.error.message, "Enqueue hook 'boom' failed: kaboom");
    const slow = await http('POST', '/ojs/v1/jobs', job({ slow: true }));
    assert.equal(slow.status, 500);
    assert.match(slow.body.error.message, /did not answer within 300 ms/);
    assert.equal(await count(q), 0, 'no refused job was stored');

    const dropped = await http('POST', '/ojs/v1/jobs', job({ drop: true }));
    assert.deepEqual([dropped.status, dropped.body], [200, { job: null, enqueued: false }]);
    const created = await http('POST', '/ojs/v1/jobs', job());
    assert.equal(created.status, 201);
    const stored = await http('GET', `/ojs/v1/jobs/${created.body.job.id}`);
    assert.deepEqual(stored.body.job.meta, { hooked: true }, 'meta is an object, hooks write it');
    assert.equal(await count(q), 1);
  });

  test('HTTP batch is atomic: one refused job refuses it with that job index and status', async () => {
    const q = 'hooks-batch';
    const jobs = (meta: object) => [
      { type: 'hook.job', args: [1], options: { queue: q } },
      { type: 'hook.job', args: [2], options: { queue: q }, meta },
    ];
    const refused = await http('POST', '/ojs/v1/jobs/batch', { jobs: jobs({ ojs_validate: 1 }) });
    assert.equal(refused.status, 422);
    assert.match(refused.body.error.message, /^jobs\[1\]: /);
    assert.equal(refused.body.error.details.index, 1);
    const quota = await fetch(`${ctx.server.url}/ojs/v1/jobs/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jobs: jobs({ quota_exceeded: true }) }),
    });
    assert.equal(quota.status, 429);
    assert.equal(quota.headers.get('retry-after'), '7');
    assert.equal(((await quota.json()) as Msg).error.code, 'x_quota_exceeded');
    assert.equal(await count(q), 0);
    const ok = await http('POST', '/ojs/v1/jobs/batch', { jobs: jobs({}) });
    assert.equal(ok.status, 201);
    assert.deepEqual(
      ok.body.jobs.map((j: Msg) => j.meta.hooked),
      [true, true],
    );
  });

  test('HTTP push-many judges each item on its own', async () => {
    const q = 'hooks-many';
    const item = (meta: object) => ({ type: 'hook.job', args: [], options: { queue: q }, meta });
    const answer = await http('POST', '/ojs/v1/jobs/many', {
      jobs: [
        item({}),
        item({ ojs_validate: true }),
        item({ quota_exceeded: true }),
        item({ boom: true }),
      ],
    });
    assert.equal(answer.status, 200);
    assert.deepEqual(
      answer.body.results.map((r: Msg) => [r.status, r.error?.code ?? r.job.meta.hooked]),
      [
        [201, true],
        [422, 'validation_error'],
        [429, 'x_quota_exceeded'],
        [500, 'internal_error'],
      ],
    );
    assert.equal(answer.body.results[2].error.details.retry_after_seconds, 7);
    assert.equal(await count(q), 1);
  });

  test('gRPC Enqueue, EnqueueBatch and EnqueueMany run the same chain', async () => {
    const q = 'hooks-grpc';
    const options = (fields: Record<string, Msg>) => ({ queue: q, meta: v.struct(fields) });
    const yes = { boolValue: true };
    const validate = await ctx.fail('Enqueue', {
      type: 'hook.job',
      args: [],
      options: options({ ojs_validate: yes }),
    });
    assert.equal(validate.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(validate.errorInfo?.reason, 'validation_error');
    const quota = await ctx.fail('Enqueue', {
      type: 'hook.job',
      args: [],
      options: options({ quota_exceeded: yes }),
    });
    assert.equal(quota.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(quota.errorInfo?.reason, 'x_quota_exceeded');
    assert.equal(quota.errorInfo?.metadata.retryable, 'true');
    assert.deepEqual(quota.metadata.get('retry-after'), ['7']);
    const boom = await ctx.fail('Enqueue', {
      type: 'hook.job',
      args: [],
      options: options({ boom: yes }),
    });
    assert.equal(boom.code, grpc.status.INTERNAL);
    assert.equal(boom.message, "Enqueue hook 'boom' failed: kaboom");

    const batch = await ctx.fail('EnqueueBatch', {
      jobs: [
        { type: 'hook.job', args: [], options: { queue: q } },
        { type: 'hook.job', args: [], options: options({ ojs_validate: yes }) },
      ],
    });
    assert.equal(batch.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(batch.errorInfo?.metadata.index, '1');
    assert.equal(await count(q), 0);

    const client = new (extensionsClientConstructor())(
      ctx.grpcAddress,
      grpc.credentials.createInsecure(),
    );
    try {
      const many = await unary(client, 'EnqueueMany', {
        items: [
          { job: { type: 'hook.job', args: [], options: { queue: q } } },
          { job: { type: 'hook.job', args: [], options: options({ quota_exceeded: yes }) } },
        ],
      });
      assert.deepEqual(
        many.results.map((r: Msg) => [r.status, r.error_code ?? r.job.queue]),
        [
          ['created', q],
          ['error', 'x_quota_exceeded'],
        ],
      );
      assert.equal(many.results[1].code, grpc.status.RESOURCE_EXHAUSTED);
      assert.equal(many.results[1].error_metadata.retry_after_seconds, '7');
    } finally {
      client.close();
    }
    const created = await ctx.call('Enqueue', {
      type: 'hook.job',
      args: [],
      options: { queue: q },
    });
    assert.equal(created.job.meta.fields.hooked.boolValue, true);
  });

  test("the SDK's in-process transport gets the same answers", async () => {
    const client = new OjsClient({ transport: new InProcessTransport(ctx.server.engine) });
    const refusal = async (meta: Record<string, unknown>) => {
      try {
        await client.enqueue('hook.job', [], { queue: 'hooks-sdk', meta });
      } catch (error) {
        return error as SdkError;
      }
      throw new Error('the enqueue was not refused');
    };
    const validate = await refusal({ ojs_validate: true });
    assert.deepEqual([validate.status, validate.code], [422, 'validation_error']);
    const quota = await refusal({ quota_exceeded: true });
    assert.deepEqual(
      [quota.status, quota.code, quota.retryable, quota.retryAfterMs],
      [429, 'x_quota_exceeded', true, 7000],
    );
    const boom = await refusal({ boom: true });
    assert.equal(boom.status, 500);
    const job = await client.enqueue('hook.job', [], { queue: 'hooks-sdk' });
    assert.equal(job?.meta?.hooked, true);
  });
});
