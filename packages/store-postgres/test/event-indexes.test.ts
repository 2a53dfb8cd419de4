/**
 * The event log's indexes (migrations 010, 014): the three event types every
 * job writes have no (type, seq) entry, the others do, and a listing
 * filtered by those others walks that partial index (EXPLAIN) instead of
 * the whole retained log, while every filter still answers the same events;
 * a cursor's id is found through a hash index.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import { makeEvent, type OjsEvent } from '@ojs/core';
import { listEventsQuery } from '../src/event-queries.ts';
import type { PostgresStore } from '../src/index.ts';
import { dropSchema, openStore, planNodes, testSchema, unavailable, withAdmin } from './helpers.ts';

const T0 = Date.UTC(2026, 0, 1, 12);
const JOB_EVENTS = 30_000;
const FREQUENT = ['job.enqueued', 'job.started', 'job.completed'];

const reason = await unavailable();
if (reason !== undefined) {
  test('PostgreSQL event indexes', { skip: reason }, () => {});
} else {
  describe('event log indexes on PostgreSQL', () => {
    const schema = testSchema('evix');
    let store: PostgresStore;
    const workflowStarted: OjsEvent[] = [];

    before(async () => {
      store = await openStore(schema);
      await store.reset();
      // Two workflow.started events early in a log of job events, appended
      // ten at a time: a run of job events is one row (migration 015), so
      // the log has thousands of rows, as one written by claims and ACKs.
      for (let i = 0; i < JOB_EVENTS; i += 10) {
        const page: OjsEvent[] = [];
        for (let j = i; j < i + 10; j++) {
          if (j === 10 || j === 20) {
            const event = makeEvent('workflow.started', `wf-${j}`, { workflow_id: `wf-${j}` }, T0);
            workflowStarted.push(event);
            page.push(event);
          }
          page.push(
            makeEvent(
              FREQUENT[j % 3]!,
              `job-${j}`,
              { job_id: `job-${j}`, job_type: `t${j % 7}`, queue: `q${j % 5}` },
              T0 + j,
            ),
          );
        }
        await store.appendEvents(page);
      }
      await withAdmin((client) => client.query(`ANALYZE "${schema}".events`));
    });
    after(async () => {
      await store.close();
      await dropSchema(schema);
    });

    it('keeps seq, id and the partial (type, seq) index, nothing else', async () => {
      const { rows } = await withAdmin((client) =>
        client.query<{ indexname: string; indexdef: string }>(
          'SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 ORDER BY indexname',
          [schema, 'events'],
        ),
      );
      assert.deepEqual(
        rows.map((row) => row.indexname),
        ['events_id', 'events_pkey', 'events_type_rare'],
      );
      const rare = rows.find((row) => row.indexname === 'events_type_rare')!.indexdef;
      for (const type of FREQUENT) assert.ok(rare.includes(`'${type}'`), rare);
    });

    it('a listing of a rarer type walks the partial index, not the log', async () => {
      const query = listEventsQuery(`"${schema}".events`, {
        types: ['workflow.started'],
        newestFirst: true,
        limit: 50,
      });
      const { rows } = await withAdmin((client) =>
        client.query(`EXPLAIN (FORMAT JSON) ${query.text}`, query.values),
      );
      const plan = (rows[0]['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0]!.Plan;
      const scans = planNodes(plan).filter((n) => n['Relation Name'] === 'events');
      assert.deepEqual(
        scans.map((n) => n['Index Name']),
        ['events_type_rare'],
        JSON.stringify(plan),
      );
    });

    it('resumes after a cursor through the id hash index (migration 014)', async () => {
      const first = await store.listEvents({ limit: 3 });
      const query = listEventsQuery(`"${schema}".events`, { after: first[1]!.id, limit: 5 });
      const { rows } = await withAdmin((client) =>
        client.query(`EXPLAIN (FORMAT JSON) ${query.text}`, query.values),
      );
      const plan = (rows[0]['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0]!.Plan;
      const byId = planNodes(plan).filter((n) => n['Index Name'] === 'events_id');
      assert.equal(byId.length, 1, JSON.stringify(plan));
      const next = await store.listEvents({ after: first[1]!.id, limit: 1 });
      assert.deepEqual(
        next.map((e) => e.id),
        [first[2]!.id],
      );
    });

    it('answers every filter with the events it matches, in log order', async () => {
      assert.deepEqual(
        (await store.listEvents({ types: ['workflow.started'], newestFirst: true, limit: 5 })).map(
          (e) => e.id,
        ),
        workflowStarted.map((e) => e.id).reverse(),
      );
      // A frequent type with a rarer one: the frequent one has no entry in
      // the partial index, so this walks seq order.
      const mixed = await store.listEvents({
        types: ['workflow.started', 'job.started'],
        limit: 4,
      });
      assert.deepEqual(
        mixed.map((e) => e.subject),
        ['job-1', 'job-4', 'job-7', 'wf-10'],
      );
      const started = await store.listEvents({
        types: ['job.started'],
        newestFirst: true,
        limit: 2,
      });
      assert.deepEqual(
        started.map((e) => e.subject),
        [`job-${JOB_EVENTS - 2}`, `job-${JOB_EVENTS - 5}`],
      );
      const queue = await store.listEvents({ queues: ['q3'], limit: 2 });
      assert.deepEqual(
        queue.map((e) => e.subject),
        ['job-3', 'job-8'],
      );
    });
  });
}
