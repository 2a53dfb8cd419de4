/**
 * Cross-process wake-ups are watched only while they are needed on a store
 * that polls for them (SQLite's data_version and the WAL's change events):
 * an idle engine watches nothing, nor does one whose fetches fill; a fetch
 * about to wait watches from then on (another engine's enqueue on the same
 * file wakes it, even one committed between its claim and the watch's
 * start), and the watch stops once no fetch has waited for the linger
 * time. Pushed wake-ups (LISTEN) are subscribed for the engine's whole
 * life.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
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

/** Resolves once the engine watches: its fetch's claim came back empty and it took the hold. */
async function watching(engine: Engine): Promise<void> {
  while (!engine.wakeups.watching) await new Promise((resolve) => setTimeout(resolve, 1));
}

/**
 * `Store` with a hook run after each claim that came back empty, before
 * the fetch hears of it: where another process's commit is the hardest to
 * see (after the claim's read, before the watch started).
 */
// biome-ignore lint/suspicious/noExplicitAny: a mixin's constructor signature, as TypeScript requires it
function racing<T extends new (...args: any[]) => Store>(Base: T) {
  return class extends Base {
    afterEmptyClaim: (() => Promise<void>) | undefined;
    override async claimJobs(request: Parameters<Store['claimJobs']>[0]) {
      const jobs = await super.claimJobs(request);
      const hook = this.afterEmptyClaim;
      if (jobs.length === 0 && hook !== undefined) {
        this.afterEmptyClaim = undefined;
        await hook();
      }
      return jobs;
    }
  };
}

/**
 * A worker engine and a producer engine on one new SQLite file, closed with
 * the test. The worker rechecks far beyond any test's timeout: only a
 * wake-up or a claim of its own can deliver a job to its waiting fetch.
 */
async function twoEngines(
  t: TestContext,
  open: (path: string) => Store & { afterEmptyClaim: (() => Promise<void>) | undefined },
  workerOptions: { wakeupLingerMs?: number } = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'ojs-wakeups-'));
  const path = join(dir, 'ojs.db');
  const workerStore = open(path);
  const producerStore = open(path);
  await workerStore.init();
  await producerStore.init();
  const worker = new Engine({
    store: workerStore,
    fetchRecheckMs: 600_000,
    maxFetchWaitMs: 600_000,
    ...workerOptions,
  });
  const producer = new Engine({ store: producerStore });
  t.after(async () => {
    await worker.stop();
    await producer.stop();
    await workerStore.close();
    await producerStore.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { worker, producer, workerStore };
}

for (const [label, Store] of [
  ['in the caller thread', racing(SqliteStore)],
  ['in the store thread', racing(SqliteThreadStore)],
] as const) {
  const open = (path: string) => new Store({ path });
  describe(`Engine wake-ups on one SQLite file, ${label}`, () => {
    it('a fetch whose claim fills never watches', async (t) => {
      const dir = await mkdtemp(join(tmpdir(), 'ojs-wakeups-'));
      const store = open(join(dir, 'ojs.db'));
      await store.init();
      const engine = new Engine({ store, wakeupLingerMs: 20 });
      t.after(async () => {
        await engine.stop();
        await store.close();
        await rm(dir, { recursive: true, force: true });
      });
      for (let i = 0; i < 3; i++) {
        await engine.enqueue({ type: 'wake.test', args: [i], options: { queue: 'full' } });
      }
      const jobs = await engine.fetch({
        queues: ['full'],
        workerId: 'w1',
        count: 3,
        waitMs: 600_000,
      });
      assert.equal(jobs.length, 3);
      assert.equal(engine.wakeups.watching, false, 'a full claim never waited: nothing watched');
    });

    it("another engine's enqueue between a fetch's empty claim and its watch still wakes it", {
      timeout: 10_000,
    }, async (t) => {
      // Only a claim after the watch started can deliver the job (the watch saw no commit).
      const { worker, producer, workerStore } = await twoEngines(t, open);
      let enqueued = false;
      workerStore.afterEmptyClaim = async () => {
        assert.equal(worker.wakeups.watching, false, 'not watched while the claim ran');
        await producer.enqueue({ type: 'wake.test', args: ['raced'], options: { queue: 'race' } });
        enqueued = true;
      };
      const jobs = await worker.fetch({ queues: ['race'], workerId: 'w1', waitMs: 600_000 });
      assert.ok(enqueued);
      assert.deepEqual(
        jobs.map((job) => job.args),
        [['raced']],
      );
    });

    it("a waiting fetch is woken by another engine's enqueue; idle, nothing is watched", {
      timeout: 30_000,
    }, async (t) => {
      const { worker, producer } = await twoEngines(t, open, { wakeupLingerMs: 20 });
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
    });
  });
}
