/**
 * Runs of per-job events as one row (migration 015, decision 0113): what a
 * claim, an ACK batch and an append write, that an `after` cursor is found
 * in a row of several (remembered by this store or searched by another),
 * that pruning keeps exactly the newest N when the cut falls inside a row,
 * and that a log written before migration 015 reads, lists and prunes the
 * same after it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import { jobEvent as coreJobEvent, makeEvent, type OjsEvent, parseEnqueueRequest } from '@ojs/core';
import pg from 'pg';
import { loadMigrations, migrate, type PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, POSTGRES_URL, testSchema, unavailable } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

interface EventRow {
  seq: string;
  n: number;
  id: string | null;
  type: string | null;
  queue: string | null;
  job_type: string | null;
}

const rowsOf = async (pool: pg.Pool, schema: string) =>
  (
    await pool.query<EventRow>(
      // ORDER BY the column, not the text output of the same name ('10' < '9').
      `SELECT e.seq::text, n, id, type, queue, job_type FROM "${schema}".events e ORDER BY e.seq`,
    )
  ).rows;

const jobEvent = (type: string, i: number, queue = 'q1') =>
  makeEvent(type, `job-${i}`, { job_id: `job-${i}`, job_type: 't', queue, i }, T0 + i);

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL event runs', { skip: reason }, () => {});
} else {
  describe('event runs on PostgreSQL', () => {
    const schema = testSchema('evrun');
    const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
    let store: PostgresStore;
    let other: PostgresStore;

    before(async () => {
      store = await openStore(schema);
      other = await openStore(schema);
    });
    after(async () => {
      await store.close();
      await other.close();
      await pool.end();
      await dropSchema(schema);
    });

    it('a claim, an ACK batch and an enqueue batch each write their events as one row', async () => {
      await store.reset();
      const jobs = Array.from({ length: 5 }, (_, i) =>
        parseEnqueueRequest({ type: 't', args: [i], options: { queue: 'q1' } }, T0, {
          visibilityTimeoutMs: 30_000,
        }),
      );
      await store.insertJobs(
        jobs,
        jobs.map((job) => coreJobEvent('job.enqueued', job, {}, T0)),
        T0,
      );
      const claimed = await store.claimJobs({ queues: ['q1'], count: 5, now: T0, workerId: 'w1' });
      assert.equal(claimed.length, 5);
      const settled = await store.settleJobs({
        items: claimed.map((job) => ({
          id: job.id,
          workerId: job.worker_id,
          attempt: job.attempt,
          settlement: { kind: 'complete' as const },
        })),
        now: T0 + 1000,
      });
      assert.ok(settled.every((result) => result.status === 'settled'));
      const rows = await rowsOf(pool, schema);
      assert.deepEqual(
        rows.map((r) => [r.n, r.id, r.type, r.queue, r.job_type]),
        [
          [5, null, 'job.enqueued', 'q1', 't'],
          // The claim's row leaves job_type open (NULL: its jobs may differ).
          [5, null, 'job.started', 'q1', null],
          [5, null, 'job.completed', 'q1', 't'],
        ],
      );
      const listed = await store.listEvents({ limit: 100 });
      assert.deepEqual(
        listed.map((e) => [e.type, e.subject]),
        ['job.enqueued', 'job.started', 'job.completed'].flatMap((type) =>
          (type === 'job.enqueued' ? jobs : claimed).map((j) => [type, j.id]),
        ),
      );
    });

    it('a write of one job event is a row of one with its own columns; a claim of nothing writes none', async () => {
      await store.reset();
      const [job] = [
        parseEnqueueRequest({ type: 't1', args: [], options: { queue: 'q1' } }, T0, {
          visibilityTimeoutMs: 30_000,
        }),
      ];
      await store.insertJobs([job!], [coreJobEvent('job.enqueued', job!, {}, T0)], T0);
      const [claimed] = await store.claimJobs({
        queues: ['q1'],
        count: 5,
        now: T0,
        workerId: 'w1',
      });
      assert.equal(claimed?.id, job!.id);
      assert.deepEqual(
        await store.claimJobs({ queues: ['q1'], count: 5, now: T0, workerId: 'w1' }),
        [],
      );
      await store.settleJobs({
        items: [
          {
            id: claimed!.id,
            workerId: 'w1',
            attempt: claimed!.attempt,
            settlement: { kind: 'complete' as const },
          },
        ],
        now: T0 + 1000,
      });
      const { rows } = await pool.query<EventRow & { doc_id: string | null; docs: unknown }>(
        `SELECT n, id, type, queue, job_type, doc->>'id' AS doc_id, docs FROM "${schema}".events ORDER BY seq`,
      );
      const listed = await store.listEvents({ limit: 10 });
      assert.deepEqual(
        listed.map((e) => [e.type, e.subject]),
        ['job.enqueued', 'job.started', 'job.completed'].map((type) => [type, job!.id]),
      );
      assert.deepEqual(
        rows.map((r) => [r.n, r.id, r.type, r.queue, r.job_type, r.doc_id, r.docs]),
        listed.map((e) => [1, e.id, e.type, 'q1', 't1', e.id, null]),
      );
    });

    it('other types are rows of their own, between the runs, and lists keep the order', async () => {
      await store.reset();
      const events = [
        jobEvent('job.enqueued', 0),
        jobEvent('job.started', 1, 'q2'),
        makeEvent('queue.paused', 'q1', { queue: 'q1' }, T0),
        jobEvent('job.completed', 2),
        makeEvent('workflow.started', 'wf', { workflow_id: 'wf' }, T0),
        jobEvent('job.started', 3),
      ];
      await store.appendEvents(events);
      assert.deepEqual(
        (await rowsOf(pool, schema)).map((r) => [r.n, r.id, r.type, r.queue]),
        [
          [2, null, null, null],
          [1, events[2]!.id, 'queue.paused', 'q1'],
          [1, events[3]!.id, 'job.completed', 'q1'],
          [1, events[4]!.id, 'workflow.started', null],
          [1, events[5]!.id, 'job.started', 'q1'],
        ],
      );
      assert.deepEqual(await store.listEvents({ limit: 10 }), events);
      assert.deepEqual(
        await store.listEvents({ limit: 10, newestFirst: true }),
        events.toReversed(),
      );
      assert.deepEqual(
        (await store.listEvents({ queues: ['q2'], limit: 10 })).map((e) => e.id),
        [events[1]!.id],
      );
      assert.deepEqual(
        (await store.listEvents({ types: ['job.enqueued'], limit: 10 })).map((e) => e.id),
        [events[0]!.id],
      );
      assert.deepEqual(
        (await store.listEvents({ subject: 'job-1', limit: 10 })).map((e) => e.id),
        [events[1]!.id],
      );
    });

    it('finds a cursor inside a row of several, remembered or searched (another process)', async () => {
      await store.reset();
      const events = Array.from({ length: 40 }, (_, i) => jobEvent('job.started', i));
      await store.appendEvents(events.slice(0, 20));
      await store.appendEvents(events.slice(20));
      const ids = (list: OjsEvent[]) => list.map((e) => e.id);
      // This store listed them: their positions are remembered.
      await store.listEvents({ limit: 100 });
      for (const at of [0, 7, 19, 20, 33, 39]) {
        const expected = ids(events.slice(at + 1, at + 4));
        assert.deepEqual(
          ids(await store.listEvents({ after: events[at]!.id, limit: 3 })),
          expected,
        );
        // The other store never listed them: it searches the rows.
        assert.deepEqual(
          ids(await other.listEvents({ after: events[at]!.id, limit: 3 })),
          expected,
        );
      }
      // newestFirst after a cursor: the events after it, newest first.
      assert.deepEqual(
        ids(await other.listEvents({ after: events[35]!.id, limit: 10, newestFirst: true })),
        ids(events.slice(36)).reverse(),
      );
      // A cursor that is not in the log lists from the start, as before.
      assert.deepEqual(
        ids(await other.listEvents({ after: 'evt_missing', limit: 2 })),
        ids(events.slice(0, 2)),
      );
    });

    it('pruning keeps exactly the newest N, trimming the row the cut falls in', async () => {
      await store.reset();
      const events = [
        ...Array.from({ length: 6 }, (_, i) => jobEvent('job.enqueued', i)),
        makeEvent('queue.paused', 'q1', { queue: 'q1' }, T0),
        ...Array.from({ length: 6 }, (_, i) => jobEvent('job.started', i, i % 2 ? 'q1' : 'q2')),
      ];
      await store.appendEvents(events);
      await store.listEvents({ limit: 100 });
      // A limit inside the first row: its two oldest go.
      assert.equal(await store.pruneEvents(0, 2), 2);
      assert.deepEqual(await store.listEvents({ limit: 100 }), events.slice(2));
      // A cursor listed before the trim still finds its place.
      assert.deepEqual(
        (await store.listEvents({ after: events[3]!.id, limit: 2 })).map((e) => e.id),
        [events[4]!.id, events[5]!.id],
      );
      assert.equal(await store.pruneEvents(6), 5);
      assert.deepEqual(await store.listEvents({ limit: 100 }), events.slice(7));
      // Down to one event: a row of one with its own columns.
      assert.equal(await store.pruneEvents(1), 5);
      const [last] = await rowsOf(pool, schema);
      assert.deepEqual(
        [last!.n, last!.id, last!.type, last!.queue, last!.job_type],
        [1, events[12]!.id, 'job.started', 'q1', 't'],
      );
      assert.deepEqual(
        (await other.listEvents({ after: events[12]!.id, limit: 5 })).map((e) => e.id),
        [],
      );
      assert.deepEqual(await store.listEvents({ queues: ['q1'], limit: 5 }), [events[12]]);
      assert.equal(await store.pruneEvents(0), 1);
      assert.deepEqual(await store.listEvents({ limit: 5 }), []);
    });
  });

  describe('migration 015 on a log written before it', () => {
    const schema = testSchema('mig015');
    after(() => dropSchema(schema));

    it('keeps the old rows as rows of one event: listed, resumed and pruned as before', async () => {
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      let store: PostgresStore | undefined;
      try {
        await migrate(
          pool,
          schema,
          loadMigrations().filter((m) => m.version <= 14),
        );
        const old = [
          jobEvent('job.enqueued', 0),
          makeEvent('queue.paused', 'q1', { queue: 'q1' }, T0),
          jobEvent('job.started', 1, 'q2'),
        ];
        for (const e of old) {
          await pool.query(
            `INSERT INTO "${schema}".events (id, type, queue, job_type, doc) VALUES ($1, $2, $3, $4, $5)`,
            [e.id, e.type, e.data.queue ?? null, e.data.job_type ?? null, JSON.stringify(e)],
          );
        }
        assert.deepEqual(
          await migrate(
            pool,
            schema,
            loadMigrations().filter((m) => m.version <= 15),
          ),
          ['015_event_runs.sql'],
        );
        store = await openStore(schema);
        const added = Array.from({ length: 3 }, (_, i) => jobEvent('job.completed', 10 + i));
        await store.appendEvents(added);
        assert.deepEqual(
          (await rowsOf(pool, schema)).map((r) => r.n),
          [1, 1, 1, 3],
        );
        assert.deepEqual(await store.listEvents({ limit: 10 }), [...old, ...added]);
        assert.deepEqual(
          (await store.listEvents({ after: old[1]!.id, limit: 10, queues: ['q2', 'q1'] })).map(
            (e) => e.id,
          ),
          [old[2]!.id, ...added.map((e) => e.id)],
        );
        assert.deepEqual(
          (await store.listEvents({ types: ['queue.paused'], limit: 10 })).map((e) => e.id),
          [old[1]!.id],
        );
        assert.equal(await store.pruneEvents(2), 4);
        assert.deepEqual(await store.listEvents({ limit: 10 }), added.slice(1));
      } finally {
        await store?.close();
        await pool.end();
      }
    });
  });
}
