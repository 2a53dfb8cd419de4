/**
 * enqueueMany (push-many) reports what it stored: the observers learn of
 * the stored jobs once per store write, in item order, and never of a
 * refused or dropped item; the enqueue middleware runs when there is some.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { type JobRecord, ManualClock } from '@ojs/core';
import { SqliteStore } from '@ojs/store-sqlite';
import { Engine } from '../src/engine.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

let store: SqliteStore;
let engine: Engine;
let reports: string[][];

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  // No periodic re-check of a waiting fetch: only a notify wakes it.
  engine = new Engine({ store, clock: new ManualClock(T0), fetchRecheckMs: 600_000 });
  reports = [];
  engine.observers.add({
    enqueued: (jobs: readonly JobRecord[]) => reports.push(jobs.map((job) => job.id)),
  });
});

afterEach(async () => {
  await engine.stop();
  await store.close();
});

const push = (id: string, extra: Record<string, unknown> = {}) => ({
  type: 'report.build',
  args: [id],
  id,
  ...extra,
});
const ID = (n: number) => `019a0000-0000-7000-8000-00000000000${n}`;

describe('enqueueMany', () => {
  it('reports the stored jobs once, in item order, without the refused ones', async () => {
    const outcomes = await engine.enqueueMany([
      push(ID(1)),
      { type: 'Not A Type', args: [] },
      push(ID(2), { options: { queue: 'other' } }),
      push(ID(1)), // the same id again: the first wins
      push(ID(3)),
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['created', 'error', 'created', 'error', 'created'],
    );
    assert.deepEqual(reports, [[ID(1), ID(2), ID(3)]]);
  });

  it('a store refusal: the refused item is answered, the others are stored and reported once', async () => {
    await engine.enqueue(push(ID(2)));
    reports = [];
    const outcomes = await engine.enqueueMany([push(ID(1)), push(ID(2)), push(ID(3))]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['created', 'error', 'created'],
    );
    assert.deepEqual(reports, [[ID(1), ID(3)]]);
  });

  it('wakes a waiting fetch', async () => {
    const fetching = engine.fetch({ queues: ['default'], count: 5, waitMs: 60_000 });
    // Let the fetch find the queue empty and wait.
    while (engine.notifier.waiting === 0) await new Promise((resolve) => setImmediate(resolve));
    await engine.enqueueMany([push(ID(1)), push(ID(2))]);
    const jobs = await fetching;
    assert.ok(jobs.length >= 1);
  });

  it('runs the enqueue middleware of each item when there is some', async () => {
    engine.enqueueMiddleware.add('drop-2-tag-others', async (job, next) => {
      if (job.id === ID(2)) return null;
      return next({ ...job, meta: { ...job.meta, tagged: true } });
    });
    const outcomes = await engine.enqueueMany([push(ID(1)), push(ID(2)), push(ID(3))]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['created', 'dropped', 'created'],
    );
    assert.deepEqual(reports, [[ID(1), ID(3)]]);
    for (const id of [ID(1), ID(3)]) assert.equal((await engine.getJob(id)).meta.tagged, true);
  });
});
