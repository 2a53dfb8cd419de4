/**
 * Concurrent single operations share one store call (turn-batch.ts): the
 * PUSHes of one event-loop turn are one `insertJobs`, the ACK/NACKs one
 * `settleJobs`, and each caller still gets the answer it would have got
 * alone (a refused item refuses nothing else; queue bounds admit in order).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, OjsError, type Store } from '@ojs/core';
import { SqliteStore } from '@ojs/store-sqlite';
import { Engine } from '../src/engine.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const ID = (n: number) => `019a0000-0000-7000-8000-00000000000${n}`;

let store: SqliteStore;
let engine: Engine;
/** The store calls the engine made, by operation, with their item counts. */
let calls: { op: string; items: number }[];

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  calls = [];
  // Counts the batched operations, passes everything through.
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      if (key === 'insertJobs')
        return (jobs: unknown[], ...rest: unknown[]) => {
          calls.push({ op: 'insertJobs', items: jobs.length });
          return value.call(target, jobs, ...rest);
        };
      if (key === 'claimJobs')
        return (request: { count: number; workerId?: string }) => {
          calls.push({ op: `claimJobs ${request.workerId}`, items: request.count });
          return value.call(target, request);
        };
      if (key === 'settleJobs')
        return (request: { items: unknown[] }) => {
          calls.push({ op: 'settleJobs', items: request.items.length });
          return value.call(target, request);
        };
      return value.bind(target);
    },
  }) as Store;
  engine = new Engine({ store: counted, clock: new ManualClock(T0) });
});

afterEach(async () => {
  await engine.stop();
  await store.close();
});

const push = (n: number, extra: Record<string, unknown> = {}) => ({
  type: 'mail.send',
  args: [n],
  id: ID(n),
  ...extra,
});

