/**
 * Two stores on one fresh database file, as two server processes share it
 * (no checkpointer threads); `close` closes both and removes the folder.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore, type SqliteStoreOptions } from '../src/sqlite-store.ts';

type Options = Omit<SqliteStoreOptions, 'path'>;

export async function twoStores(prefix: string, first: Options = {}, second: Options = {}) {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const path = join(dir, 'ojs.db');
  const a = new SqliteStore({ path, checkpointThread: false, ...first });
  const b = new SqliteStore({ path, checkpointThread: false, ...second });
  await a.init();
  await b.init();
  const close = async () => {
    await a.close();
    await b.close();
    await rm(dir, { recursive: true, force: true });
  };
  return { a, b, dir, path, close };
}
