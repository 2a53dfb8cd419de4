/**
 * The bundled seed-format suite against the real server (every level on its own server, in
 * parallel), and the whole CLI pipeline: manifest check, report, JUnit, badge, gates.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startServer } from '@ojs/server';
import { type CliIo, conformanceMain } from '../src/cli.ts';
import { BUNDLED_SUITES } from '../src/loader.ts';
import type { ConformanceReport } from '../src/report.ts';

function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (t) => stdout.push(t), err: (t) => stderr.push(t) };
}

async function withServer<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const server = await startServer({
    port: 0,
    store: ':memory:',
    testMode: true,
    logLevel: 'silent',
  });
  try {
    return await fn(server.url);
  } finally {
    await server.close();
  }
}

const seed = (...parts: string[]) => path.join(BUNDLED_SUITES, 'seed', ...parts);

describe('bundled seed suite against the real server', { concurrency: true }, () => {
  for (const level of [0, 1, 2, 3, 4]) {
    it(`level ${level}: every test passes`, async () => {
      const io = capture();
      const { code, report } = await withServer(async (url) => {
        const code = await conformanceMain(
          [
            '--url',
            url,
            '--suites',
            seed(`level-${level}`),
            '--reset-url',
            `${url}/ojs/v1/admin/reset`,
            '--format',
            'json',
          ],
          io,
        );
        return { code, report: JSON.parse(io.stdout.join('\n')) as ConformanceReport };
      });
      const failures = report.failures.map((f) => `${f.test_id}: ${f.reason}`);
      assert.deepEqual(failures, []);
      assert.equal(code, 0);
      assert.equal(report.results.skipped, 0);
      assert.equal(report.results[`level_${level}`]!.passed, report.results.total);
      assert.ok(report.results.total >= 5);
      assert.equal(report.test_suite_version, '1.0.0');
    });
  }
});

describe('CLI pipeline against the real server', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let dir: string;
  before(async () => {
    server = await startServer({ port: 0, store: ':memory:', testMode: true, logLevel: 'silent' });
    dir = await mkdtemp(path.join(tmpdir(), 'ojs-seed-e2e-'));
  });
  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  /** One quick test per level, so the run covers levels 0-4. */
  const sample = [
    seed('level-0', 'L0-001.json'),
    seed('level-1', 'L1-101.json'),
    seed('level-2', 'L2-101.json'),
    seed('level-3', 'L3-101.json'),
    seed('level-4', 'L4-101.json'),
  ];

  it('writes the report, JUnit and the badge; the manifest matches the measured level', async () => {
    const io = capture();
    const out = (name: string) => path.join(dir, name);
    const code = await conformanceMain(
      [
        '--url',
        server.url,
        '--suites',
        ...sample,
        '--report',
        out('report.json'),
        '--junit',
        out('junit.xml'),
        '--badge',
        out('badge.svg'),
      ],
      io,
    );
    const text = io.stdout.join('\n');
    assert.equal(code, 0, text);
    const report = JSON.parse(await readFile(out('report.json'), 'utf8')) as ConformanceReport;
    assert.equal(report.conformant, true);
    assert.equal(report.conformant_level, 4);
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((l) => report.results[`level_${l}`]!.passed),
      [1, 1, 1, 1, 1],
    );
    assert.equal(report.manifest!.valid, true);
    assert.equal(report.manifest!.comparison!.verdict, 'consistent');
    assert.equal(report.badge!.text, 'OJS Conformant Level 4 (Runtime)');
    assert.match(
      await readFile(out('badge.svg'), 'utf8'),
      /aria-label="OJS Conformant Level 4 \(Runtime\)"/,
    );
    assert.deepEqual(JSON.parse(await readFile(out('badge.json'), 'utf8')), {
      schemaVersion: 1,
      label: 'OJS',
      message: 'Level 4 Runtime',
      color: 'blue',
    });
    assert.match(
      await readFile(out('badge.md'), 'utf8'),
      /^\[!\[OJS Conformant Level 4 \(Runtime\)\]\(https:\/\/img\.shields\.io\/badge\/OJS-Level%204%20Runtime-blue\)\]\(https:\/\/openjobspec\.org\/conformance\)\n<!-- OJS conformance test suite 1\.0\.0, run /,
    );
    assert.match(
      await readFile(out('junit.xml'), 'utf8'),
      /<testsuites name="OJS conformance http:\/\/127\.0\.0\.1:\d+" tests="5" failures="0" errors="0" skipped="0"/,
    );
    assert.match(text, /^manifest: valid \(ojs-ts 0\.1\.0\), declares level 4, tier full$/m);
    assert.match(
      text,
      /^manifest level check: consistent - declares level 4 and passes every test of levels 0-4$/m,
    );
    assert.match(
      text,
      /^badge: OJS Conformant Level 4 \(Runtime\) \(the manifest declares the Full tier; this harness verifies the Runtime tier only\) -> /m,
    );
    assert.equal(io.stdout.at(-1), '5 passed, 0 failed, 0 errored');
  });

  it('--gate declared passes only when every declared level was run and passed', async () => {
    const io = capture();
    const code = await conformanceMain(
      ['--url', server.url, '--suites', sample[0]!, '--gate', 'declared'],
      io,
    );
    // Levels 1-4 were not run: unverified, which the gate does not treat as a failure.
    assert.equal(code, 0);
    assert.match(
      io.stdout.join('\n'),
      /gate \(declared level\): pass - declares level 4; level 1, 2, 3, 4 was not tested/,
    );
  });

  it('runs the bundled suite when no --suites is given (with required tests first)', async () => {
    const io = capture();
    const code = await conformanceMain(
      ['--url', server.url, '--test', 'L0-003', '--format', 'json', '--no-manifest'],
      io,
    );
    const report = JSON.parse(io.stdout.join('\n')) as ConformanceReport;
    assert.equal(code, 0);
    assert.equal(report.manifest, undefined);
    assert.equal(report.results.total, 2, 'L0-003 requires L0-001');
  });
});
