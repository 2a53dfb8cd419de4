/**
 * The `wrk` phase (decision 0095): single HTTP requests to our server driven
 * by `wrk -t1 -c50` (a C client, so the client is not what is measured), for
 * the three calls of a job's life: enqueue (`POST /ojs/v1/jobs`, the body of
 * ../shared/bench-anchors/wrk-op.lua), fetch count 1 (`POST
 * /ojs/v1/workers/fetch` against the backlog made first) and ACK (`POST
 * /ojs/v1/workers/ack` of exactly the jobs that fetch claimed: wrk-ojs.lua
 * writes their ids and attempts to a file, the ACK run reads it, so each
 * ACK is a real one, sent once). For each: requests/s, non-2xx answers and
 * the server process's CPU per request (/proc/<pid>/stat around the run).
 * The anchor is a recorded figure, not measured here: Fastify + a Redis Lua
 * script, ../shared/bench-anchors/recorded/http-store-ceiling.jsonl.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OjsClient } from '@ojs/sdk';
import { cpuSeconds, readProcMemory } from './proc.ts';
import { track, untrack } from './procs.ts';

const LUA = fileURLToPath(new URL('./wrk-ojs.lua', import.meta.url));
export const WRK_OPS = ['enqueue', 'fetch', 'ack'] as const;
export type WrkOp = (typeof WRK_OPS)[number];
export const WRK_CONNECTIONS = 50;
const QUEUE = 'default';
/** How long the server is left idle before the first run, to read its fixed CPU cost. */
const IDLE_MS = 2000;
/** wrk's -d of each warm-up run. */
const WARMUP_S = 1;

/** What wrk-ojs.lua prints (its done()). */
export interface WrkLine {
  op: string;
  requests: number;
  duration_s: number;
  rps: number;
  /** Socket errors: connect, read, write, timeout. */
  errors: number;
  non2xx: number;
  ok_rps: number;
  lat_p50_ms: number;
  lat_p99_ms: number;
  /** ack: ids read from the file fetch wrote. */
  ids: number;
}

/** The last line of wrk's output that is a JSON object with an `op` (null if none). */
export function parseWrkOutput(stdout: string): WrkLine | null {
  for (const line of stdout.split('\n').reverse()) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      const json = JSON.parse(t) as WrkLine;
      if (typeof json.op === 'string' && typeof json.requests === 'number') return json;
    } catch {
      // not this line
    }
  }
  return null;
}

/** µs of CPU per request (null without a reading or a request). */
export function usPerRequest(
  before: number | null,
  after: number | null,
  requests: number,
): number | null {
  if (before === null || after === null || requests <= 0) return null;
  return Math.round((((after - before) * 1e6) / requests) * 10) / 10;
}

/** CPU ms per second of wall time, from CPU seconds spent over `wallMs`. */
export function cpuMsPerSecond(cpuS: number, wallMs: number): number | null {
  if (wallMs <= 0) return null;
  return Math.round(((cpuS * 1000) / (wallMs / 1000)) * 10) / 10;
}

export interface WrkOpResult extends Partial<WrkLine> {
  op: WrkOp;
  /** wrk's -d. */
  seconds: number;
  /** ack: the list of claimed jobs ran out before the end (the rate is then too low). */
  ids_used_up?: boolean;
  server_cpu_s: number | null;
  server_cpu_us_per_request: number | null;
  /** The store's processes (redis-server, the PostgreSQL backends serving the server), µs/request. */
  store_cpu_us_per_request?: Partial<Record<'redis-server' | 'postgres', number>>;
  /** fetch: jobs claimed (written for the ACK run); the other answers were empty. */
  claimed?: number;
  error?: string;
}

export interface WrkResult {
  seconds: number;
  connections: number;
  /** Queued jobs before the fetch run (its backlog). */
  backlog_before_fetch: number | null;
  ops: WrkOpResult[];
  /** The server's CPU while idle (2 s before the first run), ms per s: its fixed cost, which a low rate spreads over fewer requests. */
  server_idle_cpu_ms_per_s: number | null;
  /** VmHWM after the enqueue run, before the backlog fill (batch enqueues of 10,000). */
  server_peak_rss_before_fill_mib: number | null;
  /** VmHWM at the end (the fill included). */
  server_peak_rss_mib: number | null;
}

function runWrk(
  url: string,
  op: WrkOp,
  seconds: number,
  ids: string,
): Promise<{ line: WrkLine | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      'wrk',
      ['-t1', `-c${WRK_CONNECTIONS}`, `-d${seconds}s`, '--timeout', '10s', '-s', LUA, url],
      {
        env: { ...process.env, OP: op, IDS: ids, QUEUE, CONNECTIONS: String(WRK_CONNECTIONS) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    track(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-4000);
    });
    // wrk stops by itself after `seconds`; this is the bound if it does not.
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.once('error', (error) => {
      clearTimeout(timer);
      untrack(child.pid);
      resolve({ line: null, stderr: error.message });
    });
    child.once('close', () => {
      clearTimeout(timer);
      untrack(child.pid);
      resolve({ line: parseWrkOutput(stdout), stderr: stderr || stdout.slice(-2000) });
    });
  });
}

/** Batch enqueues (not timed, not in any reading) until `depth` jobs are available. */
async function fillTo(url: string, depth: number): Promise<number | null> {
  const client = new OjsClient({ url });
  const available = async () => (await client.queueStats(QUEUE)).available ?? 0;
  let have = await available();
  while (have < depth) {
    const count = Math.min(10_000, depth - have);
    await client.enqueueBatch(
      Array.from({ length: count }, () => ({
        type: 'email.send',
        args: [{ to: 'user@example.com', subject: 'hi' }],
        options: { queue: QUEUE },
      })),
    );
    have = await available();
  }
  return have;
}

