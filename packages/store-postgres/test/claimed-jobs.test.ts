/**
 * Kept claimed jobs (PostgresStoreOptions.keepClaimed, core ClaimedJobs): an
 * ACK or a FAIL of a job this store claimed is decided on its kept copy and
 * written by one guarded statement, without `lockJobs`; a copy made stale by
 * another writer (another process on the same schema, a cancel) never
 * settles the job: the guard refuses it and the settlement is decided again
 * on the row. A keeps its claimed jobs (the default); B, another store on
 * the same schema (as another server process), keeps none.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it, test } from 'node:test';
import {
  cancel,
  enqueueEvents,
  type JobRecord,
  parseEnqueueRequest,
  type SettleItem,
  type SettleResult,
} from '@ojs/core';
import pg from 'pg';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, testSchema, unavailable } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const VISIBILITY_MS = 30_000;
const QUEUE = 'kept';

/** The prepared statements run by the stores' connections, by name (ojs_lockJobs, ...). */
const statementsRun: string[] = [];

class CountingClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's overloads of query
  override query(config: any, ...rest: any[]): any {
    // Prepared statements by name; BEGIN and COMMIT by text.
    if (typeof config === 'object' && config !== null)
      statementsRun.push(config.name ?? config.text);
    else if (typeof config === 'string') statementsRun.push(config);
    return (super.query as (...args: unknown[]) => unknown)(config, ...rest);
  }
}

const ack = (job: JobRecord): SettleItem => ({
  id: job.id,
  workerId: job.worker_id,
  attempt: job.attempt,
  settlement: { kind: 'complete', result: { done: job.id } },
});

const failure = (job: JobRecord): SettleItem => ({
  id: job.id,
  workerId: job.worker_id,
  attempt: job.attempt,
  settlement: { kind: 'fail', error: { code: 'boom', message: 'no', retryable: true } },
});

