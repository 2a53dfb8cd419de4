/**
 * What a server loads at start, and in which order it opens (decision
 * 0098): fastify's schema compilers only for a route with a schema; the
 * gRPC port is bound at start (the manifest lists it, a port that is taken
 * fails the start and closes what was opened) but grpc-js is loaded by the
 * first connection, which it then serves.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { connect, createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import { buildEnvelope } from '@ojs/sdk';
import { GrpcTransport } from '@ojs/sdk/grpc';
import { freePort } from '../../../scripts/lib.ts';
import { startServer } from '../src/serve.ts';
import { setup } from './helpers.ts';

/** Whether `name`, as `parent` resolves it, is loaded (CommonJS) in this process. */
function loadedBy(parent: string, name: string): boolean {
  const parentRequire = createRequire(import.meta.resolve(parent));
  return parentRequire.cache[parentRequire.resolve(name)] !== undefined;
}
const loadedByFastify = (name: string) => loadedBy('fastify', name);

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('what a server loads at start', () => {
  const closers: (() => Promise<void>)[] = [];
  after(() => Promise.all(closers.map((close) => close())));

  it("fastify's schema compilers load only for a route with a schema, and still validate", async () => {
    const ctx = await setup();
    closers.push(() => ctx.close());
    await ctx.app.ready();
    assert.equal(loadedByFastify('@fastify/ajv-compiler'), false);
    assert.equal(loadedByFastify('@fastify/fast-json-stringify-compiler'), false);

    const ctx2 = await setup();
    closers.push(() => ctx2.close());
    ctx2.app.post(
      '/schema-check',
      {
        schema: {
          body: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } },
          response: { 200: { type: 'object', properties: { n: { type: 'integer' } } } },
        },
      },
      async (request) => ({ n: (request.body as { n: number }).n, dropped: true }),
    );
    const bad = await ctx2.req('POST', '/schema-check', { n: 'x' });
    assert.equal(bad.statusCode, 400, bad.body);
    const good = await ctx2.req('POST', '/schema-check', { n: 3 });
    assert.equal(good.statusCode, 200, good.body);
    // The response schema's serializer ran: the field it does not name is gone.
    assert.deepEqual(good.json(), { n: 3 });
    assert.equal(loadedByFastify('@fastify/ajv-compiler'), true);
  });

  it('gRPC: the port is bound and listed at start; grpc-js loads on the first call, which it serves', async () => {
    const server = await startServer({ port: 0, store: ':memory:', logLevel: 'silent' });
    closers.push(() => server.close());
    assert.equal(typeof server.grpcPort, 'number');
    const manifest = (await (await fetch(`${server.url}/ojs/manifest`)).json()) as {
      protocols: string[];
      endpoints: { grpc?: { port: number } };
    };
    assert.deepEqual(manifest.protocols, ['http', 'grpc']);
    assert.equal(manifest.endpoints.grpc?.port, server.grpcPort);
    assert.equal(loadedBy('@ojs/grpc', '@grpc/grpc-js'), false);
    // A first connection that sends garbage and resets: the binding loads, the process stays up.
    const rude = connect(server.grpcPort!, '127.0.0.1');
    await once(rude, 'connect');
    rude.write('not http/2\r\n\r\n');
    rude.resetAndDestroy();
    await once(rude, 'close');
    const transport = new GrpcTransport({ address: server.grpcAddress! });
    try {
      assert.equal((await transport.health()).status, 'ok');
      const { job } = await transport.push(buildEnvelope('startup.grpc', [1], {}, 'default'));
      const res = await fetch(`${server.url}/ojs/v1/jobs/${job!.id}`);
      assert.equal(res.status, 200);
    } finally {
      await transport.close();
    }
    assert.equal(loadedBy('@ojs/grpc', '@grpc/grpc-js'), true);
  });

  it('a gRPC port that is taken fails the start and leaves the HTTP port closed', async () => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    closers.push(() => new Promise((resolve) => taken.close(() => resolve())));
    const grpcPort = (taken.address() as { port: number }).port;
    const port = await freePort();
    await assert.rejects(
      startServer({ port, grpcPort, store: ':memory:', logLevel: 'silent' }),
      /No address added|EADDRINUSE|address already in use/i,
    );
    assert.equal(await accepting(port), false);
  });
});
