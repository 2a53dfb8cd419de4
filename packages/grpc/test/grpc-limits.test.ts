/**
 * One verdict per request whichever binding carries it: each row goes over
 * HTTP (a live server) and over gRPC (a grpc-js client against the same
 * server's startGrpcServer) and must be accepted by both or refused by both
 * with the same OJS code (the gRPC status the code maps to, ErrorInfo
 * reason = the code). Then a fetch of two 3 MB jobs by a client with
 * grpc-js's default 4 MiB receive limit: it gets what fits, and the rest is
 * handed back at once instead of staying active until its lease expires.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { ERROR_CATALOGUE, type ErrorCode, MAX_JSON_DEPTH, MAX_NAME_BYTES } from '@ojs/core';
import { toStruct, toValue } from '@ojs/sdk/proto-wire';
import { ojsService } from '../src/proto.ts';
import { RECEIVE_LIMIT_METADATA } from '../src/reply-limits.ts';
import { type GrpcServer, startGrpcServer } from '../src/server.ts';
import { errorDetails, grpcStatusOf } from '../src/status.ts';
import {
  type GrpcCtx,
  type Msg,
  newClient,
  startGrpcCtx,
  storeKinds,
  toMetadata,
  unary,
  v,
} from './helpers.ts';

const kinds = await storeKinds();

/** A JSON value nested `levels` deep: `[[...null...]]` or `{"a":{"a":...}}`. */
function nested(levels: number, kind: 'array' | 'object' = 'array'): unknown {
  let value: unknown = null;
  for (let i = 0; i < levels; i++) value = kind === 'array' ? [value] : { a: value };
  return value;
}

/** Protobuf wire format by hand, for messages a client library will not encode. */
const varint = (n: number) => {
  const out: number[] = [];
  for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
  out.push(n);
  return Buffer.from(out);
};
const lengthDelimited = (field: number, body: Buffer) =>
  Buffer.concat([varint((field << 3) | 2), varint(body.length), body]);

/** An EnqueueRequest {type: "t", args: [[[...]]]} `levels` lists deep (Value.list_value = 6, ListValue.values = 1). */
function deepEnqueueMessage(levels: number): Buffer {
  let value = Buffer.from([0x08, 0x00]); // Value.null_value
  for (let i = 0; i < levels; i++) value = lengthDelimited(6, lengthDelimited(1, value));
  return Buffer.concat([lengthDelimited(1, Buffer.from('t')), lengthDelimited(2, value)]);
}

/** Bytes that are not UTF-8: a lead byte followed by a non-continuation byte. */
const NOT_UTF8 = Buffer.from([0xc3, 0x28]);

/** An EnqueueRequest whose arg string holds NOT_UTF8 (patched into an encoded message). */
function notUtf8EnqueueMessage(): Buffer {
  const bytes = ojsService().Enqueue!.requestSerialize({ type: 't', args: [v.str('@@')] });
  const at = bytes.indexOf('@@');
  NOT_UTF8.copy(bytes, at);
  return bytes;
}

/** A request in each binding's form: a JSON value or raw bytes (HTTP), a message or raw bytes (gRPC). */
interface Row {
  name: string;
  http: { path: string; body: unknown; raw?: Buffer };
  grpc: { method: string; request: Msg; raw?: Buffer };
  /** `accepted`, or the OJS code both bindings refuse it with. */
  verdict: 'accepted' | ErrorCode;
}

const enqueue = (name: string, job: Msg, verdict: Row['verdict'], message?: Msg): Row => ({
  name,
  http: { path: '/ojs/v1/jobs', body: job },
  grpc: {
    method: 'Enqueue',
    request: message ?? {
      type: job.type,
      args: (job.args as unknown[]).map(toValue),
      options: job.options?.queue === undefined ? undefined : { queue: job.options.queue },
    },
  },
  verdict,
});
const raw = (name: string, http: Buffer, grpcBytes: Buffer, verdict: ErrorCode): Row => ({
  name,
  http: { path: '/ojs/v1/jobs', body: undefined, raw: http },
  grpc: { method: 'Enqueue', request: {}, raw: grpcBytes },
  verdict,
});

