/**
 * The shared store suite on SQLite, in memory and in a temp file (WAL).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStoreSuite } from '@ojs/store-testkit';
import { SqliteStore } from '../src/sqlite-store.ts';
import { SqliteThreadStore } from '../src/thread-store.ts';

runStoreSuite('sqlite :memory:', async () => {
  const store = new SqliteStore({ path: ':memory:' });
  await store.init();
  return { store };
});

runStoreSuite('sqlite file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ojs-store-suite-'));
  const store = new SqliteStore({ path: join(dir, 'ojs.db') });
  await store.init();
  return { store, cleanup: () => rm(dir, { recursive: true, force: true }) };
});

// The server's default: the same store on its own thread (thread-store.ts).
runStoreSuite('sqlite file, store thread', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ojs-store-suite-'));
  const store = new SqliteThreadStore({ path: join(dir, 'ojs.db') });
  await store.init();
  return { store, cleanup: () => rm(dir, { recursive: true, force: true }) };
});
