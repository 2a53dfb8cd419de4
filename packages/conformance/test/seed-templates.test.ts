import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  resolveString,
  resolveText,
  resolveValue,
  type TemplateContext,
  timeTemplate,
} from '../src/seed-templates.ts';
import type { Json } from '../src/types.ts';

const NOW = Date.parse('2026-01-02T03:04:05.000Z');
const ctx = (captures: Record<string, Json> = {}): TemplateContext => ({
  captures: new Map(Object.entries(captures)),
  nowMs: NOW,
});

describe('time templates', () => {
  it('computes {now±duration} as RFC 3339 UTC', () => {
    assert.equal(timeTemplate('now', NOW), '2026-01-02T03:04:05.000Z');
    assert.equal(timeTemplate('now+5s', NOW), '2026-01-02T03:04:10.000Z');
    assert.equal(timeTemplate('now-1h', NOW), '2026-01-02T02:04:05.000Z');
    assert.equal(timeTemplate('now+500ms', NOW), '2026-01-02T03:04:05.500Z');
    assert.equal(timeTemplate('now+PT1M', NOW), '2026-01-02T03:05:05.000Z');
    assert.equal(timeTemplate('now + 2d', NOW), '2026-01-04T03:04:05.000Z');
  });
  it('rejects malformed offsets', () => {
    assert.equal(timeTemplate('now+soon', NOW), null);
    assert.equal(timeTemplate('later', NOW), null);
    assert.deepEqual(resolveString('{now+x}', ctx()), { value: '{now+x}', unresolved: ['now+x'] });
  });
});

describe('capture placeholders', () => {
  it('a whole-string placeholder keeps the captured JSON type', () => {
    assert.deepEqual(resolveString('{n}', ctx({ n: 42 })), { value: 42, unresolved: [] });
    assert.deepEqual(resolveString('{o}', ctx({ o: { a: [1] } })), {
      value: { a: [1] },
      unresolved: [],
    });
  });
  it('placeholders inside text are spliced in as text', () => {
    assert.deepEqual(resolveString('/jobs/{id}/ack', ctx({ id: 'abc' })), {
      value: '/jobs/abc/ack',
      unresolved: [],
    });
    assert.equal(resolveString('n={n}', ctx({ n: 7 })).value, 'n=7');
    assert.equal(resolveString('at {now}', ctx()).value, 'at 2026-01-02T03:04:05.000Z');
  });
  it('reports unknown names and leaves them in place', () => {
    assert.deepEqual(resolveString('/jobs/{job_id}', ctx()), {
      value: '/jobs/{job_id}',
      unresolved: ['job_id'],
    });
    assert.deepEqual(resolveString('{job_id}', ctx()), {
      value: '{job_id}',
      unresolved: ['job_id'],
    });
  });
  it('ignores braces that are not placeholders', () => {
    assert.deepEqual(resolveString('{"a": 1}', ctx()), { value: '{"a": 1}', unresolved: [] });
    assert.deepEqual(resolveString('{1abc}', ctx()), { value: '{1abc}', unresolved: [] });
  });
  it('inserts a fresh lowercase UUIDv7 for {uuidv7}', () => {
    const a = resolveString('{uuidv7}', ctx()).value as string;
    const b = resolveString('{uuidv7}', ctx()).value as string;
    assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(a, b);
  });
});

describe('resolveValue and resolveText', () => {
  it('walks arrays, objects and keys', () => {
    const r = resolveValue(
      { args: ['{x}', 1, null], "jobs[?(@.id=='{id}')].state": '{state}', at: '{now+1s}' },
      ctx({ x: true, id: 'j1', state: 'done' }),
    );
    assert.deepEqual(r, {
      value: {
        args: [true, 1, null],
        "jobs[?(@.id=='j1')].state": 'done',
        at: '2026-01-02T03:04:06.000Z',
      },
      unresolved: [],
    });
    assert.deepEqual(resolveValue({ a: ['{missing}'] }, ctx()).unresolved, ['missing']);
  });
  it('encodes inserted values for URL paths', () => {
    assert.deepEqual(resolveText('/cron/{name}', ctx({ name: 'a b/c' }), encodeURIComponent), {
      value: '/cron/a%20b%2Fc',
      unresolved: [],
    });
    assert.equal(resolveText('/n/{n}', ctx({ n: 5 })).value, '/n/5');
  });
});