const MiB = 1024 * 1024;
// A body's own level is 1 and `args` is 2: an arg nested n deep makes n + 2.
const argLevels = MAX_JSON_DEPTH - 2;
// `meta` is level 2 (in EnqueueOptions over gRPC, the top of an HTTP body).
const metaLevels = MAX_JSON_DEPTH - 1;
const rows: Row[] = [
  enqueue('an arg of 2 MiB', { type: 't', args: ['x'.repeat(2 * MiB)] }, 'payload_too_large'),
  enqueue('an arg of 3.9 MB', { type: 't', args: ['x'.repeat(3_900_000)] }, 'payload_too_large'),
  enqueue(
    'an arg just under the limit',
    { type: 't', args: ['x'.repeat(2 * MiB - 100)] },
    'accepted',
  ),
  enqueue('NUL in an arg', { type: 't', args: ['a\u0000b'] }, 'invalid_payload'),
  enqueue('NUL in a key of an arg', { type: 't', args: [{ 'a\u0000': 1 }] }, 'invalid_payload'),
  // JSON has no NaN (a body holding it is not JSON); protobuf carries it as a double.
  raw(
    'NaN in an arg',
    Buffer.from('{"type":"t","args":[NaN]}'),
    ojsService().Enqueue!.requestSerialize({ type: 't', args: [v.num(Number.NaN)] }),
    'invalid_payload',
  ),
  // JSON.parse reads 1e999 as Infinity.
  raw(
    'Infinity in an arg',
    Buffer.from('{"type":"t","args":[1e999]}'),
    ojsService().Enqueue!.requestSerialize({ type: 't', args: [v.num(Number.POSITIVE_INFINITY)] }),
    'invalid_payload',
  ),
  raw(
    '-Infinity in an arg',
    Buffer.from('{"type":"t","args":[-1e999]}'),
    ojsService().Enqueue!.requestSerialize({ type: 't', args: [v.num(Number.NEGATIVE_INFINITY)] }),
    'invalid_payload',
  ),
  raw(
    'invalid UTF-8 in an arg',
    Buffer.concat([Buffer.from('{"type":"t","args":["'), NOT_UTF8, Buffer.from('"]}')]),
    notUtf8EnqueueMessage(),
    'invalid_payload',
  ),
  enqueue(
    `an arg nesting the body ${MAX_JSON_DEPTH} deep`,
    { type: 't', args: [nested(argLevels)] },
    'accepted',
  ),
  enqueue(
    `an arg nesting the body ${MAX_JSON_DEPTH + 1} deep`,
    { type: 't', args: [nested(argLevels + 1)] },
    'invalid_payload',
  ),
  enqueue(
    `meta nesting the body ${MAX_JSON_DEPTH} deep`,
    { type: 't', args: [], meta: nested(metaLevels, 'object') },
    'accepted',
    { type: 't', args: [], options: { meta: toStruct(nested(metaLevels, 'object') as Msg) } },
  ),
  enqueue(
    `meta nesting the body ${MAX_JSON_DEPTH + 1} deep`,
    { type: 't', args: [], meta: nested(metaLevels + 1, 'object') },
    'invalid_payload',
    { type: 't', args: [], options: { meta: toStruct(nested(metaLevels + 1, 'object') as Msg) } },
  ),
  raw(
    'an arg nesting the body 502 deep',
    Buffer.from(`{"type":"t","args":[${'['.repeat(500)}null${']'.repeat(500)}]}`),
    deepEnqueueMessage(500),
    'invalid_payload',
  ),
  enqueue(
    `a type of ${MAX_NAME_BYTES} bytes`,
    { type: 'a'.repeat(MAX_NAME_BYTES), args: [] },
    'accepted',
  ),
  enqueue(
    `a type of ${MAX_NAME_BYTES + 1} bytes`,
    { type: 'a'.repeat(MAX_NAME_BYTES + 1), args: [] },
    'invalid_payload',
  ),
  enqueue(
    `a queue of ${MAX_NAME_BYTES + 1} bytes`,
    { type: 't', args: [], options: { queue: 'q'.repeat(MAX_NAME_BYTES + 1) } },
    'invalid_payload',
  ),
  {
    name: `a fetch of a queue of ${MAX_NAME_BYTES + 1} bytes`,
    http: { path: '/ojs/v1/workers/fetch', body: { queues: ['q'.repeat(MAX_NAME_BYTES + 1)] } },
    grpc: { method: 'Fetch', request: { queues: ['q'.repeat(MAX_NAME_BYTES + 1)] } },
    verdict: 'invalid_request',
  },
  {
    name: 'a fetch of a queue with NUL',
    http: { path: '/ojs/v1/workers/fetch', body: { queues: ['q\u0000'] } },
    grpc: { method: 'Fetch', request: { queues: ['q\u0000'] } },
    verdict: 'invalid_payload',
  },
];

