/**
 * Run report (digest §1.11): the JSON document with the reference runner's keys, the
 * conformance verdicts derived from results, and the human-readable table lines.
 */
import os from 'node:os';
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
  failures: TestResult[];
  skipped: TestResult[];
  report_schema_version: string;
  environment: Record<string, string>;
  backend: { url: string };
}

export interface ReportMeta {
  target: string;
  runAt: Date;
  durationMs: number;
  requestedLevel: number | null;
}

const CORE_LEVELS = [0, 1, 2, 3, 4];

function emptyCounts(): Counts {
  return { total: 0, passed: 0, failed: 0, skipped: 0, errored: 0 };
}

function count(into: Counts, result: TestResult): void {
  into.total++;
  if (result.status === 'pass') into.passed++;
  else if (result.status === 'fail') into.failed++;
  else into.errored++;
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
  for (const [level, counts] of [...levels].sort((a, b) => a[0] - b[0])) {
    summary.by_level[String(level)] = {
      ...counts,
      all_pass: counts.failed === 0 && counts.errored === 0,
    };
  }
  return summary;
}

/** No failed and no errored test anywhere in the run, extension tests included. */
export function isConformant(results: TestResult[]): boolean {
  return results.every((r) => r.status === 'pass');
}

/**
 * Walks levels 0..4: a level absent from the run is skipped (not a break), the first present
 * level with a failure stops the walk. Level-99 (ext) results never count, but extension tests
 * declaring a core level do.
 */
export function conformantLevel(results: TestResult[]): number {
  let reached = -1;
  for (const level of CORE_LEVELS) {
    const atLevel = results.filter((r) => r.level === level);
    if (atLevel.length === 0) continue;
    if (!atLevel.every((r) => r.status === 'pass')) break;
    reached = level;
  }
  return reached;
}

export function buildReport(results: TestResult[], meta: ReportMeta): ConformanceReport {
  return {
    test_suite_version: '1.0',
    target: meta.target,
    run_at: meta.runAt.toISOString(),
    duration_ms: Math.round(meta.durationMs),
    requested_level: meta.requestedLevel,
    results: summarize(results),
    conformant: isConformant(results),
    conformant_level: conformantLevel(results),
    failures: results.filter((r) => r.status !== 'pass'),
    skipped: [],
    report_schema_version: '1.0',
    environment: {
      runner: '@ojs/conformance (TypeScript)',
      node: process.version,
      platform: `${os.platform()}/${os.arch()}`,
    },
    backend: { url: meta.target },
  };
}

function levelLabel(level: number): string {
  return level === EXT_LEVEL ? 'ext' : String(level);
}

/** One line per test, plus indented explanation lines for each failed assertion. */
export function formatTestResult(result: TestResult): string {
  const label = result.status === 'pass' ? 'PASS' : result.status === 'fail' ? 'FAIL' : 'ERROR';
  const lines = [`${label} ${result.test_id} ${result.name} (${result.duration_ms} ms)`];
  for (const step of result.steps) {
    for (const note of step.notes ?? []) lines.push(`    note: step ${step.id}: ${note}`);
    if (step.status === 'pass' || step.phase === 'teardown') continue;
    const where = step.phase === 'test' ? `step ${step.id}` : `${step.phase} step ${step.id}`;
    const status = step.response ? ` -> ${step.response.status}` : '';
    lines.push(`    ${where}: ${step.action} ${step.url ?? ''}${status}`);
    for (const f of step.failures) {
      // Messages usually say "expected X, got Y" already; add the raw matcher/actual otherwise.
      let line = `      ${f.path}: ${f.message}`;
      if (f.path !== 'request') {
        if (!f.message.includes(f.expected)) line += ` [matcher ${f.expected}]`;
        if (!/\bgot\b|^path error/.test(f.message) && !f.message.includes(f.actual))
          line += ` [actual ${f.actual}]`;
      }
      lines.push(line);
    }
  }
  return lines.join('\n');
}

/** `N passed, N failed, N errored` - the first two parts are a stable prefix for scripts. */
export function formatSummaryLine(summary: Counts): string {
  return `${summary.passed} passed, ${summary.failed} failed, ${summary.errored} errored`;
}

/** Per-level overview and verdict printed above the final summary line in table mode. */
export function formatVerdict(report: ConformanceReport): string[] {
  const lines: string[] = [];
  for (const [level, c] of Object.entries(report.results.by_level)) {
    const errored = c.errored > 0 ? `, ${c.errored} errored` : '';
    lines.push(`level ${levelLabel(Number(level))}: ${c.passed}/${c.total} passed${errored}`);
  }
  const reached = report.conformant_level < 0 ? 'none' : String(report.conformant_level);
  lines.push(
    `conformant: ${report.conformant ? 'yes' : 'no'}, conformant level: ${reached}, ` +
      `duration ${(report.duration_ms / 1000).toFixed(1)} s`,
  );
  return lines;
}
