/**
 * What a server loads at start, and in which order it opens (decision
 * 0098): fastify's schema compilers only for a route with a schema; HTTP
 * listens first and gRPC is started once it does, then both are served,
 * the manifest lists gRPC, and a gRPC port that is taken closes what was
 * opened.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { connect, createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import { freePort } from '../../../scripts/lib.ts';
import { startServer } from '../src/serve.ts';
import { setup } from './helpers.ts';

/** Whether fastify's own require has loaded `name` in this process. */
function loadedByFastify(name: string): boolean {
  const fastifyRequire = createRequire(import.meta.resolve('fastify'));
  return fastifyRequire.cache[fastifyRequire.resolve(name)] !== undefined;
}

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

  it('HTTP and gRPC both served once startServer returns; the manifest lists gRPC', async () => {
    const server = await startServer({ port: 0, store: ':memory:', logLevel: 'silent' });
    closers.push(() => server.close());
    assert.equal(typeof server.grpcPort, 'number');
    assert.equal(await accepting(server.grpcPort!), true);
    const manifest = (await (await fetch(`${server.url}/ojs/manifest`)).json()) as {
      protocols: string[];
      endpoints: { grpc?: { port: number } };
    };
    assert.deepEqual(manifest.protocols, ['http', 'grpc']);
    assert.equal(manifest.endpoints.grpc?.port, server.grpcPort);
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
