/**
 * Run report (digest §1.11): the JSON document with the reference runner's keys, the
 * conformance verdicts derived from results, and the human-readable table lines.
 */
import os from 'node:os';
import type { BadgeInfo } from './badge.ts';
import { reasonOf } from './explain.ts';
import { unquoted } from './gofmt.ts';
import type { ManifestCheck } from './manifest.ts';
import { EXT_LEVEL, type TestResult } from './types.ts';

export interface Counts {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
  errored: number;
}

export interface LevelCounts extends Counts {
  all_pass: boolean;
}

export interface RunSummary extends Counts {
  by_level: Record<string, LevelCounts>;
  /** Seed §8.4 spelling of the per-level counts: `level_0` ... `level_4`, `level_ext`. */
  [level: `level_${string}`]: LevelCounts;
}

export interface ConformanceReport {
  test_suite_version: string;
  target: string;
  run_at: string;
  duration_ms: number;
  requested_level: number | null;
  results: RunSummary;
  conformant: boolean;
  /** Highest core level (0-4) reached without failures; -1 when none. */
  conformant_level: number;
  /** Failed and errored tests, each with a one-line `reason` (seed §8.4). */
  failures: TestResult[];
  /** Skipped tests with their `reason`. */
  skipped: TestResult[];
  report_schema_version: string;
  environment: Record<string, string>;
  backend: { url: string };
  /** Manifest check (seed §4), when it was run. */
  manifest?: ManifestCheck;
  /** Badge verdict (seed §7), when one was requested. */
  badge?: BadgeInfo;
}

export interface ReportMeta {
  target: string;
  runAt: Date;
  durationMs: number;
  requestedLevel: number | null;
  /** Version of the suites run (from their manifest.json); default "1.0". */
  testSuiteVersion?: string;
  manifest?: ManifestCheck;
  badge?: BadgeInfo;
}

const CORE_LEVELS = [0, 1, 2, 3, 4];

function emptyCounts(): Counts {
  return { total: 0, passed: 0, failed: 0, skipped: 0, errored: 0 };
}

function count(into: Counts, result: TestResult): void {
  into.total++;
  if (result.status === 'pass') into.passed++;
  else if (result.status === 'fail') into.failed++;
  else if (result.status === 'skip') into.skipped++;
  else into.errored++;
}

/** Deprecated tests are reported but never count toward conformance (seed §9.4). */
function counts(result: TestResult): boolean {
  return result.deprecated !== true;
}

export function summarize(results: TestResult[]): RunSummary {
  const summary: RunSummary = { ...emptyCounts(), by_level: {} };
  const levels = new Map<number, Counts>();
  for (const result of results) {
    count(summary, result);
    const counts = levels.get(result.level) ?? emptyCounts();
    levels.set(result.level, counts);
    count(counts, result);
  }
  for (const [level, c] of [...levels].sort((a, b) => a[0] - b[0])) {
    const undeprecatedSkips = results.filter(
      (r) => r.level === level && r.status === 'skip' && counts(r),
    ).length;
    const entry = { ...c, all_pass: c.failed === 0 && c.errored === 0 && undeprecatedSkips === 0 };
    summary.by_level[String(level)] = entry;
    summary[`level_${level === EXT_LEVEL ? 'ext' : level}`] = entry;
  }
  return summary;
}

/**
 * No failed, errored or skipped test anywhere in the run, extension tests included; deprecated
 * tests do not count.
 */
export function isConformant(results: TestResult[]): boolean {
  return results.every((r) => r.status === 'pass' || !counts(r));
}

/**
 * Walks levels 0..4: a level absent from the run is skipped (not a break), the first present
 * level with a failure stops the walk. Level-99 (ext) results never count, but extension tests
 * declaring a core level do.
 */
export function conformantLevel(results: TestResult[]): number {
  let reached = -1;
  for (const level of CORE_LEVELS) {
    const atLevel = results.filter((r) => r.level === level && counts(r));
    if (atLevel.length === 0) continue;
    if (!atLevel.every((r) => r.status === 'pass')) break;
    reached = level;
  }
  return reached;
}