describe('concurrent single operations', () => {
  it('PUSHes of one turn are one insertJobs; a taken id is refused alone', async () => {
    await engine.enqueue(push(1));
    calls = [];
    const answers = await Promise.allSettled([
      engine.enqueue(push(2)),
      engine.enqueue(push(1)), // id taken: duplicate, the others are stored
      engine.enqueue({ type: 'Not A Type', args: [] }), // invalid: refused before the store
      engine.enqueue(push(3)),
    ]);
    assert.deepEqual(
      answers.map((a) => (a.status === 'fulfilled' ? a.value.status : (a.reason as OjsError).code)),
      ['created', 'duplicate', 'invalid_payload', 'created'],
    );
    // The store refuses a batch holding a taken id whole; the rest goes again.
    assert.deepEqual(calls, [
      { op: 'insertJobs', items: 3 },
      { op: 'insertJobs', items: 2 },
    ]);
    for (const n of [2, 3]) assert.equal((await engine.getJob(ID(n))).state, 'available');
  });

  it('PUSHes into a bounded queue are admitted in order, as if each came alone', async () => {
    await engine.queueSettings.configure('bounded', { backpressure: { max_depth: 2 } });
    const answers = await Promise.allSettled(
      [1, 2, 3].map((n) => engine.enqueue(push(n, { options: { queue: 'bounded' } }))),
    );
    assert.deepEqual(
      answers.map((a) => (a.status === 'fulfilled' ? a.value.status : (a.reason as OjsError).code)),
      ['created', 'created', 'QUEUE_FULL'],
    );
    assert.deepEqual(calls, [{ op: 'insertJobs', items: 2 }]);
  });

  it('ACKs and NACKs of one turn are one settleJobs; a stale one gets its own conflict', async () => {
    await Promise.all([1, 2, 3].map((n) => engine.enqueue(push(n))));
    const jobs = await engine.fetch({ queues: ['default'], count: 3, workerId: 'w1' });
    assert.equal(jobs.length, 3);
    calls = [];
    const [first, second, third] = jobs as [(typeof jobs)[0], (typeof jobs)[0], (typeof jobs)[0]];
    const answers = await Promise.allSettled([
      engine.ack({ jobId: first.id, workerId: 'w1', attempt: 1, result: 'done' }),
      engine.ack({ jobId: second.id, workerId: 'w1', attempt: 2 }), // not its attempt
      engine.nack({
        jobId: third.id,
        workerId: 'w1',
        attempt: 1,
        error: { type: 'Boom', message: 'no' },
      }),
    ]);
    assert.deepEqual(
      answers.map((a) => (a.status === 'fulfilled' ? a.value.state : (a.reason as OjsError).code)),
      ['completed', 'conflict', 'retryable'],
    );
    assert.deepEqual(calls, [{ op: 'settleJobs', items: 3 }]);
    assert.equal((await engine.getJob(second.id)).state, 'active');
  });

  it("one worker's fetches of one turn are one claimJobs; each gets its own jobs, in order", async () => {
    await engine.enqueueMany([1, 2, 3, 4, 5].map((n) => push(n)));
    calls = [];
    const fetched = await Promise.all([
      engine.fetch({ queues: ['default'], workerId: 'w1' }),
      engine.fetch({ queues: ['default'], workerId: 'w1', count: 2 }),
      engine.fetch({ queues: ['default'], workerId: 'w2' }),
      engine.fetch({ queues: ['default'], workerId: 'w1' }),
    ]);
    assert.deepEqual(
      calls.toSorted((a, b) => a.op.localeCompare(b.op)),
      [
        { op: 'claimJobs w1', items: 4 },
        { op: 'claimJobs w2', items: 1 },
      ],
    );
    const ids = fetched.map((jobs) => jobs.map((job) => job.id));
    // w1's three requests share its claim in request order; every job once.
    const w1 = [...ids[0]!, ...ids[1]!, ...ids[3]!];
    assert.deepEqual(
      w1.map((id) => Number(id.at(-1))),
      w1.map((id) => Number(id.at(-1))).toSorted(),
    );
    assert.deepEqual(
      fetched.map((jobs) => jobs.length),
      [1, 2, 1, 1],
    );
    assert.equal(new Set(ids.flat()).size, 5);
    for (const [k, jobs] of fetched.entries()) {
      for (const job of jobs) {
        assert.equal(job.state, 'active');
        assert.equal(job.worker_id, k === 2 ? 'w2' : 'w1');
      }
    }
  });

  it('an item the store cannot take fails alone; the others of its turn are settled', async () => {
    await Promise.all([1, 2].map((n) => engine.enqueue(push(n))));
    const [good, bad] = (await engine.fetch({ queues: ['default'], count: 2 })) as unknown as [
      { id: string },
      { id: string },
    ];
    calls = [];
    const answers = await Promise.allSettled([
      engine.ack({ jobId: good.id, result: 'ok' }),
      engine.ack({ jobId: bad.id, result: { n: 1n } }), // not JSON: the store throws
    ]);
    assert.equal(answers[0].status, 'fulfilled');
    assert.equal(answers[1].status, 'rejected');
    assert.deepEqual(calls, [
      { op: 'settleJobs', items: 2 },
      { op: 'settleJobs', items: 1 },
      { op: 'settleJobs', items: 1 },
    ]);
    assert.equal((await engine.getJob(good.id)).state, 'completed');
    assert.equal((await engine.getJob(bad.id)).state, 'active');
  });

  it('a store failure reaches every caller of the batch', async () => {
    await store.close();
    const answers = await Promise.allSettled([engine.enqueue(push(1)), engine.enqueue(push(2))]);
    assert.deepEqual(
      answers.map((a) => a.status),
      ['rejected', 'rejected'],
    );
    for (const answer of answers) {
      assert.ok(!((answer as PromiseRejectedResult).reason instanceof OjsError));
    }
    store = new SqliteStore({ path: ':memory:' });
    await store.init();
  });
});

