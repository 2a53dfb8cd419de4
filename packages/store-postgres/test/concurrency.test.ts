/**
 * Several server processes on one database, simulated by several stores
 * (each with its own pool) on one schema: every job is claimed exactly
 * once under heavy concurrent claiming, with producers inserting at the
 * same time, and limits hold across processes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import { type JobRecord, parseEnqueueRequest } from '@ojs/core';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, testSchema, unavailable } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const PROCESSES = 4;

function newJob(body: Record<string, unknown> = {}): JobRecord {
  return parseEnqueueRequest({ type: 'load.test', args: [], ...body }, T0, {
    visibilityTimeoutMs: 300_000,
  });
}

async function insertAll(store: PostgresStore, jobs: JobRecord[]): Promise<void> {
  for (let i = 0; i < jobs.length; i += 500) {
    const results = await store.insertJobs(jobs.slice(i, i + 500), [], T0);
    assert.ok(results.every((r) => r.status === 'inserted'));
  }
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL concurrency', { skip: reason }, () => {});
} else {
  describe('several processes claiming from one database', () => {
    const schema = testSchema('conc');
    const stores: PostgresStore[] = [];

    before(async () => {
      for (let i = 0; i < PROCESSES; i++)
        stores.push(await openStore(schema, { pool: { max: 8 } }));
    });
    after(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await dropSchema(schema);
    });

    it('claims every one of 6,000 jobs exactly once (32 claimers, producers racing)', async () => {
      await stores[0]!.reset();
      const queues = ['q-a', 'q-b', 'q-c'];
      const body = (i: number) => ({ options: { queue: queues[i % 3], priority: (i % 7) - 3 } });
      const preloaded = Array.from({ length: 3000 }, (_, i) => newJob(body(i)));
      await insertAll(stores[0]!, preloaded);
      const late = Array.from({ length: 3000 }, (_, i) => newJob(body(i)));
      const expected = new Set([...preloaded, ...late].map((job) => job.id));

      let producing = true;
      const producers = (async () => {
        // Two producers on different processes, batches of 50.
        await Promise.all(
          [0, 1].map(async (p) => {
            for (let i = p * 50; i < late.length; i += 100) {
              const results = await stores[p + 1]!.insertJobs(late.slice(i, i + 50), [], T0);
              assert.ok(results.every((r) => r.status === 'inserted'));
            }
          }),
        );
        producing = false;
      })();

      const owner = new Map<string, string>();
      const duplicates: string[] = [];
      const claimer = async (worker: string, store: PostgresStore, order: string[]) => {
        let idle = 0;
        while (producing || idle < 2) {
          const jobs = await store.claimJobs({
            queues: order,
            count: 1 + Math.floor(Math.random() * 40),
            workerId: worker,
            now: T0 + 1000,
          });
          if (jobs.length === 0) {
            idle = producing ? 0 : idle + 1;
            await new Promise((resolve) => setTimeout(resolve, 2));
            continue;
          }
          idle = 0;
          for (const job of jobs) {
            assert.equal(job.state, 'active');
            if (owner.has(job.id)) duplicates.push(job.id);
            owner.set(job.id, worker);
          }
        }
      };
      const claimers = Array.from({ length: 32 }, (_, w) => {
        const order = [...queues.slice(w % 3), ...queues.slice(0, w % 3)];
        return claimer(`w${w}`, stores[w % PROCESSES]!, order);
      });
      await Promise.all([producers, ...claimers]);

      assert.deepEqual(duplicates, [], 'no job handed out twice');
      assert.equal(owner.size, expected.size, 'every job claimed');
      for (const id of owner.keys()) assert.ok(expected.has(id));
      // The database agrees: every job active, attempt 1, owned by the claimer that got it.
      for (const queue of queues) {
        const stats = await stores[3]!.queueStats(queue, T0);
        assert.equal(stats.counts.active, 2000, `${queue}: all active`);
        assert.equal(stats.counts.available, 0, `${queue}: none left`);
      }
      const sample = [...owner.entries()].slice(0, 200);
      for (const [id, worker] of sample) {
        const job = await stores[2]!.getJob(id);
        assert.equal(job?.worker_id, worker);
        assert.equal(job?.attempt, 1);
      }
      const started = await stores[1]!.listEvents({ types: ['job.started'], limit: 10_000 });
      assert.equal(started.length, expected.size, 'one job.started per claim');
    });

    it('a queue concurrency limit holds across processes', async () => {
      await stores[0]!.reset();
      await insertAll(
        stores[0]!,
        Array.from({ length: 200 }, () => newJob({ options: { queue: 'limited' } })),
      );
      await stores[1]!.setQueueConfig('limited', { concurrency: 9 }, T0);
      const claims = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          stores[i % PROCESSES]!.claimJobs({ queues: ['limited'], count: 4, now: T0 }),
        ),
      );
      assert.equal(claims.flat().length, 9);
      assert.equal((await stores[2]!.queueStats('limited', T0)).counts.active, 9);
    });

    it('job rate_limit keys hold across processes and queues', async () => {
      await stores[0]!.reset();
      const keyed = (queue: string, key: string) =>
        newJob({ options: { queue, rate_limit: { key, concurrency: 3 } } });
      await insertAll(stores[0]!, [
        ...Array.from({ length: 60 }, (_, i) => keyed(i % 2 ? 'k1' : 'k2', 'tenant-a')),
        ...Array.from({ length: 60 }, (_, i) => keyed(i % 2 ? 'k1' : 'k2', 'tenant-b')),
        ...Array.from({ length: 30 }, () => newJob({ options: { queue: 'k1' } })),
      ]);
      const claims = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          stores[i % PROCESSES]!.claimJobs({
            queues: i % 2 ? ['k1', 'k2'] : ['k2', 'k1'],
            count: 5,
            now: T0,
          }),
        ),
      );
      const claimed = claims.flat();
      const perKey = new Map<string, number>();
      for (const job of claimed) {
        const key = job.rate_limit?.key ?? 'none';
        perKey.set(key, (perKey.get(key) ?? 0) + 1);
      }
      assert.ok((perKey.get('tenant-a') ?? 0) <= 3, `tenant-a: ${perKey.get('tenant-a')}`);
      assert.ok((perKey.get('tenant-b') ?? 0) <= 3, `tenant-b: ${perKey.get('tenant-b')}`);
      assert.ok((perKey.get('none') ?? 0) > 0, 'unlimited jobs are claimed alongside');
      // Claiming again takes the rest: every unlimited job, each key exactly up to its limit.
      const rest = await stores[0]!.claimJobs({ queues: ['k1', 'k2'], count: 200, now: T0 });
      for (const job of rest) {
        const key = job.rate_limit?.key ?? 'none';
        perKey.set(key, (perKey.get(key) ?? 0) + 1);
      }
      assert.deepEqual(Object.fromEntries([...perKey].sort()), {
        none: 30,
        'tenant-a': 3,
        'tenant-b': 3,
      });
      const k1 = await stores[1]!.queueStats('k1', T0);
      const k2 = await stores[2]!.queueStats('k2', T0);
      assert.equal(k1.counts.active + k2.counts.active, 36);
    });
  });
}
