/**
 * End-to-end: official-format test files written to a temp dir, run through the CLI against a
 * deliberately flawed mock server (see mock-server.ts). Asserts exactly which tests pass/fail.
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
const ID = '{{steps.step-1.response.body.job.id}}';

const enqueue = (extra: Record<string, unknown> = {}) => ({
  id: 'step-1',
  action: 'POST',
  path: '/ojs/v1/jobs',
  body: { type: 'test.echo', args: [{ message: 'hello' }], ...extra },
  assertions: { status: 201, body: { '$.job.id': 'string:uuidv7' } },
});

const files: Record<string, object> = {
  'core/pass-enqueue.json': {
    test_id: 'T-0-001',
    level: 0,
    category: 'operations',
    name: 'enqueue-and-get',
    steps: [
      {
        ...enqueue(),
        assertions: {
          status: 201,
          headers: {
            'content-type': OJS,
            'OJS-Version': { $match: '^1\\.0$' },
            'X-Nope': { $exists: true },
          },
          body: {
            '$.job.id': 'string:uuidv7',
            '$.job.state': 'available',
            '$.job.args': [{ message: 'hello' }],
            '$.job.error': 'absent',
            '$.job.attempt': 'number:non_negative',
          },
        },
      },
      {
        id: 'step-2',
        action: 'GET',
        path: `/ojs/v1/jobs/${ID}`,
        assertions: { status: 200, body: { '$.job.id': ID, '$.job.type': 'test.echo' } },
      },
    ],
  },
  'core/fail-content-type.json': {
    test_id: 'T-0-002',
    level: 0,
    category: 'envelope',
    name: 'validation-error-media-type',
    steps: [
      {
        id: 'step-1',
        action: 'POST',
        path: '/ojs/v1/jobs',
        headers: { 'Content-Type': OJS },
        body: { args: [] },
        assertions: {
          status: 400,
          headers: { 'Content-Type': OJS },
          body: { '$.error.code': 'invalid_request' },
        },
      },
    ],
  },
  'core/fail-status.json': {
    test_id: 'T-1-001',
    level: 1,
    category: 'operations',
    name: 'cancel-status',
    steps: [
      enqueue(),
      {
        id: 'step-2',
        action: 'DELETE',
        path: `/ojs/v1/jobs/${ID}`,
        assertions: { status: 200, body: { '$.job.state': 'cancelled' } },
      },
    ],
  },
  'core/fail-missing-field.json': {
    test_id: 'T-1-002',
    level: 1,
    category: 'operations',
    name: 'get-has-queue',
    steps: [
      enqueue(),
      {
        id: 'step-2',
        action: 'GET',
        path: `/ojs/v1/jobs/${ID}`,
        assertions: { status: 200, body: { '$.job.queue': 'default', '$.job.state': 'available' } },
      },
    ],
  },
  'misc/pass-runner-features.json': {
    test_id: 'T-2-001',
    level: 2,
    category: 'runner',
    name: 'runner-features',
    steps: [
      enqueue({ options: { queue: 'q1' } }),
      {
        id: 'step-2',
        action: 'POST',
        path: '/echo',
        delay_ms: 5,
        body: {
          job_id: ID,
          attempt: '{{steps.step-1.response.body.job.attempt}}',
          unknown: '{{job_id}}',
        },
        assertions: {
          status: 200,
          body: {
            '$.received.job_id': ID,
            '$.received.attempt': '0',
            '$.received.unknown': '{{job_id}}',
            '$.raw': `string:contains:"unknown":"{{job_id}}"`,
          },
        },
      },
      { id: 'step-3', action: 'WAIT', duration_ms: 5 },
      {
        id: 'step-4',
        action: 'POST',
        path: '/ojs/v1/workers/fetch',
        parallel_with: 'step-5',
        body: { queues: ['parallel'] },
        assertions: { status: 200 },
      },
      {
        id: 'step-5',
        action: 'POST',
        path: '/ojs/v1/workers/fetch',
        parallel_with: 'step-4',
        body: { queues: ['parallel'] },
        assertions: { status: 200 },
      },
      {
        id: 'step-6',
        action: 'GET',
        path: '/ojs/v1/health',
        assertions: { status: 'one_of:200,204', body: { '$.status': 'ok' } },
      },
      { id: 'step-7', action: 'ASSERT', assertions: { equality: { a: 'b' } } },
      { id: 'step-8', action: 'push', path: '/ojs/v1/jobs', body: { type: 'x' } },
      {
        id: 'step-9',
        action: 'POST',
        path: '/ojs/v1/workers/fetch',
        body: { queues: ['q1'] },
        assertions: {
          status: { $in: [200, 204] },
          body: {
            '$.jobs': 'array:length:1',
            "$.jobs[?(@.id=='{{steps.step-1.response.body.job.id}}')].attempt": 1,
          },
        },
      },
    ],
  },
  'misc/pass-reset.json': {
    test_id: 'T-3-001',
    level: 3,
    category: 'runner',
    name: 'state-was-reset',
    steps: [
      {
        id: 'step-1',
        action: 'POST',
        path: '/ojs/v1/workers/fetch',
        body: { queues: ['default'] },
        assertions: { status: 204 },
      },
    ],
  },
  'misc/pass-keepalive.json': {
    test_id: 'T-3-002',
    level: 3,
    category: 'runner',
    name: 'server-drops-idle-connections',
    steps: Array.from({ length: 6 }, (_, i) => ({
      id: `step-${i + 1}`,
      action: 'GET',
      path: i % 2 === 0 ? '/drop-after-response' : `/ojs/v1/jobs/${ID}`,
      assertions: { status: i % 2 === 0 ? 200 : 404 },
    })),
  },
  'ext/fail-empty-fetch.json': {
    test_id: 'T-EXT-001',
    level: 'ext',
    category: 'ext-fetch',
    name: 'empty-fetch-is-200',
    steps: [
      {
        id: 'step-1',
        action: 'POST',
        path: '/ojs/v1/workers/fetch',
        body: { queues: ['nothing-here'] },
        assertions: {
          status: { $in: [200, 204] },
          body: { $or: [{ '$.jobs': { $size: 0 } }, { $empty: true }] },
        },
      },
    ],
  },
};

function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (t) => stdout.push(t), err: (t) => stderr.push(t) };
}

describe('end-to-end against a flawed server', () => {
  let server: MockServer;
  let dir: string;
  before(async () => {
    server = await startMockServer();
    dir = await mkdtemp(path.join(tmpdir(), 'ojs-e2e-'));
    for (const [name, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await writeFile(path.join(dir, name), JSON.stringify(content, null, 2));
    }
  });
  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('passes and fails exactly the expected tests (table output)', async () => {
    const io = capture();
    const before = server.resets;
    const code = await conformanceMain(
      ['--url', `${server.url}/`, '--suites', dir, '--reset-url', `${server.url}/admin/reset`],
      io,
    );
    assert.equal(code, 1);
    const lines = io.stdout.join('\n').split('\n');
    const verdicts = lines
      .filter((l) => /^(PASS|FAIL|ERROR) /.test(l))
      .map((l) => l.split(' ').slice(0, 2).join(' '));
    assert.deepEqual(verdicts, [
      'PASS T-0-001',
      'FAIL T-0-002',
      'FAIL T-1-001',
      'FAIL T-1-002',
      'PASS T-2-001',
      'PASS T-3-001',
      'PASS T-3-002',
      'FAIL T-EXT-001',
    ]);
    assert.equal(lines.at(-1), '4 passed, 4 failed, 0 errored');
    assert.equal(server.resets - before, 8, 'one reset per test');
    // The default Content-Type is added when a step has a body and sets none.
    assert.ok(server.enqueueContentTypes.includes(OJS));
    assert.ok(!server.enqueueContentTypes.includes(undefined));
    // Failure explanations name the step, the path, the expectation and the actual value.
    const text = io.stdout.join('\n');
    assert.match(
      text,
      /step step-1: POST .*\/ojs\/v1\/jobs -> 400\n\s+header Content-Type: expected "application\/openjobspec\+json", got "application\/json"\n/,
    );
    assert.match(text, /step step-2: DELETE .* -> 202\n\s+status: expected 200, got 202/);
    assert.match(
      text,
      /step step-2: GET .* -> 200\n\s+\$\.job\.queue: expected "default", got <missing>\n/,
    );
    assert.match(
      text,
      /FAIL T-EXT-001 .*\n.* -> 204\n\s+\$or: response body is not a JSON object \[matcher \[\{"\$\.jobs":\{"\$size":0\}\},\{"\$empty":true\}\]\]/,
    );
  });

  it('writes the JSON report with verdicts and failure details', async () => {
    const io = capture();
    // Outside the suites dir, which is loaded again by later runs.
    const reportFile = `${dir}-report.json`;
    const code = await conformanceMain(
      [
        '-url',
        server.url,
        '-suites',
        dir,
        '-reset-url',
        `${server.url}/admin/reset`,
        '--format',
        'json',
        '--report',
        reportFile,
      ],
      io,
    );
    assert.equal(code, 1);
    const report = JSON.parse(io.stdout.join('\n')) as ConformanceReport;
    const fromFile = JSON.parse(await readFile(reportFile, 'utf8')) as ConformanceReport;
    await rm(reportFile);
    assert.deepEqual(fromFile.results, report.results);
    assert.equal(report.conformant, false);
    assert.equal(report.conformant_level, -1);
    assert.equal(report.results.total, 8);
    assert.deepEqual(
      report.failures.map((f) => f.test_id),
      ['T-0-002', 'T-1-001', 'T-1-002', 'T-EXT-001'],
    );
    assert.equal(report.results.by_level['0']!.all_pass, false);
    assert.equal(report.results.by_level['2']!.all_pass, true);
    assert.equal(report.results.by_level['99']!.failed, 1);
    const step = report.failures.find((f) => f.test_id === 'T-1-001')!.steps[1]!;
    assert.equal(step.response?.status, 202);
    assert.deepEqual(
      step.failures.map((f) => f.path),
      ['status'],
    );
  });

  it('level filters change the verdicts and exit code', async () => {
    const levels = async (...args: string[]) => {
      const io = capture();
      const code = await conformanceMain(
        [
          '--url',
          server.url,
          '--suites',
          dir,
          '--reset-url',
          `${server.url}/admin/reset`,
          '--format',
          'json',
          ...args,
        ],
        io,
      );
      const report = JSON.parse(io.stdout.join('\n')) as ConformanceReport;
      return {
        code,
        level: report.conformant_level,
        total: report.results.total,
        requested: report.requested_level,
      };
    };
    assert.deepEqual(await levels('--level', '2'), { code: 0, level: 2, total: 1, requested: 2 });
    assert.deepEqual(await levels('--category', 'runner'), {
      code: 0,
      level: 3,
      total: 3,
      requested: null,
    });
    assert.deepEqual(await levels('--level', 'ext'), {
      code: 1,
      level: -1,
      total: 1,
      requested: 99,
    });
    assert.deepEqual(await levels('--test', 'T-0-001'), {
      code: 0,
      level: 0,
      total: 1,
      requested: null,
    });
  });

  it('fails a step whose request exceeds --timeout', async () => {
    const slowDir = path.join(dir, '..', `${path.basename(dir)}-slow`);
    await mkdir(slowDir, { recursive: true });
    const test = {
      test_id: 'T-SLOW',
      level: 0,
      category: 'x',
      name: 'hang',
      steps: [{ id: 'step-1', action: 'GET', path: '/hang', assertions: { status: 200 } }],
    };
    await writeFile(path.join(slowDir, 'slow.json'), JSON.stringify(test));
    try {
      const io = capture();
      const code = await conformanceMain(
        ['--url', server.url, '--suites', slowDir, '--timeout', '0.2'],
        io,
      );
      assert.equal(code, 1);
      assert.match(
        io.stdout.join('\n'),
        /step step-1: GET .*\/hang\n\s+request: GET request failed: timed out after 200 ms\n/,
      );
    } finally {
      await rm(slowDir, { recursive: true, force: true });
    }
  });

  it('returns 2 for configuration errors', async () => {
    const run = async (...args: string[]) => {
      const io = capture();
      return { code: await conformanceMain(args, io), err: io.stderr.join('\n') };
    };
    // Without --suites the bundled suite runs (see seed-e2e.test.ts); option conflicts are errors.
    assert.equal((await run('--url', server.url, '--no-manifest', '--gate', 'declared')).code, 2);
    assert.match((await run('--suites', dir, '--test', 'NOPE')).err, /no tests matched/);
    assert.equal((await run('--suites', dir, '--test', 'NOPE')).code, 2);
    assert.equal((await run('--suites', path.join(dir, 'missing'))).code, 2);
    assert.equal((await run('--suites', dir, '--level', 'gold')).code, 2);
    assert.equal((await run('--suites', dir, '--bogus')).code, 2);
    assert.equal((await run('--suites', dir, '--format', 'xml')).code, 2);
    const broken = path.join(dir, 'zz-broken');
    await mkdir(broken);
    await writeFile(path.join(broken, 'bad.json'), '{"test_id": ');
    try {
      const result = await run('--suites', dir);
      assert.equal(result.code, 2);
      assert.match(result.err, /bad\.json: invalid JSON/);
    } finally {
      await rm(broken, { recursive: true, force: true });
    }
  });
});
