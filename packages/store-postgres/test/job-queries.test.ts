/**
 * Finding jobs and pruning on PostgreSQL at a size where plans matter:
 * the first page of a listing is read through an index (EXPLAIN shows no
 * sequential scan of jobs and no sort of the table), and several
 * processes pruning at once delete every expired job exactly once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import {
  claim,
  complete,
  type JobFilter,
  type JobRecord,
  type PruneTarget,
  parseEnqueueRequest,
} from '@ojs/core';
import type { PostgresStore } from '../src/index.ts';
import { listJobsQuery } from '../src/job-queries.ts';
import { dropSchema, openStore, planNodes, testSchema, unavailable, withAdmin } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const JOBS = 20_000;

function newJob(i: number): JobRecord {
  return parseEnqueueRequest(
    { type: `plan.t${i % 5}`, args: [i], options: { queue: `q${i % 4}` } },
    T0,
    { visibilityTimeoutMs: 300_000 },
  );
}

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL job queries', { skip: reason }, () => {});
} else {
  describe('job queries on PostgreSQL', () => {
    const schema = testSchema('jq');
    const stores: PostgresStore[] = [];

    before(async () => {
      for (let i = 0; i < 3; i++) stores.push(await openStore(schema, { pool: { max: 4 } }));
      await stores[0]!.reset();
      const jobs = Array.from({ length: JOBS }, (_, i) => newJob(i));
      for (let i = 0; i < jobs.length; i += 1000) {
        await stores[0]!.insertJobs(jobs.slice(i, i + 1000), [], T0);
      }
      await withAdmin((client) => client.query(`ANALYZE "${schema}".jobs`));
    });
    after(async () => {
      await Promise.all(stores.map((store) => store.close()));
      await dropSchema(schema);
    });

    const filters: JobFilter[] = [
      {},
      { states: ['available'] },
      { queues: ['q1'] },
      { queues: ['q1', 'q2'], states: ['available', 'active'] },
      { types: ['plan.t3'] },
      { states: ['available'], typePrefix: 'plan.' },
    ];
    for (const filter of filters) {
      it(`the first page of ${JSON.stringify(filter)} is read through an index`, async () => {
        const query = listJobsQuery(`"${schema}"`, { filter, limit: 51, order: 'desc' });
        const rows = await withAdmin((client) =>
          client.query(`EXPLAIN (FORMAT JSON) ${query.text}`, query.values),
        );
        const plan = (rows.rows[0]['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0]!.Plan;
        const all = planNodes(plan);
        const scans = all.filter((n) => n['Relation Name'] === 'jobs');
        assert.ok(scans.length > 0, JSON.stringify(plan));
        for (const scan of scans) {
          assert.match(String(scan['Node Type']), /^Index( Only)? Scan$/, JSON.stringify(plan));
        }
        const sorts = all.filter((n) => n['Node Type'] === 'Sort');
        assert.ok(
          sorts.every((s) => (s['Plan Rows'] as number) <= 51 * 32),
          'only the merged pages are sorted',
        );
      });
    }

    it('several processes pruning at once delete every expired job exactly once', async () => {
      const finished = (await stores[0]!.listJobs({
        filter: { states: ['available'] },
        limit: 3000,
        order: 'asc',
      })) as JobRecord[];
      const updates = finished.map((job) => {
        const done = complete(claim(job, { now: T0 }), null, T0);
        return { job: done, expectRev: job.rev };
      });
      for (let i = 0; i < updates.length; i += 500) {
        assert.equal(await stores[0]!.commit({ updates: updates.slice(i, i + 500) }), true);
      }
      const target: PruneTarget = { retention: 'completed', before: T0 + 1 };
      const deleted = await Promise.all(
        stores.map(async (store) => {
          let total = 0;
          for (;;) {
            const n = await store.pruneJobs(target, 200);
            total += n;
            if (n === 0) return total;
          }
        }),
      );
      assert.equal(
        deleted.reduce((a, b) => a + b, 0),
        3000,
        `per process ${deleted}`,
      );
      assert.equal(await stores[0]!.countJobs({ states: ['completed'] }), 0);
      assert.equal(await stores[0]!.countJobs({}), JOBS - 3000);
    });
  });
}
