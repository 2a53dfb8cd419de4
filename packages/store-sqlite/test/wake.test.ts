/**
 * Cross-connection wake-ups on one SQLite file: a commit by another
 * connection (another process, here another store on the same file) calls
 * the onJobsAvailable listeners, in the store's thread or the caller's.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, it } from 'node:test';
import { enqueueEvents, parseEnqueueRequest, type Store } from '@ojs/core';
import { SqliteStore } from '../src/sqlite-store.ts';
import { SqliteThreadStore } from '../src/thread-store.ts';
import { WakeWatch } from '../src/wake-watch.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

async function insertOne(store: Store): Promise<void> {
  const job = parseEnqueueRequest({ type: 'wake.test', args: [] }, T0, {
    visibilityTimeoutMs: 30_000,
  });
  const [result] = await store.insertJobs([job], enqueueEvents(job, T0), T0);
  assert.equal(result!.status, 'inserted');
}

for (const [label, open] of [
  ['in the caller thread', (path: string) => new SqliteStore({ path })],
  ['in the store thread', (path: string) => new SqliteThreadStore({ path })],
] as const) {
  describe(`SQLite wake-ups across connections, ${label}`, () => {
    it("another connection's commit wakes the listener; unsubscribe stops it", {
      timeout: 20_000,
    }, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'ojs-wake-'));
      const path = join(dir, 'ojs.db');
      const writer = open(path);
      const waiter = open(path);
      await writer.init();
      await waiter.init();
      try {
        let wakes = 0;
        let woken!: () => void;
        const first = new Promise<void>((resolve) => {
          woken = resolve;
        });
        const unsubscribe = waiter.onJobsAvailable!(() => {
          wakes++;
          woken();
        });
        // The store thread starts watching when it handles the subscription;
        // a call made after it is answered after it. A commit before the
        // watch starts is part of its baseline and wakes nobody.
        await waiter.ping();
        await insertOne(writer);
        await first; // the test's own timeout bounds this wait
        assert.ok(wakes >= 1);
        unsubscribe();
      } finally {
        await writer.close();
        await waiter.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}

describe('SQLite wake-ups by the WAL watch', () => {
  it('a commit wakes a watch whose poll would not come for an hour', {
    skip: process.platform !== 'linux' && 'change events of the WAL are checked on Linux (inotify)',
    timeout: 20_000,
  }, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ojs-wake-wal-'));
    const path = join(dir, 'ojs.db');
    const writer = new SqliteStore({ path });
    await writer.init();
    const reader = new DatabaseSync(path);
    const dataVersion = reader.prepare('PRAGMA data_version');
    const watch = new WakeWatch(
      () => (dataVersion.get() as { data_version: number }).data_version,
      { walPath: `${path}-wal`, intervalMs: 3_600_000 },
    );
    // The watch's own handles never keep a process alive; this does, for the wait.
    const alive = setInterval(() => {}, 1000);
    try {
      // Bounded by the test's timeout, which aborts t.signal: the test then fails and cleans up.
      const woken = new Promise<void>((resolve, reject) => {
        watch.subscribe(resolve);
        t.signal.addEventListener('abort', () =>
          reject(new Error('no wake-up from the WAL watch')),
        );
      });
      await insertOne(writer);
      await woken;
    } finally {
      clearInterval(alive);
      watch.stop();
      reader.close();
      await writer.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite wake-ups: the poll', () => {
  it('polls every 5 ms without a WAL watch, every 100 ms as the safety net of one', {
    skip: process.platform !== 'linux' && 'change events of the WAL are checked on Linux (inotify)',
  }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ojs-wake-poll-'));
    try {
      const polled = new WakeWatch(() => 1);
      const unwatched = polled.subscribe(() => {});
      assert.equal(polled.pollIntervalMs, 5, 'no WAL path: the poll alone, at its pace');
      unwatched();
      const watched = new WakeWatch(() => 1, { walPath: join(dir, 'ojs.db-wal') });
      const unsubscribe = watched.subscribe(() => {});
      assert.equal(
        watched.pollIntervalMs,
        100,
        'the folder is watched: the poll is the safety net',
      );
      unsubscribe();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
