/**
 * The backlog phase: does claiming get slower, and the server bigger, when
 * the queue is deep? Against a server process over HTTP:
 *
 *   1. 1,000 jobs queued (one batch call); claim+ack SAMPLE jobs, keeping the
 *      depth at ~1,000 (every round's jobs are replaced, untimed).
 *   2. Filled to `backlog` queued jobs with batch enqueues of `fillBatch`
 *      (FILL_BATCH, 10,000, by default) per call (the fill rate is reported too).
 *   3. claim+ack SAMPLE jobs at that depth, kept the same way.
 *
 * One claim+ack round = POST /ojs/v1/workers/fetch (count 50) then
 * POST /ojs/v1/workers/ack/batch with the 50 jobs (fenced on worker_id and
 * attempt), one round at a time: jobs/s = jobs / time spent in those two calls.
 * The server's RSS (VmRSS, and the peak VmHWM, from /proc/<pid>/status) is
 * read at each step, and once more after the fill with the server left
 * idle for QUIET_MS: what it holds once a burst is over (the server gives
 * memory back when quiet, core startQuietGc).
 *
 * On Redis (`redis` given) the jobs live in Redis's memory: Redis's
 * used_memory and the MEMORY USAGE of the store's own keys are read at the
 * same steps (redis.ts), before the first job too.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { OJS_MEDIA_TYPE } from '@ojs/sdk';
import { type RedisMemoryReading, readRedisMemory } from './redis.ts';

export const SMALL_DEPTH = 1000;
export const SAMPLE_JOBS = 10_000;
export const FILL_BATCH = 10_000;
/** Idle time before the second reading at depth: the quiet GC samples each second and waits for two quiet samples. */
export const QUIET_MS = 10_000;
const CLAIM = 50;
const QUEUE = 'bench-backlog';
const HEADERS = { 'content-type': OJS_MEDIA_TYPE };

export interface Memory {
  rss_mib: number | null;
  peak_rss_mib: number | null;
}

export function readMemory(pid: number): Memory {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => {
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return match ? Math.round((Number(match[1]) / 1024) * 10) / 10 : null;
    };
    return { rss_mib: kib('VmRSS'), peak_rss_mib: kib('VmHWM') };
  } catch {
    return { rss_mib: null, peak_rss_mib: null };
  }
}

