/**
 * Encryption extension, server side (decision 0104), on every store: codec
 * args and meta are kept byte-exact on the paths the suites do not walk
 * (dead letter and its retry, workflows, push-many, gRPC); output adds the
 * nested `meta.ojs.codec` mirror on HTTP, in-process and gRPC alike; the
 * mirror is never stored (an output body sent back stores the flat keys
 * only); no codec key is added to a plain job; encoded args skip schema
 * validation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type GrpcCtx, type Msg, startGrpcCtx, storeKinds } from './helpers.ts';

const CODEC_META = {
  'ojs.codec.encodings': ['gzip/plain', 'binary/encrypted'],
  'ojs.codec.key_id': 'key-7',
  'ojs.codec.nonce': 'bm9uY2U=',
  // Opaque to the server, whatever it is: kept verbatim.
  'ojs.codec.aad': { nested: [1, 'two', null] },
  trace_id: 'tr-1',
};
const ENCODED_ARGS = [{ ojs_encoded: true, encoding: 'binary/encrypted+gzip', data: 'AAEC/w==' }];
const MIRROR = {
  encodings: CODEC_META['ojs.codec.encodings'],
  key_id: 'key-7',
  nonce: 'bm9uY2U=',
  aad: CODEC_META['ojs.codec.aad'],
};

for (const kind of await storeKinds()) {
  describe(`codec data through the server on ${kind}`, () => {
    let ctx: GrpcCtx;
    let n = 0;
    const queue = () => `codec-${++n}`;
    const ok = async (method: string, path: string, body?: unknown, status = 200) => {
      const answer = await ctx.http(method, path, body);
      assert.equal(answer.status, status, `${method} ${path}: ${JSON.stringify(answer.body)}`);
      return answer.body as Msg;
    };
    /** What the store holds (the record, not an output). */
    const record = (id: string) => ctx.server.engine.getJob(id);

    before(async () => {
      ctx = await startGrpcCtx(kind);
    });
    after(async () => ctx?.close());

    const expectOutput = (job: Msg) => {
      assert.deepEqual(job.args, ENCODED_ARGS);
      assert.deepEqual(job.meta, { ...CODEC_META, ojs: { codec: MIRROR } });
    };

    test('dead letter and its retry keep args and meta; the mirror is output only', async () => {
      const q = queue();
      const created = await ok(
        'POST',
        '/ojs/v1/jobs',
        {
          type: 'codec.job',
          args: ENCODED_ARGS,
          meta: CODEC_META,
          options: { queue: q, retry: { max_attempts: 1, on_exhaustion: 'dead_letter' } },
        },
        201,
      );
      expectOutput(created.job);
      const fetched = await ok('POST', '/ojs/v1/workers/fetch', { queues: [q], worker_id: 'w' });
      expectOutput(fetched.jobs[0]);
      await ok('POST', '/ojs/v1/workers/nack', {
        job_id: created.job.id,
        error: { code: 'handler_error', message: 'no' },
      });
      const dead = await ok('GET', `/ojs/v1/dead-letter?queue=${q}`);
      expectOutput(dead.jobs[0]);
      const retried = await ok('POST', `/ojs/v1/dead-letter/${created.job.id}/retry`);
      expectOutput(retried.job);
      const stored = await record(created.job.id);
      assert.deepEqual(stored.meta, CODEC_META, 'the store holds the flat keys only');
      assert.deepEqual(stored.args, ENCODED_ARGS);
    });

    test('an output body sent back stores the flat keys only (they win over the mirror)', async () => {
      const q = queue();
      const first = await ok(
        'POST',
        '/ojs/v1/jobs',
        { type: 'codec.job', args: ENCODED_ARGS, meta: CODEC_META, options: { queue: q } },
        201,
      );
      const { id: _id, ...output } = first.job;
      const stale = { ...output.meta, ojs: { codec: { ...MIRROR, key_id: 'stale' }, other: 1 } };
      const again = await ok('POST', '/ojs/v1/jobs', { ...output, meta: stale }, 201);
      assert.deepEqual((await record(again.job.id)).meta, { ...CODEC_META, ojs: { other: 1 } });
      assert.equal(again.job.meta.ojs.codec.key_id, 'key-7');
    });

    test('push-many, batch and workflows keep codec data; plain jobs get no codec key', async () => {
      const q = queue();
      const job = {
        type: 'codec.job',
        args: ENCODED_ARGS,
        meta: CODEC_META,
        options: { queue: q },
      };
      const many = await ok('POST', '/ojs/v1/jobs/many', { jobs: [job] });
      expectOutput(many.results[0].job);
      const batch = await ok('POST', '/ojs/v1/jobs/batch', { jobs: [job] }, 201);
      expectOutput(batch.jobs[0]);
      const workflow = await ok(
        'POST',
        '/ojs/v1/workflows',
        { type: 'chain', name: 'codec-wf', steps: [job] },
        201,
      );
      const stepJob = await ok('GET', `/ojs/v1/jobs/${workflow.workflow.steps[0].job_id}`);
      expectOutput(stepJob.job);
      const plain = await ok(
        'POST',
        '/ojs/v1/jobs',
        { type: 'codec.plain', args: [1], options: { queue: q } },
        201,
      );
      assert.deepEqual(plain.job.meta, {});
      assert.equal(JSON.stringify(plain.job).includes('ojs_encoded'), false);
    });

    test('encoded args are not validated against a registered schema', async () => {
      const { engine } = ctx.server;
      await engine.schemas.register('codec.typed', '1.0.0', {
        schema: { type: 'array', items: { type: 'number' } },
      });
      await engine.schemas.setMode('codec.typed', 'strict');
      const plain = await ctx.http('POST', '/ojs/v1/jobs', { type: 'codec.typed', args: ['x'] });
      assert.equal(plain.status, 422, 'a plain job is validated');
      const q = queue();
      const encoded = await ctx.http('POST', '/ojs/v1/jobs', {
        type: 'codec.typed',
        args: ENCODED_ARGS,
        meta: CODEC_META,
        options: { queue: q },
      });
      assert.equal(encoded.status, 201, JSON.stringify(encoded.body));
      assert.equal(encoded.body.warnings, undefined);
    });

    test('gRPC keeps the codec data and adds the same mirror', async () => {
      const q = queue();
      const created = await ok(
        'POST',
        '/ojs/v1/jobs',
        { type: 'codec.job', args: ENCODED_ARGS, meta: CODEC_META, options: { queue: q } },
        201,
      );
      const got = await ctx.call('GetJob', { job_id: created.job.id });
      const meta = got.job.meta.fields;
      assert.equal(meta['ojs.codec.key_id'].stringValue, 'key-7');
      assert.equal(
        meta.ojs.structValue.fields.codec.structValue.fields.key_id.stringValue,
        'key-7',
      );
      const fetched = await ctx.call('Fetch', { queues: [q], count: 1, worker_id: 'wg' });
      const args = fetched.jobs[0].args[0].structValue.fields;
      assert.equal(args.data.stringValue, 'AAEC/w==');
      assert.equal(args.ojs_encoded.boolValue, true);
    });
  });
}
