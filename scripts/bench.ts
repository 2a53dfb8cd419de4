/**
 * Benchmarks of the server over HTTP on loopback, in the phases of
 * ../shared/bench-anchors (so the figures compare with BullMQ, pg-boss and
 * graphile-worker measured on this machine). Bounded in count and time;
 * prints one JSON line per store and a table.
 *
 *   npm run bench                               # SQLite (FULL and NORMAL) and PostgreSQL
 *   npm run bench -- --stores sqlite --n 5000   # fewer jobs, one store
 *
 * Phases:
 *   enqueue_seq      SEQ single enqueues, one awaited at a time (per-call latency)
 *   enqueue_single   N single enqueues, 50 in flight
 *   drain_single     a worker loop (fetch count 50, ack each, 50 acks in flight) on that backlog
 *   enqueue_bulk     N jobs in batch calls of 1000
 *   drain_bulk       drain that backlog
 *   latency_idle     LAT jobs, each enqueued after the previous started: enqueue -> fetched
 *                    by a long-polling fetch (wait_ms)
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { dropPostgresSchema, startServerProcess } from './lib.ts';

const { values } = parseArgs({
  options: {
    stores: { type: 'string', default: 'sqlite-full,sqlite-normal,postgres' },
    n: { type: 'string', default: '20000' },
    seq: { type: 'string', default: '1000' },
    lat: { type: 'string', default: '500' },
  },
});
const N = Number(values.n);
const SEQ = Number(values.seq);
const LAT = Number(values.lat);
const INFLIGHT = 50;
const POSTGRES_URL = process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PHASE_LIMIT_MS = 180_000;

const headers = { 'content-type': 'application/openjobspec+json' };

async function post(url: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status >= 400) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

const job = (i: number, queue: string) => ({
  type: 'bench.noop',
  args: [{ i, payload: 'x'.repeat(40) }],
  options: { queue },
});

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0
    ? 0
    : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

const round = (x: number) => Math.round(x * 100) / 100;

async function pool(count: number, inflight: number, task: (i: number) => Promise<void>) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (next < count) {
        if (performance.now() - started > PHASE_LIMIT_MS) throw new Error('phase time limit');
        await task(next++);
      }
    }),
  );
}

async function drain(url: string, queue: string, total: number): Promise<number> {
  let done = 0;
  const started = performance.now();
  // One worker process with concurrency 50: fetch what is free, ack each job as it ends.
  while (done < total) {
    if (performance.now() - started > PHASE_LIMIT_MS) throw new Error('drain time limit');
    const { jobs } = (await post(`${url}/ojs/v1/workers/fetch`, {
      queues: [queue],
      count: INFLIGHT,
      worker_id: 'bench',
    })) as { jobs: { id: string }[] };
    if (jobs.length === 0) break;
    await Promise.all(
      jobs.map((j) => post(`${url}/ojs/v1/workers/ack`, { job_id: j.id, worker_id: 'bench' })),
    );
    done += jobs.length;
  }
  return done;
}

async function benchStore(label: string, store: string, env: Record<string, string> = {}) {
  const server = await startServerProcess(store, env);
  const url = server.url;
  const result: Record<string, unknown> = { store: label, n: N };
  try {
    // enqueue_seq
    const latencies: number[] = [];
    let t = performance.now();
    for (let i = 0; i < SEQ; i++) {
      const s = performance.now();
      await post(`${url}/ojs/v1/jobs`, job(i, 'bench-seq'));
      latencies.push(performance.now() - s);
    }
    latencies.sort((a, b) => a - b);
    result.enqueue_seq = {
      per_s: Math.round(SEQ / ((performance.now() - t) / 1000)),
      p50_ms: round(percentile(latencies, 0.5)),
      p99_ms: round(percentile(latencies, 0.99)),
    };

    // enqueue_single + drain_single
    t = performance.now();
    await pool(N, INFLIGHT, async (i) => {
      await post(`${url}/ojs/v1/jobs`, job(i, 'bench-single'));
    });
    result.enqueue_single_per_s = Math.round(N / ((performance.now() - t) / 1000));
    t = performance.now();
    const drained = await drain(url, 'bench-single', N);
    result.drain_single_per_s = Math.round(drained / ((performance.now() - t) / 1000));

    // enqueue_bulk + drain_bulk
    t = performance.now();
    for (let i = 0; i < N; i += 1000) {
      const jobs = Array.from({ length: Math.min(1000, N - i) }, (_, k) =>
        job(i + k, 'bench-bulk'),
      );
      await post(`${url}/ojs/v1/jobs/batch`, { jobs });
    }
    result.enqueue_bulk_per_s = Math.round(N / ((performance.now() - t) / 1000));
    t = performance.now();
    const drainedBulk = await drain(url, 'bench-bulk', N);
    result.drain_bulk_per_s = Math.round(drainedBulk / ((performance.now() - t) / 1000));

    // latency_idle: enqueue -> a waiting long-poll fetch returns it
    const waits: number[] = [];
    for (let i = 0; i < LAT; i++) {
      const fetched = post(`${url}/ojs/v1/workers/fetch`, {
        queues: ['bench-lat'],
        wait_ms: 5000,
        worker_id: 'lat',
      });
      // Give the fetch time to park on the server before enqueueing (bounded, benchmark only).
      await new Promise((r) => setTimeout(r, 2));
      const s = performance.now();
      await post(`${url}/ojs/v1/jobs`, job(i, 'bench-lat'));
      const { jobs } = (await fetched) as { jobs: { id: string }[] };
      waits.push(performance.now() - s);
      if (jobs[0]) await post(`${url}/ojs/v1/workers/ack`, { job_id: jobs[0].id });
    }
    waits.sort((a, b) => a - b);
    result.latency_idle = {
      p50_ms: round(percentile(waits, 0.5)),
      p99_ms: round(percentile(waits, 0.99)),
    };
  } finally {
    await server.stop();
  }
  return result;
}

const stores = String(values.stores).split(',');
const tmp = mkdtempSync(join(tmpdir(), 'ojs-bench-'));
const results: Record<string, unknown>[] = [];
try {
  for (const store of stores) {
    if (store === 'sqlite-full')
      results.push(await benchStore(store, `sqlite:${join(tmp, 'full.db')}`));
    else if (store === 'sqlite-normal') {
      results.push(
        await benchStore(store, `sqlite:${join(tmp, 'normal.db')}`, {
          OJS_SQLITE_SYNCHRONOUS: 'NORMAL',
        }),
      );
    } else if (store === 'postgres') {
      const url = new URL(POSTGRES_URL);
      const schema = `ojs_bench_${process.pid}`;
      url.searchParams.set('schema', schema);
      try {
        results.push(await benchStore(store, url.toString()));
      } finally {
        await dropPostgresSchema(POSTGRES_URL, schema).catch(() => {});
      }
    } else throw new Error(`unknown store ${store}`);
    process.stdout.write(`${JSON.stringify(results.at(-1))}\n`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
