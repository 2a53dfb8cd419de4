import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildReport,
  conformantLevel,
  formatSummaryLine,
  formatTestResult,
  isConformant,
  summarize,
} from '../src/report.ts';
import type { TestResult, TestStatus } from '../src/types.ts';

function result(level: number, status: TestStatus, id = `T-${level}-${status}`): TestResult {
  return {
    test_id: id,
    name: 'n',
    level,
    category: 'c',
    file: 'f.json',
    status,
    duration_ms: 1,
    steps: [],
  };
}

describe('conformantLevel', () => {
  it('is -1 when level 0 fails or no core level ran', () => {
    assert.equal(conformantLevel([result(0, 'fail'), result(1, 'pass')]), -1);
    assert.equal(conformantLevel([result(99, 'pass')]), -1);
    assert.equal(conformantLevel([]), -1);
  });
  it('stops at the first present level with a failure or error', () => {
    assert.equal(
      conformantLevel([result(0, 'pass'), result(1, 'pass'), result(2, 'fail'), result(3, 'pass')]),
      1,
    );
    assert.equal(conformantLevel([result(0, 'pass'), result(1, 'error')]), 0);
  });
  it('skips absent levels instead of stopping', () => {
    assert.equal(conformantLevel([result(2, 'pass')]), 2);
    assert.equal(conformantLevel([result(0, 'pass'), result(2, 'pass'), result(4, 'pass')]), 4);
  });
  it('ignores level-99 results but counts extensions declaring a core level', () => {
    assert.equal(conformantLevel([result(0, 'pass'), result(99, 'fail')]), 0);
    assert.equal(conformantLevel([result(0, 'pass'), result(0, 'fail', 'EXT-X-001')]), -1);
  });
});

describe('summary and report', () => {
  const results = [result(0, 'pass'), result(0, 'fail'), result(1, 'pass'), result(99, 'error')];
  it('counts per status and per level', () => {
    const s = summarize(results);
    assert.deepEqual(
      {
        total: s.total,
        passed: s.passed,
        failed: s.failed,
        errored: s.errored,
        skipped: s.skipped,
      },
      { total: 4, passed: 2, failed: 1, errored: 1, skipped: 0 },
    );
    assert.deepEqual(s.by_level['0'], {
      total: 2,
      passed: 1,
      failed: 1,
      skipped: 0,
      errored: 0,
      all_pass: false,
    });
    assert.equal(s.by_level['1']!.all_pass, true);
    assert.equal(s.by_level['99']!.errored, 1);
  });
  it('conformant means no failed and no errored test at all', () => {
    assert.equal(isConformant(results), false);
    assert.equal(isConformant([result(0, 'pass'), result(99, 'pass')]), true);
    assert.equal(isConformant([result(99, 'error')]), false);
  });
  it('has the reference report keys', () => {
    const report = buildReport(results, {
      target: 'http://x',
      runAt: new Date(0),
      durationMs: 12.4,
      requestedLevel: null,
    });
    assert.deepEqual(Object.keys(report).sort(), [
      'backend',
      'conformant',
      'conformant_level',
      'duration_ms',
      'environment',
      'failures',
      'report_schema_version',
      'requested_level',
      'results',
      'run_at',
      'skipped',
      'target',
      'test_suite_version',
    ]);
    assert.equal(report.test_suite_version, '1.0');
    assert.equal(report.conformant_level, -1);
    assert.equal(report.failures.length, 2);
    assert.equal(report.duration_ms, 12);
    assert.deepEqual(report.backend, { url: 'http://x' });
  });
  it('formats lines', () => {
    assert.equal(formatSummaryLine(summarize(results)), '2 passed, 1 failed, 1 errored');
    assert.equal(formatTestResult(result(0, 'pass', 'L0-OPS-001')), 'PASS L0-OPS-001 n (1 ms)');
  });
});

describe('seed §8.4 additions', () => {
  const seedResults: TestResult[] = [
    result(0, 'pass', 'L0-001'),
    result(0, 'pass', 'L0-002'),
    {
      ...result(1, 'fail', 'L1-005'),
      reason: 'assertion-3 (attempt 3): delay_after_failure: too slow',
    },
    { ...result(2, 'skip', 'L2-003'), reason: 'requires L1-005, which failed' },
    { ...result(2, 'skip', 'L2-009'), reason: 'deprecated: replaced', deprecated: true },
  ];
  it('counts skips and reports level_N keys', () => {
    const s = summarize(seedResults);
    assert.equal(s.skipped, 2);
    assert.deepEqual(s.level_0, {
      total: 2,
      passed: 2,
      failed: 0,
      skipped: 0,
      errored: 0,
      all_pass: true,
    });
    assert.deepEqual(s.level_1, {
      total: 1,
      passed: 0,
      failed: 1,
      skipped: 0,
      errored: 0,
      all_pass: false,
    });
    assert.equal(s.level_2!.all_pass, false);
    assert.equal(summarize([result(99, 'pass')]).level_ext!.passed, 1);
  });
  it('conformant_level is the highest level for which all tests passed', () => {
    assert.equal(conformantLevel(seedResults), 0);
    assert.equal(isConformant(seedResults), false);
    // A deprecated test never counts, a skip caused by a failure does.
    assert.equal(
      conformantLevel([result(0, 'pass'), { ...result(1, 'skip'), deprecated: true }]),
      0,
    );
    assert.equal(
      isConformant([result(0, 'pass'), { ...result(1, 'skip'), deprecated: true }]),
      true,
    );
    assert.equal(isConformant([result(0, 'pass'), result(1, 'skip')]), false);
  });
  it('failures and skipped carry a reason', () => {
    const report = buildReport(seedResults, {
      target: 't',
      runAt: new Date(0),
      durationMs: 1,
      requestedLevel: 2,
      testSuiteVersion: '1.0.0',
    });
    assert.equal(report.test_suite_version, '1.0.0');
    assert.deepEqual(
      report.failures.map((f) => [f.test_id, f.reason]),
      [['L1-005', 'assertion-3 (attempt 3): delay_after_failure: too slow']],
    );
    assert.deepEqual(
      report.skipped.map((f) => [f.test_id, f.reason]),
      [
        ['L2-003', 'requires L1-005, which failed'],
        ['L2-009', 'deprecated: replaced'],
      ],
    );
    const official = buildReport([result(0, 'fail')], {
      target: 't',
      runAt: new Date(0),
      durationMs: 1,
      requestedLevel: null,
    });
    assert.equal(official.failures[0]!.reason, 'fail');
  });
  it('formats skips and the skipped count', () => {
    assert.equal(
      formatTestResult(seedResults[3]!),
      'SKIP L2-003 n - requires L1-005, which failed',
    );
    assert.equal(
      formatSummaryLine(summarize(seedResults)),
      '2 passed, 1 failed, 0 errored, 2 skipped',
    );
  });
});
