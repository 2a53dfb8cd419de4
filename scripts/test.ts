/**
 * The full test suite (`npm test`):
 *   1. unit, store, HTTP and SDK tests of every package (node --test);
 *   2. every shared official conformance suite against `ojs serve
 *      --test-mode` on each store (SQLite, PostgreSQL in a throwaway schema,
 *      Redis under a throwaway key prefix), failing on any test outside
 *      KNOWN_SUITE_DEFECTS. The stores run side by side: most of a run is
 *      the suite's own waiting.
 * PostgreSQL is read from OJS_TEST_POSTGRES_URL and Redis from
 * OJS_TEST_REDIS_URL (defaults on loopback); when one is unreachable its run
 * is skipped with the reason, except with CI=true.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from './conformance.ts';
import { dropPostgresSchema, dropRedisPrefix, ROOT, run, withPostgres, withRedis } from './lib.ts';

/**
 * Suite tests that cannot pass as written (../shared/spec/conformance-suite.md §0 item 9, §8):
 * - L1-RTR-014 expects error types derived from message text;
 * - EXT-ADM-001, EXT-ADM-002, EXT-DLQ-001 use bare `{"$type": ...}` / `{"$gte": ...}` matchers,
 *   which the runner treats as "an object containing that key" (digest §1.9);
 * - EXT-ADM-004, EXT-DLQ-003, EXT-DLQ-004, EXT-RL-003 put `{{job_id}}` in the path, a capture
 *   the runner never resolves (digest §1.5), so they address a job that does not exist.
 * packages/server/test/http-operations.test.ts checks what each of them means, with real ids.
 */
export const KNOWN_SUITE_DEFECTS = new Set([
  'L1-RTR-014',
  'EXT-ADM-001',
  'EXT-ADM-002',
  'EXT-ADM-004',
  'EXT-DLQ-001',
  'EXT-DLQ-003',
  'EXT-DLQ-004',
  'EXT-RL-003',
]);

/** The shared suites CI runs: every level up to the one the manifest declares, and the extensions we declare. */
const SUITES = (
  process.env.OJS_CONFORMANCE_LEVELS ??
  [
    '0,1,2,3,4,ext-job-versioning,ext-schema-registry',
    'ext-admin-api,ext-dead-letter,ext-graceful-shutdown,ext-backpressure',
    'ext-progress,ext-rate-limiting,ext-middleware,ext-observability',
    'ext-webhooks,ext-multi-tenancy,ext-encryption,ext-fair-scheduling',
  ].join(',')
).split(',');

const POSTGRES_URL = process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.OJS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function testFiles(): string[] {
  const files: string[] = [];
  for (const pkg of readdirSync(join(ROOT, 'packages'))) {
    const dir = join(ROOT, 'packages', pkg, 'test');
    if (!existsSync(dir)) continue;
    for (const file of readdirSync(dir, { recursive: true }) as string[]) {
      if (file.endsWith('.test.ts')) files.push(join('packages', pkg, 'test', file));
    }
  }
  return files.sort();
}

interface Outcome {
  label: string;
  ok: boolean;
  summary: string;
  output: string;
}

async function conformanceOnStore(label: string, store: string | undefined): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'ojs-report-'));
  const reportFile = join(dir, 'report.json');
  try {
    const { output } = await runConformance(store, SUITES, ['--report', reportFile], {
      capture: true,
    });
    if (!existsSync(reportFile)) {
      return { label, ok: false, summary: `conformance on ${label}: no report written`, output };
    }
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as {
      results: { total: number; passed: number; failed: number; errored: number };
      failures: { test_id: string }[];
    };
    const unexpected = report.failures.filter((f) => !KNOWN_SUITE_DEFECTS.has(f.test_id));
    const { total, passed, failed, errored } = report.results;
    const lines = [
      `conformance on ${label}: ${passed}/${total} passed, ${failed} failed, ${errored} errored` +
        ` (${report.failures.length - unexpected.length} known suite defects)`,
      ...unexpected.map((f) => `  unexpected failure: ${f.test_id}`),
    ];
    return { label, ok: unexpected.length === 0, summary: lines.join('\n'), output };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A reachable PostgreSQL with the store package installed, or the reason there is none. */
async function postgresProblem(): Promise<string | undefined> {
  if (!existsSync(join(ROOT, 'packages', 'store-postgres', 'package.json'))) {
    return 'the store-postgres package is not present';
  }
  try {
    await withPostgres(POSTGRES_URL, async () => {});
    return undefined;
  } catch (error) {
    return `PostgreSQL unreachable at ${POSTGRES_URL}: ${(error as Error).message}`;
  }
}

/** A reachable Redis with the store package installed, or the reason there is none. */
async function redisProblem(): Promise<string | undefined> {
  if (!existsSync(join(ROOT, 'packages', 'store-redis', 'package.json'))) {
    return 'the store-redis package is not present';
  }
  try {
    await withRedis(REDIS_URL, async (redis) => {
      await redis.ping();
    });
    return undefined;
  } catch (error) {
    return `Redis unreachable at ${REDIS_URL}: ${(error as Error).message}`;
  }
}

// A hang must fail the run, not outlast CI: each test has 5 minutes, and the
// whole unit run 40 (it takes about 10). Not --test-force-exit: it ends a
// file before the tests it registers after a top-level await (12 of the
// SDK's 306), without a word.
const unitCode = await run(
  process.execPath,
  ['--test', '--test-reporter=spec', '--test-timeout=300000', ...testFiles()],
  {},
  40 * 60_000,
);
let ok = unitCode === 0;

const runs: Promise<Outcome>[] = [conformanceOnStore('sqlite', undefined)];
const problem = await postgresProblem();
const schema = `ojs_conformance_${process.pid}`;
if (problem === undefined) {
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  runs.push(conformanceOnStore('postgres', url.toString()));
} else if (process.env.CI === 'true') {
  process.stdout.write(`\nconformance on postgres: FAILED, ${problem}\n`);
  ok = false;
} else {
  process.stdout.write(`\nconformance on postgres: skipped, ${problem}\n`);
}
const redisDown = await redisProblem();
const prefix = `ojs-conformance-${process.pid}`;
if (redisDown === undefined) {
  const url = new URL(REDIS_URL);
  url.searchParams.set('prefix', prefix);
  runs.push(conformanceOnStore('redis', url.toString()));
} else if (process.env.CI === 'true') {
  process.stdout.write(`\nconformance on redis: FAILED, ${redisDown}\n`);
  ok = false;
} else {
  process.stdout.write(`\nconformance on redis: skipped, ${redisDown}\n`);
}
process.stdout.write(
  `\n== conformance (${SUITES.join(', ')}) on ${runs.length} store(s), running side by side\n`,
);
const outcomes = await Promise.all(runs);
if (problem === undefined) await dropPostgresSchema(POSTGRES_URL, schema).catch(() => {});
if (redisDown === undefined) await dropRedisPrefix(REDIS_URL, prefix).catch(() => {});
for (const outcome of outcomes) {
  process.stdout.write(`\n---- ${outcome.label}\n${outcome.output}`);
}
process.stdout.write('\n');
for (const outcome of outcomes) {
  process.stdout.write(`${outcome.summary}\n`);
  ok = outcome.ok && ok;
}
process.stdout.write(`\n${ok ? 'ALL TESTS PASSED' : 'TESTS FAILED'}\n`);
process.exitCode = ok ? 0 : 1;
