/**
 * WalFlush shares flushes among concurrent callers, and never lets a
 * caller count on a flush that was sent before it called (it may have
 * been sent before the caller's commit).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WalFlush } from '../src/wal-flush.ts';

/** A flush whose runs the test ends one by one. */
function controlled() {
  const runs: { end: () => void; fail: (error: Error) => void }[] = [];
  const flush = new WalFlush(
    () =>
      new Promise<void>((resolve, reject) => {
        runs.push({ end: resolve, fail: reject });
      }),
  );
  return { flush, runs };
}

const settled = async (promise: Promise<unknown>) => {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  // Let every already-resolved step run.
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return done;
};

describe('WalFlush', () => {
  it('a caller while a flush runs waits for the next one, which serves every such caller', async () => {
    const { flush, runs } = controlled();
    const first = flush.flush();
    assert.equal(runs.length, 1);
    const second = flush.flush();
    const third = flush.flush();
    assert.equal(runs.length, 1, 'no second flush while the first runs');
    runs[0]!.end();
    assert.equal(await settled(first), true);
    assert.equal(await settled(second), false, 'the first flush may predate its commit');
    assert.equal(runs.length, 2, 'one flush for both waiting callers');
    runs[1]!.end();
    await Promise.all([second, third]);
    assert.equal(runs.length, 2);
  });

  it('a failed flush fails its callers; the next caller starts a new one', async () => {
    const { flush, runs } = controlled();
    const first = flush.flush();
    const second = flush.flush();
    runs[0]!.fail(new Error('lost'));
    await assert.rejects(first, /lost/);
    // The waiting caller gets a flush of its own despite the failure.
    assert.equal(await settled(second), false);
    assert.equal(runs.length, 2);
    runs[1]!.end();
    await second;
    const third = flush.flush();
    assert.equal(runs.length, 3);
    runs[2]!.end();
    await third;
  });
});
