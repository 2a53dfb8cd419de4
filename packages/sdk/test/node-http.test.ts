/**
 * The HTTP transport's node:http path (Node, no `fetch` option): against the
 * real server and against a tiny node:http server that stalls, cuts off,
 * redirects and records which connection each request came on.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import {
  ConnectionError,
  HttpTransport,
  NotFoundError,
  OjsClient,
  OjsWorker,
  TimeoutError,
  ValidationError,
} from '@ojs/sdk';
import { type RunningServer, startServer } from '@ojs/server';
import { NodeHttp } from '../src/request.ts';
import { waitFor } from './helpers.ts';

const fastRetry = { initialDelayMs: 1, maxDelayMs: 5 };
const job = {
  id: '01900000-0000-7000-8000-000000000001',
  type: 'a.b',
  state: 'available',
  args: [],
  meta: {},
  queue: 'default',
  attempt: 0,
};

/** The global fetch must not be used: it throws while these tests run. */
const realFetch = globalThis.fetch;
let fetchCalls = 0;
before(() => {
  globalThis.fetch = (async () => {
    fetchCalls++;
    throw new Error('the node:http path must not call fetch');
  }) as typeof fetch;
});
after(() => {
  globalThis.fetch = realFetch;
  assert.equal(fetchCalls, 0);
});

type Route = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** A node:http server: per-path routes, the remote port of every request, open connections. */
async function tinyServer(routes: Record<string, Route>) {
  const ports: number[] = [];
  const requests: Array<{
    method: string;
    url: string;
    headers: IncomingMessage['headers'];
    body: string;
  }> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    ports.push(req.socket.remotePort!);
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const route = routes[req.url!.split('?')[0]!];
      if (route === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'not_found', message: `no ${req.url}` } }));
        return;
      }
      route(req, res, body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    ports,
    requests,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const sendJson = (res: ServerResponse, status: number, body: unknown, headers = {}) => {
  res.writeHead(status, { 'content-type': 'application/openjobspec+json', ...headers });
  res.end(JSON.stringify(body));
};

describe('node:http transport against the real server', () => {
  let server: RunningServer;
  let open = 0;
  before(async () => {
    server = await startServer({ port: 0, store: ':memory:', testMode: true, logLevel: 'silent' });
    server.app.server.on('connection', (socket: Socket) => {
      open++;
      socket.on('close', () => open--);
    });
  });
  after(() => server.close());

  it('enqueues, reads and answers 4xx error bodies as typed errors', async () => {
    const client = new OjsClient({ url: server.url, retry: fastRetry });
    const created = await client.enqueue('node.http', [1, 'é'], { queue: 'node-http' });
    assert.ok(created);
    const read = await client.getJob(created.id);
    assert.deepEqual(read.args, [1, 'é']);
    await assert.rejects(
      client.getJob('01900000-0000-7000-8000-00000000dead'),
      (error: unknown) => {
        assert.ok(error instanceof NotFoundError);
        assert.equal(error.status, 404);
        assert.equal(error.attempt, 1, 'not retried');
        assert.ok(error.requestId, 'x-request-id read from the response headers');
        return true;
      },
    );
    await assert.rejects(client.enqueue('', []), ValidationError);
    const stats = await client.queueStats('node-http');
    assert.equal(stats.available, 1);
    await client.close();
  });

  it('a stopped worker and a closed client leave no connection open', async () => {
    await waitFor(() => open === 0, { what: 'earlier connections closed' });
    const client = new OjsClient({ url: server.url });
    const worker = new OjsWorker({
      url: server.url,
      queues: ['node-http-worker'],
      concurrency: 8,
      handleSignals: false,
      logLevel: 'silent',
      pollWaitMs: 200,
    });
    let completed = 0;
    worker.on('jobCompleted', () => {
      completed++;
    });
    worker.register('node.worker', async (ctx) => ({ doubled: (ctx.args[0] as number) * 2 }));
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        client.enqueue('node.worker', [i], { queue: 'node-http-worker' }),
      ),
    );
    await worker.start();
    await waitFor(() => completed === 20, { what: '20 jobs completed' });
    assert.ok(open > 0);
    await worker.stop();
    await client.close();
    // At once, not after the idle timeout (4 s).
    await waitFor(() => open === 0, { what: 'keep-alive connections closed', timeoutMs: 1000 });
  });
});

