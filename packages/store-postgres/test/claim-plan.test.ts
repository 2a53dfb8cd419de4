/**
 * The claim is planned once per claim connection (decision 0106): those
 * connections force generic plans, and the claim statement's shape makes
 * the generic plan the one a custom plan finds: the queue's claim index for
 * the pick, the primary key for the update, whatever the plan guesses of
 * `LIMIT $6`, and whatever the table's size was when the plan was made. Checked on the plan PostgreSQL keeps for a prepared
 * statement, and on a claim connection's own setting. Also: the listing
 * indexes leave active jobs to jobs_lease (migration 014), and listings
 * still find jobs of every state.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import {
  EVENT_SOURCE,
  enqueueEvents,
  type JobFilter,
  type JobRecord,
  parseEnqueueRequest,
  toIso,
  uuidv7,
} from '@ojs/core';
import pg from 'pg';
import type { PostgresStore } from '../src/index.ts';
import { listJobsQuery } from '../src/job-queries.ts';
import { ASYNC_COMMIT_OPTION, GENERIC_PLANS_OPTION } from '../src/postgres-store.ts';
import { statements } from '../src/statements.ts';
import {
  dropSchema,
  openStore,
  POSTGRES_URL,
  planNodes,
  testSchema,
  unavailable,
  withAdmin,
} from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const QUEUE = 'claim-plan';
const JOBS = 5000;

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL claim plan', { skip: reason }, () => {});
} else {
  describe('the claim plan on PostgreSQL', () => {
    const schema = testSchema('claim_plan');
    let store: PostgresStore;

    before(async () => {
      store = await openStore(schema, { countCompactionIntervalMs: 0 });
      const jobs = Array.from({ length: JOBS }, (_, i) =>
        parseEnqueueRequest({ type: 'p.t', args: [i], options: { queue: QUEUE } }, T0, {
          visibilityTimeoutMs: 30_000,
        }),
      );
      await store.insertJobs(jobs, [], T0);
      await withAdmin((client) => client.query(`ANALYZE "${schema}".jobs`));
    });
    after(async () => {
      await store.close();
      await dropSchema(schema);
    });

    it('a claim connection plans generically, on indexes', async () => {
      const client = new pg.Client({
        connectionString: POSTGRES_URL,
        options: `${ASYNC_COMMIT_OPTION} ${GENERIC_PLANS_OPTION}`,
      });
      await client.connect();
      try {
        const { rows } = await client.query<{ mode: string; seqscan: string }>(
          "SELECT current_setting('plan_cache_mode') AS mode, current_setting('enable_seqscan') AS seqscan",
        );
        assert.deepEqual(rows[0], { mode: 'force_generic_plan', seqscan: 'off' });
      } finally {
        await client.end();
      }
    });

    it("the claim's generic plan walks the claim index and updates through the primary key", async () => {
      const sql = statements(schema);
      const count = 10;
      const params = [
        T0 + 1,
        toIso(T0 + 1),
        null,
        'w1',
        QUEUE,
        count,
        null,
        `{${Array.from({ length: count }, () => `evt_${uuidv7(T0)}`).join(',')}}`,
        EVENT_SOURCE,
      ];
      const plan = await withAdmin(async (client) => {
        await client.query('SET plan_cache_mode = force_generic_plan');
        await client.query(`PREPARE claim AS ${sql.claimQueueGated}`);
        try {
          await client.query('BEGIN');
          const literal = params.map((v) => (v === null ? 'NULL' : `'${v}'`)).join(', ');
          const { rows } = await client.query<{ 'QUERY PLAN': Record<string, unknown>[] }>(
            `EXPLAIN (FORMAT JSON, ANALYZE) EXECUTE claim(${literal})`,
          );
          return rows[0]!['QUERY PLAN'][0]!;
        } finally {
          await client.query('ROLLBACK');
          await client.query('DEALLOCATE claim');
        }
      });
      const nodes = planNodes(plan.Plan as Record<string, unknown>);
      const onJobs = nodes.filter((node) => node['Relation Name'] === 'jobs');
      assert.ok(
        onJobs.every((node) => node['Node Type'] !== 'Seq Scan'),
        JSON.stringify(plan),
      );
      assert.ok(
        nodes.some((node) => node['Node Type'] === 'Update' || node.Operation === 'Update'),
        'no update',
      );
      const update = nodes.find((node) => node['Node Type'] === 'ModifyTable')!;
      const under = planNodes(update).filter((node) => node['Relation Name'] === 'jobs');
      assert.ok(
        under.some((node) => node['Index Name'] === 'jobs_pkey'),
        JSON.stringify(update),
      );
      assert.ok(
        nodes.some((node) => node['Index Name'] === 'jobs_claim'),
        JSON.stringify(plan),
      );
      // Generic: the queue is the parameter, not the value of this call.
      const pick = nodes.find((node) => node['Index Name'] === 'jobs_claim')!;
      assert.match(String(pick['Index Cond']), /\$5/, String(pick['Index Cond']));
    });

    it('a generic claim plan made on an empty table still reads indexes once the table has grown', async () => {
      const empty = testSchema('claim_plan_empty');
      const other = await openStore(empty, { countCompactionIntervalMs: 0 });
      const client = new pg.Client({
        connectionString: POSTGRES_URL,
        options: `${ASYNC_COMMIT_OPTION} ${GENERIC_PLANS_OPTION}`,
      });
      await client.connect();
      try {
        const literal = (count: number) =>
          [
            T0 + 1,
            toIso(T0 + 1),
            null,
            'w1',
            QUEUE,
            count,
            null,
            `{${Array.from({ length: count }, () => `evt_${uuidv7(T0)}`).join(',')}}`,
            EVENT_SOURCE,
          ]
            .map((v) => (v === null ? 'NULL' : `'${v}'`))
            .join(', ');
        await client.query(`PREPARE claim AS ${statements(empty).claimQueueGated}`);
        // The plan is made and kept at the first call, on the empty table.
        await client.query(`EXECUTE claim(${literal(10)})`);
        const jobs = Array.from({ length: 3000 }, (_, i) =>
          parseEnqueueRequest({ type: 'p.t', args: [i], options: { queue: QUEUE } }, T0, {
            visibilityTimeoutMs: 30_000,
          }),
        );
        await other.insertJobs(jobs, [], T0);
        await client.query('BEGIN');
        try {
          const { rows } = await client.query<{ 'QUERY PLAN': Record<string, unknown>[] }>(
            `EXPLAIN (FORMAT JSON, ANALYZE) EXECUTE claim(${literal(10)})`,
          );
          const plan = rows[0]!['QUERY PLAN'][0]!;
          const onJobs = planNodes(plan.Plan as Record<string, unknown>).filter(
            (node) => node['Relation Name'] === 'jobs',
          );
          assert.ok(onJobs.length > 0);
          assert.ok(
            onJobs.every((node) => node['Node Type'] !== 'Seq Scan'),
            JSON.stringify(plan),
          );
        } finally {
          await client.query('ROLLBACK');
        }
      } finally {
        await client.end();
        await other.close();
        await dropSchema(empty);
      }
    });

    it('claims in claim order through the claim connections, and lists active jobs', async () => {
      const claimed = await store.claimJobs({
        queues: [QUEUE],
        count: 3,
        workerId: 'w1',
        now: T0 + 2,
      });
      assert.equal(claimed.length, 3);
      const seqs = claimed.map((job) => job.seq!);
      assert.deepEqual(
        seqs,
        [...seqs].sort((a, b) => a - b),
      );
      for (const job of claimed) {
        assert.equal(job.state, 'active');
        assert.equal(job.attempt, 1);
        assert.equal(job.worker_id, 'w1');
        assert.equal(job.lease_until, T0 + 2 + 30_000);
      }
      const active = await store.listJobs({
        filter: { queues: [QUEUE], states: ['active'] },
        limit: 10,
        order: 'asc',
      });
      assert.deepEqual(
        active.map((job) => job.id),
        claimed.map((job) => job.id),
      );
      const available = await store.listJobs({
        filter: { states: ['available'] },
        limit: 2,
        order: 'asc',
      });
      assert.equal(available.length, 2);
      assert.ok(available.every((job) => job.state === 'available'));
    });

    it('a listing of active jobs reads jobs_lease, of other states no whole table', async () => {
      const explain = async (states: JobRecord['state'][]) => {
        const query = listJobsQuery(`"${schema}"`, {
          filter: { queues: [QUEUE], states },
          limit: 10,
          order: 'desc',
        });
        return withAdmin(async (client) => {
          const { rows } = await client.query<{ 'QUERY PLAN': Record<string, unknown>[] }>(
            `EXPLAIN (FORMAT JSON) ${query.text}`,
            query.values,
          );
          return planNodes(rows[0]!['QUERY PLAN'][0]!.Plan as Record<string, unknown>);
        });
      };
      for (const state of ['available', 'completed'] as const) {
        const nodes = await explain([state]);
        assert.ok(
          nodes.every((node) => node['Node Type'] !== 'Seq Scan'),
          JSON.stringify(nodes),
        );
      }
      const active = await explain(['active']);
      assert.ok(
        active.some((node) => node['Index Name'] === 'jobs_lease'),
        JSON.stringify(active),
      );
    });

    it('a listing without a state merges one walk per state (no seq index, migration 016)', async () => {
      const filters: JobFilter[] = [{}, { types: ['p.t'] }];
      for (const filter of filters) {
        const query = listJobsQuery(`"${schema}"`, { filter, limit: 10, order: 'desc' });
        const nodes = await withAdmin(async (client) => {
          const { rows } = await client.query<{ 'QUERY PLAN': Record<string, unknown>[] }>(
            `EXPLAIN (FORMAT JSON) ${query.text}`,
            query.values,
          );
          return planNodes(rows[0]!['QUERY PLAN'][0]!.Plan as Record<string, unknown>);
        });
        assert.ok(
          nodes.every((node) => node['Node Type'] !== 'Seq Scan'),
          JSON.stringify(nodes),
        );
      }
      // Newest first across states: a claimed (active) job and the queued ones merged.
      const two = [1, 2].map((i) =>
        parseEnqueueRequest({ type: 'p.t', args: [i], options: { queue: 'merge' } }, T0, {
          visibilityTimeoutMs: 30_000,
        }),
      );
      await store.insertJobs(two, [], T0);
      await store.claimJobs({ queues: ['merge'], count: 1, workerId: 'w3', now: T0 + 4 });
      const newest = await store.listJobs({ filter: {}, limit: JOBS + 10, order: 'desc' });
      const seqs = newest.map((job) => job.seq!);
      assert.ok(newest.length >= JOBS);
      assert.deepEqual(
        seqs,
        [...seqs].sort((a, b) => b - a),
      );
      assert.ok(newest.some((job) => job.state === 'active'));
      assert.ok(newest.some((job) => job.state === 'available'));
      const page = await store.listJobs({
        filter: { types: ['p.t'] },
        limit: 5,
        order: 'asc',
        afterSeq: seqs.at(-1)!,
      });
      assert.deepEqual(
        page.map((job) => job.seq),
        seqs.slice(-6, -1).reverse(),
      );
    });

    it('the claim pool keeps the events of what it claimed', async () => {
      const job = parseEnqueueRequest({ type: 'p.t', args: [1], options: { queue: 'solo' } }, T0, {
        visibilityTimeoutMs: 30_000,
      });
      await store.insertJobs([job], enqueueEvents(job, T0), T0);
      const [claimed] = await store.claimJobs({
        queues: ['solo'],
        count: 1,
        workerId: 'w2',
        now: T0 + 3,
      });
      assert.equal(claimed!.id, job.id);
      const events = await store.listEvents({ subject: job.id, limit: 10 });
      assert.deepEqual(
        events.map((event) => event.type),
        ['job.enqueued', 'job.started'],
      );
      assert.equal(events[1]!.data.worker_id, 'w2');
    });
  });
}
