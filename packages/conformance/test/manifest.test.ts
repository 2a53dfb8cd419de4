import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startServer } from '@ojs/server';
import { HttpClient } from '../src/http.ts';
import {
  checkManifestDocument,
  compareLevels,
  fetchManifest,
  formatManifestCheck,
  withComparison,
} from '../src/manifest.ts';
import type { TestResult, TestStatus } from '../src/types.ts';
import { type MockServer, startMockServer } from './mock-server.ts';

/** The example manifest of seed §4.1. */
const SEED_EXAMPLE = {
  specversion: '1.0',
  implementation: {
    name: 'ojs-redis',
    version: '1.0.0',
    language: 'go',
    repository: 'https://github.com/openjobspec/ojs-redis',
  },
  conformance_level: 2,
  conformance_tier: 'runtime',
  protocols: ['http', 'grpc'],
  backend: 'redis',
  extensions: {
    official: [
      { name: 'rate-limiting', uri: 'urn:ojs:ext:rate-limiting', version: '1.0.0' },
      { name: 'admin-api', uri: 'urn:ojs:ext:admin-api', version: '1.0.0' },
    ],
    experimental: [
      { name: 'job-versioning', uri: 'urn:ojs:ext:experimental:job-versioning', version: '0.1.0' },
    ],
  },
  schema_validation: true,
  unique_job_strength: 'strong',
  test_suite_version: '1.0.0',
  test_suite_passed_at: '2025-06-01T10:00:00Z',
};

const rules = (doc: unknown) => checkManifestDocument(doc).map((p) => `${p.path} ${p.rule}`);

function result(level: number, status: TestStatus): TestResult {
  return {
    test_id: `T${level}`,
    name: 'n',
    level,
    category: '',
    file: 'f',
    status,
    duration_ms: 0,
    steps: [],
  };
}

describe('checkManifestDocument (seed §4.2)', () => {
  it('accepts the seed example and the legacy extensions array', () => {
    assert.deepEqual(rules(SEED_EXAMPLE), []);
    assert.deepEqual(rules({ ...SEED_EXAMPLE, extensions: ['bulk_purge', 'queue_migration'] }), []);
  });
  it('reports every missing required field', () => {
    assert.deepEqual(rules({}), [
      'specversion required',
      'implementation required',
      'conformance_level required',
      'conformance_tier required',
      'protocols required',
      'backend required',
    ]);
    assert.deepEqual(rules({ ...SEED_EXAMPLE, implementation: {} }), [
      'implementation.name required',
      'implementation.version required',
      'implementation.language required',
    ]);
  });
  it('reports wrong types, formats and values', () => {
    const bad = {
      ...SEED_EXAMPLE,
      specversion: '1.0.0',
      implementation: { name: 'x', version: '1', language: 7, repository: 'not a url' },
      conformance_level: 5,
      conformance_tier: 'gold',
      protocols: ['grpc'],
      extensions: { official: [{ name: 'a', uri: 'urn:x' }] },
      schema_validation: 'yes',
      unique_job_strength: 'best-effort',
      test_suite_version: 'v1',
      test_suite_passed_at: 'yesterday',
    };
    assert.deepEqual(rules(bad), [
      'specversion format.specversion',
      'implementation.version format.semver',
      'implementation.language type',
      'implementation.repository format.uri',
      'conformance_level range',
      'conformance_tier enum',
      'protocols contains',
      'extensions.official[0].version required',
      'schema_validation type',
      'unique_job_strength enum',
      'test_suite_version format.semver',
      'test_suite_passed_at format.datetime',
    ]);
    assert.deepEqual(rules({ ...SEED_EXAMPLE, conformance_level: '2', protocols: [] }), [
      'conformance_level type',
      'protocols min_items',
    ]);
    assert.deepEqual(rules([]), ['$ json']);
  });
  it('unique_job_strength is required from level 4', () => {
    const { unique_job_strength: _, ...rest } = SEED_EXAMPLE;
    assert.deepEqual(rules(rest), []);
    assert.deepEqual(rules({ ...rest, conformance_level: 4 }), ['unique_job_strength required_if']);
  });
});

describe('compareLevels', () => {
  it('consistent when every level up to the declared one passes', () => {
    const c = compareLevels(1, 1, [result(0, 'pass'), result(1, 'pass')]);
    assert.equal(c.verdict, 'consistent');
  });
  it('overclaimed when a level at or below the declared one fails', () => {
    const c = compareLevels(2, 0, [result(0, 'pass'), result(1, 'fail'), result(2, 'pass')]);
    assert.deepEqual([c.verdict, c.failing_levels], ['overclaimed', [1]]);
    assert.equal(c.message, 'declares level 2, but level 1 failed');
    assert.equal(compareLevels(0, -1, [result(0, 'skip')]).verdict, 'overclaimed');
  });
  it('unverified when a declared level was not run', () => {
    const c = compareLevels(2, 0, [result(0, 'pass')]);
    assert.deepEqual([c.verdict, c.missing_levels], ['unverified', [1, 2]]);
  });
  it('underclaimed when more passes than is declared; failures above do not matter', () => {
    assert.equal(
      compareLevels(0, 1, [result(0, 'pass'), result(1, 'pass')]).verdict,
      'underclaimed',
    );
    assert.equal(compareLevels(0, 0, [result(0, 'pass'), result(1, 'fail')]).verdict, 'consistent');
  });
});

describe('fetchManifest', () => {
  let mock: MockServer;
  let real: Awaited<ReturnType<typeof startServer>>;
  const client = new HttpClient();
  before(async () => {
    mock = await startMockServer();
    real = await startServer({ port: 0, store: ':memory:', testMode: true, logLevel: 'silent' });
  });
  after(async () => {
    client.close();
    await mock.close();
    await real.close();
  });
  it("accepts our server's manifest", async () => {
    const check = await fetchManifest(client, `${real.url}/ojs/manifest`, 5000);
    assert.deepEqual(check.problems, []);
    assert.equal(check.valid, true);
    // Our server serves HTTP and gRPC with the four Full-tier extensions.
    assert.equal(check.declared_tier, 'full');
    assert.equal(typeof check.declared_level, 'number');
    const compared = withComparison(
      check,
      4,
      [0, 1, 2, 3, 4].map((l) => result(l, 'pass')),
    );
    assert.equal(
      compared.comparison!.verdict,
      check.declared_level === 4 ? 'consistent' : 'underclaimed',
    );
  });
  it("flags the flawed mock's manifest", async () => {
    const check = await fetchManifest(client, `${mock.url}/ojs/manifest`, 5000);
    assert.equal(check.valid, false);
    assert.deepEqual(
      check.problems.map((p) => `${p.path} ${p.rule}`),
      ['implementation.version format.semver', 'backend required'],
    );
    const lines = formatManifestCheck(withComparison(check, -1, [result(0, 'fail')]));
    assert.match(lines[0]!, /^manifest: INVALID \(mock 1\)/);
    assert.match(lines.at(-1)!, /overclaimed - declares level 4, but level 0 failed/);
  });
  it('reports a missing manifest or an unreachable server', async () => {
    const missing = await fetchManifest(client, `${mock.url}/nope`, 5000);
    assert.deepEqual(
      missing.problems.map((p) => p.rule),
      ['http_status'],
    );
    assert.equal(missing.fetched, true);
    const down = await fetchManifest(client, 'http://127.0.0.1:1/ojs/manifest', 5000);
    assert.equal(down.fetched, false);
    assert.match(down.problems[0]!.message, /failed/);
  });
});
