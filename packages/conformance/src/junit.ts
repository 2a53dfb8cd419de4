/**
 * JUnit XML for CI systems: one <testsuite> per level, one <testcase> per test; failures carry
 * the one-line reason as `message` and every failed expectation in the element text.
 */
import { reasonOf } from './explain.ts';
import type { ConformanceReport } from './report.ts';
import { EXT_LEVEL, type TestResult } from './types.ts';

function escapeXml(text: string): string {
  return (
    text
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      // XML 1.0 forbids most control characters, even escaped.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
  );
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

function details(result: TestResult): string {
  const lines: string[] = [];
  for (const step of result.steps) {
    if (step.status === 'pass' || step.phase === 'teardown') continue;
    const status = step.response ? ` -> ${step.response.status}` : '';
    lines.push(`${step.phase} ${step.id}: ${step.action} ${step.url ?? ''}${status}`.trimEnd());
    for (const f of step.failures) {
      lines.push(`  ${f.path}: ${f.message}`);
      lines.push(`    expected: ${f.expected}`);
      lines.push(`    actual:   ${f.actual}`);
    }
  }
  for (const note of result.notes ?? []) lines.push(`note: ${note}`);
  return lines.join('\n');
}

function testcase(result: TestResult, suite: string): string {
  const name = escapeXml(`${result.test_id} ${result.name}`.trim());
  const classname = escapeXml(result.category ? `${suite}.${result.category}` : suite);
  const open = `    <testcase name="${name}" classname="${classname}" time="${seconds(result.duration_ms)}" file="${escapeXml(result.file)}"`;
  if (result.status === 'pass') return `${open}/>`;
  const reason = escapeXml(reasonOf(result));
  const tag =
    result.status === 'skip' ? 'skipped' : result.status === 'error' ? 'error' : 'failure';
  if (tag === 'skipped') return `${open}>\n      <skipped message="${reason}"/>\n    </testcase>`;
  return `${open}>\n      <${tag} message="${reason}" type="${tag === 'error' ? 'SetupError' : 'AssertionFailure'}">${escapeXml(details(result))}</${tag}>\n    </testcase>`;
}

export function renderJunit(report: ConformanceReport, results: TestResult[]): string {
  const levels = [...new Set(results.map((r) => r.level))].sort((a, b) => a - b);
  const suites = levels.map((level) => {
    const name = level === EXT_LEVEL ? 'level-ext' : `level-${level}`;
    const items = results.filter((r) => r.level === level);
    const count = (s: TestResult['status']) => items.filter((r) => r.status === s).length;
    const time = items.reduce((sum, r) => sum + r.duration_ms, 0);
    return [
      `  <testsuite name="${name}" tests="${items.length}" failures="${count('fail')}" errors="${count('error')}" skipped="${count('skip')}" time="${seconds(time)}">`,
      ...items.map((r) => testcase(r, name)),
      '  </testsuite>',
    ].join('\n');
  });
  const { total, failed, errored, skipped } = report.results;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="OJS conformance ${escapeXml(report.target)}" tests="${total}" failures="${failed}" errors="${errored}" skipped="${skipped}" time="${seconds(report.duration_ms)}">`,
    ...suites,
    '</testsuites>',
    '',
  ].join('\n');
}