describe('a waiting fetch woken by a PUSH (SQLite file, pipelined writes)', () => {
  it('is handed the job at the PUSH’s COMMIT, before the PUSH’s fsync answers it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ojs-coalescing-'));
    const file = new SqliteStore({ path: join(dir, 'ojs.db') });
    await file.init();
    const fileEngine = new Engine({ store: file, clock: new ManualClock(T0) });
    try {
      assert.equal(file.pipelinedWrites, true);
      const order: string[] = [];
      const fetching = fileEngine
        .fetch({ queues: ['default'], workerId: 'w1', waitMs: 10_000 })
        .then((jobs) => order.push(`fetch ${jobs.length}`));
      // The fetch found nothing and waits on the notifier (its claims answered).
      while (fileEngine.notifier.waiting === 0) await new Promise((r) => setImmediate(r));
      const pushing = fileEngine.enqueue(push(1)).then(() => order.push('push'));
      await Promise.all([fetching, pushing]);
      // The claim joined the insert's group commit: answered at its COMMIT,
      // while the PUSH waited for the fsync after it.
      assert.deepEqual(order, ['fetch 1', 'push']);
    } finally {
      await fileEngine.stop();
      await file.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a store that coalesces its inserts itself (Store.coalescesInserts)', () => {
  it('gets each PUSH at once, not after the turn; concurrent PUSHes are each answered', async () => {
    const inner = new SqliteStore({ path: ':memory:' });
    await inner.init();
    const inserts: number[] = [];
    const coalescing = new Proxy(inner, {
      get(target, key, receiver) {
        if (key === 'coalescesInserts') return true;
        const value = Reflect.get(target, key, receiver);
        if (typeof value !== 'function') return value;
        if (key === 'insertJobs')
          return (jobs: unknown[], ...rest: unknown[]) => {
            inserts.push(jobs.length);
            return value.call(target, jobs, ...rest);
          };
        return value.bind(target);
      },
    }) as Store;
    const direct = new Engine({ store: coalescing, clock: new ManualClock(T0) });
    try {
      // The queue's settings are read (and cached) by the first PUSH.
      await direct.enqueue(push(1));
      inserts.length = 0;
      // A callback of the next turn sees whether the store was called before it.
      let beforeTurn = -1;
      setImmediate(() => {
        beforeTurn = inserts.length;
      });
      const answers = await Promise.all([direct.enqueue(push(2)), direct.enqueue(push(3))]);
      assert.equal(beforeTurn, 2);
      assert.deepEqual(inserts, [1, 1]);
      assert.deepEqual(
        answers.map((a) => a.status),
        ['created', 'created'],
      );
      assert.equal((await direct.getJob(ID(3))).state, 'available');
    } finally {
      await direct.stop();
      await inner.close();
    }
  });

  it('the engine holds PUSHes for the turn for a store that does not', async () => {
    await engine.enqueue(push(1));
    calls = [];
    let beforeTurn = -1;
    setImmediate(() => {
      beforeTurn = calls.length;
    });
    await Promise.all([engine.enqueue(push(2)), engine.enqueue(push(3))]);
    assert.equal(beforeTurn, 0);
    assert.deepEqual(calls, [{ op: 'insertJobs', items: 2 }]);
  });
});

describe('the lazy promotion beside a claim', () => {
  /** A store whose promotions are held (or fail) until the test says. */
  const holding = (inner: SqliteStore, promote: () => Promise<number>) =>
    new Proxy(inner, {
      get(target, key, receiver) {
        if (key === 'promoteDueJobs') return promote;
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as Store;

  it('does not hold back the answer of a claim that took jobs', async () => {
    const inner = new SqliteStore({ path: ':memory:' });
    await inner.init();
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<number>((resolve) => {
      release = () => {
        order.push('promotion done');
        resolve(0);
      };
    });
    const promote = () => {
      order.push('promotion issued');
      return held;
    };
    const lazy = new Engine({ store: holding(inner, promote), clock: new ManualClock(T0) });
    try {
      await lazy.enqueue(push(1));
      // The promotion is let go once the fetch answered, or a turn after the
      // fetch's claim came back if the fetch waits for it.
      const fetched = lazy.fetch({ queues: ['default'], workerId: 'w1' }).then((jobs) => {
        order.push(`fetch ${jobs.length}`);
      });
      while (!order.includes('promotion issued')) await new Promise((r) => setImmediate(r));
      for (let turns = 0; turns < 50 && !order.includes('fetch 1'); turns++) {
        await new Promise((r) => setImmediate(r));
      }
      release();
      await fetched;
      assert.deepEqual(order, ['promotion issued', 'fetch 1', 'promotion done']);
    } finally {
      release();
      await lazy.stop();
      await inner.close();
    }
  });

  it('a failed promotion does not fail a fetch that claimed jobs (they would be stranded)', async () => {
    const inner = new SqliteStore({ path: ':memory:' });
    await inner.init();
    const failing = new Engine({
      store: holding(inner, () => Promise.reject(new Error('promotion failed'))),
      clock: new ManualClock(T0),
    });
    try {
      await failing.enqueue(push(1));
      const jobs = await failing.fetch({ queues: ['default'], workerId: 'w1' });
      assert.deepEqual(
        jobs.map((job) => job.id),
        [ID(1)],
      );
      assert.equal((await failing.getJob(ID(1))).state, 'active');
    } finally {
      await failing.stop();
      await inner.close();
    }
  });

  it('an empty claim still waits for it: the fetch sees what it promoted', async () => {
    const inner = new SqliteStore({ path: ':memory:' });
    await inner.init();
    const order: string[] = [];
    const promote = async () => {
      order.push('promotion issued');
      await new Promise((r) => setImmediate(r));
      order.push('promotion done');
      return 0;
    };
    const lazy = new Engine({ store: holding(inner, promote), clock: new ManualClock(T0) });
    try {
      const jobs = await lazy.fetch({ queues: ['default'], workerId: 'w1' });
      order.push(`fetch ${jobs.length}`);
      assert.deepEqual(order, ['promotion issued', 'promotion done', 'fetch 0']);
    } finally {
      await lazy.stop();
      await inner.close();
    }
  });
});