export function buildReport(results: TestResult[], meta: ReportMeta): ConformanceReport {
  const withReason = (r: TestResult): TestResult => ({ ...r, reason: reasonOf(r) });
  const report: ConformanceReport = {
    test_suite_version: meta.testSuiteVersion ?? '1.0',
    target: meta.target,
    run_at: meta.runAt.toISOString(),
    duration_ms: Math.round(meta.durationMs),
    requested_level: meta.requestedLevel,
    results: summarize(results),
    conformant: isConformant(results),
    conformant_level: conformantLevel(results),
    failures: results.filter((r) => r.status === 'fail' || r.status === 'error').map(withReason),
    skipped: results.filter((r) => r.status === 'skip').map(withReason),
    report_schema_version: '1.0',
    environment: {
      runner: '@ojs/conformance (TypeScript)',
      node: process.version,
      platform: `${os.platform()}/${os.arch()}`,
    },
    backend: { url: meta.target },
  };
  if (meta.manifest !== undefined) report.manifest = meta.manifest;
  if (meta.badge !== undefined) report.badge = meta.badge;
  return report;
}

function levelLabel(level: number): string {
  return level === EXT_LEVEL ? 'ext' : String(level);
}

/** One line per test, plus indented explanation lines for each failed assertion. */
export function formatTestResult(result: TestResult): string {
  const labels = { pass: 'PASS', fail: 'FAIL', error: 'ERROR', skip: 'SKIP' } as const;
  const label = labels[result.status];
  if (result.status === 'skip') {
    return `${label} ${result.test_id} ${result.name} - ${result.reason ?? 'skipped'}`;
  }
  const lines = [`${label} ${result.test_id} ${result.name} (${result.duration_ms} ms)`];
  for (const step of result.steps) {
    // Seed-format notes are chatty on success; show them only when the test did not pass.
    if (result.format !== 'seed' || result.status !== 'pass')
      for (const note of step.notes ?? []) lines.push(`    note: step ${step.id}: ${note}`);
    if (step.status === 'pass' || step.phase === 'teardown') continue;
    if (step.phase === 'assertion') lines.push(`    ${step.id} (${step.action}):`);
    else {
      const where = step.phase === 'test' ? `step ${step.id}` : `${step.phase} step ${step.id}`;
      const status = step.response ? ` -> ${step.response.status}` : '';
      lines.push(`    ${where}: ${step.action} ${step.url ?? ''}${status}`);
    }
    for (const f of step.failures) {
      // Messages usually say "expected X, got Y" already; add the raw matcher/actual otherwise.
      let line = `      ${f.path}: ${f.message}`;
      if (f.path !== 'request') {
        const mentions = (text: string) =>
          f.message.includes(text) || f.message.includes(unquoted(text));
        if (!mentions(f.expected)) line += ` [matcher ${f.expected}]`;
        if (!/\bgot\b|^path error|\bactual was\b/.test(f.message) && !mentions(f.actual))
          line += ` [actual ${f.actual}]`;
      }
      lines.push(line);
    }
  }
  if (result.status !== 'pass')
    for (const note of result.notes ?? []) lines.push(`    note: ${note}`);
  return lines.join('\n');
}

/** `N passed, N failed, N errored` - the first two parts are a stable prefix for scripts. */
export function formatSummaryLine(summary: Counts): string {
  const skipped = summary.skipped > 0 ? `, ${summary.skipped} skipped` : '';
  return `${summary.passed} passed, ${summary.failed} failed, ${summary.errored} errored${skipped}`;
}

/** Per-level overview and verdict printed above the final summary line in table mode. */
export function formatVerdict(report: ConformanceReport): string[] {
  const lines: string[] = [];
  for (const [level, c] of Object.entries(report.results.by_level)) {
    const errored = c.errored > 0 ? `, ${c.errored} errored` : '';
    const skipped = c.skipped > 0 ? `, ${c.skipped} skipped` : '';
    lines.push(
      `level ${levelLabel(Number(level))}: ${c.passed}/${c.total} passed${errored}${skipped}`,
    );
  }
  const reached = report.conformant_level < 0 ? 'none' : String(report.conformant_level);
  lines.push(
    `conformant: ${report.conformant ? 'yes' : 'no'}, conformant level: ${reached}, ` +
      `duration ${(report.duration_ms / 1000).toFixed(1)} s`,
  );
  return lines;
}
