/**
 * The WAL checkpointer thread. By default SQLite checkpoints inside the
 * COMMIT that pushes the WAL past 1000 pages: that commit copies the WAL
 * into the database file and fsyncs it, stalling the thread that runs the
 * store. Here a second connection on its own thread runs PASSIVE
 * checkpoints (they never block writers) every few milliseconds, so the
 * store's COMMIT only appends to the WAL. The store keeps a much larger
 * auto-checkpoint as a safety net should this thread ever stop.
 *
 * Plain JavaScript on purpose: a thread that loads a .ts file loads Node's
 * TypeScript stripper too (tens of MB of memory for a dozen lines).
 */
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

/** @type {{ path: string, intervalMs: number }} */
const { path, intervalMs } = workerData;
const db = new DatabaseSync(path);
db.exec('PRAGMA busy_timeout = 100');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
// Changes whenever another connection commits (this one only checkpoints).
const dataVersion = db.prepare('PRAGMA data_version');

/**
 * data_version when the last checkpoint copied the whole WAL; undefined
 * while some of it is left (a reader held it back, or it failed). An idle
 * server's ticks then only read the version, where each PASSIVE
 * checkpoint walked the WAL index: 6-11 ms of CPU a second on this
 * thread with nothing written.
 */
let doneAt;

const timer = setInterval(() => {
  try {
    const version = dataVersion.get().data_version;
    if (version === doneAt) return;
    const { log, checkpointed } = checkpoint.get();
    doneAt = checkpointed === log ? version : undefined;
  } catch {
    // Busy or locked: the next tick tries again; the safety net still holds.
    doneAt = undefined;
  }
}, intervalMs);

parentPort?.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
