/**
 * The job observers' interval reading: `Elapsed` remembers the last
 * timestamp at each end and must answer exactly what `elapsedMs` answers,
 * whatever the order of the timestamps it is given.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Elapsed, elapsedMs } from '../src/observability/lifecycle.ts';

describe('Elapsed', () => {
  it('answers what elapsedMs answers, for repeated, alternating and missing timestamps', () => {
    const a = '2026-01-01T12:00:00.000Z';
    const b = '2026-01-01T12:00:00.250Z';
    const c = '2026-01-01T12:00:01.005Z';
    const pairs: [string | undefined, string | undefined][] = [
      [a, b],
      [a, b], // both ends remembered
      [a, c], // a new end
      [b, c], // a new start
      [a, c], // back to an older start
      [c, a], // negative: clamped to 0
      [undefined, c],
      [a, undefined],
      ['not a time', c], // unparseable: undefined
      [a, c], // after an unparseable one
      [`${a}`.slice(0), c], // an equal string that is another object
    ];
    const elapsed = new Elapsed();
    for (const [from, to] of pairs) {
      assert.equal(elapsed.ms(from, to), elapsedMs(from, to), `${from} -> ${to}`);
    }
    assert.equal(new Elapsed().ms(a, c), 1005);
  });
});
