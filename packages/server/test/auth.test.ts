/**
 * API-key authentication: roles per route, 401 without or with a wrong key,
 * 403 for a role that may not call the route, and the refusal to expose the
 * server (or test mode) beyond loopback without keys.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import type { FastifyInstance } from 'fastify';
import { buildApp, parseApiKeys, startServer } from '../src/index.ts';

const PRODUCER = 'producer-key-0123456789abcdef';
const WORKER = 'worker-key-0123456789abcdefgh';
const ADMIN = 'admin-key-0123456789abcdefghij';

describe('API keys', () => {
  let app: FastifyInstance;
  let store: SqliteStore;
  before(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.init();
    const auth = parseApiKeys(`producer:${PRODUCER},worker:${WORKER},admin:${ADMIN}`);
    app = await buildApp({ auth }, new Engine({ store }));
  });
  after(async () => {
    await app.close();
    await store.close();
  });

  const call = (method: 'GET' | 'POST', url: string, key?: string, body?: unknown) =>
    app.inject({
      method,
      url,
      headers: {
        'content-type': 'application/openjobspec+json',
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const job = { type: 'auth.check', args: [], options: { queue: 'auth' } };

  it('answers 401 unauthenticated without a key or with an unknown one, and stores nothing', async () => {
    for (const key of [undefined, 'not-a-valid-key-at-all-000000']) {
      const response = await call('POST', '/ojs/v1/jobs', key, job);
      assert.equal(response.statusCode, 401);
      assert.equal(response.json().error.code, 'unauthenticated');
      assert.equal(response.headers['content-type'], 'application/openjobspec+json');
    }
    assert.equal((await store.queueStats('auth', Date.now())).counts.available, 0);
  });

  it('lets each role call its routes and answers 403 permission_denied otherwise', async () => {
    assert.equal((await call('POST', '/ojs/v1/jobs', PRODUCER, job)).statusCode, 201);
    assert.equal((await call('POST', '/ojs/v1/jobs', WORKER, job)).statusCode, 403);
    assert.equal(
      (await call('POST', '/ojs/v1/workers/fetch', PRODUCER, { queues: ['auth'] })).statusCode,
      403,
    );
    assert.equal(
      (await call('POST', '/ojs/v1/workers/fetch', WORKER, { queues: ['auth'] })).statusCode,
      200,
    );
    const workflow = { type: 'group', jobs: [job] };
    assert.equal((await call('POST', '/ojs/v1/workflows', PRODUCER, workflow)).statusCode, 201);
    const denied = await call('GET', '/ojs/v1/queues', PRODUCER);
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().error.code, 'permission_denied');
    assert.equal((await call('GET', '/ojs/v1/queues', ADMIN)).statusCode, 200);
    assert.equal((await call('POST', '/ojs/v1/jobs', ADMIN, job)).statusCode, 201);
  });

  it('leaves manifest and health open to every role', async () => {
    assert.equal((await call('GET', '/ojs/manifest', WORKER)).statusCode, 200);
    assert.equal((await call('GET', '/ojs/v1/health', PRODUCER)).statusCode, 200);
  });

  it('rejects malformed key lists', () => {
    assert.throws(() => parseApiKeys('root:0123456789abcdef'), /Unknown API key role 'root'/);
    assert.throws(() => parseApiKeys('admin:short'), /at least 16 characters/);
  });
});

describe('binding beyond loopback', () => {
  it('is refused without API keys unless explicitly allowed', async () => {
    await assert.rejects(
      startServer({ host: '0.0.0.0', port: 0, store: ':memory:' }),
      /OJS_API_KEYS/,
    );
  });

  it('refuses test mode on a non-loopback address', async () => {
    await assert.rejects(
      startServer({
        host: '0.0.0.0',
        port: 0,
        store: ':memory:',
        testMode: true,
        apiKeys: `admin:${ADMIN}`,
      }),
      /Test mode/,
    );
  });
});
