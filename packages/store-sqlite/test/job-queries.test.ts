/**
 * Finding jobs on SQLite: the first page of a listing is read through an
 * index (EXPLAIN QUERY PLAN shows every read of ojs_jobs using an index and
 * no sort of the table; only the pages of several merged ranges are sorted).
 * The one exception is the active range: active jobs are only in the lease
 * index (migration 009), so they are read through it and sorted; they are
 * the leases held at the moment, never a backlog.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { type JobFilter, parseEnqueueRequest } from '@ojs/core';
import { countJobsQuery, listJobsQuery, pruneCandidatesQuery } from '../src/job-queries.ts';
import { SqliteStore } from '../src/sqlite-store.ts';
import {
  claimPage,
  claimPagePlain,
  DUE_WEBHOOK_DELIVERIES,
  EXPIRED_LEASES,
  EXPIRING_WORKFLOW_JOBS,
  FINISHED_SINCE,
  MAX_LITERAL_LIMIT,
  withLimit,
} from '../src/statements.ts';

const T0 = Date.UTC(2026, 0, 1, 12);

describe('job queries on SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ojs-jq-'));
  const path = join(dir, 'ojs.db');
  let db: DatabaseSync;

  before(async () => {
    const store = new SqliteStore({ path, checkpointThread: false });
    await store.init();
    const jobs = Array.from({ length: 2000 }, (_, i) =>
      parseEnqueueRequest(
        { type: `plan.t${i % 5}`, args: [i], options: { queue: `q${i % 4}` } },
        T0,
        { visibilityTimeoutMs: 300_000 },
      ),
    );
    await store.insertJobs(jobs, [], T0);
    await store.close();
    db = new DatabaseSync(path);
    db.exec('ANALYZE');
  });
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const filters: [JobFilter, boolean][] = [
    [{}, false],
    [{ states: ['available'] }, false],
    [{ queues: ['q1'] }, true],
    [{ queues: ['q1', 'q2'], states: ['available', 'active'] }, true],
    [{ types: ['plan.t3'] }, false],
    [{ states: ['available'], typePrefix: 'plan.' }, false],
    [{ states: ['active'] }, false],
  ];
  for (const [filter, merged] of filters) {
    it(`the first page of ${JSON.stringify(filter)} is read through an index`, () => {
      const query = listJobsQuery({ filter, limit: 51, order: 'desc' });
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${query.sql}`).all(...query.params) as { detail: string }[]
      ).map((row) => row.detail);
      const text = plan.join('\n');
      const reads = plan.filter((line) => / ojs_jobs\b/.test(line));
      assert.ok(reads.length > 0, text);
      for (const line of reads) assert.match(line, /USING (COVERING )?INDEX/, text);
      // A sort right after a read of ojs_jobs sorts the table; after a
      // subquery it sorts one range's page (at most limit rows) for the merge.
      const tableSorts = plan.filter(
        (line, i) =>
          line.includes('TEMP B-TREE') &&
          / ojs_jobs\b/.test(plan[i - 1] ?? '') &&
          !(plan[i - 1] ?? '').includes('INDEX ojs_jobs_lease'),
      );
      // The ranges of other states use the state indexes, whose partial
      // condition (state <> 'active') the query repeats; the active range the lease index.
      if (filter.states?.includes('available')) assert.match(text, /_state_seq/);
      if (filter.states?.includes('active')) assert.match(text, /INDEX ojs_jobs_lease/);
      assert.deepEqual(tableSorts, [], text);
      assert.equal(text.includes('subquery'), merged, text);
    });
  }

  // Finished jobs are in one index (migration 011): the pruner, the queue
  // stats and the finished-since counts all read it.
  const retention = pruneCandidatesQuery(
    { retention: 'discarded', before: T0, exceptQueues: ['q1'] },
    1000,
  );
  const finishedSince = countJobsQuery({
    states: ['completed'],
    queues: ['q1', 'q2'],
    finishedFrom: T0,
  });
  for (const [name, sql, params, covering] of [
    ['FINISHED_SINCE', FINISHED_SINCE, ['q1', 'completed', T0], true],
    ['the retention pass', retention.sql, retention.params, false],
    ['a finished-since count', finishedSince.sql, finishedSince.params, true],
  ] as const) {
    it(`${name} reads the finished index by state and finished_at, in its order`, () => {
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]
      ).map((row) => row.detail);
      const text = plan.join('\n');
      assert.match(
        text,
        new RegExp(
          `SEARCH ojs_jobs USING ${covering ? 'COVERING ' : ''}INDEX ojs_jobs_finished \\(state=\\? AND finished_at`,
        ),
        text,
      );
      assert.doesNotMatch(text, /TEMP B-TREE/, text);
    });
  }

  for (const [name, sql, params] of [
    [
      'CLAIM_PAGE',
      claimPage(false, 16),
      ['q1', T0, Number.MAX_SAFE_INTEGER, 0, '["k"]', null, null],
    ],
    ['CLAIM_PAGE_PLAIN of one job', claimPagePlain(1), ['q1', T0, Number.MAX_SAFE_INTEGER, 0]],
    ['CLAIM_PAGE_PLAIN of 16', claimPagePlain(16), ['q1', T0, Number.MAX_SAFE_INTEGER, 0]],
    ['CLAIM_PAGE_PLAIN of 50', claimPagePlain(50), ['q1', T0, Number.MAX_SAFE_INTEGER, 0]],
  ] as const) {
    it(`${name} reads the claim index in claim order (no sort)`, () => {
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]
      ).map((row) => row.detail);
      const text = plan.join('\n');
      assert.match(text, /SEARCH ojs_jobs USING INDEX ojs_jobs_claim \(queue=\?/, text);
      assert.doesNotMatch(text, /TEMP B-TREE/, text);
    });
  }
});

describe('LIMIT written into the statement', () => {
  // A bound LIMIT makes SQLite re-prepare the statement on every run (its
  // planner reads the value): what runs per claim or per background tick
  // binds none.
  it('the claim pages, the scans and the due deliveries carry a literal LIMIT', () => {
    for (const text of [
      claimPagePlain(1),
      claimPagePlain(50),
      claimPagePlain(1000),
      claimPage(false, 37),
      claimPage(true, 1000),
      withLimit(EXPIRED_LEASES, 500),
      withLimit(EXPIRING_WORKFLOW_JOBS, 100),
      withLimit(DUE_WEBHOOK_DELIVERIES, 100),
    ]) {
      assert.match(text, /LIMIT \d+$/, text);
      assert.doesNotMatch(text, /LIMIT \?/, text);
    }
  });

  it('builds each text once (the store caches statements by text) and refuses a bad limit', () => {
    assert.equal(withLimit(EXPIRED_LEASES, 500), withLimit(EXPIRED_LEASES, 500));
    assert.equal(claimPagePlain(50), `${claimPagePlain(50).replace(/ LIMIT 50$/, '')} LIMIT 50`);
    for (const bad of [0, -1, 1.5, Number.NaN, MAX_LITERAL_LIMIT + 1]) {
      assert.throws(() => withLimit(EXPIRED_LEASES, bad), /bad LIMIT/);
    }
  });
});
