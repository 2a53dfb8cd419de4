/**
 * Claims commit without waiting for the WAL flush; every other write waits
 * (decisions 0078, 0082). What each store operation sends is recorded with
 * the startup options of the connection it went on. A claim of one
 * unlimited queue is one statement on a claim connection (started with
 * synchronous_commit off), any other claim a transaction whose BEGIN turns
 * it off for that transaction only; both settings are checked on real
 * connections.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it, test } from 'node:test';
import { enqueueEvents, type JobRecord, parseEnqueueRequest } from '@ojs/core';
import pg from 'pg';
import { BEGIN_ASYNC_COMMIT } from '../src/database.ts';
import type { PostgresStore } from '../src/index.ts';
import { ASYNC_COMMIT_OPTION } from '../src/postgres-store.ts';
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

    it('a claim of one queue is one statement on a claim connection; the enqueue and the ACK wait for the flush', async () => {
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
      for (const [what, records] of [
        ['enqueue', enqueueSent],
        ['ack', ackSent],
      ] as const) {
        assert.ok(records.length > 0, `${what} sent nothing`);
        assert.ok(
          records.every((r) => !asyncConnection(r) && !r.text.includes('synchronous_commit')),
          `${what} must commit synchronously: ${texts(records).join(' | ')}`,
        );
      }
      // The job is completed and stays so on a fresh read.
      assert.equal((await store.getJob(job.id))!.state, 'completed');
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
