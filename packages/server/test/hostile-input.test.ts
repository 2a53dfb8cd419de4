/**
 * Issue #11: hostile requests, one regression test per finding. Each sends
 * the request that stalled, crashed or mis-answered the server and asserts
 * the OJS error envelope (or the now-working answer) and that nothing was
 * stored. Wire-level findings (7, 8) use a real listening server and raw
 * sockets; the store-dependent one (6) runs on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MAX_JSON_DEPTH, MAX_SCHEMA_NODES } from '@ojs/core';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { assertError, type Ctx, setup, snapshot } from './helpers.ts';
import { startLiveServer, storeKinds } from './stores.ts';

type Obj = Record<string, unknown>;

/** `[[[...1...]]]` nested `depth` levels, as JSON text (no recursion to build it). */
const deepJson = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

let ctx: Ctx;
before(async () => {
  ctx = await setup();
});
after(async () => {
  await ctx.close();
});

/** Sends a raw JSON text, asserts the error and that the store did not change. */
async function refused(
  method: 'POST' | 'PUT' | 'PATCH' | 'GET',
  url: string,
  body: string | undefined,
  status: number,
  code: string,
) {
  const before = await snapshot(ctx.engine);
  const res = await ctx.req(method, url, body, { 'content-type': 'application/json' });
  const error = assertError(res, status, code);
  assert.equal(await snapshot(ctx.engine), before, 'the store must be unchanged');
  return error;
}

describe('#11 item 1: schema registration is bounded in size and compile time', () => {
  it('an 8,000-entry tuple `items` is refused before it is compiled', async () => {
    const schema = { type: 'array', items: Array.from({ length: 8000 }, () => ({})) };
    const error = await refused(
      'PUT',
      '/ojs/v1/admin/schemas/big.items/1',
      JSON.stringify({ schema }),
      400,
      'invalid_request',
    );
    assert.equal(error.details.max_nodes, MAX_SCHEMA_NODES);
  });

  it('a 20,000-property schema is refused', async () => {
    const properties: Obj = {};
    for (let i = 0; i < 20_000; i++) properties[`p${i}`] = { type: 'string' };
    await refused(
      'PUT',
      '/ojs/v1/admin/schemas/big.props/1',
      JSON.stringify({ schema: { type: 'object', properties } }),
      400,
      'invalid_request',
    );
  });

  it('a pattern with a nested quantifier (exponential backtracking) is refused', async () => {
    const schema = { type: 'array', prefixItems: [{ type: 'string', pattern: '^(a+)+$' }] };
    await refused(
      'PUT',
      '/ojs/v1/admin/schemas/redos.type/1',
      JSON.stringify({ schema }),
      400,
      'invalid_request',
    );
  });

  it('uniqueItems over objects (quadratic at enqueue) is refused; over scalars accepted', async () => {
    await refused(
      'PUT',
      '/ojs/v1/admin/schemas/uniq.objects/1',
      JSON.stringify({ schema: { type: 'array', uniqueItems: true } }),
      400,
      'invalid_request',
    );
    const res = await ctx.req('PUT', '/ojs/v1/admin/schemas/uniq.scalars/1', {
      schema: { type: 'array', uniqueItems: true, items: { type: ['string', 'integer'] } },
    });
    assert.equal(res.statusCode, 201, res.body);
  });

  it('a schema within the bounds is still registered and enforced', async () => {
    const schema = { type: 'array', prefixItems: [{ type: 'string', pattern: '^[a-z]+$' }] };
    const res = await ctx.req('PUT', '/ojs/v1/admin/schemas/fine.type/1', { schema });
    assert.equal(res.statusCode, 201, res.body);
    const job = await ctx.req('POST', '/ojs/v1/jobs', { type: 'fine.type', args: ['ABC'] });
    assert.equal(job.statusCode, 201);
    assert.equal(job.json().warnings.length, 1);
  });
});

