/**
 * Claims commit without waiting for the WAL flush (decisions 0078, 0082);
 * the one-statement enqueue commits without waiting too, and is answered
 * once a flush after it is done (0115); every other write waits. What each
 * store operation sends is recorded with the startup options of the
 * connection it went on. A claim of one unlimited queue is one statement
 * on a claim connection (started with synchronous_commit off), any other
 * claim a transaction whose BEGIN turns it off for that transaction only;
 * both settings, the enqueue's and the flush's effect are checked on real
 * connections.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it, test } from 'node:test';
import { enqueueEvents, type JobRecord, parseEnqueueRequest } from '@ojs/core';
import pg from 'pg';
import { BEGIN_ASYNC_COMMIT, Database } from '../src/database.ts';
import type { PostgresStore } from '../src/index.ts';
import { enqueue as enqueueStatement } from '../src/inserts.ts';
import { ASYNC_COMMIT_OPTION } from '../src/postgres-store.ts';
import { preparedNames, statements } from '../src/statements.ts';
import {
  dropSchema,
  openStore,
  POSTGRES_URL,
  testSchema,
  unavailable,
  withAdmin,
} from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const QUEUE = 'async-commit';

/** What the store's connections sent, in order: statement names or texts, and the connection's startup options. */
const sent: { text: string; options: string }[] = [];

