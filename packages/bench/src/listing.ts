/**
 * Listing benchmark (issue 12 acceptance: with 1,000,000 jobs, the first
 * page of a listing and a filtered count each under 50 ms): seeds a store
 * with `--jobs` jobs spread over 10 queues, 20 types and the states of a
 * busy system (mostly completed), then times each listing's first page
 * (50 jobs, newest first) and filtered counts through the Store, median
 * and max of `--runs` runs after one warm-up. Not part of `npm test`.
 *
 *   node packages/bench/src/listing.ts --store sqlite --jobs 100000
 *   node packages/bench/src/listing.ts --store postgres --jobs 1000000 [--url postgres://...]
 *
 * The SQLite file and the PostgreSQL schema are temporary and removed at the end.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { JobFilter, JobRecord, Store } from '@ojs/core';
import { PostgresStore } from '@ojs/store-postgres';
import { SqliteStore } from '@ojs/store-sqlite';
import { busyJob } from '../../../scripts/busy-jobs.ts';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    jobs: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '20' },
    url: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
  },
  strict: true,
});
const JOBS = Number(values.jobs);
const RUNS = Number(values.runs);
if (!Number.isInteger(JOBS) || JOBS < 1000 || !Number.isInteger(RUNS) || RUNS < 1) {
  throw new Error('--jobs must be an integer >= 1000 and --runs >= 1.');
}
if (values.store !== 'sqlite' && values.store !== 'postgres') {
  throw new Error(`--store must be sqlite or postgres (got '${values.store}').`);
}

const T0 = Date.UTC(2026, 0, 1);
const BATCH = 5000;

/** Job i in a final or waiting state, as the store would hold it. */
function seeded(i: number): JobRecord {
  return busyJob({
    request: {
      type: `bench.type${i % 20}`,
      args: [i],
      options: { queue: `queue-${i % 10}` },
      ...(i % 50 === 0 ? { tags: ['vip'] } : {}),
    },
    createdAt: T0 + i * 10,
    roll: i % 100,
    deadLetter: { attempts: 1, message: 'x' },
  });
}

interface Opened {
  store: Store;
  /** Statistics and visibility map as autovacuum keeps them on a live system. */
  analyze: () => Promise<void>;
  cleanup: () => Promise<void>;
  size: () => string;
}

async function sql(text: string): Promise<void> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: values.url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function open(): Promise<Opened> {
  if (values.store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-bench-listing-'));
    const path = join(dir, 'ojs.db');
    const store = new SqliteStore({ path, synchronous: 'NORMAL' });
    await store.init();
    return {
      store,
      analyze: async () => {},
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      size: () => `${Math.round(statSync(path).size / 1048576)} MiB`,
    };
  }
  const schema = `ojs_bench_listing_${process.pid}`;
  const store = new PostgresStore({ connectionString: values.url, schema });
  await store.init();
  await store.reset();
  return {
    store,
    analyze: () => sql(`VACUUM ANALYZE "${schema}".jobs`),
    cleanup: () => sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`),
    size: () => 'n/a',
  };
}

async function time(fn: () => Promise<unknown>): Promise<{ median: number; max: number }> {
  await fn();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 100) / 100;
  return { median: round(samples[Math.floor(samples.length / 2)]!), max: round(samples.at(-1)!) };
}

const { store, analyze, cleanup, size } = await open();
try {
  const seedStart = performance.now();
  for (let i = 0; i < JOBS; i += BATCH) {
    const jobs = Array.from({ length: Math.min(BATCH, JOBS - i) }, (_, k) => seeded(i + k));
    await store.insertJobs(jobs, [], T0);
  }
  const seedS = Math.round((performance.now() - seedStart) / 100) / 10;
  await analyze();
  const listings: [string, JobFilter][] = [
    ['all', {}],
    ['state=available', { states: ['available'] }],
    ['queue=queue-3', { queues: ['queue-3'] }],
    ['queue=queue-3&state=available', { queues: ['queue-3'], states: ['available'] }],
    ['type=bench.type7', { types: ['bench.type7'] }],
    ['state=discarded&error_type=Timeout', { states: ['discarded'], errorType: 'Timeout' }],
    ['tag=vip', { tag: 'vip' }],
  ];
  const results: Record<string, unknown>[] = [];
  for (const [name, filter] of listings) {
    results.push({
      what: `first page: ${name}`,
      ...(await time(() => store.listJobs({ filter, limit: 51, order: 'desc' }))),
    });
  }
  const counts: [string, JobFilter][] = [
    ['queue=queue-3&state=available', { queues: ['queue-3'], states: ['available'] }],
    ['state=retryable', { states: ['retryable'] }],
    ['state=completed (70% of all)', { states: ['completed'] }],
  ];
  for (const [name, filter] of counts) {
    results.push({ what: `count: ${name}`, ...(await time(() => store.countJobs(filter))) });
  }
  results.push({
    what: 'counts per queue and state',
    ...(await time(() => store.countJobsByQueue())),
  });
  process.stdout.write(
    `${JSON.stringify({ store: values.store, jobs: JOBS, seed_s: seedS, size: size(), runs: RUNS, ms: results }, null, 2)}\n`,
  );
} finally {
  await store.close();
  await cleanup();
}