describe('#11 item 1 (routing): canary rules are bounded like schemas', () => {
  it('more rules than the limit, a huge weight or min_samples -> 400', async () => {
    const rules = Array.from({ length: 5000 }, (_, i) => ({ version: `${i}.0`, weight: 1 }));
    for (const body of [
      { rules },
      { rules: [{ version: '1.0', weight: 1e308 }] },
      {
        rules: [{ version: '1.0', weight: 1 }],
        auto_rollback: {
          error_rate_threshold: 0.5,
          evaluation_window: 'PT1H',
          action: 'route_all_to_previous',
          min_samples: 1e15,
        },
      },
    ]) {
      await refused(
        'PUT',
        '/ojs/v1/admin/routing/routed.type',
        JSON.stringify(body),
        400,
        'invalid_request',
      );
    }
  });
});

describe('#11 item 2: handler type strings are bounded like job types', () => {
  const huge = 'a'.repeat(1024 * 1024);
  for (const [url, body] of [
    ['/ojs/v1/workers/fetch', { queues: ['default'], handlers: [{ type: huge }] }],
    ['/ojs/v1/workers/heartbeat', { worker_id: 'w', active_jobs: [], handlers: [huge] }],
    ['/ojs/v1/workers/register', { worker_id: 'w', handlers: [{ type: huge, versions: '*' }] }],
  ] as const) {
    it(`a 1 MiB handler type on ${url} -> 400`, async () => {
      await refused('POST', url, JSON.stringify(body), 400, 'invalid_request');
    });
  }

  it('more handlers than the limit -> 400', async () => {
    const handlers = Array.from({ length: 10_000 }, (_, i) => `t${i}.run`);
    await refused(
      'POST',
      '/ojs/v1/workers/fetch',
      JSON.stringify({ queues: ['default'], handlers }),
      400,
      'invalid_request',
    );
  });
});

describe('#11 item 3: every name the server accepts can be addressed by path', () => {
  const name = `c${'x'.repeat(199)}`;

  it('a 200-byte cron name can be read, disabled and deleted', async () => {
    const created = await ctx.req('POST', '/ojs/v1/cron', {
      name,
      expression: '0 * * * *',
      job_template: { type: 'cron.job', args: [] },
    });
    assert.equal(created.statusCode, 201, created.body);
    const read = await ctx.req('GET', `/ojs/v1/cron/${name}`);
    assert.equal(read.statusCode, 200, read.body);
    const disabled = await ctx.req('PATCH', `/ojs/v1/cron/${name}`, { enabled: false });
    assert.equal(disabled.statusCode, 200, disabled.body);
    assert.equal(disabled.json().cron.enabled, false);
    const deleted = await ctx.req('DELETE', `/ojs/v1/cron/${name}`);
    assert.equal(deleted.statusCode, 200, deleted.body);
  });

  it('a 255-byte queue can be paused and read', async () => {
    const queue = 'q'.repeat(255);
    await ctx.enqueue({ type: 'a.b', args: [], options: { queue } });
    const paused = await ctx.req('POST', `/ojs/v1/queues/${queue}/pause`);
    assert.equal(paused.statusCode, 200, paused.body);
    const stats = await ctx.req('GET', `/ojs/v1/queues/${queue}/stats`);
    assert.equal(stats.statusCode, 200, stats.body);
    assert.equal(stats.json().queue.paused, true);
  });
});

describe('#11 item 4: deep nesting is refused before any store', () => {
  const deep = deepJson(100_000);
  const cases: [string, string][] = [
    ['/ojs/v1/jobs', `{"type":"a.b","args":[${deep}]}`],
    ['/ojs/v1/jobs', `{"type":"a.b","args":[],"meta":{"x":${deep}}}`],
    ['/ojs/v1/jobs/batch', `{"jobs":[{"type":"a.b","args":[${deep}]}]}`],
    ['/ojs/v1/workers/ack', `{"job_id":"x","result":${deep}}`],
    ['/ojs/v1/workers/nack', `{"job_id":"x","error":{"message":"m","details":{"d":${deep}}}}`],
    [
      '/ojs/v1/cron',
      `{"name":"deep","expression":"0 * * * *","job_template":{"type":"a.b","args":[${deep}]}}`,
    ],
    ['/ojs/v1/workflows', `{"type":"chain","steps":[{"type":"a.b","args":[${deep}]}]}`],
  ];
  for (const [url, body] of cases) {
    it(`100,000 levels on ${url} -> 400 invalid_payload, not retryable`, async () => {
      const error = await refused('POST', url, body, 400, 'invalid_payload');
      assert.equal(error.details.max_depth, MAX_JSON_DEPTH);
    });
  }

  it(`${MAX_JSON_DEPTH} levels are accepted`, async () => {
    // The body is level 1, `args` level 2: args nested to the limit.
    const res = await ctx.req(
      'POST',
      '/ojs/v1/jobs',
      `{"type":"a.b","args":${deepJson(MAX_JSON_DEPTH - 1)}}`,
      { 'content-type': 'application/json' },
    );
    assert.equal(res.statusCode, 201, res.body);
  });
});

