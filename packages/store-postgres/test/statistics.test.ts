/**
 * Planner statistics after a large intake: the store analyzes the jobs
 * table in the background every 20,000 inserted jobs, so a claim on a queue
 * that grew from nothing walks jobs_claim instead of sorting the whole queue
 * (the plan a table analyzed while empty gets). Migration 006's autovacuum
 * settings are on the table.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import { type JobRecord, parseEnqueueRequest } from '@ojs/core';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, testSchema, unavailable, withAdmin } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

const newJob = (): JobRecord =>
  parseEnqueueRequest({ type: 'stats.test', args: [] }, T0, { visibilityTimeoutMs: 30_000 });

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL planner statistics', { skip: reason }, () => {});
} else {
  describe('planner statistics of the jobs table', () => {
    const schema = testSchema('stats');
    let store: PostgresStore;

    before(async () => {
      store = await openStore(schema);
    });
    after(async () => {
      await store.close();
      await dropSchema(schema);
    });

    const analyzed = () =>
      withAdmin(async (client) => {
        const { rows } = await client.query<{ n: string | null }>(
          `SELECT analyze_count + autoanalyze_count AS n FROM pg_stat_user_tables
            WHERE schemaname = $1 AND relname = 'jobs'`,
          [schema],
        );
        return Number(rows[0]?.n ?? 0);
      });

    it('has the churn-friendly autovacuum settings of migration 006', async () => {
      const options = await withAdmin(async (client) => {
        const { rows } = await client.query<{ reloptions: string[] | null }>(
          `SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relname = 'jobs'`,
          [schema],
        );
        return rows[0]?.reloptions ?? [];
      });
      assert.ok(options.includes('autovacuum_analyze_scale_factor=0.02'), String(options));
    });

    it('analyzes after 20,000 inserted jobs, and the claim then walks the claim index', async () => {
      const before = await analyzed();
      for (let i = 0; i < 2; i++) {
        await store.insertJobs(Array.from({ length: 10_000 }, newJob), [], T0);
      }
      // The ANALYZE runs in the background: wait for the statistics collector to show it.
      const deadline = Date.now() + 30_000;
      while ((await analyzed()) === before) {
        assert.ok(Date.now() < deadline, 'the jobs table was not analyzed within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const plan = await withAdmin(async (client) => {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN SELECT id FROM "${schema}".jobs WHERE queue = 'default' AND state = 'available'
             AND rate_key IS NULL ORDER BY priority DESC, seq LIMIT 50 FOR UPDATE SKIP LOCKED`,
        );
        return rows.map((row) => row['QUERY PLAN']).join('\n');
      });
      assert.match(plan, /jobs_claim/, plan);
      assert.doesNotMatch(plan, /Sort/, plan);
    });
  });
}
