import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  BUNDLED_SUITES,
  loadSuites,
  loadSuitesWithInfo,
  SuiteLoadError,
  selectTests,
} from '../src/loader.ts';
import { detectFormat, parseSeedTest } from '../src/seed-loader.ts';
import { type AnyTestCase, isSeedTest, type SeedTestCase } from '../src/types.ts';

const OFFICIAL_SUITES = '/work/shared/conformance/suites';

const base = (extra: Record<string, unknown> = {}) => ({
  test_id: 'L0-900',
  level: 0,
  name: 'x',
  description: 'd',
  steps: [{ action: 'GET /ojs/v1/health', expect: { status: 200 } }],
  ...extra,
});

describe('detectFormat', () => {
  it('recognises the seed markers', () => {
    assert.equal(detectFormat(base()), 'seed');
    assert.equal(detectFormat({ steps: [{ action: 'WAIT', wait: 'PT1S' }] }), 'seed');
    assert.equal(detectFormat({ assertions: [] }), 'seed');
    assert.equal(detectFormat({ input: { type: 'a', args: [] } }), 'seed');
    assert.equal(detectFormat({ setup: { handler: 'test.echo' } }), 'seed');
    assert.equal(detectFormat({ setup: { handlers: ['test.echo'] } }), 'seed');
  });
  it('defaults to the official format and honours an explicit "format"', () => {
    assert.equal(
      detectFormat({ steps: [{ action: 'POST', path: '/x', assertions: {} }] }),
      'official',
    );
    assert.equal(detectFormat({ steps: [{ action: 'push', expect: {} }] }), 'official');
    assert.equal(detectFormat({ setup: { steps: [] } }), 'official');
    assert.equal(detectFormat(base({ format: 'official' })), 'official');
    assert.equal(detectFormat({ format: 'seed' }), 'seed');
    assert.equal(detectFormat([]), 'official');
  });
  it('classifies every shared official suite file as official', {
    skip: !existsSync(OFFICIAL_SUITES),
  }, async () => {
    const tests = await loadSuites([OFFICIAL_SUITES]);
    assert.ok(tests.length > 100);
    assert.deepEqual(
      tests.filter(isSeedTest).map((t) => t.file),
      [],
    );
  });
});