class RecordingClient extends pg.Client {
  readonly #options: string;
  constructor(config: pg.ClientConfig) {
    super(config);
    this.#options = config.options ?? '';
  }
  // biome-ignore lint/suspicious/noExplicitAny: pg's overloads of query
  override query(config: any, ...rest: any[]): any {
    const text =
      typeof config === 'string'
        ? config
        : typeof config === 'object' && config !== null
          ? (config.name ?? config.text)
          : undefined;
    if (text !== undefined) sent.push({ text, options: this.#options });
    return (super.query as (...args: unknown[]) => unknown)(config, ...rest);
  }
}

const texts = (records: typeof sent) => records.map((r) => r.text);
const asyncConnection = (record: (typeof sent)[number]) =>
  record.options.includes(ASYNC_COMMIT_OPTION);

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL asynchronous commit of claims', { skip: reason }, () => {});
} else {
  describe('PostgreSQL asynchronous commit of claims', () => {
    const schema = testSchema('async_commit');
    let store: PostgresStore;

    before(async () => {
      store = await openStore(schema, {
        pool: { Client: RecordingClient as unknown as pg.PoolConfig['Client'] },
        countCompactionIntervalMs: 0,
      });
    });
    after(async () => {
      await store.close();
      await dropSchema(schema);
    });
    beforeEach(async () => {
      await store.reset();
      sent.length = 0;
    });

    it('the BEGIN of a claim turns asynchronous commit on for that transaction only', async () => {
      await withAdmin(async (client) => {
        const setting = async () =>
          (await client.query<{ s: string }>("SELECT current_setting('synchronous_commit') AS s"))
            .rows[0]!.s;
        assert.equal(await setting(), 'on');
        await client.query(BEGIN_ASYNC_COMMIT);
        assert.equal(await setting(), 'off');
        await client.query('COMMIT');
        assert.equal(await setting(), 'on');
      });
    });

    it('a claim connection is started with asynchronous commit for its whole session', async () => {
      const client = new pg.Client({
        connectionString: POSTGRES_URL,
        options: ASYNC_COMMIT_OPTION,
      });
      await client.connect();
      try {
        const setting = async () =>
          (await client.query<{ s: string }>("SELECT current_setting('synchronous_commit') AS s"))
            .rows[0]!.s;
        assert.equal(await setting(), 'off');
        await client.query('BEGIN');
        await client.query('COMMIT');
        assert.equal(await setting(), 'off');
      } finally {
        await client.end();
      }
    });

    const enqueue = async (queue: string) => {
      const job = parseEnqueueRequest({ type: 'a.b', args: [1], options: { queue } }, T0, {
        visibilityTimeoutMs: 30_000,
      });
      await store.insertJobs([job], enqueueEvents(job, T0), T0);
      return job;
    };
    const ack = async (claimed: JobRecord) => {
      const [settled] = await store.settleJobs({
        items: [
          {
            id: claimed.id,
            workerId: 'w1',
            attempt: claimed.attempt,
            settlement: { kind: 'complete', result: null },
          },
        ],
        now: T0 + 2,
      });
      assert.equal(settled!.status, 'settled');
    };

    it('the enqueue statement commits without waiting for the flush, for its own transaction only', async () => {
      // One connection, so the statement after the enqueue runs where it ran.
      const pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
      try {
        const sql = statements(schema);
        const db = new Database(pool, preparedNames(sql), () => {});
        const setting = async () =>
          (await db.query<{ s: string }>("SELECT current_setting('synchronous_commit') AS s", []))
            .rows[0]!.s;
        assert.equal(await setting(), 'on');
        const job = parseEnqueueRequest({ type: 'a.b', args: [1], options: { queue: QUEUE } }, T0, {
          visibilityTimeoutMs: 30_000,
        });
        const results = await enqueueStatement(
          db,
          sql,
          'ojs_test_unheard',
          [job],
          enqueueEvents(job, T0),
          T0,
        );
        assert.equal(results?.[0]?.status, 'inserted');
        // The statement's set_config was local to its transaction.
        assert.equal(await setting(), 'on');
        assert.equal((await store.getJob(job.id))?.state, 'available');
      } finally {
        await pool.end();
      }
    });

    it('flushWal flushes the WAL past an earlier asynchronous commit of another connection', async () => {
      await withAdmin(async (client) => {
        await client.query('SET synchronous_commit TO off');
        await client.query(`CREATE TABLE IF NOT EXISTS "${schema}".flush_probe (x int)`);
        for (let round = 0; round < 20; round++) {
          await client.query(`INSERT INTO "${schema}".flush_probe VALUES ($1)`, [round]);
          const { rows } = await client.query<{ lsn: string }>(
            'SELECT pg_current_wal_insert_lsn()::text AS lsn',
          );
          await withAdmin((other) => other.query(statements(schema).flushWal));
          const flushed = await client.query<{ behind: string }>(
            'SELECT pg_wal_lsn_diff($1::pg_lsn, pg_current_wal_flush_lsn())::text AS behind',
            [rows[0]!.lsn],
          );
          assert.ok(Number(flushed.rows[0]!.behind) <= 0, `round ${round}: not flushed`);
        }
      });
    });

    it('a claim woken by an enqueue is sent before the flush that answers the enqueue', async () => {
      // Both pools' connections opened and their statements prepared first.
      await enqueue(QUEUE);
      await store.claimJobs({ queues: [QUEUE], count: 1, workerId: 'w1', now: T0 + 1 });
      sent.length = 0;
      let claiming: Promise<JobRecord[]> | undefined;
      const unsubscribe = store.onJobsAvailable!(() => {
        // As a waiting fetch resumes: a few promise reactions later, in the same turn.
        claiming ??= Promise.resolve()
          .then(() => undefined)
          .then(() => undefined)
          .then(() => store.claimJobs({ queues: [QUEUE], count: 1, workerId: 'w1', now: T0 + 2 }));
      });
      try {
        const job = await enqueue(QUEUE);
        assert.ok(claiming !== undefined, 'the enqueue woke this process');
        const [claimed] = await claiming;
        assert.equal(claimed?.id, job.id);
        // The flush is only on the way to the enqueuer's answer; the claim
        // is on the way to a handler.
        assert.deepEqual(
          texts(sent).filter((text) =>
            ['ojs_enqueue', 'ojs_claimQueueGated', 'ojs_flushWal'].includes(text),
          ),
          ['ojs_enqueue', 'ojs_claimQueueGated', 'ojs_flushWal'],
        );
      } finally {
        unsubscribe();
      }
    });

    it('a claim of one queue is one statement on a claim connection; the enqueue is answered after a flush, the ACK waits for it', async () => {
      const job = await enqueue(QUEUE);
      const enqueueSent = sent.splice(0);
      const [claimed] = (await store.claimJobs({
        queues: [QUEUE],
        count: 1,
        workerId: 'w1',
        now: T0 + 1,
      })) as [JobRecord];
      assert.equal(claimed.id, job.id);
      const claimSent = sent.splice(0);
      await ack(claimed);
      const ackSent = sent.splice(0);

      // One statement, alone, on an asynchronous connection: no BEGIN, no COMMIT.
      assert.deepEqual(texts(claimSent), ['ojs_claimQueueGated']);
      assert.ok(claimSent.every(asyncConnection));
      // The enqueue statement commits asynchronously (its text sets so), then the flush.
      assert.deepEqual(texts(enqueueSent), ['ojs_enqueue', 'ojs_flushWal']);
      assert.match(statements(schema).enqueue, /set_config\('synchronous_commit', 'off', true\)/);
      for (const [what, records] of [
        ['enqueue', enqueueSent],
        ['ack', ackSent],
      ] as const) {
        assert.ok(records.length > 0, `${what} sent nothing`);
        // Not on a claim connection, no BEGIN that turns synchronous commit off.
        assert.ok(
          records.every((r) => !asyncConnection(r) && !r.text.includes('synchronous_commit')),
          `${what} must not commit on a claim connection: ${texts(records).join(' | ')}`,
        );
      }
      // The job is completed and stays so on a fresh read.
      assert.equal((await store.getJob(job.id))!.state, 'completed');
    });

    it('a promotion with nothing due is one read; with a job due, the transaction promotes it', async () => {
      assert.equal(await store.promoteDueJobs(T0), 0);
      assert.deepEqual(texts(sent.splice(0)), ['ojs_anyDue']);
      const job = parseEnqueueRequest(
        {
          type: 'a.b',
          args: [1],
          options: { queue: QUEUE, scheduled_at: new Date(T0 + 1000).toISOString() },
        },
        T0,
        { visibilityTimeoutMs: 30_000 },
      );
      assert.equal(job.state, 'scheduled');
      await store.insertJobs([job], enqueueEvents(job, T0), T0);
      assert.equal(await store.promoteDueJobs(T0 + 500), 0, 'not due yet');
      sent.length = 0;
      assert.equal(await store.promoteDueJobs(T0 + 1000), 1);
      const promotion = texts(sent.splice(0));
      assert.equal(promotion[0], 'ojs_anyDue');
      assert.ok(promotion.includes('ojs_lockDue'), promotion.join(' | '));
      assert.equal((await store.getJob(job.id))!.state, 'available');
    });

    it('a claim of one limited queue finds so in its one statement, claims nothing there and takes the transaction', async () => {
      const queue = `${QUEUE}-limited`;
      await store.setQueueConfig(queue, { concurrency: 1 }, T0);
      const first = await enqueue(queue);
      await enqueue(queue);
      sent.length = 0;
      const claimed = await store.claimJobs({
        queues: [queue],
        count: 2,
        workerId: 'w1',
        now: T0 + 1,
      });
      // The limit holds: one of the two, the first in FIFO order.
      assert.deepEqual(
        claimed.map((job) => job.id),
        [first.id],
      );
      const claimSent = texts(sent.splice(0));
      assert.equal(claimSent[0], 'ojs_claimQueueGated');
      assert.equal(claimSent[1], BEGIN_ASYNC_COMMIT);
      assert.ok(claimSent.includes('ojs_claimPlan'), claimSent.join(' | '));
      assert.equal(claimSent.at(-1), 'COMMIT');
      await ack(claimed[0]!);
    });

    it('a claim of several queues is a transaction that turns asynchronous commit on for itself', async () => {
      const job = await enqueue(`${QUEUE}-2`);
      sent.length = 0;
      const [claimed] = (await store.claimJobs({
        queues: [QUEUE, `${QUEUE}-2`],
        count: 1,
        workerId: 'w1',
        now: T0 + 1,
      })) as [JobRecord];
      assert.equal(claimed.id, job.id);
      const claimSent = texts(sent.splice(0));
      assert.equal(claimSent[0], BEGIN_ASYNC_COMMIT);
      assert.equal(claimSent.at(-1), 'COMMIT');
      await ack(claimed);
    });
  });
}
