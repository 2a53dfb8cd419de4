/**
 * The full test suite (`npm test`):
 *   1. unit, store and HTTP tests of every package (node --test);
 *   2. the official conformance suites against `ojs serve --test-mode` on
 *      each store, failing on any test outside KNOWN_SUITE_DEFECTS.
 * Stores: SQLite always; PostgreSQL and Redis when their packages exist
 * (OJS_TEST_POSTGRES_URL / OJS_TEST_REDIS_URL, defaults on loopback).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from './conformance.ts';
import { ROOT, run } from './lib.ts';

/** Suite tests that cannot pass as written (see ../shared/spec/conformance-suite.md §0 item 9). */
export const KNOWN_SUITE_DEFECTS = new Set(['L1-RTR-014']);

/** Levels whose shared suites CI runs (the manifest declares the highest that passes). */
const LEVELS = (process.env.OJS_CONFORMANCE_LEVELS ?? '0,1,2,3,4').split(',');

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

async function conformanceOnStore(label: string, store: string | undefined): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'ojs-report-'));
  const reportFile = join(dir, 'report.json');
  try {
    process.stdout.write(`\n== conformance levels ${LEVELS.join(',')} on ${label}\n`);
    await runConformance(store, LEVELS, ['--report', reportFile]);
    if (!existsSync(reportFile)) {
      process.stdout.write(`conformance on ${label}: no report written\n`);
      return false;
    }
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as {
      results: { total: number; passed: number; failed: number; errored: number };
      failures: { test_id: string }[];
    };
    const unexpected = report.failures.filter((f) => !KNOWN_SUITE_DEFECTS.has(f.test_id));
    const { total, passed, failed, errored } = report.results;
    process.stdout.write(
      `conformance on ${label}: ${passed}/${total} passed, ${failed} failed, ${errored} errored` +
        ` (${report.failures.length - unexpected.length} known suite defects)\n`,
    );
    for (const f of unexpected) process.stdout.write(`  unexpected failure: ${f.test_id}\n`);
    return unexpected.length === 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const unitCode = await run(process.execPath, ['--test', '--test-reporter=spec', ...testFiles()]);
let ok = unitCode === 0;
ok = (await conformanceOnStore('sqlite', undefined)) && ok;
process.stdout.write(`\n${ok ? 'ALL TESTS PASSED' : 'TESTS FAILED'}\n`);
process.exitCode = ok ? 0 : 1;
