/**
 * Claims commit without waiting for the WAL flush; every other write waits
 * (decision 0078). What each store operation sends is recorded per
 * connection, and the BEGIN a claim uses is checked on a real connection:
 * asynchronous commit inside that transaction only, never left on the
 * pooled connection for the transactions after it.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it, test } from 'node:test';
import { enqueueEvents, type JobRecord, parseEnqueueRequest } from '@ojs/core';
import pg from 'pg';
import { BEGIN_ASYNC_COMMIT } from '../src/database.ts';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, testSchema, unavailable, withAdmin } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const QUEUE = 'async-commit';

/** What the store's connections sent, in order: statement names or texts. */
const sent: string[] = [];

class RecordingClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's overloads of query
  override query(config: any, ...rest: any[]): any {
    if (typeof config === 'string') sent.push(config);
    else if (typeof config === 'object' && config !== null) sent.push(config.name ?? config.text);
    return (super.query as (...args: unknown[]) => unknown)(config, ...rest);
  }
}

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

    it('a claim commits asynchronously; the enqueue and the ACK wait for the flush', async () => {
      const job = parseEnqueueRequest({ type: 'a.b', args: [1], options: { queue: QUEUE } }, T0, {
        visibilityTimeoutMs: 30_000,
      });
      await store.insertJobs([job], enqueueEvents(job, T0), T0);
      const enqueueSent = sent.splice(0);
      const [claimed] = (await store.claimJobs({
        queues: [QUEUE],
        count: 1,
        workerId: 'w1',
        now: T0 + 1,
      })) as [JobRecord];
      assert.equal(claimed.id, job.id);
      const claimSent = sent.splice(0);
      const [settled] = await store.settleJobs({
        items: [
          {
            id: job.id,
            workerId: 'w1',
            attempt: claimed.attempt,
            settlement: { kind: 'complete', result: null },
          },
        ],
        now: T0 + 2,
      });
      assert.equal(settled!.status, 'settled');
      const ackSent = sent.splice(0);

      assert.equal(claimSent[0], BEGIN_ASYNC_COMMIT);
      assert.equal(claimSent.at(-1), 'COMMIT');
      for (const [what, texts] of [
        ['enqueue', enqueueSent],
        ['ack', ackSent],
      ] as const) {
        assert.ok(texts.length > 0, `${what} sent nothing`);
        assert.ok(
          texts.every((text) => !text.includes('synchronous_commit')),
          `${what} must commit synchronously: ${texts.join(' | ')}`,
        );
      }
      // The job is completed and stays so on a fresh read.
      assert.equal((await store.getJob(job.id))!.state, 'completed');
    });
  });
}
