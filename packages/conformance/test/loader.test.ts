import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  loadSuites,
  parseLevel,
  parseTestCase,
  SuiteLoadError,
  selectTests,
} from '../src/loader.ts';
import { groupSteps } from '../src/runner.ts';

function file(id: string, level: unknown, category = 'ops') {
  return JSON.stringify({ test_id: id, level, category, name: id.toLowerCase(), steps: [] });
}

describe('parseLevel', () => {
  it('maps numbers, numeric strings and ext', () => {
    assert.equal(parseLevel(2), 2);
    assert.equal(parseLevel('3'), 3);
    assert.equal(parseLevel('ext'), 99);
    assert.equal(parseLevel('extension'), 99);
    assert.throws(() => parseLevel('gold'), SuiteLoadError);
  });
});

describe('parseTestCase', () => {
  it('keeps honoured step fields and normalises parallel_with', () => {
    const test = parseTestCase(
      {
        test_id: 'X',
        level: 0,
        steps: [
          {
            id: 's1',
            action: 'POST',
            path: '/p',
            body: { a: 1 },
            delay_ms: 5,
            parallel_with: 's2',
            intent: 'x',
          },
          { id: 's2', action: 'GET', body: null, assertions: { status: 200, body: { '$.a': 1 } } },
        ],
      },
      'x.json',
    );
    assert.deepEqual(test.steps[0]!.parallel_with, ['s2']);
    assert.deepEqual(test.steps[0]!.body, { a: 1 });
    assert.equal(test.steps[0]!.delay_ms, 5);
    assert.equal('body' in test.steps[1]!, false);
    assert.deepEqual(test.steps[1]!.assertions.body, { '$.a': 1 });
  });
  it('rejects fields of the wrong type', () => {
    assert.throws(() => parseTestCase({ test_id: 'X', steps: {} }, 'x.json'), SuiteLoadError);
    assert.throws(
      () => parseTestCase({ test_id: 'X', steps: [{ delay_ms: 'soon' }] }, 'x.json'),
      SuiteLoadError,
    );
    assert.throws(
      () => parseTestCase({ test_id: 'X', steps: [{ headers: { A: 1 } }] }, 'x.json'),
      SuiteLoadError,
    );
  });
});

describe('groupSteps', () => {
  it('groups steps linked by parallel_with in either direction', () => {
    const test = parseTestCase(
      {
        steps: [
          { id: 'a' },
          { id: 'b', parallel_with: 'c' },
          { id: 'c' },
          { id: 'd', parallel_with: ['b'] },
          { id: 'e' },
        ],
      },
      'x.json',
    );
    assert.deepEqual(
      groupSteps(test.steps).map((g) => g.map((s) => s.id)),
      [['a'], ['b', 'c', 'd'], ['e']],
    );
  });
});

describe('loadSuites', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ojs-loader-'));
    await mkdir(path.join(dir, 'b', 'deep'), { recursive: true });
    await mkdir(path.join(dir, 'outside'));
    await writeFile(path.join(dir, 'b', 'deep', 'two.json'), file('L1-B-001', 1, 'retry'));
    await writeFile(path.join(dir, 'b', 'one.json'), file('L0-A-002', 0));
    await writeFile(path.join(dir, 'b', 'dup.json'), file('L0-A-002', '0'));
    await writeFile(path.join(dir, 'b', 'ext.json'), file('EXT-1', 'ext', 'ext-x'));
    await writeFile(path.join(dir, 'b', 'notes.txt'), 'ignored');
    await writeFile(path.join(dir, 'outside', 'hidden.json'), file('L0-Z-999', 0));
    await symlink(path.join(dir, 'outside'), path.join(dir, 'b', 'linked'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('walks recursively, skips symlinked directories and sorts by test_id', async () => {
    const tests = await loadSuites([path.join(dir, 'b')]);
    assert.deepEqual(
      tests.map((t) => t.test_id),
      ['EXT-1', 'L0-A-002', 'L0-A-002', 'L1-B-001'],
    );
    assert.equal(tests[0]!.level, 99);
  });
  it('filters by exact level, category and test id', async () => {
    const tests = await loadSuites([path.join(dir, 'b')]);
    assert.equal(selectTests(tests, { level: 0 }).length, 2);
    assert.equal(selectTests(tests, { level: 99 }).length, 1);
    assert.equal(selectTests(tests, { category: 'retry' }).length, 1);
    assert.equal(selectTests(tests, { testId: 'L0-A-002' }).length, 2);
    assert.equal(selectTests(tests, { testId: 'L0-A-002', level: 1 }).length, 0);
  });
  it('fails on invalid JSON and on missing paths', async () => {
    const bad = path.join(dir, 'bad');
    await mkdir(bad, { recursive: true });
    await writeFile(path.join(bad, 'broken.json'), '{ nope');
    await assert.rejects(loadSuites([bad]), SuiteLoadError);
    await assert.rejects(loadSuites([path.join(dir, 'does-not-exist')]), SuiteLoadError);
  });
});