/** A call with bytes as they are (the generated client would encode or refuse them). */
function rawUnary(client: grpc.Client, method: string, bytes: Buffer): Promise<unknown> {
  const definition = ojsService()[method]!;
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      definition.path,
      (b: Buffer) => b,
      definition.responseDeserialize,
      bytes,
      new grpc.Metadata(),
      { deadline: Date.now() + 30_000 },
      (error, response) => (error ? reject(error) : resolve(response)),
    );
  });
}

for (const kind of kinds) {
  describe(`request limits over HTTP and gRPC on ${kind}`, () => {
    let ctx: GrpcCtx;
    before(async () => {
      ctx = await startGrpcCtx(kind);
    });
    after(async () => ctx?.close());

    const storedJobs = async () =>
      (await ctx.server.engine.store.countJobsByQueue()).reduce((n, row) => n + row.count, 0);

    for (const row of rows) {
      test(`${row.name}: ${row.verdict} over both bindings`, async () => {
        const before = await storedJobs();
        const response = await fetch(`${ctx.server.url}${row.http.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: row.http.raw ?? JSON.stringify(row.http.body),
        });
        const body = (await response.json()) as Msg;
        let grpcError: grpc.ServiceError | undefined;
        try {
          await (row.grpc.raw === undefined
            ? unary(ctx.client, row.grpc.method, row.grpc.request)
            : rawUnary(ctx.client, row.grpc.method, row.grpc.raw));
        } catch (error) {
          grpcError = error as grpc.ServiceError;
        }
        if (row.verdict === 'accepted') {
          assert.ok(response.status < 300, `HTTP ${response.status} ${JSON.stringify(body)}`);
          assert.equal(grpcError, undefined, `gRPC ${grpcError?.code} ${grpcError?.details}`);
          return;
        }
        assert.equal(response.status, ERROR_CATALOGUE[row.verdict].status);
        assert.equal(body.error.code, row.verdict);
        assert.ok(grpcError, 'gRPC accepted what HTTP refused');
        assert.equal(grpcError.code, grpcStatusOf(row.verdict), grpcError.details);
        assert.equal(errorDetails(grpcError.metadata).errorInfo?.reason, row.verdict);
        assert.equal(await storedJobs(), before, 'nothing stored');
      });
    }

    test('the size limit is the server’s body limit: its payload_too_large names it', async () => {
      const error = await ctx.fail('Enqueue', { type: 't', args: [v.str('x'.repeat(2 * MiB))] });
      assert.equal(error.errorInfo?.metadata.max_bytes, String(2 * MiB));
    });
  });

  describe(`a gRPC fetch answers only what the client receives, on ${kind}`, () => {
    let ctx: GrpcCtx;
    // A server taking 8 MiB requests, so that 3 MB jobs can be enqueued at all.
    let big: GrpcServer;
    let client: grpc.Client;
    const THREE_MB = 3_000_000;
    before(async () => {
      ctx = await startGrpcCtx(kind);
      big = await startGrpcServer({
        engine: ctx.server.engine,
        port: 0,
        manifest: () => ({}),
        conformanceLevel: 4,
        maxBodyBytes: 8 * MiB,
      });
      // grpc-js's default receive limit: 4 MiB.
      client = newClient(big.address);
    });
    after(async () => {
      client?.close();
      await big?.close();
      await ctx?.close();
    });

    const enqueueBig = async (queue: string, n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const { job } = await unary(client, 'Enqueue', {
          type: 'big',
          args: [v.str(String(i).repeat(THREE_MB))],
          options: { queue },
        });
        ids.push(job.id);
      }
      return ids;
    };
    const stateOf = async (id: string) => (await ctx.server.engine.getJob(id)).state;

    test('two 3 MB jobs: the first is sent, the second is handed back at once', async () => {
      const [first, second] = await enqueueBig('big-q', 2);
      const reply = await unary(client, 'Fetch', {
        queues: ['big-q'],
        count: 2,
        worker_id: 'w-big',
      });
      assert.deepEqual(
        reply.jobs.map((job: Msg) => job.id),
        [first],
      );
      assert.equal(await stateOf(first!), 'active');
      const handedBack = await ctx.server.engine.getJob(second!);
      assert.equal(handedBack.state, 'available');
      assert.equal(handedBack.attempt, 0, 'a requeue does not count an attempt');
      // The next fetch gets it.
      const next = await unary(client, 'Fetch', {
        queues: ['big-q'],
        count: 2,
        worker_id: 'w-big',
      });
      assert.deepEqual(
        next.jobs.map((job: Msg) => job.id),
        [second],
      );
    });

    test('a client that declares a larger limit gets both', async () => {
      const ids = await enqueueBig('big-q2', 2);
      const roomy = new grpc.Client(big.address, grpc.credentials.createInsecure(), {
        'grpc.max_receive_message_length': 16 * MiB,
      });
      const fetchMethod = ojsService().Fetch!;
      const reply = await new Promise<Msg>((resolve, reject) =>
        roomy.makeUnaryRequest(
          fetchMethod.path,
          fetchMethod.requestSerialize,
          fetchMethod.responseDeserialize,
          { queues: ['big-q2'], count: 2, worker_id: 'w-roomy' },
          toMetadata({ [RECEIVE_LIMIT_METADATA]: String(16 * MiB) }),
          (error, response) => (error ? reject(error) : resolve(response)),
        ),
      );
      roomy.close();
      assert.deepEqual(
        reply.jobs.map((job: Msg) => job.id),
        ids,
      );
    });

    test('a job larger than the client receives is handed back and the fetch says why', async () => {
      const [id] = await enqueueBig('big-q3', 1);
      let error: grpc.ServiceError | undefined;
      try {
        await unary(
          client,
          'Fetch',
          { queues: ['big-q3'], worker_id: 'w-small' },
          { [RECEIVE_LIMIT_METADATA]: String(MiB) },
        );
      } catch (e) {
        error = e as grpc.ServiceError;
      }
      assert.ok(error, 'the fetch must fail');
      const info = errorDetails(error.metadata).errorInfo;
      assert.equal(info?.reason, 'payload_too_large');
      assert.equal(info?.metadata.job_id, id);
      assert.equal(info?.metadata.max_bytes, String(MiB));
      assert.equal(await stateOf(id!), 'available');
    });

    test('a malformed declared limit is refused before anything is claimed', async () => {
      const { job } = await unary(client, 'Enqueue', {
        type: 'small',
        options: { queue: 'q-bad' },
      });
      let error: grpc.ServiceError | undefined;
      try {
        await unary(
          client,
          'Fetch',
          { queues: ['q-bad'], worker_id: 'w-bad' },
          { [RECEIVE_LIMIT_METADATA]: 'lots' },
        );
      } catch (e) {
        error = e as grpc.ServiceError;
      }
      assert.equal(error?.code, grpc.status.INVALID_ARGUMENT);
      assert.equal(await stateOf(job.id), 'available');
    });

    test('StreamJobs: a job larger than the client receives is handed back and the stream ends', async () => {
      const [id] = await enqueueBig('big-q4', 1);
      const stream = (
        client as unknown as Record<
          string,
          (r: Msg, m: grpc.Metadata) => grpc.ClientReadableStream<Msg>
        >
      ).StreamJobs!.call(
        client,
        { queues: ['big-q4'], worker_id: 'w-stream' },
        toMetadata({ [RECEIVE_LIMIT_METADATA]: String(MiB) }),
      );
      stream.on('data', () => assert.fail('no job fits'));
      const error = await new Promise<grpc.ServiceError>((resolve) =>
        stream.once('error', resolve),
      );
      assert.equal(errorDetails(error.metadata).errorInfo?.reason, 'payload_too_large');
      assert.equal(await stateOf(id!), 'available');
      assert.equal(big.jobStreams.size, 0, 'the ended stream is forgotten');
    });
  });
}
