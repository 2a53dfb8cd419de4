/**
 * Cross-process wake-ups are watched only while they are needed on a store
 * that polls for them (SQLite's data_version): an idle engine watches
 * nothing, a waiting fetch watches from before its first claim (another
 * engine's enqueue on the same file wakes it), and the watch stops once no
 * fetch has waited for the linger time. Pushed wake-ups (LISTEN) are
 * subscribed for the engine's whole life.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Store } from '@ojs/core';
import { SqliteStore, SqliteThreadStore } from '@ojs/store-sqlite';
import { Engine } from '../src/engine.ts';
import { Wakeups } from '../src/wakeups.ts';

/** A store whose onJobsAvailable counts subscriptions and reports each unsubscribe. */
function countingStore(polled: boolean) {
  const calls = { subscribed: 0, unsubscribed: 0 };
  let onUnsubscribe: () => void = () => {};
  const store = {
    polledWakeups: polled,
    onJobsAvailable: () => {
      calls.subscribed++;
      return () => {
        calls.unsubscribed++;
        onUnsubscribe();
      };
    },
  } as unknown as Store;
  const unsubscribed = () =>
    new Promise<void>((resolve) => {
      onUnsubscribe = resolve;
    });
  return { store, calls, unsubscribed };
}

describe('Wakeups', () => {
  it('a polled store is watched only while held, and stops after the linger', async () => {
    const { store, calls, unsubscribed } = countingStore(true);
    const wakeups = new Wakeups(store, () => {}, 10);
    assert.equal(wakeups.watching, false, 'nothing waits: nothing watched');
    const releaseA = wakeups.hold();
    const releaseB = wakeups.hold();
    assert.equal(wakeups.watching, true);
    assert.equal(calls.subscribed, 1, 'one subscription for every holder');
    const stopped = unsubscribed();
    releaseA();
    releaseA(); // a second release of the same hold counts once
    releaseB();
    await stopped;
    assert.equal(wakeups.watching, false);
    assert.deepEqual(calls, { subscribed: 1, unsubscribed: 1 });
  });

  it('a hold within the linger keeps the same subscription', async () => {
    const { store, calls, unsubscribed } = countingStore(true);
    const wakeups = new Wakeups(store, () => {}, 60_000);
    wakeups.hold()();
    const release = wakeups.hold(); // the worker's next poll, during the linger
    assert.deepEqual(calls, { subscribed: 1, unsubscribed: 0 });
    const stopped = unsubscribed();
    release();
    wakeups.close();
    await stopped;
    assert.deepEqual(calls, { subscribed: 1, unsubscribed: 1 });
    wakeups.hold();
    assert.equal(wakeups.watching, false, 'closed: never watched again');
  });

  it('pushed wake-ups are subscribed from the start until close', () => {
    const { store, calls } = countingStore(false);
    const wakeups = new Wakeups(store, () => {}, 10);
    assert.equal(wakeups.watching, true);
    wakeups.hold()();
    wakeups.close();
    assert.deepEqual(calls, { subscribed: 1, unsubscribed: 1 });
  });
});

/** Resolves once the engine watches: its fetch took the hold (before its first claim). */
async function watching(engine: Engine): Promise<void> {
  while (!engine.wakeups.watching) await new Promise((resolve) => setTimeout(resolve, 1));
}

for (const [label, open] of [
  ['in the caller thread', (path: string) => new SqliteStore({ path })],
  ['in the store thread', (path: string) => new SqliteThreadStore({ path })],
] as const) {
  describe(`Engine wake-ups on one SQLite file, ${label}`, () => {
    it("a waiting fetch is woken by another engine's enqueue; idle, nothing is watched", {
      timeout: 30_000,
    }, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'ojs-wakeups-'));
      const path = join(dir, 'ojs.db');
      const producerStore = open(path);
      const workerStore = open(path);
      await producerStore.init();
      await workerStore.init();
      // Rechecks far beyond the test's timeout: only the wake-up can deliver the job.
      const worker = new Engine({
        store: workerStore,
        fetchRecheckMs: 600_000,
        maxFetchWaitMs: 600_000,
        wakeupLingerMs: 20,
      });
      const producer = new Engine({ store: producerStore });
      try {
        assert.equal(worker.wakeups.watching, false, 'no fetch waits: nothing watched');
        const fetched = worker.fetch({ queues: ['wake'], workerId: 'w1', waitMs: 600_000 });
        await watching(worker);
        await producer.enqueue({ type: 'wake.test', args: [1], options: { queue: 'wake' } });
        const jobs = await fetched;
        assert.equal(jobs.length, 1);
        assert.equal(jobs[0]!.type, 'wake.test');
        assert.equal(producer.wakeups.watching, false, 'an engine that never waits never watches');
        // The watch ends once no fetch has waited for the linger time.
        while (worker.wakeups.watching) await new Promise((resolve) => setTimeout(resolve, 10));
        // And starts again for the next waiting fetch.
        const next = worker.fetch({ queues: ['wake'], workerId: 'w1', waitMs: 600_000 });
        await watching(worker);
        await producer.enqueue({ type: 'wake.test', args: [2], options: { queue: 'wake' } });
        assert.deepEqual(
          (await next).map((job) => job.args),
          [[2]],
        );
      } finally {
        await worker.stop();
        await producer.stop();
        await producerStore.close();
        await workerStore.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}
