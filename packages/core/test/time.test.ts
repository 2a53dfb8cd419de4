import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTimestamp, parseTimestamp, resolveTime, toIso } from '../src/time.ts';

describe('parseTimestamp', () => {
  const valid: Array<[string, string]> = [
    ['2024-01-15T10:30:00Z', '2024-01-15T10:30:00.000Z'],
    ['2024-01-15T10:30:00.123Z', '2024-01-15T10:30:00.123Z'],
    ['2024-01-15T10:30:00.1Z', '2024-01-15T10:30:00.100Z'],
    ['2024-01-15T10:30:00.123456Z', '2024-01-15T10:30:00.123Z'],
    ['2024-01-15T10:30:00.999999Z', '2024-01-15T10:30:00.999Z'],
    ['2024-01-15T10:30:00+00:00', '2024-01-15T10:30:00.000Z'],
    ['2024-01-15T10:30:00-00:00', '2024-01-15T10:30:00.000Z'],
    ['2024-01-15T10:30:00+02:00', '2024-01-15T08:30:00.000Z'],
    ['2024-01-15T10:30:00-05:30', '2024-01-15T16:00:00.000Z'],
    ['2024-01-15T10:30:00.5+05:45', '2024-01-15T04:45:00.500Z'],
    ['2024-01-01T00:30:00+01:00', '2023-12-31T23:30:00.000Z'],
    ['2024-12-31T23:30:00-01:00', '2025-01-01T00:30:00.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['2023-02-28T23:59:59Z', '2023-02-28T23:59:59.000Z'],
    ['2024-04-30T00:00:00Z', '2024-04-30T00:00:00.000Z'],
    ['2024-12-31T23:59:59.999Z', '2024-12-31T23:59:59.999Z'],
    ['2099-12-31T23:59:59Z', '2099-12-31T23:59:59.000Z'],
    ['1970-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'],
    ['0050-06-01T00:00:00Z', '0050-06-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59Z', '9999-12-31T23:59:59.000Z'],
    ['2024-01-15T10:30:00+23:59', '2024-01-14T10:31:00.000Z'],
  ];
  for (const [text, utc] of valid) {
    it(`parses ${text}`, () => {
      const ms = parseTimestamp(text);
      assert.notEqual(ms, null);
      assert.equal(toIso(ms!), utc);
    });
  }

  it('returns epoch milliseconds', () => {
    assert.equal(parseTimestamp('1970-01-01T00:00:01Z'), 1000);
    assert.equal(parseTimestamp('1969-12-31T23:59:59Z'), -1000);
    assert.equal(parseTimestamp('2024-01-15T10:30:00Z'), Date.UTC(2024, 0, 15, 10, 30, 0));
  });

  const invalid = [
    '',
    '2024-01-15',
    '2024-01-15T10:30:00',
    '2024-01-15T10:30:00.123',
    '2024-01-15 10:30:00Z',
    '2024-01-15t10:30:00Z',
    '2024-01-15T10:30:00z',
    '2024-01-15T10:30Z',
    '2024-1-15T10:30:00Z',
    '24-01-15T10:30:00Z',
    '2024-00-15T10:30:00Z',
    '2024-13-15T10:30:00Z',
    '2024-01-00T10:30:00Z',
    '2024-01-32T10:30:00Z',
    '2024-04-31T10:30:00Z',
    '2024-06-31T10:30:00Z',
    '2024-09-31T10:30:00Z',
    '2024-11-31T10:30:00Z',
    '2023-02-29T10:30:00Z',
    '1900-02-29T10:30:00Z',
    '2024-02-30T10:30:00Z',
    '2024-01-15T24:00:00Z',
    '2024-01-15T10:60:00Z',
    '2024-01-15T10:30:60Z',
    '2024-01-15T10:30:00.Z',
    '2024-01-15T10:30:00+0200',
    '2024-01-15T10:30:00+02',
    '2024-01-15T10:30:00+24:00',
    '2024-01-15T10:30:00+02:60',
    '2024-01-15T10:30:00 Z',
    ' 2024-01-15T10:30:00Z',
    '2024-01-15T10:30:00Zjunk',
    '+PT5S',
    'now',
  ];
  for (const text of invalid) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      assert.equal(parseTimestamp(text), null);
    });
  }

  it('rejects non-strings without throwing', () => {
    assert.equal(parseTimestamp(1234 as unknown as string), null);
    assert.equal(parseTimestamp(null as unknown as string), null);
  });
});

