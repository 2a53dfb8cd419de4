/**
 * Retention soak (issue 12 acceptance: 200,000 jobs through enqueue/ack with
 * a 1-minute retention keep the store's size flat after the first minute):
 * an in-process engine with its background services (the retention pruner
 * included) runs a producer (batches of 500) and a consumer (fetch 100 +
 * batched ACK) at a steady rate until `--jobs` jobs are completed, then
 * keeps sampling for one more retention period. Every `--sample-s` seconds
 * it prints the rows in the store, the completed rows, and (SQLite) the
 * database and WAL file sizes. Not part of `npm test`.
 *
 *   node packages/bench/src/retention-soak.ts --store sqlite --jobs 200000 --retention PT1M
 *   node packages/bench/src/retention-soak.ts --store postgres --jobs 200000 --retention PT1M
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseIsoDuration, type Store } from '@ojs/core';
import { Engine } from '@ojs/engine';
import { PostgresStore } from '@ojs/store-postgres';
import { SqliteThreadStore } from '@ojs/store-sqlite';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite' },
    jobs: { type: 'string', default: '200000' },
    rate: { type: 'string', default: '2000' },
    retention: { type: 'string', default: 'PT1M' },
    'sample-s': { type: 'string', default: '10' },
    url: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
  },
  strict: true,
});
const JOBS = Number(values.jobs);
const RATE = Number(values.rate);
const RETENTION_MS = parseIsoDuration(values.retention!);
const SAMPLE_MS = Number(values['sample-s']) * 1000;
if (
  !Number.isInteger(JOBS) ||
  JOBS < 1 ||
  !(RATE > 0) ||
  RETENTION_MS === null ||
  !(SAMPLE_MS > 0)
) {
  throw new Error(
    '--jobs, --rate and --sample-s must be positive; --retention an ISO 8601 duration.',
  );
}
if (values.store !== 'sqlite' && values.store !== 'postgres') {
  throw new Error(`--store must be sqlite or postgres (got '${values.store}').`);
}

const dir = mkdtempSync(join(tmpdir(), 'ojs-soak-'));
const path = join(dir, 'ojs.db');
const schema = `ojs_soak_${process.pid}`;
const store: Store =
  values.store === 'sqlite'
    ? new SqliteThreadStore({ path })
    : new PostgresStore({ connectionString: values.url, schema });
await store.init();
await store.reset();
const engine = new Engine({
  store,
  retention: { completed: RETENTION_MS },
  intervals: { retentionMs: 1000 },
});
engine.start();

const mib = (file: string) =>
  existsSync(file) ? Math.round((statSync(file).size / 1048576) * 10) / 10 : 0;
const started = Date.now();
let enqueued = 0;
let completed = 0;
const samples: Record<string, number>[] = [];
const sample = async () => {
  samples.push({
    t_s: Math.round((Date.now() - started) / 1000),
    enqueued,
    completed,
    rows: await store.countJobs({}),
    completed_rows: await store.countJobs({ states: ['completed'] }),
    ...(values.store === 'sqlite' ? { db_mib: mib(path), wal_mib: mib(`${path}-wal`) } : {}),
  });
  process.stdout.write(`${JSON.stringify(samples.at(-1))}\n`);
};
const sampler = setInterval(() => void sample(), SAMPLE_MS);

const producer = (async () => {
  while (enqueued < JOBS) {
    const n = Math.min(500, JOBS - enqueued);
    const tickStart = Date.now();
    await engine.enqueueBatch(
      Array.from({ length: n }, (_, i) => ({ type: 'soak.job', args: [enqueued + i] })),
    );
    enqueued += n;
    // Steady rate: n jobs per n / RATE seconds.
    const wait = (n / RATE) * 1000 - (Date.now() - tickStart);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
})();
const consumer = (async () => {
  while (completed < JOBS) {
    const jobs = await engine.fetch({
      queues: ['default'],
      count: 100,
      workerId: 'soak',
      waitMs: 500,
    });
    if (jobs.length === 0) continue;
    await engine.settleBatch({
      acks: jobs.map((job) => ({ jobId: job.id, workerId: 'soak', attempt: job.attempt })),
    });
    completed += jobs.length;
  }
})();
await Promise.all([producer, consumer]);
// One more retention period plus a few pruner ticks: everything finished is gone.
await new Promise((resolve) => setTimeout(resolve, RETENTION_MS + 3 * SAMPLE_MS));
clearInterval(sampler);
await sample();
await engine.stop();
await store.close();
rmSync(dir, { recursive: true, force: true });
if (values.store === 'postgres') {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: values.url });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}