describe('parseSeedTest', () => {
  it('parses steps, captures, waits and polls', () => {
    const test = parseSeedTest(
      base({
        tags: ['core', 'enqueue'],
        requires: ['L0-001'],
        steps: [
          {
            action: 'POST /ojs/v1/jobs',
            headers: { 'X-A': 'b' },
            body: { type: 't', args: [] },
            expect: { status: 201, body: { 'job.id': 'string:uuidv7' } },
            capture: { job_id: 'body.job.id', loc: 'headers.Location', code: 'status' },
          },
          { wait: 'PT0.5S', action: 'get /ojs/v1/jobs/{job_id}', expect: {}, poll: 'PT2S' },
          { id: 'pause', action: 'WAIT', wait: 'PT1S' },
        ],
      }),
      'f.json',
    );
    assert.equal(test.format, 'seed');
    assert.equal(test.category, 'core');
    assert.deepEqual(test.requires, ['L0-001']);
    const [s1, s2, s3] = test.steps;
    assert.equal(s1!.method, 'POST');
    assert.equal(s1!.path, '/ojs/v1/jobs');
    assert.equal(s1!.id, 'step-1');
    assert.deepEqual(s1!.capture, {
      job_id: 'body.job.id',
      loc: 'headers.Location',
      code: 'status',
    });
    assert.equal(s2!.method, 'GET');
    assert.equal(s2!.wait_ms, 500);
    assert.equal(s2!.poll_ms, 2000);
    assert.equal(s3!.method, 'WAIT');
    assert.equal(s3!.id, 'pause');
    assert.equal(s3!.wait_ms, 1000);
  });
  it('parses setup, input and behavioural assertions', () => {
    const test = parseSeedTest(
      base({
        steps: undefined,
        setup: { handler: 'test.slow', handlers: ['test.echo'], duration: 'PT2S', queues: ['q'] },
        input: { type: 'test.slow', args: [] },
        assertions: [
          { attempt: 1, state_after: 'retryable', active_for: '~2s' },
          { attempt: 3, delay_after_failure: '~1s±20%', state_after: 'completed', result: 'any' },
        ],
        timeout: 'PT30S',
      }),
      'f.json',
    );
    assert.deepEqual(test.setup, {
      handlers: ['test.slow', 'test.echo'],
      queues: ['q'],
      config: { duration: 'PT2S' },
    });
    assert.equal(test.timeout_ms, 30_000);
    assert.equal(test.assertions[0]!.active_for!.max, 3000);
    assert.equal(test.assertions[1]!.delay_after_failure!.min, 800);
    assert.equal(test.assertions[1]!.result, 'any');
  });
  const rejects = (raw: Record<string, unknown>, re: RegExp) =>
    assert.throws(
      () => parseSeedTest(raw, 'bad.json'),
      (err: Error) => {
        assert.ok(err instanceof SuiteLoadError);
        assert.match(err.message, re);
        assert.match(err.message, /^bad\.json/);
        return true;
      },
    );
  it('rejects malformed files with a precise message', () => {
    rejects(base({ test_id: undefined }), /"test_id" is required/);
    rejects(base({ level: 7 }), /"level" must be an integer 0-4/);
    rejects(base({ expct: {} }), /unknown test key "expct"/);
    rejects(base({ steps: [{ action: 'POST', expect: {} }] }), /"METHOD \/path"/);
    rejects(base({ steps: [{ action: 'GET /x' }] }), /"expect" is required/);
    rejects(
      base({ steps: [{ action: 'GET /x', expect: { staus: 200 } }] }),
      /unknown expect key "staus"/,
    );
    rejects(
      base({ steps: [{ action: 'GET /x', expect: {}, wait: '5 seconds' }] }),
      /ISO 8601 duration/,
    );
    rejects(
      base({ steps: [{ action: 'GET /x', expect: {}, capture: { id: 'job.id' } }] }),
      /capture "id"/,
    );
    rejects(base({ setup: { handler: 'test.unknown' } }), /unknown handler "test.unknown"/);
    rejects(base({ assertions: [{ attempt: 1 }] }), /need an "input" job/);
    rejects(
      base({ input: { type: 'a', args: [] }, assertions: [{ attempt: 1 }] }),
      /need "setup.handler"/,
    );
    const behavioural = (assertions: unknown[]) =>
      base({ setup: { handler: 'test.echo' }, input: { type: 'a', args: [] }, assertions });
    rejects(behavioural([{ attempt: 0 }]), /positive integer/);
    rejects(behavioural([{ attempt: 2 }, { attempt: 1 }]), /increasing attempt order/);
    rejects(behavioural([{ attempt: 1, state_after: 'done' }]), /"state_after" must be one of/);
    rejects(behavioural([{ attempt: 1, delay_after_failure: '~1s' }]), /needs a previous attempt/);
    rejects(behavioural([{ attempt: 2, delay_after_failure: '1s' }]), /must be approximate/);
    rejects(behavioural([{ attempt: 1, colour: 'red' }]), /unknown assertion key "colour"/);
    rejects(base({ deprecated: true }), /deprecated_reason/);
    rejects(base({ steps: [] }), /needs "steps" or "assertions"/);
  });
});

