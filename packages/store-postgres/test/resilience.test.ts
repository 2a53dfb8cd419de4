/**
 * Connection trouble: an unreachable database gives clear, retryable
 * errors (ping throws); backends terminated mid-run (pg_terminate_backend)
 * lose no acknowledged insert, and the store recovers by itself.
 */
import assert from 'node:assert/strict';
import { after, describe, it, test } from 'node:test';
import { type JobRecord, jobEvent, OjsError, parseEnqueueRequest } from '@ojs/core';
import { PostgresStore } from '../src/index.ts';
import {
  dropSchema,
  eventually,
  openStore,
  terminateBackends,
  testSchema,
  unavailable,
} from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

function newJob(n: number): JobRecord {
  return parseEnqueueRequest({ type: 'chaos.test', args: [n] }, T0, {
    visibilityTimeoutMs: 30_000,
  });
}

describe('an unreachable database', () => {
  const unreachable = () =>
    new PostgresStore({
      connectionString: 'postgres://postgres@127.0.0.1:1/test',
      onError: () => {},
      pool: { connectionTimeoutMillis: 2000 },
    });

  it('init() rejects with backend_unavailable', async () => {
    const store = unreachable();
    await assert.rejects(store.init(), (error: unknown) => {
      assert.ok(error instanceof OjsError);
      assert.equal(error.code, 'backend_unavailable');
      assert.equal(error.status, 503);
      assert.match(error.message, /PostgreSQL is unreachable/);
      return true;
    });
    await store.close();
  });

  it('ping() and operations throw backend_unavailable', async () => {
    const store = unreachable();
    await assert.rejects(store.ping(), { code: 'backend_unavailable' });
    await assert.rejects(store.getJob('x'), { code: 'backend_unavailable' });
    await assert.rejects(store.insertJobs([newJob(1)], [], T0), { code: 'backend_unavailable' });
    await store.close();
  });
});

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL connection loss', { skip: reason }, () => {});
} else {
  describe('backends terminated mid-run', () => {
    const schema = testSchema('chaos');
    after(() => dropSchema(schema));

    it('the pool replaces terminated idle connections transparently', async () => {
      const app = `ojs-test-${schema}-idle`;
      const store = await openStore(schema, { applicationName: app, pool: { max: 4 } });
      try {
        await Promise.all(Array.from({ length: 4 }, () => store.ping()));
        assert.ok((await terminateBackends(app)) >= 1);
        await store.ping();
        assert.equal((await store.insertJobs([newJob(0)], [], T0))[0]!.status, 'inserted');
      } finally {
        await store.close();
      }
    });

    it('loses no acknowledged insert and recovers by itself', async (t) => {
      const app = `ojs-test-${schema}-run`;
      const store = await openStore(schema, { applicationName: app, pool: { max: 6 } });
      const check = await openStore(schema, { applicationName: `ojs-test-${schema}-check` });
      // Closed however the test ends: open pools would keep the file's process alive.
      t.after(() => Promise.all([store.close(), check.close()]));
      let wakes = 0;
      store.onJobsAvailable(() => wakes++);
      await store.reset();
      const acknowledged = new Set<string>();
      const failures: unknown[] = [];
      let running = true;
      let terminated = 0;
      let n = 0;
      const inserter = async () => {
        while (running) {
          const job = newJob(n++);
          try {
            const [result] = await store.insertJobs(
              [job],
              [jobEvent('job.enqueued', job, {}, T0)],
              T0,
            );
            assert.equal(result!.status, 'inserted');
            acknowledged.add(job.id);
          } catch (error) {
            failures.push(error);
          }
        }
      };
      const claimer = async () => {
        while (running) {
          try {
            await store.claimJobs({ queues: ['default'], count: 5, now: T0 + 1000 });
          } catch (error) {
            failures.push(error);
          }
        }
      };
      // Each round waits for five more acknowledged inserts before it kills:
      // the kills land mid-workload however slow the machine is.
      const killer = async () => {
        const deadline = Date.now() + 60_000;
        for (let round = 0; round < 12; round++) {
          while (acknowledged.size < (round + 1) * 5 && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
          // Right after a kill the pool may hold no connection at all (all
          // being re-established): a round kills once one exists again.
          let killed = 0;
          while (killed === 0 && Date.now() < deadline) {
            killed = await terminateBackends(app);
            if (killed === 0) await new Promise((resolve) => setTimeout(resolve, 5));
          }
          terminated += killed;
        }
        running = false;
      };
      try {
        await Promise.all([killer(), ...Array.from({ length: 6 }, inserter), claimer(), claimer()]);
      } finally {
        // A rejection ends the test: the loops must stop with it, not spin on.
        running = false;
      }

      assert.ok(terminated >= 12, `backends terminated: ${terminated}`);
      assert.ok(
        acknowledged.size >= 60,
        `inserts acknowledged: ${acknowledged.size}; ${failures.length} failed, first: ${String(failures[0])}`,
      );
      for (const error of failures) {
        // Only connection loss may surface, as a retryable 503 (e.g. lost during COMMIT).
        assert.ok(error instanceof OjsError, `unexpected error: ${String(error)}`);
        assert.equal(error.code, 'backend_unavailable');
      }
      // Every acknowledged insert is stored (checked through another pool).
      const missing: string[] = [];
      for (const id of acknowledged) if ((await check.getJob(id)) === null) missing.push(id);
      assert.deepEqual(missing, [], 'no acknowledged insert lost');

      // Recovered: the same store works again, including its LISTEN connection.
      await store.ping();
      const after = newJob(-1);
      assert.equal((await store.insertJobs([after], [], T0))[0]!.status, 'inserted');
      await store.listening();
      wakes = 0;
      await check.insertJobs([newJob(-2)], [], T0);
      await eventually(() => wakes > 0, 5000, 'a wake-up after recovery');
      const stats = await store.queueStats('default', T0);
      assert.ok(stats.counts.available + stats.counts.active >= acknowledged.size + 2);
      console.log(
        `# chaos: ${acknowledged.size} inserts acknowledged, ${failures.length} failed with 503, ${terminated} backends terminated`,
        process.env.OJS_TEST_VERBOSE ? failures.map((e) => (e as Error).message) : '',
      );
    });

    it('completes no job twice and loses no acknowledged ACK', async (t) => {
      const app = `ojs-test-${schema}-ack`;
      const store = await openStore(schema, { applicationName: app, pool: { max: 6 } });
      const check = await openStore(schema, { applicationName: `ojs-test-${schema}-ackcheck` });
      t.after(() => Promise.all([store.close(), check.close()]));
      await check.reset();
      const total = 400;
      await check.insertJobs(
        Array.from({ length: total }, (_, i) => newJob(i)),
        [],
        T0,
      );
      const acked = new Set<string>();
      const failures: unknown[] = [];
      let running = true;
      let terminated = 0;
      // Claims five at a time and ACKs them in one batch (kept copies: the
      // batch is one statement on its own, decision 0083).
      const acker = async () => {
        while (running) {
          try {
            const jobs = await store.claimJobs({
              queues: ['default'],
              count: 5,
              workerId: 'w1',
              now: T0 + 1000,
            });
            if (jobs.length === 0) break;
            const results = await store.settleJobs({
              items: jobs.map((job) => ({
                id: job.id,
                workerId: 'w1',
                attempt: job.attempt,
                settlement: { kind: 'complete', result: null },
              })),
              now: T0 + 2000,
            });
            for (const [index, result] of results.entries()) {
              if (result.status === 'settled') acked.add(jobs[index]!.id);
            }
          } catch (error) {
            failures.push(error);
          }
        }
      };
      const killer = async () => {
        const deadline = Date.now() + 60_000;
        for (let round = 0; round < 8 && running; round++) {
          while (acked.size < (round + 1) * 25 && running && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          terminated += await terminateBackends(app);
        }
      };
      // The ackers end when the queue is empty; the killer with them.
      const ackers = Promise.all([acker(), acker()]).finally(() => {
        running = false;
      });
      await Promise.all([killer(), ackers]);
      assert.ok(terminated >= 1, `backends terminated: ${terminated}`);
      for (const error of failures) {
        assert.ok(error instanceof OjsError, `unexpected error: ${String(error)}`);
        assert.equal(error.code, 'backend_unavailable');
      }
      // Every ACK answered 'settled' is stored; no job has two completions.
      for (const id of acked) assert.equal((await check.getJob(id))!.state, 'completed');
      const completions = new Map<string, number>();
      for (const event of await check.listEvents({ types: ['job.completed'], limit: 10_000 })) {
        const id = event.data.job_id as string;
        completions.set(id, (completions.get(id) ?? 0) + 1);
      }
      assert.deepEqual(
        [...completions].filter(([, n]) => n > 1),
        [],
        'a job completed twice',
      );
      const stats = await check.queueStats('default', T0 + 3000);
      assert.equal(stats.counts.completed, completions.size);
      assert.ok(acked.size >= 100, `ACKs answered: ${acked.size}; ${failures.length} failed`);
      console.log(
        `# chaos: ${acked.size} ACKs answered, ${completions.size} jobs completed, ${failures.length} calls failed with 503, ${terminated} backends terminated`,
      );
    });
  });
}
