/**
 * ping() is the health probe's store check (GET /health, /ready): a
 * liveness check that reads no row, so it is answered at once, not after
 * the open group's COMMIT and WAL sync as a read of data is (decision
 * 0124). A closed store still fails it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { enqueueEvents, parseEnqueueRequest } from '@ojs/core';
import { SqliteStore } from '../src/sqlite-store.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ojs-ping-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SqliteStore.ping', () => {
  it('answers without waiting for the open group to commit and sync', async () => {
    // A file with synchronous FULL (the default): writes wait for a WAL sync.
    const store = new SqliteStore({ path: join(dir, 'ojs.db') });
    await store.init();
    try {
      const job = parseEnqueueRequest({ type: 'ping.test', args: [] }, T0, {
        visibilityTimeoutMs: 30_000,
      });
      const order: string[] = [];
      // The insert opens a group in this turn; the ping comes after it.
      const inserted = store.insertJobs([job], enqueueEvents(job, T0), T0).then(() => {
        order.push('insert');
      });
      const pinged = store.ping().then(() => {
        order.push('ping');
      });
      await Promise.all([inserted, pinged]);
      assert.deepEqual(order, ['ping', 'insert']);
    } finally {
      await store.close();
    }
  });

  it('fails on a closed store', async () => {
    const store = new SqliteStore({ path: join(dir, 'ojs.db') });
    await store.init();
    await store.close();
    await assert.rejects(store.ping());
  });
});
