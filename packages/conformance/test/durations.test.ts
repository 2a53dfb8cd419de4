import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  describeTiming,
  formatMs,
  parseDurationMs,
  parseTiming,
  timingMatches,
} from '../src/durations.ts';

describe('parseDurationMs', () => {
  it('reads short units and ISO 8601 durations', () => {
    assert.equal(parseDurationMs('5s'), 5000);
    assert.equal(parseDurationMs('0.5s'), 500);
    assert.equal(parseDurationMs('250ms'), 250);
    assert.equal(parseDurationMs('2m'), 120_000);
    assert.equal(parseDurationMs('1h'), 3_600_000);
    assert.equal(parseDurationMs('1d'), 86_400_000);
    assert.equal(parseDurationMs('PT5S'), 5000);
    assert.equal(parseDurationMs('PT0.5S'), 500);
    assert.equal(parseDurationMs('PT1M30S'), 90_000);
  });
  it('rejects malformed text', () => {
    for (const bad of ['', '5', 's', '5 sec', '-1s', 'P', 'PT', 'PT1.5M', '5w']) {
      assert.equal(parseDurationMs(bad), null, bad);
    }
  });
});

describe('parseTiming', () => {
  it('gives ~ timings the default ±50% tolerance (seed §5.6)', () => {
    assert.deepEqual(parseTiming('~2s'), { text: '~2s', min: 1000, max: 3000, target: 2000 });
    assert.deepEqual(parseTiming('~1s'), { text: '~1s', min: 500, max: 1500, target: 1000 });
    assert.deepEqual(parseTiming('~PT0.5S'), { text: '~PT0.5S', min: 250, max: 750, target: 500 });
  });
  it('accepts a more specific tolerance as a percentage or a duration', () => {
    assert.deepEqual(parseTiming('~2s±10%'), {
      text: '~2s±10%',
      min: 1800,
      max: 2200,
      target: 2000,
    });
    assert.deepEqual(parseTiming('~2s±300ms'), {
      text: '~2s±300ms',
      min: 1700,
      max: 2300,
      target: 2000,
    });
    assert.equal(parseTiming('~1s±200%').min, 0);
  });
  it('accepts bounds', () => {
    assert.deepEqual(parseTiming('>=1s'), { text: '>=1s', min: 1000, max: Infinity });
    assert.deepEqual(parseTiming('>1s'), { text: '>1s', min: 1001, max: Infinity });
    assert.deepEqual(parseTiming('<=3s'), { text: '<=3s', min: 0, max: 3000 });
    assert.deepEqual(parseTiming('<500ms'), { text: '<500ms', min: 0, max: 499 });
  });
  it('refuses exact and malformed timings with a reason', () => {
    assert.throws(() => parseTiming('2s'), /must be approximate/);
    assert.throws(() => parseTiming('~soon'), /invalid duration "soon"/);
    assert.throws(() => parseTiming('~2s±x%'), /invalid tolerance/);
    assert.throws(() => parseTiming('~2s±'), /invalid tolerance/);
    assert.throws(() => parseTiming('>=later'), /invalid duration/);
  });
  it('matches inclusively and describes the accepted range', () => {
    const t = parseTiming('~2s');
    assert.equal(timingMatches(t, 1000), true);
    assert.equal(timingMatches(t, 3000), true);
    assert.equal(timingMatches(t, 999), false);
    assert.equal(timingMatches(t, 3001), false);
    assert.equal(describeTiming(t), '~2s (1s..3s)');
    assert.equal(describeTiming(parseTiming('>=1s')), '>=1s (1s..∞)');
  });
});

describe('formatMs', () => {
  it('uses ms below a second and seconds above', () => {
    assert.equal(formatMs(250), '250ms');
    assert.equal(formatMs(1500), '1.5s');
    assert.equal(formatMs(5234), '5.23s');
    assert.equal(formatMs(65_000), '65s');
  });
});
