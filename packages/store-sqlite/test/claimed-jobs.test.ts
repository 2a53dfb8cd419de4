/**
 * Kept claimed jobs (SqliteStoreOptions.keepClaimed, core ClaimedJobs): an
 * ACK or a FAIL of a job this store claimed is decided on its kept copy,
 * and a copy made stale by another writer (another process on the same
 * file, or this store's own guarded commit) never settles the job: the
 * guard refuses it and the settlement is decided again on the row.
 * Both stores run in this thread: A keeps its claimed jobs, B (another
 * connection to the same file, as another server process) keeps none.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  cancel,
  enqueueEvents,
  type JobRecord,
  parseEnqueueRequest,
  type SettleItem,
  type SettleResult,
} from '@ojs/core';
import { SqliteStore } from '../src/sqlite-store.ts';
import { twoStores } from './two-stores.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const VISIBILITY_MS = 30_000;
const QUEUE = 'kept';

let dir: string;
let a: SqliteStore;
let b: SqliteStore;
let close: () => Promise<void>;

beforeEach(async () => {
  ({ a, b, dir, close } = await twoStores('ojs-kept-', { keepClaimed: 100 }, { keepClaimed: 0 }));
});

afterEach(async () => {
  await close();
});

async function insert(store: SqliteStore, count: number): Promise<JobRecord[]> {
  const jobs = Array.from({ length: count }, (_, i) =>
    parseEnqueueRequest({ type: 'kept.test', args: [i], options: { queue: QUEUE } }, T0, {
      visibilityTimeoutMs: VISIBILITY_MS,
    }),
  );
  const results = await store.insertJobs(
    jobs,
    jobs.flatMap((j) => enqueueEvents(j, T0)),
    T0,
  );
  return results.map((r) => (r as { job: JobRecord }).job);
}

async function claim(store: SqliteStore, workerId: string, now: number, count = 1) {
  return store.claimJobs({ queues: [QUEUE], count, workerId, now });
}

const ack = (job: JobRecord): SettleItem => ({
  id: job.id,
  workerId: job.worker_id,
  attempt: job.attempt,
  settlement: { kind: 'complete', result: { done: job.id } },
});

function statuses(results: SettleResult[]): string[] {
  return results.map((r) => r.status);
}

async function stored(store: SqliteStore, id: string): Promise<JobRecord> {
  const job = await store.getJob(id);
  assert.notEqual(job, null);
  return job!;
}

describe('SQLite kept claimed jobs (keepClaimed)', () => {
  it('settles a batch of kept jobs: ACKs and a FAIL, each stored with its event', async () => {
    await insert(a, 3);
    const claimed = await claim(a, 'w1', T0 + 1000, 3);
    assert.equal(claimed.length, 3);
    const now = T0 + 3000;
    const results = await a.settleJobs({
      items: [
        ack(claimed[0]!),
        ack(claimed[1]!),
        {
          id: claimed[2]!.id,
          workerId: 'w1',
          attempt: 1,
          settlement: { kind: 'fail', error: { code: 'boom', message: 'no', retryable: true } },
        },
      ],
      now,
      random: () => 0.5,
    });
    assert.deepEqual(statuses(results), ['settled', 'settled', 'settled']);
    const first = await stored(b, claimed[0]!.id);
    assert.equal(first.state, 'completed');
    assert.deepEqual(first.result, { done: claimed[0]!.id });
    assert.equal(first.lease_until, undefined);
    const failed = await stored(b, claimed[2]!.id);
    assert.equal(failed.state, 'retryable');
    assert.equal(failed.attempt, 1);
    assert.equal(failed.errors.length, 1);
    const events = await b.listEvents({ types: ['job.completed'], limit: 10 });
    assert.equal(events.length, 2);
    assert.equal(events[0]!.data.duration_ms, 2000);
  });

  it("a job another connection reaped and re-claimed: the stale copy's ACK is refused, the new holder's ACK commits", async () => {
    const [job] = await insert(a, 1);
    const [first] = await claim(a, 'w1', T0);
    assert.equal(first!.id, job!.id);
    // B (another process) expires the lease and hands the job to w2 (attempt 2).
    const late = T0 + VISIBILITY_MS + 1;
    const expired = await b.settleJobs({
      items: [{ id: job!.id, workerId: 'w1', attempt: 1, settlement: { kind: 'expire' } }],
      now: late,
      random: () => 0.5,
    });
    assert.deepEqual(statuses(expired), ['settled']);
    // A lease expiry puts the job straight back (the lost attempt counts; retries are left).
    assert.equal((await stored(b, job!.id)).state, 'available');
    const [second] = await claim(b, 'w2', late + 1);
    assert.equal(second!.id, job!.id);
    assert.equal(second!.attempt, 2);

    // w1's ACK reaches A, which still keeps its copy of attempt 1.
    const refused = await a.settleJobs({ items: [ack(first!)], now: late + 2 });
    assert.deepEqual(statuses(refused), ['conflict']);
    const row = await stored(b, job!.id);
    assert.equal(row.state, 'active');
    assert.equal(row.worker_id, 'w2');
    assert.equal(row.attempt, 2);

    const accepted = await a.settleJobs({ items: [ack(second!)], now: late + 3 });
    assert.deepEqual(statuses(accepted), ['settled']);
    assert.equal((await stored(b, job!.id)).state, 'completed');
  });

  it("a job cancelled after its claim: the kept copy's ACK gets the row's conflict and the job stays cancelled", async () => {
    await insert(a, 1);
    const [claimed] = await claim(a, 'w1', T0);
    const current = await stored(b, claimed!.id);
    const cancelled = cancel(current, T0 + 10);
    assert.equal(await b.commit({ updates: [{ job: cancelled, expectRev: current.rev }] }), true);

    const [result] = await a.settleJobs({ items: [ack(claimed!)], now: T0 + 20 });
    assert.equal(result!.status, 'conflict');
    assert.match((result as { error: Error }).error.message, /cancelled/);
    assert.equal((await stored(b, claimed!.id)).state, 'cancelled');
  });

  it('a heartbeat between claim and ACK: the kept copy still settles, and the lease is cleared', async () => {
    await insert(a, 1);
    const [claimed] = await claim(a, 'w1', T0);
    const [extended] = await a.extendLeases(
      [{ id: claimed!.id, workerId: 'w1', attempt: 1 }],
      T0 + 5000,
    );
    assert.equal(extended!.status, 'extended');
    const [result] = await a.settleJobs({ items: [ack(claimed!)], now: T0 + 6000 });
    assert.equal(result!.status, 'settled');
    const row = await stored(b, claimed!.id);
    assert.equal(row.state, 'completed');
    assert.equal(row.lease_until, undefined);
  });

  it('the same job twice in one batch: the first settles, the second is refused on the row', async () => {
    await insert(a, 1);
    const [claimed] = await claim(a, 'w1', T0);
    const results = await a.settleJobs({ items: [ack(claimed!), ack(claimed!)], now: T0 + 10 });
    assert.deepEqual(statuses(results), ['settled', 'conflict']);
    const events = await b.listEvents({ types: ['job.completed'], limit: 10 });
    assert.equal(events.length, 1);
  });

  it('a FAIL with the wrong worker on a kept copy is refused, and the holder can still ACK', async () => {
    await insert(a, 1);
    const [claimed] = await claim(a, 'w1', T0);
    const [wrong] = await a.settleJobs({
      items: [{ ...ack(claimed!), workerId: 'intruder' }],
      now: T0 + 10,
    });
    assert.equal(wrong!.status, 'conflict');
    assert.equal((await stored(b, claimed!.id)).state, 'active');
    const [right] = await a.settleJobs({ items: [ack(claimed!)], now: T0 + 20 });
    assert.equal(right!.status, 'settled');
  });
});

describe('records read-only (recordsReadOnly, the server)', () => {
  it('keeps the claimed record itself, frozen under test, and decides its ACK on it', async () => {
    const path = join(dir, 'read-only.db');
    const store = new SqliteStore({ path, recordsReadOnly: true, checkpointThread: false });
    await store.init();
    try {
      await insert(store, 1);
      const [job] = await claim(store, 'w1', T0 + 1);
      // Kept as handed out: a caller's change would change what the ACK is decided on.
      assert.ok(Object.isFrozen(job));
      assert.ok(Object.isFrozen(job!.args));
      assert.throws(() => {
        (job as { state: string }).state = 'available';
      }, TypeError);
      const results = await store.settleJobs({ items: [ack(job!)], now: T0 + 2 });
      assert.deepEqual(statuses(results), ['settled']);
      assert.equal((await stored(store, job!.id)).state, 'completed');
    } finally {
      await store.close();
    }
  });
});