describe('#11 item 5: out-of-range numbers are 400s, leases are bounded', () => {
  it('offset=99999999999999999999 on the dead letter list -> 400', async () => {
    await refused(
      'GET',
      '/ojs/v1/dead-letter?offset=99999999999999999999',
      undefined,
      400,
      'invalid_request',
    );
  });

  for (const [url, body] of [
    ['/ojs/v1/workers/fetch', '{"queues":["default"],"visibility_timeout_ms":1e308}'],
    [
      '/ojs/v1/workers/heartbeat',
      '{"worker_id":"w","active_jobs":[],"visibility_timeout_ms":1e308}',
    ],
    ['/ojs/v1/workers/ack', '{"job_id":"x","worker_id":"w","attempt":1e308}'],
    ['/ojs/v1/jobs', '{"type":"a.b","args":[1e999]}'],
  ] as const) {
    it(`${body} on ${url} -> 400`, async () => {
      const res = await ctx.req('POST', url, body, { 'content-type': 'application/json' });
      assert.equal(res.statusCode, 400, res.body);
      assertError(res, 400, null);
    });
  }

  it('a lease of 9e15 ms on a job is refused', async () => {
    await refused(
      'POST',
      '/ojs/v1/jobs',
      JSON.stringify({ type: 'a.b', args: [], options: { visibility_timeout_ms: 9e15 } }),
      400,
      'invalid_payload',
    );
  });

  it('a retry interval beyond the range of dates is refused', async () => {
    await refused(
      'POST',
      '/ojs/v1/jobs',
      JSON.stringify({ type: 'a.b', args: [], options: { retry: { initial_interval_ms: 9e15 } } }),
      422,
      'validation_error',
    );
  });
});

describe('#11 item 6: NUL and lone surrogates get the same 400 on every store', async () => {
  const kinds = await storeKinds();
  for (const kind of kinds) {
    describe(kind, () => {
      let server: Awaited<ReturnType<typeof startLiveServer>>;
      before(async () => {
        server = await startLiveServer(kind, { testMode: true });
      });
      after(async () => {
        await server.close();
      });
      for (const [label, text] of [
        ['a lone surrogate in args', '{"type":"a.b","args":["\\ud800"]}'],
        ['a NUL in args', '{"type":"a.b","args":["a\\u0000b"]}'],
        ['a NUL in a meta key', '{"type":"a.b","args":[],"meta":{"k\\u0000":1}}'],
      ]) {
        it(`${label} -> 400 invalid_payload`, async () => {
          const res = await fetch(`${server.url}/ojs/v1/jobs`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: text,
          });
          const body = (await res.json()) as { error: { code: string; retryable: boolean } };
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.equal(body.error.code, 'invalid_payload');
          assert.equal(body.error.retryable, false);
        });
      }
      it('a NUL in a path parameter -> 400, not a store error', async () => {
        const res = await fetch(`${server.url}/ojs/v1/queues/a%00b/stats`);
        assert.equal(res.status, 400);
        assert.equal(
          ((await res.json()) as { error: { code: string } }).error.code,
          'invalid_request',
        );
      });
      it('nothing was stored', async () => {
        const res = await fetch(`${server.url}/ojs/v1/queues/default/stats`);
        assert.equal(((await res.json()) as { queue: { available: number } }).queue.available, 0);
      });
    });
  }
});

