import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkBody, checkHeaders, checkStatus } from '../src/assertions.ts';
import type { JsonObject } from '../src/types.ts';

const noBodies = new Map<string, JsonObject>();

describe('checkStatus', () => {
  it('accepts an exact integer', () => {
    assert.deepEqual(checkStatus({ status: 201 }, 201), []);
    assert.equal(checkStatus({ status: 201 }, 200).length, 1);
  });
  it('accepts "one_of:a,b"', () => {
    assert.deepEqual(checkStatus({ status: 'one_of:400,422' }, 422), []);
    assert.equal(checkStatus({ status: 'one_of:400,422' }, 404).length, 1);
  });
  it('accepts "number:range(a,b)"', () => {
    assert.deepEqual(checkStatus({ status: 'number:range(400,422)' }, 409), []);
    assert.equal(checkStatus({ status: 'number:range(400,422)' }, 500).length, 1);
  });
  it('accepts {"$in": [...]}', () => {
    assert.deepEqual(checkStatus({ status: { $in: [200, 409] } }, 409), []);
    assert.equal(checkStatus({ status: { $in: [200, 409] } }, 204).length, 1);
  });
  it('accepts status_in and ignores status_one_of', () => {
    assert.deepEqual(checkStatus({ status_in: [200, 204] }, 204), []);
    assert.equal(checkStatus({ status_in: [200, 204] }, 500).length, 1);
    assert.deepEqual(checkStatus({ status_one_of: [200] } as never, 500), []);
  });
  it('explains the failure', () => {
    const [f] = checkStatus({ status: 201 }, 500);
    assert.equal(f!.path, 'status');
    assert.equal(f!.expected, '201');
    assert.equal(f!.actual, '500');
  });
});

describe('checkHeaders', () => {
  const headers = { 'content-type': 'application/openjobspec+json', 'OJS-Version': '1.0' };
  it('matches names case-insensitively with exact string equality', () => {
    assert.deepEqual(checkHeaders({ 'Content-Type': 'application/openjobspec+json' }, headers), []);
    assert.deepEqual(checkHeaders({ 'ojs-version': '1.0' }, headers), []);
    const charset = { 'Content-Type': 'application/openjobspec+json; charset=utf-8' };
    assert.equal(
      checkHeaders({ 'Content-Type': 'application/openjobspec+json' }, charset).length,
      1,
    );
    assert.equal(checkHeaders({ 'X-Missing': 'x' }, headers).length, 1);
  });
  it('supports {"$match"} and {"$eq"}', () => {
    assert.deepEqual(checkHeaders({ 'OJS-Version': { $match: '^1\\.' } }, headers), []);
    assert.equal(checkHeaders({ 'OJS-Version': { $match: '^2\\.' } }, headers).length, 1);
    assert.deepEqual(checkHeaders({ 'OJS-Version': { $eq: '1.0' } }, headers), []);
    assert.equal(checkHeaders({ 'OJS-Version': { $eq: '1' } }, headers).length, 1);
  });
  it('silently skips forms the reference runner cannot parse', () => {
    assert.deepEqual(checkHeaders({ 'X-Missing': { $exists: true } }, headers), []);
  });
});

describe('checkBody', () => {
  const body: JsonObject = { job: { id: 'abc', state: 'available' }, jobs: [] };
  const bodies = new Map<string, JsonObject>([['step-1', { job: { id: 'abc' } }]]);

  it('evaluates each path and reports path, expected and actual', () => {
    assert.deepEqual(checkBody({ '$.job.state': 'available', '$.jobs': [] }, body, noBodies), []);
    const failures = checkBody(
      { '$.job.state': 'active', '$.job.id': 'string:nonempty' },
      body,
      noBodies,
    );
    assert.equal(failures.length, 1);
    assert.equal(failures[0]!.path, '$.job.state');
    assert.equal(failures[0]!.expected, '"active"');
    assert.equal(failures[0]!.actual, '"available"');
  });
  it('resolves templates in path keys and matcher values', () => {
    const expected = {
      '$.job.id': '{{steps.step-1.response.body.job.id}}',
      "$.jobs[?(@.id=='{{steps.step-1.response.body.job.id}}')]": 'absent',
    };
    assert.deepEqual(checkBody(expected, body, bodies), []);
  });
  it('skips path assertions when the body is not a JSON object', () => {
    assert.deepEqual(checkBody({ '$.job.id': 'exists' }, undefined, noBodies), []);
  });
  it('top-level $or passes if any alternative fully matches', () => {
    const or: JsonObject = {
      $or: [{ '$.jobs': { $size: 1 } }, { '$.job.state': 'available', '$.job.id': 'abc' }],
    };
    assert.deepEqual(checkBody(or, body, noBodies), []);
  });
  it('top-level $or fails when no alternative matches, or without an object body', () => {
    const or: JsonObject = { $or: [{ '$.jobs': { $size: 0 } }, { $empty: true }] };
    assert.deepEqual(checkBody(or, { jobs: [] }, noBodies), []);
    assert.equal(checkBody(or, {}, noBodies).length, 1);
    assert.equal(checkBody(or, undefined, noBodies).length, 1);
  });
});
