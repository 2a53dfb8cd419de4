import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchSeed } from '../src/seed-matchers.ts';

const UUID7 = '0190abcd-ef01-7abc-8def-0123456789ab';
const pass = (matcher: unknown, actual: unknown) =>
  assert.equal(
    matchSeed(matcher as never, actual as never),
    null,
    `${JSON.stringify(matcher)} vs ${JSON.stringify(actual)}`,
  );
const fail = (matcher: unknown, actual: unknown, re?: RegExp) => {
  const reason = matchSeed(matcher as never, actual as never);
  assert.notEqual(
    reason,
    null,
    `${JSON.stringify(matcher)} should reject ${JSON.stringify(actual)}`,
  );
  if (re) assert.match(reason!, re);
};

describe('seed §5.7 matchers', () => {
  it('literal values match exactly', () => {
    pass('test.echo', 'test.echo');
    fail('test.echo', 'test.echo2', /expected "test.echo", got "test.echo2"/);
    pass(201, 201);
    fail(201, '201');
    pass(false, false);
    fail(false, null);
    pass(null, null);
  });
  it('string:nonempty / uuid / uuidv7 / datetime', () => {
    pass('string:nonempty', 'x');
    fail('string:nonempty', '', /non-empty string/);
    fail('string:nonempty', 5);
    pass('string:uuid', '6ba7b810-9dad-11d1-80b4-00c04fd430c8');
    fail('string:uuid', 'not-a-uuid', /UUID/);
    pass('string:uuidv7', UUID7);
    fail('string:uuidv7', '6ba7b810-9dad-41d1-80b4-00c04fd430c8', /UUIDv7/);
    fail('string:uuidv7', UUID7.toUpperCase());
    pass('string:datetime', '2026-01-02T03:04:05.123Z');
    pass('string:datetime', '2026-01-02T03:04:05+02:00');
    fail('string:datetime', '2026-01-02 03:04:05', /RFC 3339/);
  });
  it('number:positive and number:range(a,b)', () => {
    pass('number:positive', 1);
    fail('number:positive', 0, /positive/);
    fail('number:positive', '1');
    pass('number:range(1,10)', 1);
    pass('number:range(1,10)', 10);
    fail('number:range(1,10)', 11, /\[1, 10\]/);
  });
  it('"any" requires the field to exist (null included)', () => {
    pass('any', 'x');
    pass('any', null);
    fail('any', undefined, /expected a value/);
  });
  it('"absent" accepts a missing or null field only', () => {
    pass('absent', undefined);
    pass('absent', null);
    fail('absent', 0, /expected no value/);
    fail('absent', '', /expected no value/);
  });
  it('array:length(n) and array:nonempty', () => {
    pass('array:length(2)', [1, 2]);
    fail('array:length(2)', [1], /length 2/);
    fail('array:length(0)', {});
    pass('array:nonempty', [0]);
    fail('array:nonempty', [], /non-empty array/);
  });
  it('literal arrays are exact and may nest matchers', () => {
    pass(['hello', 'world'], ['hello', 'world']);
    fail(['hello', 'world'], ['world', 'hello'], /\[0\]/);
    fail(['hello'], ['hello', 'x'], /expected 1 elements, got 2/);
    pass(['string:uuidv7', 'any'], [UUID7, null]);
  });
  it('literal objects are exact: same keys, absent keys may be missing', () => {
    pass({ ok: true }, { ok: true });
    fail({ ok: true }, { ok: true, extra: 1 }, /unexpected key\(s\) extra/);
    fail({ ok: true, n: 1 }, { ok: true }, /\.n: expected 1/);
    pass({ ok: true, gone: 'absent' }, { ok: true });
    fail({ ok: true }, [true], /expected an object/);
  });
  it('$in / $or alternatives use seed semantics; other operators delegate', () => {
    pass({ $in: ['invalid_state_transition', 'conflict'] }, 'conflict');
    fail({ $in: ['a', 'b'] }, 'c', /one of \["a","b"\]/);
    pass({ $or: [{ a: 1 }, 'absent'] }, undefined);
    pass({ $match: '^job\\.' }, 'job.x');
    fail({ $match: '^job\\.' }, 'x.job');
    pass({ $size: 2 }, [1, 2]);
  });
  it('keeps the official extras', () => {
    pass('string:contains:abc', 'xxabcxx');
    pass('~1000', 1400);
    fail('~1000', 1600);
    pass('number:non_negative', 0);
  });
});