/** A server listening on loopback, for raw-socket tests. */
async function listening(config: Parameters<typeof buildApp>[0] = {}) {
  const store = new SqliteStore({ path: ':memory:' });
  await store.init();
  const engine = new Engine({ store });
  const app: FastifyInstance = await buildApp(config, engine);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    async close() {
      await app.close();
      await store.close();
    },
  };
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server ended the connection after this answer. */
  closed: boolean;
}

/** Sends raw bytes on a fresh connection; resolves with the first response. */
function raw(port: number, request: Buffer | string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let data = Buffer.alloc(0);
    let parsed: Omit<RawResponse, 'closed'> | undefined;
    const parse = () => {
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length']);
      const body = data.subarray(end + 4);
      if (body.length < length) return undefined;
      return {
        status: Number(statusLine!.split(' ')[1]),
        headers,
        body: body.subarray(0, length).toString('utf8'),
      };
    };
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      parsed ??= parse();
      // A kept-alive connection stays open: the answer is complete, stop here.
      if (parsed !== undefined && parsed.headers.connection !== 'close') {
        socket.destroy();
        resolve({ ...parsed, closed: false });
      }
    });
    socket.on('end', () => {
      parsed ??= parse();
      if (parsed === undefined) reject(new Error(`no complete response: ${data.toString()}`));
      else resolve({ ...parsed, closed: true });
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

function assertEnvelope(res: RawResponse, status: number, code: string) {
  assert.equal(res.status, status, res.body);
  assert.equal(res.headers['content-type'], 'application/openjobspec+json');
  assert.equal(res.headers['ojs-version'], '1.0');
  const body = JSON.parse(res.body) as { error: Obj };
  assert.equal(body.error.code, code, res.body);
  assert.equal(typeof body.error.message, 'string');
  assert.equal(body.error.request_id, res.headers['x-request-id']);
}

describe('#11 item 7: framework errors answer in the OJS envelope', () => {
  let server: Awaited<ReturnType<typeof listening>>;
  before(async () => {
    server = await listening();
  });
  after(async () => {
    await server.close();
  });
  const get = (path: Buffer | string) =>
    raw(
      server.port,
      Buffer.concat([
        Buffer.from('GET '),
        Buffer.from(path),
        Buffer.from(' HTTP/1.1\r\nHost: t\r\n\r\n'),
      ]),
    );

  it('a path parameter over the limit -> 414 uri_too_long', async () => {
    assertEnvelope(await get(`/ojs/v1/jobs/${'a'.repeat(2000)}`), 414, 'uri_too_long');
  });
  it('bad percent-encoding (/ojs/v1/jobs/%FF) -> 400 invalid_request', async () => {
    assertEnvelope(await get('/ojs/v1/jobs/%FF'), 400, 'invalid_request');
  });
  it('non-ASCII bytes in the path -> 400 invalid_request', async () => {
    assertEnvelope(
      await get(Buffer.concat([Buffer.from('/ojs/v1/jobs/'), Buffer.from([0xc3, 0xa9])])),
      400,
      'invalid_request',
    );
  });
  it('headers over the limit -> 431 headers_too_large', async () => {
    const res = await raw(
      server.port,
      `GET /ojs/v1/health HTTP/1.1\r\nHost: t\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assertEnvelope(res, 431, 'headers_too_large');
  });
  it('a body over the limit -> 413 payload_too_large', async () => {
    const body = JSON.stringify({ type: 'a.b', args: ['x'.repeat(3 * 1024 * 1024)] });
    const res = await raw(
      server.port,
      `POST /ojs/v1/jobs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    assertEnvelope(res, 413, 'payload_too_large');
  });

  it('with API keys, a malformed path without a key is a 401 first', async () => {
    const secured = await listening({ auth: { keys: [{ key: 'k'.repeat(16), role: 'admin' }] } });
    try {
      const res = await raw(secured.port, 'GET /ojs/v1/jobs/%FF HTTP/1.1\r\nHost: t\r\n\r\n');
      assertEnvelope(res, 401, 'unauthenticated');
    } finally {
      await secured.close();
    }
  });
});

describe('#11 item 8: a refused connection says Connection: close', () => {
  it('after a parse error the answer carries Connection: close and the socket ends cleanly', async () => {
    const server = await listening();
    try {
      const res = await raw(
        server.port,
        'GET /ojs/v1/health HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n',
      );
      assertEnvelope(res, 400, 'invalid_request');
      assert.equal(res.headers.connection, 'close');
      assert.equal(res.closed, true);
      // A new connection works at once.
      const health = await fetch(`http://127.0.0.1:${server.port}/ojs/v1/health`);
      assert.equal(health.status, 200);
    } finally {
      await server.close();
    }
  });
});

describe('#11 item 8 (bodies): a malformed chunked body after good headers', () => {
  it('is answered 400 in the envelope with Connection: close', async () => {
    const server = await listening();
    try {
      const res = await raw(
        server.port,
        'POST /ojs/v1/jobs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      );
      assertEnvelope(res, 400, 'invalid_request');
      assert.equal(res.headers.connection, 'close');
    } finally {
      await server.close();
    }
  });
});

describe('#11 item 9: --require-fencing refuses unfenced ACK, NACK and heartbeat', () => {
  let fenced: Ctx;
  before(async () => {
    fenced = await setup({ requireFencing: true });
  });
  after(async () => {
    await fenced.close();
  });

  it('an expired worker cannot settle the job another worker now holds', async () => {
    const job = await fenced.enqueue({
      type: 'a.b',
      args: [],
      options: { visibility_timeout_ms: 1000 },
    });
    const [first] = await fenced.fetch({ queues: ['default'], worker_id: 'w1' });
    assert.equal(first.id, job.id);
    fenced.clock.advance(1500);
    await fenced.engine.expireLeases();
    const [second] = await fenced.fetch({ queues: ['default'], worker_id: 'w2' });
    assert.equal(second.id, job.id);
    for (const [url, body] of [
      ['/ojs/v1/workers/ack', { job_id: job.id }],
      ['/ojs/v1/workers/ack', { job_id: job.id, worker_id: 'w1' }],
      ['/ojs/v1/workers/nack', { job_id: job.id, error: { message: 'x' } }],
      ['/ojs/v1/workers/ack/batch', { acks: [{ job_id: job.id, worker_id: 'w1' }] }],
      ['/ojs/v1/workers/heartbeat', { active_jobs: [job.id] }],
      ['/ojs/v1/workers/fetch', { queues: ['default'] }],
    ] as const) {
      const res = await fenced.req('POST', url, body);
      const error = assertError(res, 400, 'invalid_request');
      assert.match(error.message, /fencing/);
    }
    const still = await fenced.req('GET', `/ojs/v1/jobs/${job.id}`);
    assert.equal(still.json().job.state, 'active');
    const ack = await fenced.req('POST', '/ojs/v1/workers/ack', {
      job_id: job.id,
      worker_id: 'w2',
      attempt: second.attempt,
    });
    assert.equal(ack.statusCode, 200, ack.body);
  });

  it('the manifest says fencing is required', async () => {
    const manifest = (await fenced.req('GET', '/ojs/manifest')).json();
    assert.equal(manifest.worker_fencing, 'required');
    assert.equal(manifest.limits.max_json_depth, MAX_JSON_DEPTH);
  });
});

describe('#11 item 10: a body that is not UTF-8 is refused, not patched', () => {
  it('invalid UTF-8 bytes in a job -> 400 invalid_payload, nothing stored', async () => {
    const body = Buffer.concat([
      Buffer.from('{"type":"a.b","args":["'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"]}'),
    ]);
    const before = await snapshot(ctx.engine);
    const res = await ctx.app.inject({
      method: 'POST',
      url: '/ojs/v1/jobs',
      headers: { 'content-type': 'application/json' },
      payload: body,
    });
    const error = assertError(res, 400, 'invalid_payload');
    assert.match(error.message, /UTF-8/);
    assert.equal(await snapshot(ctx.engine), before);
  });

  it('UTF-8 text (multi-byte) is accepted and kept as sent', async () => {
    const job = await ctx.enqueue({ type: 'a.b', args: ['héllo ☃ 𝄞'] });
    assert.deepEqual(job.args, ['héllo ☃ 𝄞']);
  });
});
