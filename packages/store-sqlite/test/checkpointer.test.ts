/**
 * The WAL checkpointer thread (checkpointer.js) starts with the first write
 * that changes a row, not at init (decision 0108): a V8 isolate of its own
 * that an idle server, whose periodic promotion changes nothing, does not
 * need. Thread creation is observed on Node's `worker_threads` diagnostics
 * channel.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { enqueueEvents, parseEnqueueRequest } from '@ojs/core';
import { SqliteStore } from '../src/sqlite-store.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

let dir: string;
let threads: number;
const onThread = () => {
  threads++;
};

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ojs-checkpointer-'));
  threads = 0;
  subscribe('worker_threads', onThread);
});

afterEach(async () => {
  unsubscribe('worker_threads', onThread);
  await rm(dir, { recursive: true, force: true });
});

async function insertOne(store: SqliteStore): Promise<string> {
  const job = parseEnqueueRequest({ type: 'checkpointer.test', args: [] }, T0, {
    visibilityTimeoutMs: 30_000,
  });
  await store.insertJobs([job], enqueueEvents(job, T0), T0);
  return job.id;
}

/**
 * Resolves once the database file itself (not the WAL) holds `text`: a
 * checkpoint copied the page in. Polled: a checkpoint announces nothing.
 */
async function checkpointedInto(path: string, text: string): Promise<void> {
  for (let tries = 0; tries < 500; tries++) {
    if ((await readFile(path)).includes(text)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`${text} never reached ${path}`);
}

/** Runs `fn` on an initialised store, closed after it. */
async function withStore(
  options: ConstructorParameters<typeof SqliteStore>[0],
  fn: (store: SqliteStore) => Promise<unknown>,
): Promise<void> {
  const store = new SqliteStore(options);
  try {
    await store.init();
    await fn(store);
  } finally {
    await store.close();
  }
}

describe('the checkpointer thread', () => {
  it('is not started by init, reads or writes that change nothing; the first insert starts it once', async () => {
    await withStore({ path: join(dir, 'ojs.db') }, async (store) => {
      assert.equal(await store.promoteDueJobs(T0), 0);
      await store.listSettings('any');
      assert.equal(threads, 0);
      await insertOne(store);
      assert.equal(threads, 1);
      await insertOne(store);
      assert.equal(threads, 1);
    });
  });

  it('a store reopened on a file that has rows waits for its own first change too', async () => {
    const path = join(dir, 'ojs.db');
    await withStore({ path }, insertOne);
    threads = 0;
    await withStore({ path }, async (store) => {
      await store.promoteDueJobs(T0);
      assert.equal(threads, 0);
      await insertOne(store);
      assert.equal(threads, 1);
    });
  });

  it('checkpoints every commit, also the first after ticks it skipped as idle', async () => {
    const path = join(dir, 'ojs.db');
    await withStore({ path }, async (store) => {
      await checkpointedInto(path, await insertOne(store));
      // Idle ticks (nothing committed) read the data version and skip; a
      // commit after them changes it and is checkpointed.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await checkpointedInto(path, await insertOne(store));
      await checkpointedInto(path, await insertOne(store));
    });
  });

  it('is never started when turned off or in memory', async () => {
    await withStore({ path: join(dir, 'off.db'), checkpointThread: false }, insertOne);
    await withStore({ path: ':memory:' }, insertOne);
    assert.equal(threads, 0);
  });
});
