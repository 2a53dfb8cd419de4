/**
 * `ojs tenants list|get|set-limits|stats|jobs|delete` and the global
 * `--tenant` against a live server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type CliServer, startCliServer } from './helpers.ts';

type Json = Record<string, unknown>;

describe('ojs tenants', () => {
  let cli: CliServer;
  before(async () => {
    cli = await startCliServer();
  });
  after(() => cli.close());

  it('--tenant enqueues for a tenant; tenants list, get, set-limits, stats, jobs, delete', async () => {
    await cli.ojs(['--tenant', 'acme', 'enqueue', 'a.b', '--queue', 't']);
    await cli.ojs(['--tenant', 'acme', 'enqueue', 'a.b', '--queue', 't']);
    const hidden = await cli.json<{ jobs: Json[] }>(['--tenant', 'globex', 'jobs', 'list']);
    assert.deepEqual(hidden.jobs, [], 'another tenant sees none of them');
    const list = await cli.ojs(['tenants']);
    assert.match(
      list.stdout,
      /^TENANT +JOBS +AVAILABLE +ACTIVE +WEIGHT +LIMITS\nacme +2 +2 +0 +1 /m,
    );
    const set = await cli.ojs([
      'tenants',
      'set-limits',
      'acme',
      '--max-concurrency',
      '4',
      '--max-enqueue-rate',
      '100/PT1M',
    ]);
    assert.equal(set.stdout, 'acme: max_concurrency=4 max_enqueue_rate=100/PT1M\n');
    const got = await cli.json<Json>(['tenants', 'get', 'acme']);
    assert.deepEqual(got.limits, {
      max_concurrency: 4,
      max_enqueue_rate: { limit: 100, period: 'PT1M' },
    });
    const stats = await cli.json<Json>(['tenants', 'stats', 'acme']);
    assert.equal(stats.total_jobs, 2);
    const jobs = await cli.json<{ jobs: Json[] }>([
      'tenants',
      'jobs',
      'acme',
      '--state',
      'available',
    ]);
    assert.equal(jobs.jobs.length, 2);
    const bad = await cli.ojs(['tenants', 'set-limits', 'acme', '--max-concurrency', 'lots']);
    assert.equal(bad.code, 2);
    const deleted = await cli.ojs(['tenants', 'delete', 'acme', '--yes']);
    assert.equal(deleted.stdout, 'tenant acme deleted\n');
    assert.equal((await cli.ojs(['tenants', 'get', 'acme'])).code, 1);
  });
});
