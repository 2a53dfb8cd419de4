import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatIsoDuration, parseIsoDuration } from '../src/duration.ts';

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;

describe('parseIsoDuration', () => {
  const valid: Array<[string, number]> = [
    ['PT0S', 0],
    ['PT1S', S],
    ['PT0.5S', 500],
    ['PT1.5S', 1500],
    ['PT0.001S', 1],
    ['PT0.0004S', 0],
    ['PT0.0005S', 1],
    ['PT1.001S', 1001],
    ['PT1.123456S', 1123],
    ['PT5S', 5 * S],
    ['PT30S', 30 * S],
    ['PT90S', 90 * S],
    ['PT1M', MIN],
    ['PT5M', 5 * MIN],
    ['PT15M', 15 * MIN],
    ['PT1H', H],
    ['PT24H', 24 * H],
    ['PT1H30M', H + 30 * MIN],
    ['PT1H30M15.25S', H + 30 * MIN + 15250],
    ['PT1H15S', H + 15 * S],
    ['P1D', D],
    ['P1W', 7 * D],
    ['P2W3D', 17 * D],
    ['P1M', 30 * D],
    ['P1Y', 365 * D],
    ['P1Y2M3DT4H5M6S', 365 * D + 60 * D + 3 * D + 4 * H + 5 * MIN + 6 * S],
    ['P1DT1H1M1S', D + H + MIN + S],
    ['P0D', 0],
    ['PT007S', 7 * S],
  ];
  for (const [text, ms] of valid) {
    it(`parses ${text} as ${ms} ms`, () => {
      assert.equal(parseIsoDuration(text), ms);
    });
  }

  const invalid = [
    '',
    'P',
    'PT',
    'P1DT',
    '1S',
    'T1S',
    'PT-1S',
    '-PT1S',
    '+PT1S',
    'pt1s',
    'Pt1S',
    'PT1s',
    'PT1S ',
    ' PT1S',
    'PT1Sx',
    'PT1S1M',
    'PT1M1H',
    'P1D1Y',
    'PT1D',
    'P1H',
    'P1S',
    'PT1.5M',
    'PT1.5H',
    'P1.5D',
    'PT.5S',
    'PT1.S',
    'PT1,5S',
    'PT1',
    'PTS',
    'P1',
    'PT1H1H',
    'PT1e3S',
    'P99999999999999999999Y',
  ];
  for (const text of invalid) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      assert.equal(parseIsoDuration(text), null);
    });
  }

  it('rejects non-string input without throwing', () => {
    assert.equal(parseIsoDuration(42 as unknown as string), null);
    assert.equal(parseIsoDuration(undefined as unknown as string), null);
  });

  it('always returns an integer', () => {
    for (const text of ['PT0.3333S', 'PT2.9999S', 'PT0.1S']) {
      assert.ok(Number.isInteger(parseIsoDuration(text)));
    }
  });
});

describe('formatIsoDuration', () => {
  const cases: Array<[number, string]> = [
    [0, 'PT0S'],
    [1, 'PT0.001S'],
    [10, 'PT0.01S'],
    [500, 'PT0.5S'],
    [1000, 'PT1S'],
    [1500, 'PT1.5S'],
    [1250, 'PT1.25S'],
    [59_999, 'PT59.999S'],
    [60_000, 'PT1M'],
    [300_000, 'PT5M'],
    [90_000, 'PT1M30S'],
    [3_600_000, 'PT1H'],
    [3_601_000, 'PT1H1S'],
    [86_400_000, 'P1D'],
    [90_061_000, 'P1DT1H1M1S'],
    [7 * D, 'P7D'],
    [D + 500, 'P1DT0.5S'],
  ];
  for (const [ms, text] of cases) {
    it(`formats ${ms} ms as ${text}`, () => {
      assert.equal(formatIsoDuration(ms), text);
    });
  }

  it('rounds fractional milliseconds', () => {
    assert.equal(formatIsoDuration(999.6), 'PT1S');
    assert.equal(formatIsoDuration(0.4), 'PT0S');
  });

  it('rejects negative and non-finite values', () => {
    assert.throws(() => formatIsoDuration(-1), RangeError);
    assert.throws(() => formatIsoDuration(Number.NaN), RangeError);
    assert.throws(() => formatIsoDuration(Number.POSITIVE_INFINITY), RangeError);
  });

  it('round-trips through parseIsoDuration', () => {
    const samples = [0, 1, 999, 1000, 1001, 61_001, 3_599_999, 86_399_999, 123_456_789_012];
    for (let i = 0; i < 500; i += 1) samples.push(Math.floor(Math.random() * 10 * D));
    for (const ms of samples) {
      assert.equal(parseIsoDuration(formatIsoDuration(ms)), ms, `round trip of ${ms}`);
    }
  });

  it('normalises parsed text to the canonical form', () => {
    assert.equal(formatIsoDuration(parseIsoDuration('PT90S')!), 'PT1M30S');
    assert.equal(formatIsoDuration(parseIsoDuration('P1W')!), 'P7D');
    assert.equal(formatIsoDuration(parseIsoDuration('PT24H')!), 'P1D');
  });
});
