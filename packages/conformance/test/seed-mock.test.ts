/**
 * Seed-format tests (plus one official-format file, to show per-file detection) against the
 * deliberately flawed mock server: exactly the tests hitting a defect fail, each with an
 * explanation naming the step, the path, the expectation and the actual value.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CliIo, conformanceMain } from '../src/cli.ts';
import type { ConformanceReport } from '../src/report.ts';
import { type MockServer, startMockServer } from './mock-server.ts';

const OJS = 'application/openjobspec+json';
const enqueue = (body: Record<string, unknown> = { type: 'test.echo', args: ['x'] }) => ({
  action: 'POST /ojs/v1/jobs',
  body,
  expect: { status: 201 },
  capture: { job_id: 'body.job.id' },
});

const files: Record<string, object> = {
  'S0-001.json': {
    test_id: 'S0-001',
    level: 0,
    name: 'enqueue',
    steps: [
      {
        ...enqueue(),
        expect: {
          status: 201,
          body: { 'job.id': 'string:uuidv7', 'job.state': 'available', 'job.args': ['x'] },
        },
      },
    ],
  },
  'S0-002.json': {
    test_id: 'S0-002',
    level: 0,
    name: 'validation_error_media_type',
    steps: [
      {
        action: 'POST /ojs/v1/jobs',
        body: { args: [] },
        expect: { status: 400, headers: { 'Content-Type': OJS }, body: { 'error.code': 'any' } },
      },
    ],
  },
  'S0-003.json': {
    test_id: 'S0-003',
    level: 0,
    name: 'get_has_queue',
    steps: [
      enqueue(),
      {
        action: 'GET /ojs/v1/jobs/{job_id}',
        expect: { status: 200, body: { 'job.queue': 'default' } },
      },
    ],
  },
  'S0-004.json': {
    test_id: 'S0-004',
    level: 0,
    name: 'worker_completes_echo',
    setup: { handler: 'test.echo' },
    steps: [
      enqueue(),
      {
        poll: 'PT5S',
        action: 'GET /ojs/v1/jobs/{job_id}',
        expect: { status: 200, body: { 'job.state': 'completed', 'job.result': ['x'] } },
      },
    ],
  },
  'S1-001.json': {
    test_id: 'S1-001',
    level: 1,
    name: 'retry_states',
    setup: { handler: 'test.fail_once' },
    input: { type: 'test.fail_once', args: [], options: { retry: { max_attempts: 3 } } },
    assertions: [
      { attempt: 1, state_after: 'retryable' },
      { attempt: 2, state_after: 'completed' },
    ],
  },
  'S1-002.json': {
    test_id: 'S1-002',
    level: 1,
    name: 'retry_backoff_timing',
    setup: { handler: 'test.fail_twice' },
    input: {
      type: 'test.fail_twice',
      args: [],
      options: { retry: { max_attempts: 3, initial_interval: 'PT1S', jitter: false } },
    },
    assertions: [
      { attempt: 1, state_after: 'retryable' },
      { attempt: 2, delay_after_failure: '~1s', state_after: 'retryable' },
      { attempt: 3, delay_after_failure: '~2s', state_after: 'completed' },
    ],
  },
  'S1-003.json': {
    test_id: 'S1-003',
    level: 1,
    name: 'cancel_status',
    steps: [
      enqueue(),
      {
        action: 'DELETE /ojs/v1/jobs/{job_id}',
        expect: { status: 200, body: { 'job.state': 'cancelled' } },
      },
    ],
  },
  'S1-004.json': {
    test_id: 'S1-004',
    level: 1,
    name: 'needs_cancel',
    requires: ['S1-003'],
    steps: [{ action: 'GET /ojs/v1/health', expect: { status: 200 } }],
  },
  'S2-001.json': {
    test_id: 'S2-001',
    level: 2,
    name: 'old_test',
    deprecated: true,
    deprecated_reason: 'superseded by S2-002',
    steps: [{ action: 'GET /nowhere', expect: { status: 200 } }],
  },
  'S2-002.json': {
    test_id: 'S2-002',
    level: 2,
    name: 'empty_fetch',
    steps: [
      {
        action: 'POST /ojs/v1/workers/fetch',
        body: { queues: ['nothing'] },
        expect: { status: 200, body: { jobs: 'array:length(0)' } },
      },
    ],
  },
  'official/O3-001.json': {
    test_id: 'O3-001',
    level: 3,
    category: 'health',
    name: 'official-format-health',
    steps: [{ id: 'step-1', action: 'GET', path: '/ojs/v1/health', assertions: { status: 200 } }],
  },
};

function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (t) => stdout.push(t), err: (t) => stderr.push(t) };
}

describe('seed format against a deliberately wrong server', () => {
  let server: MockServer;
  let dir: string;
  before(async () => {
    server = await startMockServer();
    dir = await mkdtemp(path.join(tmpdir(), 'ojs-seed-mock-'));
    for (const [name, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await writeFile(path.join(dir, name), JSON.stringify(content, null, 2));
    }
  });
  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fails exactly the tests that hit a defect, and explains each failure', async () => {
    const io = capture();
    const reportFile = `${dir}-report.json`;
    const code = await conformanceMain(
      [
        '--url',
        server.url,
        '--suites',
        dir,
        '--reset-url',
        `${server.url}/admin/reset`,
        '--report',
        reportFile,
        '--badge',
        `${dir}-badge.svg`,
      ],
      io,
    );
    assert.equal(code, 1);
    const text = io.stdout.join('\n');
    const verdicts = text
      .split('\n')
      .filter((l) => /^(PASS|FAIL|ERROR|SKIP) /.test(l))
      .map((l) => l.split(' ').slice(0, 2).join(' '));
    assert.deepEqual(verdicts, [
      'PASS O3-001',
      'PASS S0-001',
      'FAIL S0-002',
      'FAIL S0-003',
      'PASS S0-004',
      'PASS S1-001',
      'FAIL S1-002',
      'FAIL S1-003',
      'SKIP S1-004',
      'SKIP S2-001',
      'FAIL S2-002',
    ]);
    assert.equal(io.stdout.at(-1), '4 passed, 5 failed, 0 errored, 2 skipped');
    // Failure explanations: step, path, expected and actual.
    assert.match(
      text,
      /FAIL S0-002 .*\n {4}step step-1: POST http:\/\/127\.0\.0\.1:\d+\/ojs\/v1\/jobs -> 400\n {6}header Content-Type: expected "application\/openjobspec\+json", got "application\/json"\n/,
    );
    assert.match(
      text,
      /FAIL S0-003 .*\n {4}step step-2: GET http:\/\/\S+\/ojs\/v1\/jobs\/[0-9a-f-]{36} -> 200\n {6}body job\.queue: expected "default", got <missing>\n/,
    );
    assert.match(
      text,
      /FAIL S1-002 .*\n(.*\n)* {4}assertion-2 \(attempt 2\):\n {6}delay_after_failure: expected ~1s \(500ms\.\.1\.5s\) for attempt 2, actual was \d+ms \(outside tolerance\)\n/,
    );
    assert.match(
      text,
      /FAIL S1-003 .*\n {4}step step-2: DELETE \S+ -> 202\n {6}status: expected 200, got 202\n/,
    );
    assert.match(text, /SKIP S1-004 needs_cancel - requires S1-003, which failed/);
    assert.match(text, /SKIP S2-001 old_test - deprecated: superseded by S2-002/);
    assert.match(
      text,
      /FAIL S2-002 .*\n {4}step step-1: POST \S+ -> 204\n {6}status: expected 200, got 204\n {6}body: response body is not JSON/,
    );
    // Manifest: two problems, and the declared level 4 is overclaimed.
    assert.match(text, /^manifest: INVALID \(mock 1\)/m);
    assert.match(text, /^ {4}implementation\.version: format\.semver: /m);
    assert.match(text, /^ {4}backend: required: backend is required$/m);
    assert.match(
      text,
      /^manifest level check: overclaimed - declares level 4, but level 0, 1, 2 failed$/m,
    );
    assert.match(text, /^badge: OJS not conformant \(level 0 did not pass completely\)/m);

    const report = JSON.parse(await readFile(reportFile, 'utf8')) as ConformanceReport;
    await rm(reportFile);
    assert.equal(report.conformant, false);
    assert.equal(report.conformant_level, -1);
    assert.deepEqual(
      report.failures.map((f) => [f.test_id, f.reason]),
      [
        [
          'S0-002',
          'step step-1 (POST /ojs/v1/jobs): header Content-Type: expected "application/openjobspec+json", got "application/json"',
        ],
        [
          'S0-003',
          `step step-2 (GET ${(report.failures[1]!.steps[1]!.url ?? '').replace(/^http:\/\/[^/]+/, '')}): body job.queue: expected "default", got <missing>`,
        ],
        ['S1-002', report.failures[2]!.reason!],
        [
          'S1-003',
          `step step-2 (DELETE ${new URL(report.failures[3]!.steps[1]!.url!).pathname}): status: expected 200, got 202`,
        ],
        [
          'S2-002',
          'step step-1 (POST /ojs/v1/workers/fetch): status: expected 200, got 204 (+1 more)',
        ],
      ],
    );
    assert.match(
      report.failures[2]!.reason!,
      /^assertion-2 \(attempt 2\): delay_after_failure: expected ~1s \(500ms\.\.1\.5s\) for attempt 2, actual was \d+ms \(outside tolerance\)$/,
    );
    assert.deepEqual(
      report.skipped.map((s) => [s.test_id, s.deprecated ?? false]),
      [
        ['S1-004', false],
        ['S2-001', true],
      ],
    );
    assert.deepEqual(report.results.level_0, {
      total: 4,
      passed: 2,
      failed: 2,
      skipped: 0,
      errored: 0,
      all_pass: false,
    });
    assert.deepEqual(report.results.level_2, {
      total: 2,
      passed: 0,
      failed: 1,
      skipped: 1,
      errored: 0,
      all_pass: false,
    });
    assert.equal(report.manifest!.comparison!.verdict, 'overclaimed');
    assert.equal(report.badge!.eligible, false);
    assert.match(await readFile(`${dir}-badge.svg`, 'utf8'), /not conformant/);
    for (const ext of ['-badge.svg', '-badge.json', '-badge.md']) await rm(`${dir}${ext}`);
  });

  it('--gate declared fails too, and --format junit lists the failures', async () => {
    const io = capture();
    const code = await conformanceMain(
      [
        '--url',
        server.url,
        '--suites',
        dir,
        '--reset-url',
        `${server.url}/admin/reset`,
        '--gate',
        'declared',
        '--format',
        'junit',
        '--level',
        '0',
      ],
      io,
    );
    assert.equal(code, 1);
    const xml = io.stdout.join('\n');
    assert.match(
      xml,
      /<testsuites name="OJS conformance \S+" tests="4" failures="2" errors="0" skipped="0"/,
    );
    assert.match(
      xml,
      /<failure message="step step-1 \(POST \/ojs\/v1\/jobs\): header Content-Type: expected &quot;application\/openjobspec\+json&quot;, got &quot;application\/json&quot;"/,
    );
  });
});