async function post(url: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (response.status >= 400) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

let seq = 0;
const job = () => ({
  type: 'bench.noop',
  args: [
    {
      i: seq++,
      t: performance.timeOrigin + performance.now(),
      to: 'user@example.com',
      n: seq % 97,
    },
  ],
  options: { queue: QUEUE },
});

async function enqueueBatch(url: string, count: number): Promise<void> {
  await post(`${url}/ojs/v1/jobs/batch`, { jobs: Array.from({ length: count }, job) });
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;
function quantile(sorted: number[], p: number): number {
  return sorted.length === 0
    ? 0
    : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export interface ClaimAckResult {
  depth: number;
  jobs: number;
  jobs_per_s: number;
  round_p50_ms: number;
  round_p99_ms: number;
  error?: string;
}

async function claimAck(
  url: string,
  depth: number,
  sample: number,
  deadline: number,
): Promise<ClaimAckResult> {
  const rounds: number[] = [];
  let jobs = 0;
  let busy = 0;
  let error: string | undefined;
  const workerId = `backlog-${process.pid}`;
  while (jobs < sample) {
    if (performance.now() > deadline) {
      error = 'PHASE_TIMEOUT';
      break;
    }
    const t0 = performance.now();
    const fetched = (await post(`${url}/ojs/v1/workers/fetch`, {
      queues: [QUEUE],
      count: CLAIM,
      worker_id: workerId,
    })) as { jobs: { id: string; attempt: number }[] };
    if (fetched.jobs.length === 0) {
      error = 'queue empty';
      break;
    }
    const acked = (await post(`${url}/ojs/v1/workers/ack/batch`, {
      acks: fetched.jobs.map((j) => ({ job_id: j.id, worker_id: workerId, attempt: j.attempt })),
    })) as { results: { status: string }[] };
    const ms = performance.now() - t0;
    const failed = acked.results.filter((r) => r.status !== 'ok').length;
    if (failed > 0) throw new Error(`ack/batch: ${failed} of ${fetched.jobs.length} not ok`);
    rounds.push(ms);
    busy += ms;
    jobs += fetched.jobs.length;
    // Keep the depth: replace what was claimed (not timed).
    await enqueueBatch(url, fetched.jobs.length);
  }
  rounds.sort((a, b) => a - b);
  return {
    depth,
    jobs,
    jobs_per_s: busy > 0 ? Math.round((jobs * 1000 * 10) / busy) / 10 : 0,
    round_p50_ms: round3(quantile(rounds, 0.5)),
    round_p99_ms: round3(quantile(rounds, 0.99)),
    ...(error === undefined ? {} : { error }),
  };
}

async function queuedCount(url: string): Promise<number | null> {
  try {
    const response = await fetch(`${url}/ojs/v1/queues/${QUEUE}/stats`);
    const body = (await response.json()) as { stats?: { available?: number } };
    return body.stats?.available ?? null;
  } catch {
    return null;
  }
}

export interface BacklogResult {
  backlog: number;
  sample: number;
  memory_at_start: Memory;
  small: ClaimAckResult;
  memory_at_small: Memory;
  fill: { jobs: number; batch: number; jobs_per_s: number; error?: string };
  queued_after_fill: number | null;
  memory_at_backlog: Memory;
  /** At the same depth, after QUIET_MS with no request. */
  memory_at_backlog_quiet: Memory;
  large: ClaimAckResult;
  memory_after_large: Memory;
  /** Redis store only: Redis memory at the same steps, and before the first job. */
  redis_memory?: {
    at_start: RedisMemoryReading;
    at_small: RedisMemoryReading;
    at_backlog: RedisMemoryReading;
    at_backlog_quiet: RedisMemoryReading;
    after_large: RedisMemoryReading;
  };
}

/** Runs the phase against a fresh server; every step is bounded by `phaseTimeoutMs`. */
export async function runBacklog(
  url: string,
  pid: number,
  backlog: number,
  phaseTimeoutMs: number,
  log: (line: string) => void,
  redis?: { pattern: string; group: (key: string) => string },
  fillBatch = FILL_BATCH,
): Promise<BacklogResult> {
  const sample = SAMPLE_JOBS;
  const readRedis = async () =>
    redis === undefined ? undefined : await readRedisMemory(redis.pattern, redis.group);
  const memory_at_start = readMemory(pid);
  const redis_at_start = await readRedis();
  await enqueueBatch(url, SMALL_DEPTH);
  log(`claim+ack at depth ${SMALL_DEPTH}`);
  const small = await claimAck(url, SMALL_DEPTH, sample, performance.now() + phaseTimeoutMs);
  const memory_at_small = readMemory(pid);
  const redis_at_small = await readRedis();

  // Filling is given more time: a million rows take a while on a 2-core box.
  const fillDeadline = performance.now() + Math.max(phaseTimeoutMs, 600_000);
  const toFill = backlog - SMALL_DEPTH;
  let filled = 0;
  let fillError: string | undefined;
  const t0 = performance.now();
  let nextLog = 0;
  while (filled < toFill) {
    if (performance.now() > fillDeadline) {
      fillError = 'PHASE_TIMEOUT';
      break;
    }
    const count = Math.min(fillBatch, toFill - filled);
    await enqueueBatch(url, count);
    filled += count;
    if (filled >= nextLog) {
      log(`filled ${SMALL_DEPTH + filled}/${backlog}`);
      nextLog += Math.max(fillBatch, Math.floor(toFill / 5));
    }
  }
  const fillMs = performance.now() - t0;
  const fill = {
    jobs: filled,
    batch: fillBatch,
    jobs_per_s: fillMs > 0 ? Math.round((filled * 1000 * 10) / fillMs) / 10 : 0,
    ...(fillError === undefined ? {} : { error: fillError }),
  };
  const queued_after_fill = await queuedCount(url);
  const memory_at_backlog = readMemory(pid);
  const redis_at_backlog = await readRedis();
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  const memory_at_backlog_quiet = readMemory(pid);
  const redis_at_backlog_quiet = await readRedis();
  log(`claim+ack at depth ${SMALL_DEPTH + filled}`);
  const large = await claimAck(
    url,
    SMALL_DEPTH + filled,
    sample,
    performance.now() + phaseTimeoutMs,
  );
  const memory_after_large = readMemory(pid);
  const redis_after_large = await readRedis();
  return {
    backlog,
    sample,
    memory_at_start,
    small,
    memory_at_small,
    fill,
    queued_after_fill,
    memory_at_backlog,
    memory_at_backlog_quiet,
    large,
    memory_after_large,
    ...(redis_at_start === undefined
      ? {}
      : {
          redis_memory: {
            at_start: redis_at_start,
            at_small: redis_at_small!,
            at_backlog: redis_at_backlog!,
            at_backlog_quiet: redis_at_backlog_quiet!,
            after_large: redis_after_large!,
          },
        }),
  };
}
