/**
 * The fair-scheduling decisions (fair-scheduling.ts): pool bodies (C15),
 * C17's stateless interleave, deficit dealing for weights and round-robin,
 * the starvation floor, carried counts, the answer's order and the claim
 * steps the stores follow.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  carryDispatched,
  claimSteps,
  dispatchShares,
  interleaveByQueue,
  interleaveTakes,
  leastLoadedTakes,
  OjsError,
  parsePool,
  parseWindowMs,
  weightedTakes,
} from '../src/index.ts';

const refused = (fn: () => unknown, field: string) =>
  assert.throws(
    fn,
    (e: unknown) =>
      e instanceof OjsError && e.code === 'invalid_request' && e.details?.field === field,
  );

describe('parsePool (C15)', () => {
  it('stores the suite form as queues[] plus weights{}', () => {
    assert.deepEqual(
      parsePool('p', {
        name: 'p',
        strategy: 'weighted',
        queues: { high: { weight: 70 }, low: { weight: 30 } },
      }),
      { name: 'p', queues: ['high', 'low'], strategy: 'weighted', weights: { high: 70, low: 30 } },
    );
  });

  it('takes the spec form, defaults to round-robin and keeps the guard with defaults', () => {
    assert.deepEqual(
      parsePool('p', {
        queues: ['a', 'b'],
        weights: { b: 2 },
        concurrency: 4,
        isolated: true,
        starvation_guard: { enabled: true },
      }),
      {
        name: 'p',
        queues: ['a', 'b'],
        strategy: 'round-robin',
        weights: { b: 2 },
        concurrency: 4,
        isolated: true,
        starvation_guard: { enabled: true, rotation_interval: 'PT30S', min_dispatch_ratio: 0.05 },
      },
    );
  });

  it('refuses a differing name, bad weights, strategies and queues', () => {
    refused(() => parsePool('p', { name: 'q', queues: ['a'] }), 'name');
    refused(() => parsePool('p', { queues: { a: { weight: 0 } } }), 'queues.a.weight');
    refused(() => parsePool('p', { queues: { a: { weight: 1.5 } } }), 'queues.a.weight');
    refused(() => parsePool('p', { queues: ['a'], weights: { b: 1 } }), 'weights.b');
    refused(() => parsePool('p', { queues: ['a'], strategy: 'random' }), 'strategy');
    refused(() => parsePool('p', { queues: [] }), 'queues');
    refused(() => parsePool('p', { queues: ['a', 'a'] }), 'queues');
    refused(() => parsePool('p', {}), 'queues');
    refused(
      () => parsePool('p', { queues: ['a'], starvation_guard: { min_dispatch_ratio: 2 } }),
      'starvation_guard.min_dispatch_ratio',
    );
  });

  it('reads ISO 8601 windows', () => {
    assert.equal(parseWindowMs('PT30S'), 30_000);
    assert.equal(parseWindowMs('PT1M'), 60_000);
    assert.equal(parseWindowMs('P1DT1H'), 90_000_000);
    assert.equal(parseWindowMs('30s'), 0);
    assert.equal(parseWindowMs('PT'), 0);
  });
});

describe('C17: interleaveTakes', () => {
  it('deals the first slot to the first queue, the rest one per queue in turn', () => {
    assert.deepEqual(interleaveTakes(['a', 'b'], 4), [
      { queue: 'a', count: 2 },
      { queue: 'b', count: 2 },
    ]);
    assert.deepEqual(interleaveTakes(['a', 'b', 'c'], 2), [
      { queue: 'a', count: 1 },
      { queue: 'b', count: 1 },
    ]);
  });
});

describe('claimSteps', () => {
  const run = (
    takes: { queue: string; count: number }[],
    queues: string[],
    count: number,
    have: Record<string, number>,
  ) => {
    const left = { ...have };
    const asked: string[] = [];
    const steps = claimSteps(takes, queues, count);
    for (let step = steps.next(0); !step.done; ) {
      const got = Math.min(step.value.count, left[step.value.queue] ?? 0);
      left[step.value.queue] = (left[step.value.queue] ?? 0) - got;
      asked.push(`${step.value.queue}:${step.value.count}=${got}`);
      step = steps.next(got);
    }
    return asked;
  };

  it('claims the takes, then fills from the queues in order, skipping the short ones', () => {
    assert.deepEqual(
      run(
        [
          { queue: 'a', count: 2 },
          { queue: 'b', count: 2 },
        ],
        ['a', 'b'],
        4,
        { a: 0, b: 9 },
      ),
      ['a:2=0', 'b:2=2', 'b:2=2'],
    );
  });

  it('the first job still comes from the first non-empty queue (Level 0 order)', () => {
    assert.deepEqual(run(interleaveTakes(['a', 'b'], 1), ['a', 'b'], 1, { a: 0, b: 5 }), [
      'a:1=0',
      'b:1=1',
    ]);
  });
});

describe('weighted and round-robin dealing', () => {
  it('deals 1:2:5 within a job over fetches of 3, and round-robin one per queue per cycle', () => {
    const queues = ['a', 'b', 'c'];
    const dispatched = new Map<string, number>();
    const shares = dispatchShares(queues, { a: 1, b: 2, c: 5 });
    const counts = new Map<string, number>();
    for (let i = 0; i < 100; i++) {
      // Fetches of 3: the dealing carries across them through the counts.
      const takes = weightedTakes(queues, 3, shares, dispatched);
      const claimed = new Map(takes.map((t) => [t.queue, t.count]));
      for (const t of takes) counts.set(t.queue, (counts.get(t.queue) ?? 0) + t.count);
      carryDispatched(dispatched, takes, claimed, shares);
    }
    const total = 300;
    for (const [q, w] of Object.entries({ a: 1, b: 2, c: 5 })) {
      assert.ok(Math.abs(counts.get(q)! - (total * w) / 8) <= 1, `${q}: ${counts.get(q)}`);
    }
    const rr = dispatchShares(queues, undefined);
    assert.deepEqual(weightedTakes(queues, 6, rr, new Map()), [
      { queue: 'a', count: 2 },
      { queue: 'b', count: 2 },
      { queue: 'c', count: 2 },
    ]);
  });

  it('the starvation floor lifts a small share and takes the surplus from the others', () => {
    const shares = dispatchShares(['heavy', 'light'], { heavy: 100, light: 1 }, 0.05);
    assert.equal(shares.get('light'), 0.05);
    assert.ok(Math.abs(shares.get('heavy')! - 0.95) < 1e-12);
    const off = dispatchShares(['heavy', 'light'], { heavy: 100, light: 1 });
    assert.ok(off.get('light')! < 0.01);
  });

  it('a queue that ran dry forgets its deficit (no burst when it comes back)', () => {
    const shares = dispatchShares(['a', 'b'], undefined);
    const dispatched = new Map([
      ['a', 100],
      ['b', 0],
    ]);
    // b was dealt a slot and gave nothing: its count is raised to its fair share.
    carryDispatched(dispatched, [{ queue: 'b', count: 1 }], new Map([['a', 1]]), shares);
    assert.equal(dispatched.get('b'), 50.5);
  });

  it('least-loaded takes from the deepest queue', () => {
    assert.deepEqual(
      leastLoadedTakes(
        ['a', 'b', 'c'],
        3,
        new Map([
          ['a', 1],
          ['b', 7],
          ['c', 2],
        ]),
      ),
      [{ queue: 'b', count: 3 }],
    );
  });
});

describe('interleaveByQueue', () => {
  it('orders the answer one job per queue in turn, from the first queue that gave any', () => {
    const jobs = ['a1', 'a2', 'b1', 'b2', 'b3', 'c1'].map((id) => ({ id, queue: id[0]! }));
    assert.deepEqual(
      interleaveByQueue(jobs, ['b', 'a', 'c']).map((j) => j.id),
      ['b1', 'a1', 'c1', 'b2', 'a2', 'b3'],
    );
  });
});
