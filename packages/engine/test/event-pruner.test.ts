/**
 * The event pruner deletes in bounded steps (EVENT_PRUNE_STEP per store
 * call), so a large backlog of events never becomes one long write, and it
 * stops between steps when the services stop.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeEvent, type OjsEvent } from '@ojs/core';
import { SqliteStore } from '@ojs/store-sqlite';
import { EVENT_PRUNE_STEP, pruneEventsInSteps } from '../src/services.ts';

describe('event pruner', () => {
  let store: SqliteStore;
  const calls: Array<{ keep: number; limit: number | undefined; removed: number }> = [];
  const counted = {
    pruneEvents: async (keep: number, limit?: number) => {
      const removed = await store.pruneEvents(keep, limit);
      calls.push({ keep, limit, removed });
      return removed;
    },
  };
  const append = async (count: number) => {
    const events: OjsEvent[] = Array.from({ length: count }, (_, i) =>
      makeEvent('job.enqueued', `job-${i}`, { index: i }, 1_700_000_000_000 + i),
    );
    await store.appendEvents(events);
  };

  before(async () => {
    store = new SqliteStore({ path: ':memory:' });
    await store.init();
  });
  after(() => store.close());

  it('prunes down to the retention in steps of EVENT_PRUNE_STEP', async () => {
    const excess = 2 * EVENT_PRUNE_STEP + 123;
    await append(excess + 100);
    calls.length = 0;
    assert.equal(await pruneEventsInSteps(counted, 100), excess);
    assert.deepEqual(
      calls.map((c) => c.removed),
      [EVENT_PRUNE_STEP, EVENT_PRUNE_STEP, 123],
    );
    assert.ok(calls.every((c) => c.keep === 100 && c.limit === EVENT_PRUNE_STEP));
    const left = await store.listEvents({ limit: 1000 });
    assert.equal(left.length, 100);
    assert.equal(left[0]!.data.index, excess, 'the newest events are kept');
  });

  it('stops after the step in progress once the services stop', async () => {
    await append(3 * EVENT_PRUNE_STEP);
    calls.length = 0;
    let stopping = false;
    const removed = await pruneEventsInSteps(
      {
        pruneEvents: async (keep, limit) => {
          const n = await counted.pruneEvents(keep, limit);
          stopping = true;
          return n;
        },
      },
      0,
      () => stopping,
    );
    assert.equal(removed, EVENT_PRUNE_STEP);
    assert.equal(calls.length, 1);
  });
});