function statuses(results: SettleResult[]): string[] {
  return results.map((r) => r.status);
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL kept claimed jobs', { skip: reason }, () => {});
} else {
  describe('PostgreSQL kept claimed jobs (keepClaimed)', () => {
    const schema = testSchema('kept');
    let a: PostgresStore;
    let b: PostgresStore;

    before(async () => {
      a = await openStore(schema, {
        pool: { Client: CountingClient as unknown as pg.PoolConfig['Client'] },
        countCompactionIntervalMs: 0,
      });
      b = await openStore(schema, { keepClaimed: 0 });
    });

    after(async () => {
      await a.close();
      await b.close();
      await dropSchema(schema);
    });

    beforeEach(async () => {
      await a.reset();
      statementsRun.length = 0;
    });

    afterEach(() => {
      statementsRun.length = 0;
    });

    async function insert(count: number): Promise<JobRecord[]> {
      const jobs = Array.from({ length: count }, (_, i) =>
        parseEnqueueRequest({ type: 'kept.test', args: [i], options: { queue: QUEUE } }, T0, {
          visibilityTimeoutMs: VISIBILITY_MS,
        }),
      );
      const results = await b.insertJobs(
        jobs,
        jobs.flatMap((j) => enqueueEvents(j, T0)),
        T0,
      );
      return results.map((r) => (r as { job: JobRecord }).job);
    }

    const claim = (store: PostgresStore, workerId: string, now: number, count = 1) =>
      store.claimJobs({ queues: [QUEUE], count, workerId, now });

    async function stored(id: string): Promise<JobRecord> {
      const job = await b.getJob(id);
      assert.notEqual(job, null);
      return job!;
    }

    /** B expires `job`'s lease and claims it again for `workerId` (attempt 2). */
    async function reclaimElsewhere(job: JobRecord, workerId: string): Promise<JobRecord> {
      const late = T0 + VISIBILITY_MS + 1;
      const expired = await b.settleJobs({
        items: [
          { id: job.id, workerId: job.worker_id, attempt: 1, settlement: { kind: 'expire' } },
        ],
        now: late,
        random: () => 0.5,
      });
      assert.deepEqual(statuses(expired), ['settled']);
      const [again] = await claim(b, workerId, late + 1);
      assert.equal(again!.id, job.id);
      assert.equal(again!.attempt, 2);
      return again!;
    }

    it('settles a batch of kept jobs with one statement on its own (no BEGIN, no COMMIT), each with its events', async () => {
      await insert(3);
      const claimed = await claim(a, 'w1', T0 + 1000, 3);
      assert.equal(claimed.length, 3);
      statementsRun.length = 0;
      const results = await a.settleJobs({
        items: [ack(claimed[0]!), ack(claimed[1]!), failure(claimed[2]!)],
        now: T0 + 3000,
        random: () => 0.5,
      });
      assert.deepEqual(statuses(results), ['settled', 'settled', 'settled']);
      assert.deepEqual(statementsRun, ['ojs_settleJobs']);
      const first = await stored(claimed[0]!.id);
      assert.equal(first.state, 'completed');
      assert.deepEqual(first.result, { done: claimed[0]!.id });
      assert.equal(first.lease_until, undefined);
      assert.deepEqual(first.args, [0]);
      const failed = await stored(claimed[2]!.id);
      assert.equal(failed.state, 'retryable');
      assert.equal(failed.errors.length, 1);
      const completed = await b.listEvents({ types: ['job.completed'], limit: 10 });
      assert.equal(completed.length, 2);
      assert.equal(completed[0]!.data.duration_ms, 2000);
      assert.equal((await b.listEvents({ types: ['job.retrying'], limit: 10 })).length, 1);
    });

    it("a job another store reaped and re-claimed: the stale copy's ACK is refused, the row keeps its new holder", async () => {
      await insert(1);
      const [first] = await claim(a, 'w1', T0);
      const second = await reclaimElsewhere(first!, 'w2');

      // w1's ACK reaches A, which still keeps its copy of attempt 1.
      const [refused] = await a.settleJobs({ items: [ack(first!)], now: T0 + VISIBILITY_MS + 2 });
      assert.equal(refused!.status, 'conflict');
      // Decided again on the row: reported with the job as stored.
      assert.equal((refused as { job: JobRecord }).job.worker_id, 'w2');
      assert.ok(statementsRun.includes('ojs_lockJobs'));
      const row = await stored(first!.id);
      assert.equal(row.state, 'active');
      assert.equal(row.worker_id, 'w2');
      assert.equal(row.attempt, 2);
      assert.equal((await b.listEvents({ types: ['job.completed'], limit: 10 })).length, 0);

      // The new holder's ACK, through A (which never claimed attempt 2), commits.
      const [accepted] = await a.settleJobs({
        items: [ack(second)],
        now: T0 + VISIBILITY_MS + 3,
      });
      assert.equal(accepted!.status, 'settled');
      assert.equal((await stored(first!.id)).state, 'completed');
    });

    it("a job cancelled after its claim: the kept copy's ACK gets the row's conflict and the job stays cancelled", async () => {
      await insert(1);
      const [claimed] = await claim(a, 'w1', T0);
      const current = await stored(claimed!.id);
      const cancelled = cancel(current, T0 + 10);
      assert.equal(await b.commit({ updates: [{ job: cancelled, expectRev: current.rev }] }), true);

      const [result] = await a.settleJobs({ items: [ack(claimed!)], now: T0 + 20 });
      assert.equal(result!.status, 'conflict');
      assert.match((result as { error: Error }).error.message, /cancelled/);
      assert.equal((await stored(claimed!.id)).state, 'cancelled');
    });

    it('a heartbeat between claim and ACK: the kept copy still settles, and the lease is cleared', async () => {
      await insert(1);
      const [claimed] = await claim(a, 'w1', T0);
      const [extended] = await b.extendLeases(
        [{ id: claimed!.id, workerId: 'w1', attempt: 1 }],
        T0 + 5000,
      );
      assert.equal(extended!.status, 'extended');
      statementsRun.length = 0;
      const [result] = await a.settleJobs({ items: [ack(claimed!)], now: T0 + 6000 });
      assert.equal(result!.status, 'settled');
      assert.deepEqual(statementsRun, ['ojs_settleJobs']);
      const row = await stored(claimed!.id);
      assert.equal(row.state, 'completed');
      assert.equal(row.lease_until, undefined);
    });

    it('an expiry is decided on the row: a lease a heartbeat extended is not expired on an old copy', async () => {
      await insert(1);
      const [claimed] = await claim(a, 'w1', T0);
      // Extended to T0 + 10,000 + 30,000; the copy still says T0 + 30,000.
      await b.extendLeases([{ id: claimed!.id, workerId: 'w1', attempt: 1 }], T0 + 10_000);
      const [result] = await a.settleJobs({
        items: [{ id: claimed!.id, workerId: 'w1', attempt: 1, settlement: { kind: 'expire' } }],
        now: T0 + VISIBILITY_MS + 1,
      });
      assert.equal(result!.status, 'conflict');
      assert.match((result as { error: Error }).error.message, /still holds its lease/);
      assert.equal((await stored(claimed!.id)).state, 'active');
    });

    it('the same job twice in one batch: the first settles, the second is decided against it', async () => {
      await insert(1);
      const [claimed] = await claim(a, 'w1', T0);
      statementsRun.length = 0;
      const results = await a.settleJobs({ items: [ack(claimed!), ack(claimed!)], now: T0 + 10 });
      assert.deepEqual(statuses(results), ['settled', 'conflict']);
      assert.equal((results[1] as { job: JobRecord }).job.state, 'completed');
      // A repeated id is decided against the item before it: one transaction.
      assert.deepEqual(statementsRun, ['BEGIN', 'ojs_settleJobs', 'COMMIT']);
      assert.equal((await b.listEvents({ types: ['job.completed'], limit: 10 })).length, 1);
    });

    it('the same stale job twice in one batch: both refused on the row', async () => {
      await insert(1);
      const [first] = await claim(a, 'w1', T0);
      await reclaimElsewhere(first!, 'w2');
      const results = await a.settleJobs({
        items: [ack(first!), failure(first!)],
        now: T0 + VISIBILITY_MS + 2,
      });
      assert.deepEqual(statuses(results), ['conflict', 'conflict']);
      const row = await stored(first!.id);
      assert.equal(row.state, 'active');
      assert.equal(row.worker_id, 'w2');
    });

    it('a FAIL with the wrong worker on a kept copy is refused, and the holder can still ACK', async () => {
      await insert(1);
      const [claimed] = await claim(a, 'w1', T0);
      const [wrong] = await a.settleJobs({
        items: [{ ...failure(claimed!), workerId: 'intruder' }],
        now: T0 + 10,
      });
      assert.equal(wrong!.status, 'conflict');
      assert.equal((await stored(claimed!.id)).state, 'active');
      const [right] = await a.settleJobs({ items: [ack(claimed!)], now: T0 + 20 });
      assert.equal(right!.status, 'settled');
      assert.equal((await stored(claimed!.id)).state, 'completed');
    });

    it('a batch of kept, stale, unknown and unkept items commits the valid ones and reports each', async () => {
      await insert(4);
      const [fresh, stale] = await claim(a, 'w1', T0, 2);
      const elsewhere = await claim(b, 'w3', T0, 1);
      const again = await reclaimElsewhere(stale!, 'w2');
      const unknown: SettleItem = { ...ack(fresh!), id: 'no-such-job' };
      const results = await a.settleJobs({
        items: [ack(fresh!), ack(stale!), unknown, failure(elsewhere[0]!)],
        now: T0 + VISIBILITY_MS + 5,
        random: () => 0.5,
      });
      assert.deepEqual(statuses(results), ['settled', 'conflict', 'not_found', 'settled']);
      assert.equal((await stored(fresh!.id)).state, 'completed');
      assert.equal((await stored(stale!.id)).worker_id, 'w2');
      assert.equal((await stored(elsewhere[0]!.id)).state, 'retryable');
      const completed = await b.listEvents({ types: ['job.completed'], limit: 10 });
      assert.deepEqual(
        completed.map((e) => e.subject),
        [fresh!.id],
      );
      // The re-claimed job is still A's to settle for w2.
      const [late] = await a.settleJobs({ items: [ack(again)], now: T0 + VISIBILITY_MS + 6 });
      assert.equal(late!.status, 'settled');
    });

    it('keeps no copies with keepClaimed 0: every settlement reads its rows', async () => {
      await insert(1);
      const [claimed] = await claim(b, 'w1', T0);
      const [result] = await b.settleJobs({ items: [ack(claimed!)], now: T0 + 10 });
      assert.equal(result!.status, 'settled');
      assert.equal((await stored(claimed!.id)).state, 'completed');
    });
  });
}
