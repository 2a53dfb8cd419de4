import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import { reduceMemoryWhenQuiet, shouldReduceMemory, startQuietGc } from '../src/quiet-gc.ts';

const MiB = 1024 * 1024;

describe('shouldReduceMemory', () => {
  const grown = {
    quietSamples: 2,
    heapBytes: 200 * MiB,
    floorBytes: 20 * MiB,
    sinceLastMs: 60_000,
  };

  it('reduces once the thread was quiet long enough and the heap grew', () => {
    assert.equal(shouldReduceMemory(grown), true);
  });

  it('waits while the thread is busy', () => {
    assert.equal(shouldReduceMemory({ ...grown, quietSamples: 1 }), false);
    assert.equal(shouldReduceMemory({ ...grown, quietSamples: 0 }), false);
  });

  it('leaves a heap that grew little: half over the floor plus the minimum growth', () => {
    // floor 20 MiB: the line is 20 * 1.5 + 32 = 62 MiB.
    assert.equal(shouldReduceMemory({ ...grown, heapBytes: 62 * MiB }), false);
    assert.equal(shouldReduceMemory({ ...grown, heapBytes: 63 * MiB }), true);
    assert.equal(
      shouldReduceMemory({ ...grown, heapBytes: 40 * MiB }, { minGrowthBytes: 8 * MiB }),
      true,
    );
  });

  it('keeps the least spacing between two reductions', () => {
    assert.equal(shouldReduceMemory({ ...grown, sinceLastMs: 9_999 }), false);
    assert.equal(shouldReduceMemory({ ...grown, sinceLastMs: 1 }, { minSpacingMs: 0 }), true);
  });
});

describe('startQuietGc', () => {
  it('gives the heap a burst grew back once the thread is quiet', { timeout: 60_000 }, async () => {
    let reduced: ((sizes: { before: number; after: number }) => void) | undefined;
    const done = new Promise<{ before: number; after: number }>((resolve) => {
      reduced = resolve;
    });
    const stop = startQuietGc({
      intervalMs: 20,
      minSpacingMs: 0,
      onReduced: (before, after) => reduced!({ before, after }),
    });
    try {
      const floor = getHeapStatistics().total_heap_size;
      // A burst: ~100 MiB of objects that survive long enough to reach the old generation.
      let burst: unknown[][] | undefined = [];
      for (let i = 0; i < 200; i++) {
        burst.push(Array.from({ length: 10_000 }, (_, j) => ({ i, j, s: `job-${i}-${j}` })));
        if (i % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      assert.ok(
        getHeapStatistics().total_heap_size > floor * 1.5 + 32 * MiB,
        'the burst grew the heap',
      );
      burst = undefined;
      // Idle from here: the sampler sees quiet samples and reduces.
      const { before, after } = await done;
      assert.ok(before > floor * 1.5 + 32 * MiB);
      assert.ok(after < before / 2, `heap ${before} -> ${after} bytes`);
      assert.ok(getHeapStatistics().total_heap_size < before / 2);
    } finally {
      stop();
    }
  });

  it('runs one sampler per thread; each caller stops only its own share', {
    timeout: 60_000,
  }, async () => {
    const calls: string[] = [];
    const stopA = startQuietGc({
      intervalMs: 20,
      minSpacingMs: 0,
      onReduced: () => calls.push('a'),
    });
    const stopB = startQuietGc({ onReduced: () => calls.push('b') });
    stopA();
    stopA(); // a second stop of the same caller changes nothing
    let reduced: (() => void) | undefined;
    const done = new Promise<void>((resolve) => {
      reduced = resolve;
    });
    const stopC = startQuietGc({ onReduced: () => reduced!() });
    try {
      let burst: unknown[][] | undefined = [];
      for (let i = 0; i < 200; i++) {
        burst.push(Array.from({ length: 10_000 }, (_, j) => ({ i, j, s: `job-${i}-${j}` })));
        if (i % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      burst = undefined;
      await done;
      // The first caller's sampler kept running for B and C; A's listener is gone.
      assert.deepEqual(calls, ['b']);
    } finally {
      stopB();
      stopC();
    }
  });
});

describe('reduceMemoryWhenQuiet', () => {
  it('gives back what a start left behind at the first quiet moment', {
    timeout: 30_000,
  }, async () => {
    const reductions: { before: number; after: number }[] = [];
    let reduced: (() => void) | undefined;
    const done = new Promise<void>((resolve) => {
      reduced = resolve;
    });
    // What starting leaves behind: objects that outlive a few young-generation GCs.
    let garbage: unknown[][] | undefined = [];
    for (let i = 0; i < 40; i++) {
      garbage.push(Array.from({ length: 10_000 }, (_, j) => ({ i, j })));
      await new Promise((resolve) => setImmediate(resolve));
    }
    garbage = undefined;
    const cancel = reduceMemoryWhenQuiet({
      intervalMs: 20,
      onReduced: (before, after) => {
        reductions.push({ before, after });
        reduced!();
      },
    });
    try {
      await done;
      const [{ before, after }] = reductions as [{ before: number; after: number }];
      assert.ok(after < before, `heap ${before} -> ${after} bytes`);
    } finally {
      cancel();
    }
  });
});
