import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchResolution, matchValue } from '../src/matchers.ts';
import type { Json } from '../src/types.ts';

const MISSING = undefined;
const UUID_V7 = '019461a8-1a2b-7c3d-8e4f-5a6b7c8d9e0f';

function passes(matcher: Json, actual: Json | undefined): void {
  const reason = matchValue(matcher, actual);
  assert.equal(
    reason,
    null,
    `${JSON.stringify(matcher)} should match ${JSON.stringify(actual)}: ${reason}`,
  );
}

function fails(matcher: Json, actual: Json | undefined): void {
  const reason = matchValue(matcher, actual);
  assert.equal(
    typeof reason,
    'string',
    `${JSON.stringify(matcher)} should not match ${JSON.stringify(actual)}`,
  );
}

describe('literal matchers', () => {
  it('strings compare exactly and require a string', () => {
    passes('available', 'available');
    fails('available', 'active');
    fails('1', 1);
    fails('available', MISSING);
  });
  it('numbers compare exactly and require a number', () => {
    passes(0, 0);
    passes(2.5, 2.5);
    fails(1, 2);
    fails(1, '1');
    fails(0, MISSING);
  });
  it('booleans compare exactly', () => {
    passes(false, false);
    fails(false, true);
    fails(false, MISSING);
    fails(true, 'true');
  });
  it('null accepts null or missing only', () => {
    passes(null, null);
    passes(null, MISSING);
    fails(null, 0);
    fails(null, '');
  });
});

describe('keyword matchers', () => {
  it('any passes for everything, even missing', () => {
    passes('any', MISSING);
    passes('any', null);
    passes('any', { a: 1 });
  });
  it('exists fails on missing or null', () => {
    passes('exists', 0);
    passes('exists', '');
    fails('exists', null);
    fails('exists', MISSING);
  });
  it('absent passes on missing or null', () => {
    passes('absent', MISSING);
    passes('absent', null);
    fails('absent', 'x');
    fails('absent', false);
  });
  it('string:nonempty / string:non_empty', () => {
    for (const m of ['string:nonempty', 'string:non_empty']) {
      passes(m, 'x');
      fails(m, '');
      fails(m, 5);
      fails(m, MISSING);
    }
  });
  it('string:uuid and string:uuidv7', () => {
    passes('string:uuid', '123e4567-e89b-12d3-a456-426614174000');
    fails('string:uuid', 'not-a-uuid');
    passes('string:uuidv7', UUID_V7);
    fails('string:uuidv7', UUID_V7.toUpperCase());
    fails('string:uuidv7', '123e4567-e89b-12d3-a456-426614174000'); // version 1
    fails('string:uuidv7', '019461a8-1a2b-7c3d-cf4f-5a6b7c8d9e0f'); // variant c
  });
  it('string:datetime', () => {
    passes('string:datetime', '2026-01-02T03:04:05Z');
    passes('string:datetime', '2026-01-02T03:04:05.123456Z');
    passes('string:datetime', '2026-01-02T03:04:05+09:00');
    passes('string:datetime', '2026-01-02T03:04:05-05:00');
    fails('string:datetime', '2026-01-02 03:04:05Z');
    fails('string:datetime', '2026-01-02T03:04:05');
    fails('string:datetime', 1767323045000);
  });
  it('string:contains:X and string:pattern(re)', () => {
    passes('string:contains:max_attempts', 'invalid max_attempts: -1');
    fails('string:contains:max_attempts', 'invalid backoff');
    passes('string:pattern(^job-[0-9]+$)', 'job-42');
    fails('string:pattern(^job-[0-9]+$)', 'job-x');
    passes('string:pattern((?i)^abc$)', 'ABC');
  });
  it('number:positive, number:non_negative, number:range(a,b)', () => {
    passes('number:positive', 1);
    fails('number:positive', 0);
    passes('number:non_negative', 0);
    fails('number:non_negative', -1);
    fails('number:non_negative', '3');
    passes('number:range(400,422)', 400);
    passes('number:range(400,422)', 422);
    fails('number:range(400,422)', 423);
    passes('number:range(0.5, 1.5)', 1);
  });
  it('~N allows a fixed 50 % deviation', () => {
    passes('~2000', 1000);
    passes('~2000', 3000);
    fails('~2000', 999);
    fails('~2000', 3001);
    fails('~2000', MISSING);
  });
  it('array keywords', () => {
    passes('array:empty', []);
    fails('array:empty', [1]);
    fails('array:empty', MISSING);
    passes('array:nonempty', [1]);
    fails('array:nonempty', []);
    passes('array:length:2', [1, 2]);
    fails('array:length:2', [1]);
    passes('array:length(0)', []);
    fails('array:length(0)', [0]);
    passes('array:min_length:2', [1, 2, 3]);
    fails('array:min_length:2', [1]);
    passes('array:min:1', ['x']);
    fails('array:min:1', []);
  });
  it('contains:X / not_contains:X compare elements as Go %v text', () => {
    passes('contains:beta', ['alpha', 'beta']);
    fails('contains:beta', ['alpha']);
    passes('contains:3', [1, 2, 3]);
    passes('contains:1e+06', [1000000]);
    fails('contains:beta', 'alphabeta');
    passes('not_contains:gone', ['alpha']);
    fails('not_contains:gone', ['gone']);
    fails('not_contains:gone', MISSING);
  });
});