describe('node:http transport, failure handling', () => {
  let tiny: Awaited<ReturnType<typeof tinyServer>>;
  let stalled: ServerResponse[] = [];
  before(async () => {
    tiny = await tinyServer({
      '/ojs/v1/jobs/ok': (_req, res) => sendJson(res, 200, { job }),
      '/ojs/v1/jobs/stall': (_req, res) => {
        stalled.push(res);
      },
      '/ojs/v1/jobs/stall-body': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"job":');
        stalled.push(res);
      },
      '/ojs/v1/workers/fetch': (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"jobs":[');
        setTimeout(() => res.destroy(), 20);
      },
      '/ojs/v1/jobs/moved': (_req, res) => {
        res.writeHead(307, { location: '/ojs/v1/jobs/ok' });
        res.end();
      },
      '/ojs/v1/jobs/seeother': (_req, res) => {
        res.writeHead(303, { location: `${tiny.url}/ojs/v1/jobs/ok` });
        res.end();
      },
    });
  });
  afterEach(() => {
    for (const res of stalled) res.destroy();
    stalled = [];
  });
  after(() => tiny.close());

  it('times out a request with no answer, retrying it when safe to repeat', async () => {
    const transport = new HttpTransport({
      url: tiny.url,
      timeoutMs: 50,
      retry: { ...fastRetry, maxRetries: 2 },
    });
    const before = tiny.requests.length;
    await assert.rejects(transport.getJob('stall'), (error: unknown) => {
      assert.ok(error instanceof TimeoutError);
      assert.equal(error.code, 'request_timeout');
      assert.equal(error.attempt, 3);
      return true;
    });
    assert.equal(tiny.requests.length - before, 3);
    // The timed-out requests' connections were destroyed, not reused.
    await waitFor(() => stalled.every((res) => res.destroyed || res.socket === null), {
      what: 'stalled connections closed by the client',
    });
    await transport.close();
  });

  it('times out a response whose body stalls', async () => {
    const transport = new HttpTransport({ url: tiny.url, timeoutMs: 80, retry: false });
    await assert.rejects(transport.getJob('stall-body'), (error: unknown) => {
      assert.ok(error instanceof TimeoutError);
      assert.match(error.message, /response not read within 80 ms/);
      return true;
    });
    await transport.close();
  });

  it('a response cut off is an ambiguous failure: FETCH is not repeated', async () => {
    const transport = new HttpTransport({ url: tiny.url, retry: fastRetry });
    const before = tiny.requests.length;
    await assert.rejects(
      transport.fetchJobs({ queues: ['default'], count: 1 }),
      (error: unknown) => {
        assert.ok(error instanceof ConnectionError);
        assert.match(error.message, /cut off/);
        return true;
      },
    );
    assert.equal(tiny.requests.length - before, 1);
    await transport.close();
  });

  it('a refused connection is "not sent": retried even for FETCH', async () => {
    // A port nobody listens on.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const transport = new HttpTransport({
      url: `http://127.0.0.1:${port}`,
      retry: { ...fastRetry, maxRetries: 2 },
    });
    await assert.rejects(
      transport.fetchJobs({ queues: ['default'], count: 1 }),
      (error: unknown) => {
        assert.ok(error instanceof ConnectionError);
        assert.match(error.message, /ECONNREFUSED/);
        assert.equal(error.attempt, 3, 'retried: the server cannot have acted');
        return true;
      },
    );
    await transport.close();
  });

  it('aborting the signal rejects with its reason and destroys the request', async () => {
    const transport = new HttpTransport({ url: tiny.url });
    const controller = new AbortController();
    const count = stalled.length;
    const pending = transport.getJob('stall', { signal: controller.signal });
    await waitFor(() => stalled.length > count, { what: 'request received' });
    const res = stalled.at(-1)!;
    const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));
    controller.abort(new Error('caller gave up'));
    await assert.rejects(pending, /caller gave up/);
    await closed; // the server saw the connection go
    // An already aborted signal sends nothing.
    const sent = tiny.requests.length;
    await assert.rejects(
      transport.getJob('ok', { signal: AbortSignal.abort(new Error('too late')) }),
      /too late/,
    );
    assert.equal(tiny.requests.length, sent);
    await transport.close();
  });

  it('follows redirects as fetch does', async () => {
    const transport = new HttpTransport({ url: tiny.url, authToken: 'secret' });
    assert.equal((await transport.getJob('moved')).id, job.id);
    const before = tiny.requests.length;
    // 303 after a POST: the next request is a GET without the body.
    const viaSeeOther = new NodeHttp();
    const response = await viaSeeOther.send(`${tiny.url}/ojs/v1/jobs/seeother`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer x' },
      body: '{"a":1}',
      timeoutMs: 5000,
    });
    assert.equal(response.status, 200);
    assert.ok(JSON.parse(await response.text()).job);
    const last = tiny.requests.at(-1)!;
    assert.equal(last.method, 'GET');
    assert.equal(last.body, '');
    assert.equal(last.headers['content-type'], undefined);
    assert.equal(last.headers.authorization, 'Bearer x', 'same origin keeps credentials');
    assert.ok(tiny.requests.length > before);
    viaSeeOther.close();
    await transport.close();
  });
});