/**
 * The three wrk runs against one server (`pid` its process), after a
 * warm-up round of the same three: enqueue, then fetch from a backlog of at
 * least `fetchBacklog` jobs, then ACK of what fetch claimed.
 */
export async function runWrkPhase(
  url: string,
  pid: number,
  /** Cumulative CPU of the store's processes by role (cpu.ts CpuSampler.read). */
  readStore: () => Promise<Partial<Record<string, number>>>,
  tmp: string,
  seconds: number,
  fetchBacklog: number,
  log: (line: string) => void,
): Promise<WrkResult> {
  const ids = join(tmp, `wrk-ids-${pid}.txt`);
  const result: WrkResult = {
    seconds,
    connections: WRK_CONNECTIONS,
    backlog_before_fetch: null,
    ops: [],
    server_idle_cpu_ms_per_s: null,
    server_peak_rss_before_fill_mib: null,
    server_peak_rss_mib: null,
  };
  // A fresh server compiles its hot paths during its first seconds (JIT work
  // on background threads counts in its CPU): one short run of each call
  // first, not measured, as the recorded anchor's runs followed a warm-up too.
  const warmIds = join(tmp, `wrk-warm-ids-${pid}.txt`);
  log(`warm-up: enqueue, fetch, ack ${WARMUP_S} s each (not measured)`);
  for (const op of WRK_OPS) await runWrk(url, op, WARMUP_S, warmIds);
  const idle0 = cpuSeconds(pid);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const idle1 = cpuSeconds(pid);
  if (idle0 !== null && idle1 !== null)
    result.server_idle_cpu_ms_per_s = cpuMsPerSecond(idle1 - idle0, IDLE_MS);
  for (const op of WRK_OPS) {
    if (op === 'fetch') {
      result.server_peak_rss_before_fill_mib = readProcMemory(pid).peak_rss_mib;
      log(`filling the queue to ${fetchBacklog.toLocaleString('en-US')} jobs for fetch`);
      result.backlog_before_fetch = await fillTo(url, fetchBacklog);
    }
    // ACK runs half as long as fetch, so that the jobs fetch claimed last it
    // out (wrk's rate divides by the -d time even if the script stops early).
    const runSeconds = op === 'ack' ? Math.max(1, Math.round(seconds / 2)) : seconds;
    const store0 = await readStore();
    const before = cpuSeconds(pid);
    const { line, stderr } = await runWrk(url, op, runSeconds, ids);
    const after = cpuSeconds(pid);
    const store1 = await readStore();
    const cpu = before === null || after === null ? null : Math.round((after - before) * 100) / 100;
    const out: WrkOpResult = {
      ...(line ?? {}),
      op,
      seconds: runSeconds,
      server_cpu_s: cpu,
      server_cpu_us_per_request: usPerRequest(before, after, line?.requests ?? 0),
    };
    for (const role of ['redis-server', 'postgres'] as const) {
      const us = usPerRequest(store0[role] ?? 0, store1[role] ?? null, line?.requests ?? 0);
      if (us !== null && store1[role] !== undefined) {
        out.store_cpu_us_per_request ??= {};
        out.store_cpu_us_per_request[role] = us;
      }
    }
    if (op === 'ack' && line && line.requests + WRK_CONNECTIONS >= line.ids) out.ids_used_up = true;
    if (line === null) out.error = `wrk gave no result: ${stderr.trim().slice(-300)}`;
    if (op === 'fetch') {
      try {
        out.claimed = readFileSync(ids, 'utf8')
          .split('\n')
          .filter((l) => l !== '').length;
      } catch {
        out.claimed = 0;
      }
    }
    log(
      `${op}: ${line ? `${Math.round(line.ok_rps)} ok/s, non-2xx ${line.non2xx}, errors ${line.errors}` : out.error}; server ${out.server_cpu_us_per_request ?? '?'} µs/request`,
    );
    result.ops.push(out);
  }
  result.server_peak_rss_mib = readProcMemory(pid).peak_rss_mib;
  return result;
}

export interface RecordedCeiling {
  file: string;
  store: string;
  enqueue_ok_rps: number | null;
  fetch_ok_rps: number | null;
  ack_ok_rps: number | null;
}

/** The recorded Fastify + store ceiling (one server process) of `store` ('redis' or 'pg'). */
export function parseRecordedCeiling(
  text: string,
  store: string,
): Omit<RecordedCeiling, 'file'> | null {
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let json: Record<string, { ok_rps?: number } | string | number>;
    try {
      json = JSON.parse(line);
    } catch {
      continue;
    }
    if (json.store !== store || json.server_procs !== 1) continue;
    const rps = (key: string) => {
      const v = (json[key] as { ok_rps?: number } | undefined)?.ok_rps;
      return typeof v === 'number' ? v : null;
    };
    return {
      store,
      enqueue_ok_rps: rps('enqueue_c50'),
      fetch_ok_rps: rps('fetch_c50'),
      ack_ok_rps: rps('ack_c50'),
    };
  }
  return null;
}

export function readRecordedCeiling(anchorsDir: string, store: string): RecordedCeiling | null {
  const file = join(anchorsDir, 'recorded', 'http-store-ceiling.jsonl');
  try {
    const parsed = parseRecordedCeiling(readFileSync(file, 'utf8'), store);
    return parsed ? { file, ...parsed } : null;
  } catch {
    return null;
  }
}
