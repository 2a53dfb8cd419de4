import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolvePath } from '../src/jsonpath.ts';
import type { Json } from '../src/types.ts';

const body: Json = {
  job: { id: 'j1', meta: { trace_id: 't1' }, error: null, args: [{ message: 'hi' }, 2] },
  jobs: [
    { id: 'a', state: 'active', attempt: 1 },
    { id: 'b', state: 'completed', attempt: 2 },
    { id: 'c', state: 'completed' },
  ],
  matrix: [
    [1, 2],
    [3, 4],
  ],
  empty: [],
  crons: [
    { name: 'alpha', tags: ['x', 'y'] },
    { name: 'beta', tags: ['z'] },
  ],
  'dotted.key': 1,
};

function value(path: string): Json {
  const r = resolvePath(body, path);
  assert.equal(r.kind, 'value', `${path}: ${JSON.stringify(r)}`);
  return (r as { value: Json }).value;
}

function kind(path: string): string {
  return resolvePath(body, path).kind;
}

describe('resolvePath', () => {
  it('follows dotted keys', () => {
    assert.equal(value('$.job.id'), 'j1');
    assert.equal(value('$.job.meta.trace_id'), 't1');
    assert.equal(value('$.job.error'), null);
    assert.deepEqual(value('$'), body);
  });
  it('indexes arrays, including chained indexes', () => {
    assert.equal(value('$.job.args[0].message'), 'hi');
    assert.equal(value('$.job.args[1]'), 2);
    assert.equal(value('$.jobs[1].id'), 'b');
    assert.equal(value('$.matrix[1][0]'), 3);
  });
  it('collects values with [*]', () => {
    assert.deepEqual(value('$.jobs[*].id'), ['a', 'b', 'c']);
    assert.deepEqual(value('$.jobs[*].attempt'), [1, 2]);
    assert.deepEqual(value('$.empty[*]'), []);
    assert.deepEqual(value('$.crons[*].tags[*]'), ['x', 'y', 'z']);
  });
  it('filters with [?(@.key==value)], first match only', () => {
    assert.equal(value("$.jobs[?(@.state=='completed')].id"), 'b');
    assert.equal(value("$.jobs[?(@.attempt=='2')].id"), 'b');
    assert.equal(value('$.jobs[?(@.id=="c")].state'), 'completed');
    assert.equal(kind("$.jobs[?(@.id=='zzz')]"), 'missing');
  });
  it('keeps dots inside filters in one segment', () => {
    const r = resolvePath(body, "$.jobs[?(@.id=='{{steps.step-1.response.body.job.id}}')]");
    assert.equal(r.kind, 'missing');
  });
  it('returns "missing" for missing keys at any depth', () => {
    assert.equal(kind('$.nope'), 'missing');
    assert.equal(kind('$.nope.deeper.still'), 'missing');
    assert.equal(kind('$.job.meta.nope'), 'missing');
    // Dots always split, so a key containing a dot is unreachable.
    assert.equal(kind('$.dotted.key'), 'missing');
  });
  it('reports resolution errors for bad indexing and descending into null', () => {
    assert.equal(kind('$.nope[0]'), 'error');
    assert.equal(kind('$.nope[*]'), 'error');
    assert.equal(kind('$.jobs[9]'), 'error');
    assert.equal(kind('$.job.id[0]'), 'error');
    assert.equal(kind('$.job.error.message'), 'error');
    assert.equal(kind('$.job.id.length'), 'error');
    assert.equal(kind('$.jobs[abc]'), 'error');
    assert.equal(kind('$.jobs[0'), 'error');
  });
});
