/**
 * The dashboard's built files at /ojs/admin/ (routes/dashboard.ts): types,
 * caching, the security headers, revalidation, and everything that is not
 * a file of the build folder answered as an OJS 404. Without a key under
 * API keys, since the files carry no data.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { DASHBOARD_DIST } from '@ojs/dashboard';
import { Engine } from '@ojs/engine';
import { SqliteStore } from '@ojs/store-sqlite';
import type { FastifyInstance } from 'fastify';
import { buildApp, parseApiKeys } from '../src/index.ts';

describe('dashboard files', () => {
  let app: FastifyInstance;
  let store: SqliteStore;
  const script = readdirSync(DASHBOARD_DIST).find((name) => name.endsWith('.js'));
  before(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.init();
    const engine = new Engine({ store });
    app = await buildApp(
      { dashboard: true, auth: parseApiKeys('admin:admin-key-0123456789') },
      engine,
    );
  });
  after(async () => {
    await app.close();
    await store.close();
  });
  const get = (url: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url, headers });

  it('/ojs/admin redirects to the folder, relative', async () => {
    const res = await get('/ojs/admin');
    assert.equal(res.statusCode, 302);
    assert.equal(res.headers.location, 'admin/');
  });

  it('index.html: HTML, never cached without revalidation, with the CSP; 304 on its ETag', async () => {
    const res = await get('/ojs/admin/');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.match(String(res.headers['content-security-policy']), /default-src 'none'/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.match(res.body, /<div id="app">/);
    const etag = String(res.headers.etag);
    const again = await get('/ojs/admin/', { 'if-none-match': etag });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    assert.equal((await get('/ojs/admin/index.html')).body, res.body);
  });

  it('a hashed script is JavaScript, cached for good', async () => {
    assert.ok(script, 'the dashboard is built');
    const res = await get(`/ojs/admin/${script}`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/javascript/);
    assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable');
  });

  it('anything else is the OJS 404: missing files, folders, paths out of the folder', async () => {
    for (const url of [
      '/ojs/admin/no-such-file.js',
      '/ojs/admin/..%2Fpackage.json',
      '/ojs/admin/.hidden.js',
      '/ojs/admin/sub/index.html',
      '/ojs/admin/index.ts',
    ]) {
      const res = await get(url);
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.headers['content-type'], 'application/openjobspec+json', url);
      assert.equal(res.json().error.code, 'not_found', url);
    }
  });
});
