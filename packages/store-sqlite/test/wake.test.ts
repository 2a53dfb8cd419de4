/**
 * Cross-connection wake-ups on one SQLite file: a commit by another
 * connection (another process, here another store on the same file) calls
 * the onJobsAvailable listeners, in the store's thread or the caller's.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { enqueueEvents, parseEnqueueRequest, type Store } from '@ojs/core';
import { SqliteStore } from '../src/sqlite-store.ts';
import { SqliteThreadStore } from '../src/thread-store.ts';

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
