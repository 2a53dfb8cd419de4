/**
 * The comparison table: one row per figure, ours next to the anchor's
 * figure of the same phase measured in the same run, and their ratio
 * (ours / anchor, of the figure shown: for jobs/s higher is better, for
 * latency lower is better). SQLite and Redis rows compare with BullMQ
 * (Redis), PostgreSQL rows with graphile-worker with batching.
 */
import { type BacklogResult, QUIET_MS } from './backlog.ts';
import { type CpuPerJob, cpuPerJob, ROLES, type Role, type RoleSeconds } from './cpu.ts';
import type { Anchor, Mode, StoreName } from './options.ts';
import { type BullmqBacklogResult, bytesPerJob, mibPerMillion } from './redis.ts';
import type { StartupResult } from './startup.ts';
import type { RecordedCeiling, WrkOp, WrkResult } from './wrk.ts';

type Obj = Record<string, unknown>;

export interface Row {
  store: StoreName;
  mode: Mode | 'backlog' | 'wrk' | 'startup';
  phase: string;
  unit: 'jobs/s' | 'ms' | 'MiB' | 'µs/job' | 'B/job' | 'req/s' | 'µs/req' | 'ms/s';
  ours: number | null;
  /** 'recorded': a figure of ../shared/bench-anchors/recorded, not measured in this run. */
  anchor: Anchor | 'recorded' | null;
  anchor_value: number | null;
  /** ours / anchor_value. */
  ratio: number | null;
  detail: string;
  error?: string;
  /** CPU rows: µs per job by process (role), ours and the anchor's. */
  cpu?: { ours: CpuPerJob | null; anchor: CpuPerJob | null };
}

export const ANCHOR_OF: Record<StoreName, Anchor> = {
  sqlite: 'bullmq',
  'sqlite-normal': 'bullmq',
  postgres: 'graphile',
  redis: 'bullmq',
};

export const STORE_TITLE: Record<StoreName, string> = {
  sqlite: 'SQLite (synchronous=FULL)',
  'sqlite-normal': 'SQLite (synchronous=NORMAL)',
  postgres: 'PostgreSQL',
  redis: 'Redis (our server on the Redis BullMQ uses)',
};

export const ANCHOR_TITLE: Record<Anchor, string> = {
  bullmq: 'BullMQ (Redis)',
  graphile: 'graphile-worker (batching)',
};

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

interface Figure {
  label: string;
  unit: Row['unit'];
  value: (phase: Obj) => number | null;
  detail?: (phase: Obj) => string;
}

const ms = (v: unknown) => (num(v) === null ? '?' : `${formatNumber(v as number)} ms`);
const latency = (key: string) => (phase: Obj) => {
  const l = phase[key] as Obj | undefined;
  return l ? `p50 ${ms(l.p50_ms)}, p99 ${ms(l.p99_ms)}` : '';
};

/** What the table shows of each anchor phase (fields of common.js's output). */
export const FIGURES: Record<string, Figure[]> = {
  enqueue_seq: [
    {
      label: 'enqueue_seq',
      unit: 'jobs/s',
      value: (p) => num(p.jobs_per_s),
      detail: (p) => `call ${latency('call')(p)}`,
    },
  ],
  enqueue_single: [{ label: 'enqueue_single', unit: 'jobs/s', value: (p) => num(p.jobs_per_s) }],
  drain_single: [
    {
      label: 'drain_single',
      unit: 'jobs/s',
      value: (p) => num(p.jobs_per_s_to_all_completed) ?? num(p.jobs_per_s),
    },
  ],
  enqueue_bulk: [{ label: 'enqueue_bulk', unit: 'jobs/s', value: (p) => num(p.jobs_per_s) }],
  drain_bulk: [
    {
      label: 'drain_bulk',
      unit: 'jobs/s',
      value: (p) => num(p.jobs_per_s_to_all_completed) ?? num(p.jobs_per_s),
    },
  ],
  latency_idle: [
    {
      label: 'latency_idle p50',
      unit: 'ms',
      value: (p) => num((p.enqueue_to_start as Obj)?.p50_ms),
    },
    {
      label: 'latency_idle p99',
      unit: 'ms',
      value: (p) => num((p.enqueue_to_start as Obj)?.p99_ms),
    },
  ],
  steady_e2e: [
    {
      label: 'steady_e2e',
      unit: 'jobs/s',
      value: (p) => num(p.e2e_jobs_per_s_to_all_completed) ?? num(p.e2e_jobs_per_s),
      detail: (p) =>
        `produce ${formatNumber(num(p.produce_jobs_per_s))}/s; loaded ${latency('enqueue_to_start')(p)}`,
    },
  ],
};

