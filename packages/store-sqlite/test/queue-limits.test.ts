/**
 * The claim reads a queue's pause and limits once per group (SqliteStore
 * #queueLimits): a change this store makes inside the group, or another
 * connection makes between groups, is what the next claim obeys.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { enqueueEvents, parseEnqueueRequest } from '@ojs/core';
import type { SqliteStore } from '../src/sqlite-store.ts';
import { twoStores } from './two-stores.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const QUEUE = 'limits';

let a: SqliteStore;
let b: SqliteStore;
let close: () => Promise<void>;

beforeEach(async () => {
  ({ a, b, close } = await twoStores('ojs-limits-'));
  const jobs = Array.from({ length: 6 }, (_, i) =>
    parseEnqueueRequest({ type: 'limits.test', args: [i], options: { queue: QUEUE } }, T0, {
      visibilityTimeoutMs: 30_000,
    }),
  );
  await a.insertJobs(
    jobs,
    jobs.flatMap((j) => enqueueEvents(j, T0)),
    T0,
  );
});

afterEach(async () => {
  await close();
});

const claim = (store: SqliteStore) =>
  store.claimJobs({ queues: [QUEUE], count: 1, workerId: 'w', now: T0 });

describe('SQLite queue limits read once per group', () => {
  it("a pause or a concurrency limit set in the group holds for the group's later claims", async () => {
    // One turn: one group. The first claim reads the queue's row.
    const [first, , paused, , resumed, , limited] = await Promise.all([
      claim(a),
      a.setQueuePaused(QUEUE, true, T0),
      claim(a),
      a.setQueuePaused(QUEUE, false, T0),
      claim(a),
      a.setQueueConfig(QUEUE, { concurrency: 2 }, T0),
      claim(a),
    ]);
    assert.deepEqual(
      [first, paused, resumed, limited].map((jobs) => jobs.length),
      [1, 0, 1, 0],
    );
  });

  it("another connection's pause holds for the next group", async () => {
    assert.equal((await claim(a)).length, 1);
    await b.setQueuePaused(QUEUE, true, T0);
    assert.equal((await claim(a)).length, 0);
    await b.setQueuePaused(QUEUE, false, T0);
    assert.equal((await claim(a)).length, 1);
  });
});
