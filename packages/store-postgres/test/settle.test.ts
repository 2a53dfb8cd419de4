/**
 * settleJobs / extendLeases on PostgreSQL beyond the shared suite: batches
 * racing across processes (each job settled exactly once, the rest refused,
 * no deadlock), the guard inside the write statement itself, the worker_id
 * column every write keeps in step with the lease, NOTIFY on requeue, and
 * migration 004's backfill.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it, test } from 'node:test';
import { type JobRecord, parseEnqueueRequest, type SettleItem } from '@ojs/core';
import pg from 'pg';
import { jobsAvailableChannel, loadMigrations, migrate, type PostgresStore } from '../src/index.ts';
import { docPatch, type EventRow, eventValues, jobRow } from '../src/rows.ts';
import { settleValues } from '../src/settle.ts';
import { statements } from '../src/statements.ts';
import {
  dropSchema,
  eventually,
  openStore,
  POSTGRES_URL,
  testSchema,
  unavailable,
  withAdmin,
} from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const PROCESSES = 4;

function newJob(options: Record<string, unknown> = {}): JobRecord {
  return parseEnqueueRequest({ type: 'settle.test', args: [], options }, T0, {
    visibilityTimeoutMs: 30_000,
  });
}

const ack = (job: JobRecord): SettleItem => ({
  id: job.id,
  workerId: job.worker_id,
  attempt: job.attempt,
  settlement: { kind: 'complete' },
});

const nack = (job: JobRecord, requeue = false): SettleItem => ({
  id: job.id,
  workerId: job.worker_id,
  attempt: job.attempt,
  settlement: { kind: 'fail', error: { code: 'boom', message: 'failed' }, requeue },
});

function shuffled<T>(values: T[]): T[] {
  const out = [...values];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL settleJobs / extendLeases', { skip: reason }, () => {});
} else {
  describe('PostgreSQL settleJobs / extendLeases', () => {
    const schema = testSchema('settle');
    const stores: PostgresStore[] = [];
    const sql = statements(schema);

    /** Inserts `n` jobs and claims them all for `workerId`. */
    async function activeJobs(n: number, workerId: string | undefined = 'w1', queue = 'default') {
      const jobs = Array.from({ length: n }, () => newJob({ queue }));
      const inserted = await stores[0]!.insertJobs(jobs, [], T0);
      assert.ok(inserted.every((r) => r.status === 'inserted'));
      const claimed = await stores[0]!.claimJobs({ queues: [queue], count: n, workerId, now: T0 });
      assert.equal(claimed.length, n);
      return claimed;
    }

    interface Columns {
      id: string;
      state: string;
      rev: number;
      attempt: number;
      worker_id: string | null;
      deadline: number | null;
      doc: JobRecord;
    }
    /** The stored columns of the given jobs (one admin connection, one query). */
    const columnsOf = (ids: string[]) =>
      withAdmin(async (client) => {
        const { rows } = await client.query<Columns>(
          `SELECT id, state, rev, attempt, worker_id, deadline, doc FROM "${schema}".jobs
            WHERE id = ANY($1::text[])`,
          [ids],
        );
        return new Map(rows.map((row) => [row.id, row]));
      });
    const columns = async (id: string) => (await columnsOf([id])).get(id)!;

    before(async () => {
      for (let i = 0; i < PROCESSES; i++) {
        stores.push(
          await openStore(schema, {
            pool: { max: 4 },
            applicationName: `ojs-test-${schema}-${i}`,
          }),
        );
      }
    });
    after(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await dropSchema(schema);
    });
    beforeEach(() => stores[0]!.reset());

    it('batches racing on the same jobs from several processes settle each job exactly once', async () => {
      const jobs = await activeJobs(200);
      // Every process settles every job, in its own order and with its own
      // verdict (two ACK, two FAIL), in batches of 25: lock order by id keeps
      // overlapping batches from deadlocking, the row lock makes one win.
      const runs = stores.map(async (store, p) => {
        const items = shuffled(jobs).map((job) => (p % 2 === 0 ? ack(job) : nack(job)));
        const results = [];
        for (let i = 0; i < items.length; i += 25) {
          const batch = items.slice(i, i + 25);
          const out = await store.settleJobs({ items: batch, now: T0 + 1000 });
          results.push(...out.map((result, k) => ({ id: batch[k]!.id, result })));
        }
        return results;
      });
      const all = (await Promise.all(runs)).flat();
      const settled = new Map<string, number>();
      for (const { id, result } of all) {
        if (result.status === 'settled') settled.set(id, (settled.get(id) ?? 0) + 1);
        else assert.equal(result.status, 'conflict', `${id}: ${result.status}`);
      }
      assert.equal(settled.size, jobs.length, 'every job settled');
      assert.ok(
        [...settled.values()].every((n) => n === 1),
        'no job settled twice',
      );
      const events = await stores[1]!.listEvents({
        types: ['job.completed', 'job.failed'],
        limit: 10_000,
      });
      assert.equal(events.length, jobs.length, 'one completion or failure event per job');
      const stored = await columnsOf(jobs.map((job) => job.id));
      for (const job of jobs) {
        const row = stored.get(job.id)!;
        assert.notEqual(row.state, 'active');
        assert.equal(row.rev, job.rev + 1);
        assert.equal(row.worker_id, null);
      }
    });

    it('heartbeats racing with ACKs never undo them and never stop them', async () => {
      const jobs = await activeJobs(100);
      const beats = stores.slice(1).map((store) =>
        (async () => {
          const results = [];
          for (let round = 0; round < 5; round++) {
            results.push(
              ...(await store.extendLeases(
                shuffled(jobs).map((job) => ({ id: job.id, workerId: 'w1', attempt: 1 })),
                T0 + 2000 + round,
              )),
            );
          }
          return results;
        })(),
      );
      const acks = await stores[0]!.settleJobs({ items: jobs.map(ack), now: T0 + 3000 });
      assert.ok(acks.every((result) => result.status === 'settled'));
      for (const result of (await Promise.all(beats)).flat()) {
        assert.ok(result.status === 'extended' || result.status === 'not_held', result.status);
      }
      const stored = await columnsOf(jobs.map((job) => job.id));
      for (const job of jobs) {
        const row = stored.get(job.id)!;
        assert.equal(row.state, 'completed');
        assert.equal(row.doc.state, 'completed');
        assert.equal(row.rev, job.rev + 1, 'heartbeats did not change rev');
        assert.equal(row.deadline, null);
      }
    });

    it('the write statement itself refuses a row whose state, attempt, rev or worker moved', async () => {
      const [job] = await activeJobs(1);
      const done = { ...job!, state: 'completed' as const, rev: job!.rev + 1 };
      const { doc: _whole, ...doneColumns } = jobRow(done);
      const row = (guard: Record<string, unknown>) => ({
        ...doneColumns,
        ...docPatch(job!, done),
        expect_state: 'active',
        expect_attempt: job!.attempt,
        expect_rev: job!.rev,
        expect_worker_id: 'w1',
        ...guard,
      });
      const event = (id: string): EventRow => ({
        id,
        type: 'job.completed',
        queue: 'default',
        job_type: 'settle.test',
        job_id: job!.id,
        doc: { id, type: 'job.completed', data: {} } as unknown as EventRow['doc'],
      });
      const run = (guard: Record<string, unknown>, eventId: string) =>
        withAdmin(async (client) => {
          const { rows } = await client.query<{ id: string | null }>(
            sql.settleJobs,
            settleValues([row(guard)], eventValues([event(eventId)]), 'unused'),
          );
          return rows.map((r) => r.id);
        });
      assert.deepEqual(await run({ expect_rev: job!.rev + 7 }, 'evt_stale_rev'), []);
      assert.deepEqual(await run({ expect_attempt: 2 }, 'evt_stale_attempt'), []);
      assert.deepEqual(await run({ expect_worker_id: 'w2' }, 'evt_other_worker'), []);
      assert.deepEqual(await run({ expect_worker_id: null }, 'evt_null_worker'), []);
      assert.equal((await columns(job!.id)).state, 'active');
      assert.deepEqual(await stores[0]!.listEvents({ types: ['job.completed'], limit: 10 }), []);
      // The guard as read: written, with its event.
      assert.deepEqual(await run({}, 'evt_ok'), [job!.id]);
      assert.equal((await columns(job!.id)).state, 'completed');
      assert.deepEqual(
        await stores[0]!.getJob(job!.id),
        done,
        'the document patched to the decided record',
      );
      // A second application finds the job no longer active.
      assert.deepEqual(await run({}, 'evt_again'), []);
      const events = await stores[0]!.listEvents({ types: ['job.completed'], limit: 10 });
      assert.deepEqual(
        events.map((e) => e.id),
        ['evt_ok'],
      );
    });

    it('the worker_id column follows the lease holder through claim, heartbeat, settle and requeue', async () => {
      const [inserted] = await stores[0]!.insertJobs([newJob()], [], T0);
      assert.equal(inserted!.status, 'inserted');
      const id = (inserted as { job: JobRecord }).job.id;
      assert.equal((await columns(id)).worker_id, null, 'available: no holder');

      const [claimed] = await stores[1]!.claimJobs({
        queues: ['default'],
        count: 1,
        workerId: 'w-a',
        now: T0,
      });
      assert.equal((await columns(id)).worker_id, 'w-a');
      const [beat] = await stores[2]!.extendLeases([{ id, workerId: 'w-a' }], T0 + 5000);
      assert.equal(beat!.status, 'extended');
      const afterBeat = await columns(id);
      assert.equal(afterBeat.worker_id, 'w-a');
      assert.equal(afterBeat.rev, claimed!.rev);
      assert.equal(afterBeat.doc.lease_until, T0 + 5000 + 30_000);
      assert.equal(afterBeat.deadline, T0 + 5000 + 30_000);

      const [requeued] = await stores[3]!.settleJobs({
        items: [nack(claimed!, true)],
        now: T0 + 6000,
      });
      assert.equal(requeued!.status, 'settled');
      assert.equal((await columns(id)).state, 'available');
      assert.equal((await columns(id)).worker_id, null, 'requeued: no holder');

      // Claimed again without a worker id: the column is null, and the guard
      // (IS NOT DISTINCT FROM) still lets the settlement through.
      const [again] = await stores[0]!.claimJobs({ queues: ['default'], count: 1, now: T0 + 7000 });
      assert.equal(again!.worker_id, undefined);
      assert.equal((await columns(id)).worker_id, null);
      const [done] = await stores[0]!.settleJobs({ items: [ack(again!)], now: T0 + 8000 });
      assert.equal(done!.status, 'settled');
      assert.equal((await columns(id)).state, 'completed');
    });

    it('a requeue wakes waiting fetches in other processes; an ACK does not', async () => {
      let wakes = 0;
      const unsubscribe = stores[3]!.onJobsAvailable(() => wakes++);
      try {
        await stores[3]!.listening();
        // PostgreSQL delivers notifications in commit order: once a NOTIFY
        // sent after a write is heard, any wake-up of that write was heard too.
        const barrier = async () => {
          const before = wakes;
          await withAdmin((client) => client.query(`NOTIFY "${jobsAvailableChannel(schema)}"`));
          await eventually(() => wakes > before, 5000, 'the barrier notification');
        };
        const [a, b] = await activeJobs(2);
        await barrier();
        wakes = 0;
        await stores[1]!.settleJobs({ items: [ack(a!)], now: T0 + 1000 });
        await barrier();
        assert.equal(wakes, 1, 'an ACK makes nothing available: only the barrier woke us');
        await stores[1]!.settleJobs({ items: [nack(b!, true)], now: T0 + 1000 });
        await eventually(() => wakes > 0, 5000, 'a wake-up after requeue');
      } finally {
        unsubscribe();
      }
    });

    it('a batch spanning a workflow job, an unknown id and a stale item commits the rest', async () => {
      const [a, b] = await activeJobs(2);
      await withAdmin((client) =>
        client.query(
          `UPDATE "${schema}".jobs SET workflow_id = 'wf-1',
             doc = doc || '{"workflow_id": "wf-1"}' WHERE id = $1`,
          [b!.id],
        ),
      );
      const results = await stores[2]!.settleJobs({
        items: [{ ...ack(a!), attempt: 9 }, ack(b!), { ...ack(a!), id: 'nope' }, ack(a!), ack(a!)],
        now: T0 + 1000,
      });
      assert.deepEqual(
        results.map((r) => r.status),
        ['conflict', 'workflow', 'not_found', 'settled', 'conflict'],
      );
      assert.equal((await columns(a!.id)).state, 'completed');
      assert.equal((await columns(b!.id)).state, 'active', 'workflow job left for the engine');
      const events = await stores[2]!.listEvents({ types: ['job.completed'], limit: 10 });
      assert.deepEqual(
        events.map((e) => e.subject),
        [a!.id],
      );
    });
  });

  describe('migration 004 (worker_id)', () => {
    const schema = testSchema('mig004');
    after(() => dropSchema(schema));

    it('backfills the holder of active jobs and leaves the others null', async () => {
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      try {
        const upTo3 = loadMigrations().filter((m) => m.version <= 3);
        await migrate(pool, schema, upTo3);
        const insert = (id: string, state: string, doc: Record<string, unknown>) =>
          pool.query(
            `INSERT INTO "${schema}".jobs (id, seq, queue, type, state, priority, attempt, rev, doc)
             VALUES ($1, nextval('"${schema}".job_seq'), 'default', 't', $2, 0, 1, 1, $3::jsonb)`,
            [id, state, JSON.stringify({ id, state, ...doc })],
          );
        await insert('active-held', 'active', { worker_id: 'w-old' });
        await insert('active-anonymous', 'active', {});
        await insert('completed', 'completed', { worker_id: 'w-old' });
        const applied = await migrate(pool, schema);
        assert.ok(applied.includes('004_worker_id.sql'), applied.join(', '));
        const { rows } = await pool.query<{ id: string; worker_id: string | null }>(
          `SELECT id, worker_id FROM "${schema}".jobs ORDER BY id`,
        );
        assert.deepEqual(rows, [
          { id: 'active-anonymous', worker_id: null },
          { id: 'active-held', worker_id: 'w-old' },
          { id: 'completed', worker_id: null },
        ]);
      } finally {
        await pool.end();
      }
    });
  });
}
