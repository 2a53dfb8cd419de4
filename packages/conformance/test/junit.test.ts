import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderJunit } from '../src/junit.ts';
import { buildReport } from '../src/report.ts';
import type { TestResult } from '../src/types.ts';

const results: TestResult[] = [
  {
    test_id: 'L0-001',
    name: 'ok',
    level: 0,
    category: 'core',
    file: 'a.json',
    status: 'pass',
    duration_ms: 12,
    steps: [],
  },
  {
    test_id: 'L0-002',
    name: 'bad <type> & "quotes"',
    level: 0,
    category: 'core',
    file: 'b.json',
    status: 'fail',
    duration_ms: 1500,
    format: 'seed',
    steps: [
      {
        id: 'step-1',
        phase: 'test',
        action: 'POST',
        url: 'http://x/ojs/v1/jobs',
        status: 'fail',
        duration_ms: 3,
        response: { status: 201, headers: {}, body: {} },
        failures: [
          { path: 'status', expected: '400', actual: '201', message: 'expected 400, got 201' },
        ],
      },
    ],
  },
  {
    test_id: 'L1-001',
    name: 's',
    level: 1,
    category: '',
    file: 'c.json',
    status: 'skip',
    duration_ms: 0,
    steps: [],
    reason: 'requires L0-002, which failed',
  },
  {
    test_id: 'EXT-1',
    name: 'e',
    level: 99,
    category: 'x',
    file: 'd.json',
    status: 'error',
    duration_ms: 0,
    steps: [],
  },
];

describe('renderJunit', () => {
  const report = buildReport(results, {
    target: 'http://x',
    runAt: new Date(0),
    durationMs: 2000,
    requestedLevel: null,
  });
  const xml = renderJunit(report, results);
  it('has one testsuite per level with counts', () => {
    assert.match(
      xml,
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="OJS conformance http:\/\/x" tests="4" failures="1" errors="1" skipped="1" time="2\.000">/,
    );
    assert.match(
      xml,
      /<testsuite name="level-0" tests="2" failures="1" errors="0" skipped="0" time="1\.512">/,
    );
    assert.match(xml, /<testsuite name="level-1" tests="1" failures="0" errors="0" skipped="1"/);
    assert.match(xml, /<testsuite name="level-ext" tests="1" failures="0" errors="1"/);
  });
  it('explains failures and escapes XML', () => {
    assert.match(
      xml,
      /<testcase name="L0-001 ok" classname="level-0\.core" time="0\.012" file="a\.json"\/>/,
    );
    assert.match(xml, /name="L0-002 bad &lt;type&gt; &amp; &quot;quotes&quot;"/);
    assert.match(
      xml,
      /<failure message="step step-1 \(POST \/ojs\/v1\/jobs\): status: expected 400, got 201" type="AssertionFailure">test step-1: POST http:\/\/x\/ojs\/v1\/jobs -&gt; 201\n {2}status: expected 400, got 201\n {4}expected: 400\n {4}actual: {3}201<\/failure>/,
    );
    assert.match(xml, /<skipped message="requires L0-002, which failed"\/>/);
    assert.match(xml, /<error message="error" type="SetupError">/);
    assert.ok(xml.endsWith('</testsuites>\n'));
  });
});