describe('isTimestamp', () => {
  it('accepts valid timestamps', () => {
    assert.equal(isTimestamp('2024-01-15T10:30:00Z'), true);
    assert.equal(isTimestamp('2024-01-15T10:30:00.5-07:00'), true);
  });
  it('rejects invalid text and other types', () => {
    assert.equal(isTimestamp('2024-01-15T10:30:00'), false);
    assert.equal(isTimestamp('2023-02-29T00:00:00Z'), false);
    assert.equal(isTimestamp(1_700_000_000_000), false);
    assert.equal(isTimestamp(undefined), false);
    assert.equal(isTimestamp(null), false);
    assert.equal(isTimestamp(new Date()), false);
  });
});

describe('toIso', () => {
  it('renders UTC with milliseconds and Z', () => {
    assert.equal(toIso(0), '1970-01-01T00:00:00.000Z');
    assert.equal(toIso(1_705_314_600_123), '2024-01-15T10:30:00.123Z');
  });
  it('round-trips with parseTimestamp', () => {
    for (const ms of [0, 1, 999, 1_705_314_600_123, 4_102_444_799_000]) {
      assert.equal(parseTimestamp(toIso(ms)), ms);
    }
  });
});

describe('resolveTime', () => {
  const now = Date.UTC(2024, 0, 15, 10, 30, 0);

  it('echoes an absolute timestamp byte-for-byte', () => {
    assert.deepEqual(resolveTime('2099-12-31T23:59:59Z', now), {
      ms: Date.UTC(2099, 11, 31, 23, 59, 59),
      text: '2099-12-31T23:59:59Z',
    });
  });

  it('keeps the original offset and fraction digits', () => {
    const result = resolveTime('2024-01-15T12:30:00.123456+02:00', now);
    assert.deepEqual(result, { ms: now + 123, text: '2024-01-15T12:30:00.123456+02:00' });
  });

  it('resolves relative durations against now', () => {
    assert.deepEqual(resolveTime('+PT2S', now), {
      ms: now + 2000,
      text: '2024-01-15T10:30:02.000Z',
    });
    assert.deepEqual(resolveTime('+PT0.5S', now), {
      ms: now + 500,
      text: '2024-01-15T10:30:00.500Z',
    });
    assert.deepEqual(resolveTime('+P1D', now), {
      ms: now + 86_400_000,
      text: '2024-01-16T10:30:00.000Z',
    });
    assert.deepEqual(resolveTime('+PT0S', now), { ms: now, text: toIso(now) });
  });

  it('allows a past absolute timestamp (the caller decides what that means)', () => {
    assert.equal(resolveTime('2000-01-01T00:00:00Z', now)?.ms, Date.UTC(2000, 0, 1));
  });

  const invalid = [
    '',
    '+',
    '+PT',
    '+5S',
    '-PT5S',
    'PT5S',
    '+ PT5S',
    '++PT5S',
    '+pt5s',
    '2024-01-15T10:30:00',
    '2024-02-30T10:30:00Z',
    'tomorrow',
  ];
  for (const value of invalid) {
    it(`rejects ${JSON.stringify(value)}`, () => {
      assert.equal(resolveTime(value, now), null);
    });
  }

  it('rejects relative times beyond the representable date range', () => {
    assert.equal(resolveTime('+P280000Y', now), null);
  });

  it('rejects non-strings', () => {
    assert.equal(resolveTime(5 as unknown as string, now), null);
  });
});
