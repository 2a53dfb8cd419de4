/**
 * Batches at the server's limits travel as one function call: a 10,000-job
 * batch enqueue (150,000 arguments, more than a JavaScript call can take
 * spread), a claim and a settlement of 1,000 jobs.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parseEnqueueRequest } from '@ojs/core';
import type { RedisStore } from '../src/index.ts';
import { dropPrefix, openStore, testPrefix, unavailable } from './helpers.ts';

const reason = await unavailable();
const prefix = testPrefix('large');
let store: RedisStore;

before(async () => {
  if (reason === undefined) store = await openStore(prefix);
});
after(async () => {
  if (reason !== undefined) return;
  await store.close();
  await dropPrefix(prefix);
});

test('a 10,000-job batch is inserted, then 1,000 are claimed and settled at once', {
  skip: reason,
}, async () => {
  const now = store.clock.now();
  const jobs = Array.from({ length: 10_000 }, (_, i) =>
    parseEnqueueRequest({ type: 'batch.job', args: [i] }, now, { visibilityTimeoutMs: 60_000 }),
  );
  const inserted = await store.insertJobs(jobs, [], now);
  assert.equal(inserted.filter((r) => r.status === 'inserted').length, 10_000);
  const claimed = await store.claimJobs({
    queues: ['default'],
    count: 1000,
    workerId: 'w1',
    now: store.clock.now(),
  });
  assert.equal(claimed.length, 1000);
  // FIFO: the first 1,000 inserted, in order.
  assert.deepEqual(
    claimed.map((j) => j.args[0]),
    Array.from({ length: 1000 }, (_, i) => i),
  );
  const settled = await store.settleJobs({
    now: store.clock.now(),
    items: claimed.map((j) => ({
      id: j.id,
      workerId: 'w1',
      attempt: j.attempt,
      settlement: { kind: 'complete', result: null },
    })),
  });
  assert.equal(settled.filter((r) => r.status === 'settled').length, 1000);
  assert.equal(await store.countJobs({ states: ['available'] }), 9000);
  assert.equal(await store.countJobs({ states: ['completed'] }), 1000);
});