describe('bundled suite', () => {
  it('loads, carries its manifest and matches its declared test count', async () => {
    const { tests, versions, declaredCounts } = await loadSuitesWithInfo([BUNDLED_SUITES]);
    assert.deepEqual(versions, ['1.0.0']);
    assert.equal([...declaredCounts.values()][0], tests.length);
    assert.ok(tests.every(isSeedTest));
    const ids = tests.map((t) => t.test_id);
    for (const id of [
      'L0-001',
      'L0-002',
      'L0-003',
      'L0-004',
      'L1-001',
      'L1-005',
      'L1-006',
      'L1-007',
    ]) {
      assert.ok(ids.includes(id), id);
    }
    for (const id of ['L2-001', 'L2-002', 'L3-001', 'L3-002', 'L4-001', 'L4-002'])
      assert.ok(ids.includes(id), id);
    assert.equal(new Set(ids).size, ids.length, 'test ids are unique');
  });
  it('files are stored where their level says', async () => {
    for (const test of (await loadSuites([BUNDLED_SUITES])) as SeedTestCase[]) {
      assert.equal(path.basename(path.dirname(test.file)), `level-${test.level}`);
      assert.equal(path.basename(test.file), `${test.test_id}.json`);
      const raw = JSON.parse(await readFile(test.file, 'utf8'));
      assert.ok(raw.name && raw.description, `${test.test_id} has a name and a description`);
    }
  });
});

describe('selection', () => {
  let dir: string;
  let tests: AnyTestCase[];
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ojs-select-'));
    const seed = (id: string, level: number, extra: Record<string, unknown> = {}) =>
      JSON.stringify(base({ test_id: id, level, tags: ['t'], ...extra }));
    const official = (id: string, level: number) =>
      JSON.stringify({ test_id: id, level, category: 'c', steps: [] });
    await mkdir(path.join(dir, 'handlers'));
    await writeFile(
      path.join(dir, 'manifest.json'),
      JSON.stringify({ version: '2.1.0', test_count: 5 }),
    );
    await writeFile(path.join(dir, 'handlers', 'handlers.json'), JSON.stringify({ handlers: [] }));
    await writeFile(path.join(dir, 's0.json'), seed('S0-1', 0));
    await writeFile(path.join(dir, 's1.json'), seed('S1-1', 1, { requires: ['S0-1'] }));
    await writeFile(path.join(dir, 's2.json'), seed('S2-1', 2, { requires: ['S1-1'] }));
    await writeFile(path.join(dir, 'o1.json'), official('O1-1', 1));
    await writeFile(path.join(dir, 'o2.json'), official('O2-1', 2));
    tests = await loadSuites([dir]);
  });
  after(() => rm(dir, { recursive: true, force: true }));
  const ids = (filter: Parameters<typeof selectTests>[1]) =>
    selectTests(tests, filter).map((t) => t.test_id);

  it('skips suite metadata files', async () => {
    assert.equal(tests.length, 5);
    assert.deepEqual((await loadSuitesWithInfo([dir])).versions, ['2.1.0']);
  });
  it('--level is exact for official files and cumulative for seed files', () => {
    assert.deepEqual(ids({ level: 1 }), ['O1-1', 'S0-1', 'S1-1']);
    assert.deepEqual(ids({ level: 2 }), ['O2-1', 'S0-1', 'S1-1', 'S2-1']);
  });
  it('--max-level is cumulative for both', () => {
    assert.deepEqual(ids({ maxLevel: 1 }), ['O1-1', 'S0-1', 'S1-1']);
  });
  it('--test pulls in required tests, dependencies first', () => {
    assert.deepEqual(ids({ testId: 'S2-1' }), ['S0-1', 'S1-1', 'S2-1']);
    assert.deepEqual(ids({ category: 't', testId: 'S1-1' }), ['S0-1', 'S1-1']);
  });
  it('a requires cycle is a load error', () => {
    const a = parseSeedTest(base({ test_id: 'A', requires: ['B'] }), 'a.json');
    const b = parseSeedTest(base({ test_id: 'B', requires: ['A'] }), 'b.json');
    assert.throws(() => selectTests([a, b], {}), /requires cycle: A -> B -> A/);
  });
});
