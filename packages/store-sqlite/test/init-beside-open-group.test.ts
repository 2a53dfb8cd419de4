/**
 * A second store opened in a process whose first store holds a group open
 * (its write lock taken, the COMMIT due at the end of the turn or after the
 * sync in flight): the new store's migration takes the write lock on this
 * same thread, which node:sqlite blocks until busy_timeout. init commits
 * the open group first.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { enqueueEvents, parseEnqueueRequest } from '@ojs/core';
import { SqliteStore } from '../src/sqlite-store.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

it('a store initialised while another store of the process has a group open does not wait for its lock', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ojs-init-open-group-'));
  const path = join(dir, 'ojs.db');
  const first = new SqliteStore({ path });
  // A short busy timeout: before the fix, init failed with "database is locked" after it.
  const second = new SqliteStore({ path, busyTimeoutMs: 200 });
  try {
    await first.init();
    const job = parseEnqueueRequest({ type: 'init.test', args: [] }, T0, {
      visibilityTimeoutMs: 30_000,
    });
    // Not awaited: the insert runs now, in a group whose COMMIT is still to come.
    const inserted = first.insertJobs([job], enqueueEvents(job, T0), T0);
    await second.init();
    const [result] = await inserted;
    assert.equal(result!.status, 'inserted');
    assert.equal((await second.getJob(job.id))?.id, job.id);
  } finally {
    await second.close();
    await first.close();
    await rm(dir, { recursive: true, force: true });
  }
});
