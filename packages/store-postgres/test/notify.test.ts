/**
 * LISTEN/NOTIFY wake-ups between processes: a listener on one store (its
 * own dedicated connection) hears jobs made available through another
 * store's pool, in every way a job can become available, and keeps
 * hearing them after its connection is killed.
 *
 * Within one process (`wakesOnInsert`, decision 0129): insertJobs wakes
 * its own subscribers once its jobs are visible, on the one-statement path
 * (at COMMIT) and on the transaction path (a unique key judged in a
 * transaction) alike, so the engine need not wake its fetches again when
 * the call returns; its own NOTIFY still comes back over LISTEN (other
 * processes wake on it), and a call rolled back for a refused job wakes
 * nobody. Counted exactly: PostgreSQL delivers notifications in commit
 * order, so a barrier NOTIFY sent after the call is heard after the
 * call's own, and the count is then final.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it, test } from 'node:test';
import { activate, type JobRecord, parseEnqueueRequest } from '@ojs/core';
import { jobsAvailableChannel, type PostgresStore } from '../src/index.ts';
import {
  dropSchema,
  eventually,
  openStore,
  terminateBackends,
  testSchema,
  unavailable,
  withAdmin,
} from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

function newJob(options: Record<string, unknown> = {}): JobRecord {
  return parseEnqueueRequest({ type: 'notify.test', args: [], options }, T0, {
    visibilityTimeoutMs: 30_000,
  });
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL LISTEN/NOTIFY', { skip: reason }, () => {});
} else {
  describe('onJobsAvailable across processes', () => {
    const schema = testSchema('notify');
    let listenerStore: PostgresStore;
    let writer: PostgresStore;
    let other: PostgresStore;
    let wakes = 0;

    before(async () => {
      listenerStore = await openStore(schema, { applicationName: `ojs-test-${schema}-a` });
      writer = await openStore(schema, { applicationName: `ojs-test-${schema}-b` });
      // A store on another schema of the same database must not wake us.
      other = await openStore(`${schema}_x`, { applicationName: `ojs-test-${schema}-c` });
      listenerStore.onJobsAvailable(() => wakes++);
      await listenerStore.listening();
    });
    after(async () => {
      await Promise.all([listenerStore.close(), writer.close(), other.close()]);
      await dropSchema(schema);
      await dropSchema(`${schema}_x`);
    });
    /**
     * A notification sent after everything before it has committed. PostgreSQL
     * delivers notifications in commit order, so once the barrier's wake-up
     * is heard, any wake-up of an earlier write has been heard too: no
     * waiting for something not to happen.
     */
    const barrier = async () => {
      const before = wakes;
      await withAdmin((client) => client.query(`NOTIFY "${jobsAvailableChannel(schema)}"`));
      await eventually(() => wakes > before, 5000, 'the barrier notification');
    };

    beforeEach(async () => {
      await writer.reset();
      // Notifications of the reset and earlier steps are heard before counting.
      await barrier();
      wakes = 0;
    });

    const woken = (what: string) => eventually(() => wakes > 0, 5000, what);

    it('fires when another process inserts an available job', async () => {
      await writer.insertJobs([newJob()], [], T0);
      await woken('a wake-up after insert');
    });

    it('does not fire for scheduled or pending jobs, nor for another schema', async () => {
      await writer.insertJobs(
        [newJob({ scheduled_at: '+PT1H' }), newJob({ pending: true })],
        [],
        T0,
      );
      await other.insertJobs([newJob()], [], T0);
      await barrier();
      assert.equal(wakes, 1, 'only the barrier woke the listener');
    });

    it('fires on promotion, activation and queue resume', async () => {
      const [scheduled, pending] = await writer.insertJobs(
        [newJob({ scheduled_at: '+PT1S' }), newJob({ pending: true })],
        [],
        T0,
      );
      assert.equal(await writer.promoteDueJobs(T0 + 1000), 1);
      await woken('a wake-up after promotion');
      assert.equal(scheduled!.status, 'inserted');

      wakes = 0;
      const job = (pending as { job: JobRecord }).job;
      assert.equal(
        await writer.commit({ updates: [{ job: activate(job, T0), expectRev: job.rev }] }),
        true,
      );
      await woken('a wake-up after activate');

      wakes = 0;
      await writer.setQueuePaused('default', true, T0);
      await writer.setQueuePaused('default', false, T0);
      await woken('a wake-up after resume');
    });

    it('an unsubscribed listener is not called', async () => {
      let calls = 0;
      const unsubscribe = listenerStore.onJobsAvailable(() => calls++);
      await writer.insertJobs([newJob()], [], T0);
      await eventually(() => calls > 0, 5000, 'the second listener');
      unsubscribe();
      calls = 0;
      wakes = 0;
      await writer.insertJobs([newJob()], [], T0);
      await woken('the remaining listener');
      assert.equal(calls, 0);
    });

    it('reconnects after its connection is terminated and keeps firing', async () => {
      const killed = await terminateBackends(`ojs-test-${schema}-a:listen`);
      assert.equal(killed, 1, 'the LISTEN connection was terminated');
      // After reconnecting it wakes subscribers once (notifications may have been missed).
      await woken('the wake-up after reconnect');
      wakes = 0;
      await listenerStore.listening();
      await writer.insertJobs([newJob()], [], T0);
      await woken('a wake-up on the new connection');
    });
  });

  describe('insertJobs wakes its own process at COMMIT', () => {
    const schema = testSchema('localwake');
    after(() => dropSchema(schema));

    /**
     * A store of its own per test, LISTENing before the test writes: no
     * notification of an earlier test can reach it.
     */
    const listening = async () => {
      const store = await openStore(schema);
      const counted = { store, wakes: 0 };
      store.onJobsAvailable(() => counted.wakes++);
      await store.listening();
      return counted;
    };
    /** NOTIFY from outside, then every wake-up committed before it has been heard. */
    const barrier = async (counted: { wakes: number }, expected: number) => {
      await withAdmin((client) => client.query(`NOTIFY "${jobsAvailableChannel(schema)}"`));
      await eventually(() => counted.wakes >= expected, 5000, `${expected} wake-ups`);
    };

    it('the one-statement path: woken before the call returns, then by its NOTIFY', async () => {
      const counted = await listening();
      try {
        await counted.store.insertJobs([newJob()], [], T0);
        assert.ok(counted.wakes >= 1, 'woken at COMMIT, before the answer');
        await barrier(counted, 3);
        assert.equal(counted.wakes, 3, 'at COMMIT, its own NOTIFY, the barrier');
        assert.equal(counted.store.wakesOnInsert, true);
      } finally {
        await counted.store.close();
      }
    });

    it('the transaction path (a bare unique key, taken over): the same', async () => {
      const counted = await listening();
      try {
        // A unique_key without a policy is never tried in one statement (inserts.ts).
        const job: JobRecord = { ...newJob(), unique_key: 'local-wake' };
        const [result] = await counted.store.insertJobs([job], [], T0);
        assert.equal(result!.status, 'inserted');
        assert.ok(counted.wakes >= 1, 'woken at COMMIT, before the answer');
        await barrier(counted, 3);
        assert.equal(counted.wakes, 3, 'at COMMIT, its own NOTIFY, the barrier');
      } finally {
        await counted.store.close();
      }
    });

    it('nothing available, or the call rolled back for a refused job: no wake-up', async () => {
      const taken = newJob();
      const writer = await openStore(schema);
      await writer.insertJobs([taken], [], T0);
      await writer.close();
      const counted = await listening();
      try {
        await counted.store.insertJobs([newJob({ scheduled_at: '+PT1H' })], [], T0);
        // A new job beside a taken id: the call is refused whole, nothing stored.
        const results = await counted.store.insertJobs([newJob(), taken], [], T0);
        assert.deepEqual(
          results.map((r) => r.status),
          ['inserted', 'duplicate_id'],
        );
        const refused = (results[0] as { job: JobRecord }).job;
        assert.equal(await counted.store.getJob(refused.id), null);
        await barrier(counted, 1);
        assert.equal(counted.wakes, 1, 'the barrier only');
      } finally {
        await counted.store.close();
      }
    });
  });
}