describe('array literal matchers', () => {
  it('need exact length and element-wise matches', () => {
    passes([], []);
    fails([], [1]);
    fails([], MISSING);
    passes(['hello', 42, { key: 'value' }], ['hello', 42, { key: 'value', extra: true }]);
    fails(['hello', 42], ['hello', 43]);
    passes(['string:uuidv7', 'any'], [UUID_V7, null]);
  });
});

describe('object matchers', () => {
  it('$exists with optional $type', () => {
    passes({ $exists: true }, 'x');
    fails({ $exists: true }, null);
    fails({ $exists: true }, MISSING);
    passes({ $exists: false }, MISSING);
    passes({ $exists: false }, null);
    fails({ $exists: false }, 0);
    passes({ $exists: true, $type: 'string' }, 'x');
    fails({ $exists: true, $type: 'string' }, 1);
    passes({ $exists: true, $type: 'number' }, 1.5);
    passes({ $exists: true, $type: 'array' }, []);
    passes({ $exists: true, $type: 'object' }, {});
    fails({ $exists: true, $type: 'object' }, []);
    passes({ $exists: true, $type: 'boolean' }, false);
  });
  it('$match applies a regex to strings', () => {
    passes({ $match: '^[0-9a-f-]{36}$' }, UUID_V7);
    fails({ $match: '^[0-9]+$' }, 'abc');
    fails({ $match: '^[0-9]+$' }, 123);
    fails({ $match: '([' }, 'x');
  });
  it('$in treats alternatives as matchers', () => {
    passes({ $in: ['completed', 'cancelled'] }, 'cancelled');
    fails({ $in: ['completed', 'cancelled'] }, 'active');
    passes({ $in: [200, 204] }, 204);
    passes({ $in: ['absent', 'string:nonempty'] }, MISSING);
  });
  it('$size takes a number or a comparison', () => {
    passes({ $size: 0 }, []);
    fails({ $size: 0 }, [1]);
    fails({ $size: 0 }, MISSING);
    passes({ $size: { $gte: 1 } }, [1, 2]);
    fails({ $size: { $gte: 1 } }, []);
  });
  it('$or passes when any alternative matches', () => {
    passes({ $or: ['absent', 'string:uuidv7'] }, UUID_V7);
    passes({ $or: ['absent', 'string:uuidv7'] }, MISSING);
    fails({ $or: [1, 2] }, 3);
  });
  it('range {min,max} is inclusive', () => {
    passes({ range: { min: 1000, max: 3000 } }, 1000);
    passes({ range: { min: 1000, max: 3000 } }, 3000);
    fails({ range: { min: 1000, max: 3000 } }, 3001);
    fails({ range: { min: 1000, max: 3000 } }, MISSING);
  });
  it('$empty always passes', () => {
    passes({ $empty: true }, MISSING);
    passes({ $empty: true }, [1]);
  });
  it('any other object is a recursive subset match', () => {
    passes({ status: 'ok' }, { status: 'ok', extra: 1 });
    fails({ status: 'ok' }, { status: 'bad' });
    fails({ status: 'ok' }, 'ok');
    fails({ status: 'ok' }, MISSING);
    passes({ nested: { deep: 'string:nonempty' }, gone: 'absent' }, { nested: { deep: 'x' } });
    // Operators the runner does not know are plain keys, so these can never pass.
    fails({ $type: 'number' }, 5);
    fails({ $gte: 1 }, 5);
  });
});

describe('matchResolution', () => {
  it('a resolution error fails every matcher except exactly "absent"', () => {
    const error = { kind: 'error', message: 'index 0 out of range' } as const;
    assert.equal(matchResolution('absent', error), null);
    assert.match(matchResolution('any', error) ?? '', /index 0 out of range/);
    assert.notEqual(matchResolution(null, error), null);
    assert.notEqual(matchResolution({ $exists: false }, error), null);
  });
  it('missing and values are passed through', () => {
    assert.equal(matchResolution('absent', { kind: 'missing' }), null);
    assert.equal(matchResolution('exists', { kind: 'value', value: 1 }), null);
    assert.notEqual(matchResolution('exists', { kind: 'missing' }), null);
  });
});