export function formatNumber(v: number | null): string {
  if (v === null) return '-';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function phaseOf(result: Obj | undefined, phase: string): Obj | undefined {
  return (result?.results as Obj | undefined)?.[phase] as Obj | undefined;
}

/** Rows of one run of our adapter (one store, one mode). */
export function anchorPhaseRows(
  store: StoreName,
  mode: Mode,
  ours: Obj | undefined,
  anchorResult: Obj | undefined,
  phases: readonly string[],
  runError?: string,
): Row[] {
  const anchor = ANCHOR_OF[store];
  const rows: Row[] = [];
  for (const phase of phases) {
    for (const figure of FIGURES[phase] ?? []) {
      const mine = phaseOf(ours, phase);
      const theirs = phaseOf(anchorResult, phase);
      const value = mine && !mine.error ? figure.value(mine) : null;
      const anchorValue = theirs && !theirs.error ? figure.value(theirs) : null;
      const error =
        runError ?? (mine?.error as string | undefined) ?? (mine ? undefined : 'no result');
      rows.push({
        store,
        mode,
        phase: figure.label,
        unit: figure.unit,
        ours: value,
        anchor: anchorResult ? anchor : null,
        anchor_value: anchorValue,
        ratio: value !== null && anchorValue ? value / anchorValue : null,
        detail: mine && !mine.error && figure.detail ? figure.detail(mine) : '',
        ...(value === null && error !== undefined ? { error } : {}),
      });
    }
  }
  return rows;
}

/** CPU time over one whole run (every phase of it), read from /proc. */
export interface CpuFigures {
  /** Jobs the run enqueued (and processed). */
  jobs: number;
  /** Our server process (modes with a server), seconds. */
  server_s: number | null;
  /** redis-server (Redis store, BullMQ), seconds. */
  redis_server_s: number | null;
  /** Bytes Redis read from / wrote to its clients over the run (INFO stats; Redis store, BullMQ). */
  redis_net_in_bytes?: number | null;
  redis_net_out_bytes?: number | null;
}

/** What one side (ours or the anchor) spent in one phase. */
export interface PhaseSpend {
  /** CPU seconds per role in the phase (phaseSeconds). */
  seconds: RoleSeconds | undefined;
  /** Jobs of the phase (its result's `jobs`). */
  jobs: number | null;
}

export const ROLE_TITLE: Record<Role, string> = {
  producer: 'producer',
  worker: 'worker',
  server: 'server',
  'redis-server': 'redis-server',
  postgres: 'PG backends',
};

/** "server 40 + worker 30 + producer 20 = 90" (µs/job). */
export function cpuBreakdown(cpu: CpuPerJob | null): string {
  if (cpu === null) return '?';
  // One decimal below 100 µs: the readings are ticks of 10 ms over whole phases.
  const us = (v: number) => (v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(1));
  const parts = ROLES.filter((r) => cpu.roles[r] !== undefined).map(
    (r) => `${ROLE_TITLE[r]} ${us(cpu.roles[r]!)}`,
  );
  return `${parts.join(' + ')} = ${us(cpu.total)}`;
}

/** Jobs of a phase in a common.js result (null if the phase failed or did not run). */
export function phaseJobs(result: Obj | undefined, phase: string): number | null {
  const p = phaseOf(result, phase);
  return p && !p.error ? num(p.jobs) : null;
}

/**
 * The CPU row of one phase: total µs per job of every process taking part,
 * ours next to the anchor's, and the ratio of the totals; the detail gives
 * the processes. `label` names the row (the phase, or 'all phases').
 */
export function cpuRow(
  store: StoreName,
  mode: Mode,
  label: string,
  ours: PhaseSpend,
  anchor: PhaseSpend | undefined,
  extra = '',
): Row {
  const mine = ours.seconds ? cpuPerJob(ours.seconds, ours.jobs) : null;
  const theirs = anchor?.seconds ? cpuPerJob(anchor.seconds, anchor.jobs) : null;
  const anchorName = ANCHOR_OF[store];
  return {
    store,
    mode,
    phase: `${label} CPU`,
    unit: 'µs/job',
    ours: mine?.total ?? null,
    anchor: anchor ? anchorName : null,
    anchor_value: theirs?.total ?? null,
    ratio: mine !== null && theirs !== null && theirs.total > 0 ? mine.total / theirs.total : null,
    detail: `ours ${cpuBreakdown(mine)}${anchor ? `; ${ANCHOR_TITLE[anchorName]} ${cpuBreakdown(theirs)}` : ''}${extra}`,
    cpu: { ours: mine, anchor: theirs },
  };
}

/** Sums the phases' seconds and jobs (the 'all phases' row). */
export function sumSpends(spends: readonly PhaseSpend[]): PhaseSpend {
  const seconds: RoleSeconds = {};
  let jobs = 0;
  let any = false;
  for (const s of spends) {
    if (!s.seconds || s.jobs === null) continue;
    any = true;
    jobs += s.jobs;
    for (const role of ROLES) {
      const v = s.seconds[role];
      if (v !== undefined) seconds[role] = (seconds[role] ?? 0) + v;
    }
  }
  return { seconds: any ? seconds : undefined, jobs: any ? jobs : null };
}

/** Redis traffic per job over a whole run (INFO stats), for the 'all phases' CPU row. */
export function redisTraffic(ours: CpuFigures | undefined, anchor: CpuFigures | undefined): string {
  const bytes = (cpu: CpuFigures | undefined) => {
    if (!cpu || cpu.redis_net_in_bytes === undefined) return undefined;
    const per = (b: number | null | undefined) =>
      b === null || b === undefined || cpu.jobs <= 0 ? '?' : formatNumber(b / cpu.jobs);
    return `${per(cpu.redis_net_in_bytes)} B in / ${per(cpu.redis_net_out_bytes)} B out per job`;
  };
  const mine = bytes(ours);
  const theirs = bytes(anchor);
  if (mine === undefined && theirs === undefined) return '';
  return `; Redis traffic (whole run): ours ${mine ?? '?'}${theirs ? `, BullMQ ${theirs}` : ''}`;
}

/** The issue's bound on the server's memory in the bench (issue 30). */
export const SERVER_RSS_BOUND_MIB = 200;

/** Our server's peak RSS over a run (VmHWM), with the producer's and worker's peaks. */
export function peakRssRow(
  store: StoreName,
  mode: Mode,
  serverPeak: number | null,
  peaks: Partial<Record<Role, number>>,
): Row {
  const others = (['producer', 'worker'] as const)
    .filter((r) => peaks[r] !== undefined)
    .map((r) => `${r} ${formatNumber(peaks[r]!)} MiB`)
    .join(', ');
  return {
    store,
    mode,
    phase: 'server peak RSS (whole run)',
    unit: 'MiB',
    ours: serverPeak,
    anchor: null,
    anchor_value: null,
    ratio: null,
    detail: `VmHWM of the server process; bound ${SERVER_RSS_BOUND_MIB} MB (issue 30)${others ? `; peaks of ${others}` : ''}`,
  };
}

/** The store's processes per request beside the server's (Redis, PostgreSQL). */
function storeCpu(op: WrkResult['ops'][number]): string {
  const s = op.store_cpu_us_per_request;
  if (s === undefined) return '';
  const parts = (['redis-server', 'postgres'] as const)
    .filter((r) => s[r] !== undefined)
    .map((r) => `${ROLE_TITLE[r]} ${formatNumber(s[r]!)} µs/request`);
  return parts.length === 0 ? '' : `; and ${parts.join(', ')}`;
}

/** The one row of a phase that gave no result. */
function failedRow(
  store: StoreName,
  mode: Row['mode'],
  phase: string,
  unit: Row['unit'],
  error: string | undefined,
  detail = '',
): Row {
  const none = { ours: null, anchor: null, anchor_value: null, ratio: null };
  return { store, mode, phase, unit, ...none, detail, error: error ?? 'no result' };
}

const WRK_TITLE: Record<WrkOp, string> = {
  enqueue: 'enqueue POST /ojs/v1/jobs',
  fetch: 'fetch count 1 POST /workers/fetch',
  ack: 'ack POST /workers/ack',
};
/** Issue 30's targets for the single-request runs. */
const WRK_TARGET: Record<WrkOp, string> = {
  enqueue: 'target >= 20,000/s at <= 60 µs server CPU/request',
  fetch: 'target >= 15,000/s',
  ack: 'target >= 15,000/s',
};

/** The wrk phase: per call, requests/s (2xx) next to the recorded Fastify + Redis ceiling, and the server's CPU per request. */
export function wrkRows(
  store: StoreName,
  w: WrkResult | undefined,
  recorded: RecordedCeiling | null,
  error?: string,
): Row[] {
  const base = { store, mode: 'wrk' as const };
  if (w === undefined) return [failedRow(store, 'wrk', 'wrk', 'req/s', error)];
  const rows: Row[] = [
    {
      ...base,
      phase: 'server CPU while idle',
      unit: 'ms/s',
      ours: w.server_idle_cpu_ms_per_s,
      anchor: null,
      anchor_value: null,
      ratio: null,
      detail:
        "2 s before the first run: the server's fixed cost (timers, pollers), part of every run's CPU per request, the larger the lower the rate",
    },
  ];
  for (const op of w.ops) {
    const ref = recorded ? recorded[`${op.op}_ok_rps`] : null;
    const ok = typeof op.ok_rps === 'number' ? op.ok_rps : null;
    const lat =
      typeof op.lat_p50_ms === 'number'
        ? `p50 ${formatNumber(op.lat_p50_ms)} ms, p99 ${formatNumber(op.lat_p99_ms ?? null)} ms`
        : '';
    const extra =
      op.op === 'fetch' && op.claimed !== undefined
        ? `; ${op.claimed.toLocaleString('en-US')} jobs claimed (backlog ${w.backlog_before_fetch?.toLocaleString('en-US') ?? '?'})`
        : op.op === 'ack' && op.ids_used_up
          ? '; the claimed jobs ran out before the end: the rate is too low'
          : '';
    rows.push({
      ...base,
      phase: WRK_TITLE[op.op],
      unit: 'req/s',
      ours: ok,
      anchor: ref === null ? null : 'recorded',
      anchor_value: ref,
      ratio: ok !== null && ref ? ok / ref : null,
      detail: `wrk -t1 -c${w.connections} -d${op.seconds}s: ${op.requests ?? '?'} requests, non-2xx ${op.non2xx ?? '?'}, socket errors ${op.errors ?? '?'}; ${lat}${extra}; ${WRK_TARGET[op.op]}`,
      ...(op.error ? { error: op.error } : {}),
    });
    rows.push({
      ...base,
      phase: `${op.op} server CPU`,
      unit: 'µs/req',
      ours: op.server_cpu_us_per_request,
      anchor: null,
      anchor_value: null,
      ratio: null,
      detail: `${op.server_cpu_s ?? '?'} s of the server process over the run (/proc/<pid>/stat)${storeCpu(op)}`,
    });
  }
  rows.push({
    ...base,
    phase: 'server peak RSS (enqueue run)',
    unit: 'MiB',
    ours: w.server_peak_rss_before_fill_mib,
    anchor: null,
    anchor_value: null,
    ratio: null,
    detail: `VmHWM after the wrk enqueue run; bound ${SERVER_RSS_BOUND_MIB} MB (issue 30); ${formatNumber(w.server_peak_rss_mib)} MiB at the end, the backlog fill (batch enqueues of 10,000) and the fetch and ACK runs included`,
  });
  return rows;
}

/** The startup phase: spawn to first health answer, idle RSS (medians). */
export function startupRows(s: StartupResult | undefined, source: boolean, error?: string): Row[] {
  const base = {
    store: 'sqlite' as const,
    mode: 'startup' as const,
    anchor: null,
    anchor_value: null,
    ratio: null,
  };
  const which = source
    ? "the repository's TypeScript (--server source), not the installed build"
    : 'the installed package (built JavaScript)';
  if (s === undefined) return [failedRow('sqlite', 'startup', 'start', 'ms', error, which)];
  const runs = s.runs
    .map((r) => (r.start_ms === null ? `error (${r.error ?? '?'})` : `${formatNumber(r.start_ms)}`))
    .join(', ');
  return [
    {
      ...base,
      phase: 'start to first GET /health 200',
      unit: 'ms',
      ours: s.start_ms,
      detail: `median of ${s.runs.length}: ${runs} ms; ${which}, SQLite file, HTTP + gRPC`,
    },
    {
      ...base,
      phase: 'idle RSS 2 s after the first answer',
      unit: 'MiB',
      ours: s.idle_rss_mib,
      detail: `median; ${s.runs.map((r) => formatNumber(r.idle.rss_mib)).join(', ')} MiB`,
    },
  ];
}

/** The engine's default event retention (newest events kept by its pruner). */
const EVENT_RETENTION = 100_000;

/** Redis store's backlog: Redis memory per queued job, next to BullMQ's backlog of the same depth. */
function redisBacklogRows(
  store: StoreName,
  b: BacklogResult,
  bullmq: BullmqBacklogResult | undefined,
): Row[] {
  const r = b.redis_memory;
  if (r === undefined) return [];
  const filled = b.fill.jobs;
  const depth = b.large.depth.toLocaleString('en-US');
  const scaled = `scaled from ${depth} queued to 1,000,000`;
  const mib = (bytes: number | null | undefined) =>
    bytes === null || bytes === undefined ? '?' : `${formatNumber(bytes / 2 ** 20)} MiB`;
  const oursKeys = bytesPerJob(r.at_small.keys?.bytes, r.at_backlog.keys?.bytes, filled);
  const oursUsed = bytesPerJob(r.at_small.used_memory, r.at_backlog.used_memory, filled);
  const bull = bullmq && bullmq.backlog > 0 ? bullmq : undefined;
  const theirKeys = bull
    ? bytesPerJob(bull.memory_before.keys?.bytes, bull.memory_at_backlog.keys?.bytes, bull.backlog)
    : null;
  const theirUsed = bull
    ? bytesPerJob(bull.memory_before.used_memory, bull.memory_at_backlog.used_memory, bull.backlog)
    : null;
  const breakdown = (
    before: Record<string, { bytes: number }> | undefined,
    after: Record<string, { bytes: number }> | undefined,
    jobs: number,
  ) =>
    after === undefined
      ? ''
      : Object.entries(after)
          .map(([g, v]) => `${g} ${formatNumber((v.bytes - (before?.[g]?.bytes ?? 0)) / jobs)}`)
          .join(', ');
  // The engine prunes the event log to its newest 100,000 events (eventRetention,
  // every 60 s): at 1,000,000 queued the events do not scale with the jobs.
  const eventBytes = (g: Record<string, { bytes: number }> | undefined) => g?.events?.bytes ?? 0;
  const oursEvents =
    r.at_backlog.keys && filled > 0
      ? (eventBytes(r.at_backlog.keys.groups) - eventBytes(r.at_small.keys?.groups)) / filled
      : null;
  const capped =
    oursKeys !== null && oursEvents !== null
      ? mibPerMillion(oursKeys - oursEvents + (oursEvents * EVENT_RETENTION) / 1_000_000)
      : null;
  const base = { store, mode: 'backlog' as const };
  const rows: Row[] = [
    {
      ...base,
      phase: 'Redis memory per 1,000,000 queued (our keys)',
      unit: 'MiB',
      ours: mibPerMillion(oursKeys),
      anchor: bull ? 'bullmq' : null,
      anchor_value: mibPerMillion(theirKeys),
      ratio: oursKeys !== null && theirKeys ? oursKeys / theirKeys : null,
      detail: `MEMORY USAGE of the prefix's keys, ${scaled}: ${formatNumber(oursKeys)} B/job (${breakdown(r.at_small.keys?.groups, r.at_backlog.keys?.groups, filled)}); ${formatNumber(capped)} MiB with the event log at the engine's ${EVENT_RETENTION.toLocaleString('en-US')}-event cap${bull ? `; BullMQ ${formatNumber(theirKeys)} B/job (${breakdown(bull.memory_before.keys?.groups, bull.memory_at_backlog.keys?.groups, bull.backlog)})` : ''}`,
    },
    {
      ...base,
      phase: 'Redis used_memory per 1,000,000 queued',
      unit: 'MiB',
      ours: mibPerMillion(oursUsed),
      anchor: bull ? 'bullmq' : null,
      anchor_value: mibPerMillion(theirUsed),
      // used_memory is the whole Redis's: other clients' keys can make a delta meaningless.
      ratio:
        oursUsed !== null && oursUsed > 0 && theirUsed !== null && theirUsed > 0
          ? oursUsed / theirUsed
          : null,
      detail: `${(oursUsed !== null && oursUsed <= 0) || (theirUsed !== null && theirUsed <= 0) ? 'a delta <= 0: other clients of this Redis changed used_memory meanwhile, see the row above; ' : ''}INFO used_memory ${mib(r.at_small.used_memory)} @${b.small.depth.toLocaleString('en-US')} -> ${mib(r.at_backlog.used_memory)} @${depth} (${mib(r.at_start.used_memory)} before the first job), ${scaled}${bull ? `; BullMQ ${mib(bull.memory_before.used_memory)} -> ${mib(bull.memory_at_backlog.used_memory)}` : ''}`,
    },
  ];
  const idleChange =
    b.memory_at_backlog_quiet.rss_mib !== null && b.memory_at_start.rss_mib !== null
      ? Math.round((b.memory_at_backlog_quiet.rss_mib - b.memory_at_start.rss_mib) * 10) / 10
      : null;
  rows.push({
    ...base,
    phase: `server RSS change, idle at start -> idle @${depth}`,
    unit: 'MiB',
    ours: idleChange,
    anchor: null,
    anchor_value: null,
    ratio: null,
    detail: `${formatNumber(b.memory_at_start.rss_mib)} -> ${formatNumber(b.memory_at_backlog_quiet.rss_mib)} MiB (${QUIET_MS / 1000} s idle); not scaled: the queued jobs live in Redis, the server keeps at most its claimed jobs (keepClaimed, 10,000), so its RSS per 1,000,000 queued is this same reading`,
  });
  return rows;
}

export function backlogRows(
  store: StoreName,
  b: BacklogResult | undefined,
  error?: string,
  bullmq?: BullmqBacklogResult,
): Row[] {
  const base = { store, mode: 'backlog' as const, anchor: null, anchor_value: null, ratio: null };
  if (b === undefined) {
    return [
      {
        ...base,
        phase: 'backlog',
        unit: 'jobs/s',
        ours: null,
        detail: '',
        error: error ?? 'no result',
      },
    ];
  }
  const depth = (n: number) => n.toLocaleString('en-US');
  const claim = (r: BacklogResult['small']) =>
    `round (fetch 50 + ack/batch) p50 ${ms(r.round_p50_ms)}, p99 ${ms(r.round_p99_ms)}; ${depth(r.jobs)} jobs`;
  const rel = b.small.jobs_per_s > 0 ? b.large.jobs_per_s / b.small.jobs_per_s : null;
  return [
    {
      ...base,
      phase: `claim+ack @${depth(b.small.depth)} queued`,
      unit: 'jobs/s',
      ours: b.small.jobs > 0 ? b.small.jobs_per_s : null,
      detail: claim(b.small),
      ...(b.small.error ? { error: b.small.error } : {}),
    },
    {
      ...base,
      phase: `claim+ack @${depth(b.large.depth)} queued`,
      unit: 'jobs/s',
      ours: b.large.jobs > 0 ? b.large.jobs_per_s : null,
      detail: `${claim(b.large)}; ${rel === null ? '-' : `${rel.toFixed(2)}x`} of the rate @${depth(b.small.depth)}`,
      ...(b.large.error ? { error: b.large.error } : {}),
    },
    {
      ...base,
      phase: `fill (batch ${b.fill.batch.toLocaleString('en-US')})`,
      unit: 'jobs/s',
      ours: b.fill.jobs_per_s,
      detail: `${depth(b.fill.jobs)} jobs; queue stats: ${b.queued_after_fill === null ? '?' : depth(b.queued_after_fill)} available`,
      ...(b.fill.error ? { error: b.fill.error } : {}),
    },
    {
      ...base,
      phase: `server RSS @${depth(b.small.depth)} queued`,
      unit: 'MiB',
      ours: b.memory_at_small.rss_mib,
      detail: `at start ${formatNumber(b.memory_at_start.rss_mib)} MiB`,
    },
    {
      ...base,
      phase: `server RSS @${depth(b.large.depth)} queued`,
      unit: 'MiB',
      ours: b.memory_at_backlog.rss_mib,
      detail: `peak so far ${formatNumber(b.memory_at_backlog.peak_rss_mib)} MiB; after claim+ack ${formatNumber(b.memory_after_large.rss_mib)} MiB`,
    },
    {
      ...base,
      phase: `server RSS @${depth(b.large.depth)} queued, ${QUIET_MS / 1000} s idle`,
      unit: 'MiB',
      ours: b.memory_at_backlog_quiet.rss_mib,
      detail: 'read again after the fill with no request in between',
    },
    ...redisBacklogRows(store, b, bullmq),
  ];
}

function pad(s: string, width: number, right = false): string {
  return right ? s.padStart(width) : s.padEnd(width);
}

/** The block of the table a row belongs to: its title and the anchor column's name. */
function blockOf(r: Row): { key: string; title: string; anchor: string } {
  if (r.mode === 'wrk')
    return {
      key: `${r.store}:wrk`,
      title: `${STORE_TITLE[r.store]}: single HTTP requests, wrk -t1 -c50  (anchor: Fastify + Redis Lua script, 1 process, a RECORDED figure of ../shared/bench-anchors/recorded/http-store-ceiling.jsonl, not measured in this run)`,
      anchor: 'Fastify+Redis (recorded)',
    };
  if (r.mode === 'startup')
    return {
      key: 'startup',
      title: 'Server start-up (ojs serve, fresh SQLite file)  (no anchor)',
      anchor: '-',
    };
  const anchor = ANCHOR_OF[r.store];
  return {
    key: r.store,
    title: `${STORE_TITLE[r.store]}  (ratio: ours / ${ANCHOR_TITLE[anchor]}; jobs/s: higher is better, ms and µs/job: lower is better)`,
    anchor: ANCHOR_TITLE[anchor],
  };
}

export function renderTable(rows: Row[]): string {
  const lines: string[] = [];
  const blocks = [...new Set(rows.map((r) => blockOf(r).key))];
  for (const key of blocks) {
    const mine = rows.filter((r) => blockOf(r).key === key);
    const block = blockOf(mine[0]!);
    const cells = mine.map((r) => [
      r.mode,
      r.phase,
      r.unit,
      r.ours === null ? (r.error ? 'error' : '-') : formatNumber(r.ours),
      r.anchor === null && r.anchor_value === null ? '' : formatNumber(r.anchor_value),
      r.ratio === null ? '' : `${r.ratio.toFixed(2)}x`,
      r.error ? `error: ${r.error}${r.detail ? `; ${r.detail}` : ''}` : r.detail,
    ]);
    const header = ['mode', 'phase', 'unit', 'ours', block.anchor, 'ours/anchor', 'detail'];
    const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
    const right = [false, false, false, true, true, true, false];
    const format = (c: string[]) =>
      c
        .map((v, i) => pad(v, i === c.length - 1 ? 0 : widths[i]!, right[i]))
        .join('  ')
        .trimEnd();
    lines.push('', block.title);
    lines.push(format(header));
    lines.push(format(widths.map((w) => '-'.repeat(w))));
    let lastMode = '';
    for (const [i, c] of cells.entries()) {
      const mode = mine[i]!.mode;
      lines.push(format([mode === lastMode ? '' : c[0]!, ...c.slice(1)]));
      lastMode = mode;
    }
  }
  return lines.join('\n');
}
