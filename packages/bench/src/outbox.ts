/**
 * Transactional enqueue's figures (decision 0109, issue 32), against an
 * `ojs serve` on PostgreSQL (the repository's sources, a schema of its own):
 *
 * - latency: a worker waits in a long-poll FETCH; the application runs
 *   BEGIN; SELECT <schema>.enqueue(...); COMMIT. Measured from the moment
 *   COMMIT is sent to the moment the waiting FETCH returns the job, one job
 *   at a time (p50, p99, max);
 * - throughput: N transactional enqueues (one job per transaction) from C
 *   concurrent application connections, until every job is stored (the
 *   relay included), against N single POST /ojs/v1/jobs from C concurrent
 *   HTTP requests of the same process.
 *
 *   npx node packages/bench/src/outbox.ts [--n 10000] [--connections 20] [--latency 500] [--servers 1]
 *
 * PostgreSQL from OJS_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { type ServerProcess, startServerProcess } from '../../../scripts/lib.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '20' },
    latency: { type: 'string', default: '500' },
    servers: { type: 'string', default: '1' },
  },
  strict: true,
});
const N = Number(values.n);
const C = Number(values.connections);
const LAT = Number(values.latency);
const SERVERS = Number(values.servers);
for (const [name, v] of Object.entries({ n: N, connections: C, latency: LAT, servers: SERVERS })) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be an integer >= 1`);
}

const POSTGRES_URL = process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `ojs_bench_outbox_${randomBytes(3).toString('hex')}`;
const spec = new URL(POSTGRES_URL);
spec.searchParams.set('schema', schema);

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function post(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const db = new pg.Pool({ connectionString: POSTGRES_URL, max: C + 2 });
const servers: ServerProcess[] = [];
try {
  for (let i = 0; i < SERVERS; i++) {
    servers.push(await startServerProcess(spec.toString(), { OJS_LOG_LEVEL: 'silent' }));
  }
  const url = servers[0]!.url;
  const count = async (queue: string) =>
    Number(
      (await db.query(`SELECT count(*) AS n FROM "${schema}".jobs WHERE queue = $1`, [queue]))
        .rows[0].n,
    );

  // ---------------------------------------------------------------- latency
  const app = await db.connect();
  const latencies: number[] = [];
  for (let i = 0; i < LAT + 20; i++) {
    const fetching = post(url, '/ojs/v1/workers/fetch', {
      queues: ['latency'],
      count: 1,
      wait_ms: 5000,
      worker_id: 'bench',
    });
    // The fetch is waiting before the transaction starts.
    await new Promise((r) => setTimeout(r, 2));
    await app.query('BEGIN');
    await app.query(`SELECT "${schema}".enqueue('bench.latency', '[]', '{"queue":"latency"}')`);
    const t0 = performance.now();
    await app.query('COMMIT');
    const got = (await fetching) as { jobs: { id: string }[] };
    const ms = performance.now() - t0;
    if (got.jobs.length !== 1) throw new Error('the waiting fetch returned no job');
    if (i >= 20) latencies.push(ms); // the first 20 warm up
  }
  app.release();
  latencies.sort((a, b) => a - b);

  // ---------------------------------------------------------------- throughput
  const txStart = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: C }, async () => {
      const client = await db.connect();
      try {
        while (next < N) {
          const i = next++;
          await client.query('BEGIN');
          await client.query(
            `SELECT "${schema}".enqueue('bench.tx', jsonb_build_array($1::int), '{"queue":"tx"}')`,
            [i],
          );
          await client.query('COMMIT');
        }
      } finally {
        client.release();
      }
    }),
  );
  const committedMs = performance.now() - txStart;
  while ((await count('tx')) < N) await new Promise((r) => setTimeout(r, 5));
  const relayedMs = performance.now() - txStart;

  const httpStart = performance.now();
  next = 0;
  await Promise.all(
    Array.from({ length: C }, async () => {
      while (next < N) {
        const i = next++;
        await post(url, '/ojs/v1/jobs', {
          type: 'bench.http',
          args: [i],
          options: { queue: 'http' },
        });
      }
    }),
  );
  const httpMs = performance.now() - httpStart;
  if ((await count('http')) !== N) throw new Error('POST /ojs/v1/jobs stored a different count');

  const rate = (ms: number) => Math.round((N / ms) * 1000);
  const result = {
    servers: SERVERS,
    latency_commit_to_fetch_ms: {
      jobs: latencies.length,
      p50: +quantile(latencies, 0.5).toFixed(2),
      p99: +quantile(latencies, 0.99).toFixed(2),
      max: +latencies.at(-1)!.toFixed(2),
    },
    throughput: {
      jobs: N,
      connections: C,
      transactional_committed_per_s: rate(committedMs),
      transactional_stored_per_s: rate(relayedMs),
      post_jobs_per_s: rate(httpMs),
      ratio_stored_vs_post: +(relayedMs > 0 ? httpMs / relayedMs : 0).toFixed(2),
    },
  };
  process.stdout.write(
    [
      `transactional enqueue, PostgreSQL, ${SERVERS} server process(es) (sources), schema ${schema}`,
      `  COMMIT -> waiting FETCH: p50 ${result.latency_commit_to_fetch_ms.p50} ms, p99 ${result.latency_commit_to_fetch_ms.p99} ms, max ${result.latency_commit_to_fetch_ms.max} ms (${latencies.length} jobs, one at a time)`,
      `  ${N} transactional enqueues from ${C} connections: committed at ${result.throughput.transactional_committed_per_s}/s, stored as jobs at ${result.throughput.transactional_stored_per_s}/s`,
      `  ${N} POST /ojs/v1/jobs from ${C} concurrent requests: ${result.throughput.post_jobs_per_s}/s`,
      `  transactional / POST: ${result.throughput.ratio_stored_vs_post}x`,
      JSON.stringify(result),
      '',
    ].join('\n'),
  );
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
  await db.end();
}