describe('node:http transport, connections', () => {
  let tiny: Awaited<ReturnType<typeof tinyServer>>;
  let inFlight = 0;
  let maxInFlight = 0;
  beforeEach(async () => {
    inFlight = 0;
    maxInFlight = 0;
    tiny = await tinyServer({
      '/ojs/v1/jobs/ok': (_req, res) => sendJson(res, 200, { job }),
      '/ojs/v1/jobs/slow': (_req, res) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        setTimeout(() => {
          inFlight--;
          sendJson(res, 200, { job });
        }, 10);
      },
    });
  });
  afterEach(() => tiny.close());

  it('reuses kept-alive connections', async () => {
    const transport = new HttpTransport({ url: tiny.url });
    for (let i = 0; i < 50; i++) await transport.getJob('ok');
    assert.equal(new Set(tiny.ports).size, 1, 'sequential requests share one connection');
    await Promise.all(Array.from({ length: 200 }, () => transport.getJob('slow')));
    const distinct = new Set(tiny.ports).size;
    assert.ok(distinct <= 64, `at most maxSockets connections (saw ${distinct})`);
    assert.equal(tiny.ports.length, 250);
    await transport.close();
    await waitFor(() => tiny.sockets.size === 0, {
      what: 'idle connections closed by close()',
      timeoutMs: 1000,
    });
    // Still usable after close (a new connection).
    assert.equal((await transport.getJob('ok')).id, job.id);
    await transport.close();
  });

  it('holds at most maxSockets connections; the rest wait', async () => {
    const transport = new HttpTransport({ url: tiny.url, maxSockets: 3 });
    await Promise.all(Array.from({ length: 30 }, () => transport.getJob('slow')));
    assert.ok(maxInFlight <= 3, `in flight at once: ${maxInFlight}`);
    assert.ok(new Set(tiny.ports).size <= 3);
    await transport.close();
  });

  it('works where node:http is loaded by import() (Node < 20.16)', async () => {
    const proc = process as { getBuiltinModule?: unknown };
    const saved = proc.getBuiltinModule;
    proc.getBuiltinModule = undefined;
    try {
      const transport = new HttpTransport({ url: tiny.url });
      const results = await Promise.all([transport.getJob('ok'), transport.getJob('ok')]);
      assert.deepEqual(
        results.map((r) => r.id),
        [job.id, job.id],
      );
      await transport.close();
    } finally {
      proc.getBuiltinModule = saved;
    }
  });
});
