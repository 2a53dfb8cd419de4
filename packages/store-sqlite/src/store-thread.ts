/**
 * The store thread: owns the SQLite connection and runs SqliteStore, so
 * statements, JSON work and every COMMIT's fsync happen off the server's
 * event loop. Calls arriving in one turn share one group commit.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type InsertResult, type SettleResult, startQuietGc } from '@ojs/core';
import { SqliteStore } from './sqlite-store.ts';
import {
  type Call,
  type Reply,
  STORE_METHODS,
  sendError,
  sendInsertResults,
  sendSettleResults,
  WATCH_METHOD,
} from './thread-protocol.ts';

import type { SqliteThreadStoreOptions } from './thread-store.ts';

const port = parentPort!;
const options = workerData as SqliteThreadStoreOptions;
// Claimed jobs reach the server's thread as structured clones, so the store
// may keep the objects it returned until they are settled (core ClaimedJobs).
const store = new SqliteStore({ callerGetsCopies: true, ...options });
if (options.quietGc === true) startQuietGc();
const allowed = new Set<string>(STORE_METHODS);

let replies: Reply[] = [];
function reply(message: Reply): void {
  if (replies.length === 0) queueMicrotask(flushReplies);
  replies.push(message);
}
function flushReplies(): void {
  const batch = replies;
  replies = [];
  port.postMessage(batch);
}

let unwatch: (() => void) | undefined;

/** Starts or stops forwarding cross-connection wake-ups to the server's thread. */
function watch(on: boolean): void {
  if (on && unwatch === undefined) {
    unwatch = store.onJobsAvailable(() => port.postMessage([{ wake: true }]));
  } else if (!on && unwatch !== undefined) {
    unwatch();
    unwatch = undefined;
  }
}

function run(call: Call): void {
  let pending: Promise<unknown>;
  try {
    if (call.method === WATCH_METHOD) {
      watch(call.args[0] === true);
      reply({ id: call.id, value: null });
      return;
    }
    if (!allowed.has(call.method)) throw new Error(`Unknown store method '${call.method}'.`);
    const method = store[call.method] as (...args: unknown[]) => Promise<unknown>;
    pending = method.apply(store, call.args);
  } catch (error) {
    pending = Promise.reject(error);
  }
  pending.then(
    (value) =>
      reply({
        id: call.id,
        value:
          call.method === 'settleJobs'
            ? sendSettleResults(value as SettleResult[])
            : call.method === 'insertJobs'
              ? sendInsertResults(value as InsertResult[])
              : value,
      }),
    (error: unknown) => reply({ id: call.id, error: sendError(error) }),
  );
}

port.on('message', (calls: Call[]) => {
  for (const call of calls) run(call);
});
