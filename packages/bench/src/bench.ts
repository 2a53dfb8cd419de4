/**
 * `npm run bench`: our server against BullMQ and graphile-worker, measured
 * in the same run on this machine, in the phases of ../shared/bench-anchors.
 *
 *   npm run bench                                   # full run (SQLite FULL + PostgreSQL, all modes)
 *   npm run bench -- --n 2000 --backlog 20000       # smoke run, a few minutes
 *   npm run bench -- --stores sqlite --modes http --anchors off --phases enqueue_bulk,drain_bulk
 *   npm run bench -- --stores redis                 # our server on Redis next to BullMQ on the same Redis
 *
 * For each store (SQLite file with synchronous=FULL, the server's default;
 * PostgreSQL in a throwaway schema; Redis under a throwaway key prefix) and
 * mode (see ojs-anchor.ts), our adapter
 * runs through ../shared/bench-anchors/common.js, the harness of the anchor
 * scripts, so every phase is measured the same way as theirs. Then the
 * backlog phase (backlog.ts), then the anchor scripts themselves with the
 * same N/SEQ/LAT. Prints a table and writes every raw figure to a JSON file.
 * See packages/bench/README.md.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  dropPostgresSchema,
  dropRedisPrefix,
  ROOT,
  startServerProcess,
  withPostgres,
} from '../../../scripts/lib.ts';
import { installServer } from '../../../scripts/packed.ts';
import { type BacklogResult, runBacklog } from './backlog.ts';
import { CpuSampler, phaseSeconds, type Role, type RoleSeconds } from './cpu.ts';
import {
  ANCHOR_PHASES,
  type Anchor,
  type BenchOptions,
  type Mode,
  type Phase,
  parseOptions,
  type StoreName,
  skipList,
  USAGE,
  UsageError,
} from './options.ts';
import { cpuSeconds, readProcMemory } from './proc.ts';
import {
  installCleanup,
  isLoopbackHost,
  redisReachable,
  runNodeScript,
  track,
  untrack,
} from './procs.ts';
import {
  type BullmqBacklogResult,
  ourKeyGroup,
  REDIS_HOST,
  REDIS_PORT,
  REDIS_URL,
  type RedisInfo,
  redisInfo,
  redisNetBytes,
  runBullmqBacklog,
  usedMemory,
} from './redis.ts';
import {
  ANCHOR_OF,
  anchorPhaseRows,
  backlogRows,
  type CpuFigures,
  cpuRow,
  type PhaseSpend,
  peakRssRow,
  phaseJobs,
  type Row,
  redisTraffic,
  renderTable,
  startupRows,
  sumSpends,
  wrkRows,
} from './report.ts';
import { runStartup, type StartupResult } from './startup.ts';
import { readRecordedCeiling, runWrkPhase, type WrkResult } from './wrk.ts';

type Obj = Record<string, unknown>;

const ADAPTER = fileURLToPath(new URL('./ojs-anchor.ts', import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const ANCHORS_DIR = resolve(
  process.env.OJS_BENCH_ANCHORS_DIR ?? join(ROOT, '..', 'shared', 'bench-anchors'),
);
const POSTGRES_URL = process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Where require('bullmq') / require('graphile-worker') resolve for the anchor scripts. */
const NODE_PATH = [join(PACKAGE_DIR, 'node_modules'), join(ROOT, 'node_modules')].join(':');

const RAW_PHASES: Phase[] = ['enqueue_bulk', 'drain_bulk'];
/** The phases common.js runs (not backlog, wrk, startup: the bench's own). */
const isAnchorPhase = (p: Phase) => (ANCHOR_PHASES as readonly Phase[]).includes(p);

const notes: string[] = [];
const log = (line: string) => process.stderr.write(`${line}\n`);
function note(line: string) {
  notes.push(line);
  log(`note: ${line}`);
}

function gitInfo(): Obj {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT })
      .toString()
      .trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: ROOT,
    })
      .toString()
      .split('\n')
      .filter((l) => l.trim() !== '');
    return { head, uncommitted_files: dirty.map((l) => l.slice(3)) };
  } catch {
    return {};
  }
}

async function postgresProblem(): Promise<string | undefined> {
  const host = new URL(POSTGRES_URL).hostname;
  if (!isLoopbackHost(host))
    return `${host} is not a loopback address (the bench stays on loopback)`;
  try {
    await Promise.race([
      withPostgres(POSTGRES_URL, (c) => c.query('SELECT 1')),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('no answer in 5 s')), 5000).unref(),
      ),
    ]);
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${POSTGRES_URL}: ${(error as Error).message}`;
  }
}

/** The server's logging and metrics switched off (`--observability off`). */
let observabilityEnv: Record<string, string> = {};
/** `--webhooks on`: the receiver every server's subscription delivers to. */
let webhookReceiver: string | undefined;

/** A receiver on loopback answering 204 to every delivery, for `--webhooks on`. */
async function startWebhookReceiver(): Promise<string> {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
}

/** redis-server as found at start (INFO server): its pid for /proc CPU readings. */
let redis: RedisInfo | undefined;

/** A fresh store for one run: its server spec, the adapter's spec, and its removal. */
function freshStore(store: StoreName, tmp: string, tag: string) {
  if (store === 'redis') {
    // Its own key prefix on the Redis BullMQ uses, every key of it deleted afterwards.
    const prefix = `ojs-bench-${process.pid}-${tag}`.replace(/[^\w.:-]/g, '_');
    return {
      spec: `${REDIS_URL}?prefix=${prefix}`,
      serverEnv: {} as Record<string, string>,
      sync: undefined as string | undefined,
      keyPattern: `{${prefix}}:*` as string | undefined,
      remove: () => dropRedisPrefix(REDIS_URL, prefix).catch(() => {}),
    };
  }
  if (store === 'postgres') {
    const schema = `ojs_bench_${process.pid}_${tag}`.replace(/[^a-z0-9_]/g, '_');
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('schema', schema);
    return {
      spec: url.toString(),
      serverEnv: {} as Record<string, string>,
      sync: undefined as string | undefined,
      keyPattern: undefined as string | undefined,
      remove: () => dropPostgresSchema(POSTGRES_URL, schema).catch(() => {}),
    };
  }
  const file = join(tmp, `${tag}.db`);
  const sync = store === 'sqlite-normal' ? 'NORMAL' : 'FULL';
  return {
    spec: `sqlite:${file}`,
    serverEnv: { OJS_SQLITE_SYNCHRONOUS: sync } as Record<string, string>,
    sync: sync as string | undefined,
    keyPattern: undefined as string | undefined,
    remove: async () => {
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
    },
  };
}

/**
 * The `ojs` command the server processes run: the installed package's built
 * JavaScript (`--server packed`, set in main) or the repository's source.
 */
let serverEntry: string | undefined;

/**
 * The server loads its gRPC binding on the first gRPC connection (decision
 * 0098): one call before the phases, so that this one-time start-up cost
 * (about 0.2-0.3 s of CPU) is not counted in the first phase's CPU per job,
 * as the HTTP binding's start-up is not (decision 0107).
 */
async function warmGrpc(address: string): Promise<void> {
  const { GrpcTransport } = await import('@ojs/sdk/grpc');
  const transport = new GrpcTransport({ address });
  try {
    await transport.health();
  } finally {
    await transport.close();
  }
}

async function withServer<T>(
  spec: string,
  env: Record<string, string>,
  fn: (server: { url: string; pid: number; grpcAddress?: string }) => Promise<T>,
  options: { grpc?: boolean } = {},
): Promise<T> {
  const webhookEnv: Record<string, string> =
    webhookReceiver === undefined
      ? {}
      : { OJS_WEBHOOKS_ALLOW_PRIVATE: 'on', OJS_WEBHOOKS_ALLOW_HTTP: 'on' };
  const server = await startServerProcess(
    spec,
    { ...env, ...observabilityEnv, ...webhookEnv },
    { ...options, entry: serverEntry },
  );
  track(server.child.pid);
  try {
    if (webhookReceiver !== undefined) {
      const res = await fetch(`${server.url}/ojs/v1/webhooks/subscriptions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: webhookReceiver, events: ['*'] }),
      });
      if (res.status !== 201) throw new Error(`webhook subscription refused: ${await res.text()}`);
    }
    if (server.grpcAddress !== undefined) await warmGrpc(server.grpcAddress);
    return await fn({ url: server.url, pid: server.child.pid!, grpcAddress: server.grpcAddress });
  } finally {
    if (server.crashed()) log(`server crashed: ${server.logs().slice(-2000)}`);
    const stopped = server.stop();
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 30_000);
    await stopped;
    clearTimeout(timer);
    untrack(server.child.pid);
  }
}

function commonEnv(opts: BenchOptions, phases: readonly Phase[], only?: readonly Phase[]) {
  return {
    N: String(opts.n),
    SEQ: String(opts.seq),
    LAT: String(opts.lat),
    SKIP: skipList(phases, only).join(','),
    PHASE_TIMEOUT_S: String(opts.phaseTimeoutS),
    // Each phase has its limit; the whole script gets all of them plus room for set-up.
    TOTAL_TIMEOUT_S: String(opts.phaseTimeoutS * ANCHOR_PHASES.length + 120),
  };
}

const hardTimeout = (opts: BenchOptions) =>
  (opts.phaseTimeoutS * ANCHOR_PHASES.length + 240) * 1000;

/** Jobs a run of these phases enqueues (each one processed once: the drains add none). */
function jobsOf(opts: BenchOptions, phases: readonly Phase[]): number {
  let jobs = 0;
  for (const phase of phases) {
    if (phase === 'enqueue_seq') jobs += opts.seq;
    else if (phase === 'latency_idle') jobs += opts.lat;
    else if (phase === 'enqueue_single' || phase === 'enqueue_bulk' || phase === 'steady_e2e')
      jobs += opts.n;
  }
  return jobs;
}

const cpuDelta = (before: number | null, after: number | null) =>
  before === null || after === null ? null : Math.round((after - before) * 100) / 100;

type NetBytes = Awaited<ReturnType<typeof redisNetBytes>>;
const netDelta = (before: NetBytes, after: NetBytes) => ({
  redis_net_in_bytes: before && after ? after.in - before.in : null,
  redis_net_out_bytes: before && after ? after.out - before.out : null,
});

interface OurRun {
  store: StoreName;
  mode: Mode;
  phases: Phase[];
  result?: Obj;
  error?: string;
  /** The end of its stderr, when it failed. */
  stderr_tail?: string;
  wall_s?: number;
  /** CPU time over the whole run (/proc): our server process, and redis-server on Redis. */
  cpu?: CpuFigures;
  /** CPU seconds per process role in each phase (cpu.ts). */
  phase_cpu?: Record<string, RoleSeconds>;
  /** Peak RSS (VmHWM) of the server process over the run, MiB. */
  server_peak_rss_mib?: number | null;
  /** Peak RSS seen per role (producer, worker, server), MiB. */
  peak_rss_mib?: Partial<Record<Role, number>>;
  /** Why some process's CPU was not read. */
  cpu_problem?: string;
}

/** What a run's processes are read for (cpu.ts): the store's service, if any. */
function samplerFor(store: StoreName | Anchor): CpuSampler {
  return new CpuSampler({
    redis: store === 'redis' || store === 'bullmq' ? (redis?.pid ?? null) : null,
    ...(store === 'postgres' || store === 'graphile' ? { postgresUrl: POSTGRES_URL } : {}),
  });
}

async function runOurs(
  opts: BenchOptions,
  store: StoreName,
  mode: Mode,
  tmp: string,
): Promise<OurRun> {
  const phases =
    mode === 'raw'
      ? opts.phases.filter((p) => RAW_PHASES.includes(p))
      : opts.phases.filter(isAnchorPhase);
  const run: OurRun = { store, mode, phases };
  const db = freshStore(store, tmp, `${store}_${mode}`);
  const sampler = samplerFor(store);
  const redisPid = store === 'redis' ? (redis?.pid ?? null) : null;
  const redisCpu0 = cpuSeconds(redisPid);
  const net0 = store === 'redis' ? await redisNetBytes() : null;
  let serverCpu: number | null = null;
  const t0 = performance.now();
  const label = `ojs ${store} ${mode}`;
  log(`\n== ${label}: ${phases.join(', ')}`);
  const env: Record<string, string> = {
    ...commonEnv(opts, opts.phases, mode === 'raw' ? RAW_PHASES : undefined),
    OJS_BENCH_MODE: mode,
    OJS_BENCH_LABEL: label,
    OJS_BENCH_ANCHORS_DIR: ANCHORS_DIR,
  };
  try {
    const child = async (extra: Record<string, string>) => {
      const out = await runNodeScript(ADAPTER, {
        cwd: ROOT,
        env: { ...env, ...extra },
        hardTimeoutMs: hardTimeout(opts),
        label,
        onPhase: sampler.onPhase,
      });
      if (out.json === undefined) {
        run.error = out.timedOut ? 'hard time limit' : `exit ${out.code}, no result`;
      } else if (typeof out.json.error === 'string') {
        run.error = out.json.error;
        run.result = out.json;
      } else run.result = out.json;
      const phaseFailed = Object.values((run.result?.results ?? {}) as Obj).some(
        (p) => typeof (p as Obj).error === 'string',
      );
      if (run.error || phaseFailed) run.stderr_tail = out.stderr.slice(-4000);
    };
    if (mode === 'in-process') {
      await child({
        OJS_BENCH_STORE: db.spec,
        ...(db.sync ? { OJS_BENCH_SQLITE_SYNC: db.sync } : {}),
      });
    } else {
      await withServer(
        db.spec,
        db.serverEnv,
        async (server) => {
          const cpu0 = cpuSeconds(server.pid);
          sampler.server = server.pid;
          try {
            await child({
              OJS_BENCH_URL: server.url,
              ...(server.grpcAddress === undefined ? {} : { OJS_BENCH_GRPC: server.grpcAddress }),
            });
          } finally {
            serverCpu = cpuDelta(cpu0, cpuSeconds(server.pid));
            // VmHWM: the peak over the server's life, read before it stops.
            run.server_peak_rss_mib = readProcMemory(server.pid).peak_rss_mib;
          }
        },
        { grpc: mode === 'grpc' },
      );
    }
  } catch (error) {
    run.error = (error as Error).message;
  } finally {
    const redisCpu = cpuDelta(redisCpu0, cpuSeconds(redisPid));
    const net1 = net0 === null ? null : await redisNetBytes();
    run.cpu = {
      jobs: jobsOf(opts, phases),
      server_s: serverCpu,
      redis_server_s: redisCpu,
      ...(store === 'redis' ? netDelta(net0, net1) : {}),
    };
    run.phase_cpu = phaseSeconds(sampler.marks);
    run.peak_rss_mib = sampler.peakRss;
    if (sampler.problem) run.cpu_problem = sampler.problem;
    await sampler.close();
    await db.remove();
  }
  run.wall_s = Math.round((performance.now() - t0) / 100) / 10;
  if (run.error) log(`   ${label}: ${run.error}`);
  return run;
}

interface BacklogRun {
  store: StoreName;
  result?: BacklogResult;
  error?: string;
  /** Redis only: used_memory once our prefix was deleted (is everything given back?). */
  redis_used_memory_after_removal?: number | null;
  /** Redis only: BullMQ's backlog of the same depth, the anchor of the memory figures. */
  bullmq?: { result?: BullmqBacklogResult; error?: string };
}

const backlogDepth = (opts: BenchOptions, store: StoreName) =>
  store === 'redis' ? opts.redisBacklog : opts.backlog;

async function runBacklogPhase(
  opts: BenchOptions,
  store: StoreName,
  tmp: string,
  withBullmq: boolean,
): Promise<BacklogRun> {
  const db = freshStore(store, tmp, `${store}_backlog`);
  const depth = backlogDepth(opts, store);
  log(`\n== ojs ${store} backlog: ${depth.toLocaleString('en-US')} jobs`);
  const run: BacklogRun = { store };
  try {
    run.result = await withServer(db.spec, db.serverEnv, (server) =>
      runBacklog(
        server.url,
        server.pid,
        depth,
        opts.phaseTimeoutS * 1000,
        (line) => log(`  [ojs ${store} backlog] ${line}`),
        db.keyPattern === undefined ? undefined : { pattern: db.keyPattern, group: ourKeyGroup },
        opts.fillBatch,
      ),
    );
  } catch (error) {
    log(`   backlog on ${store}: ${(error as Error).message}`);
    run.error = (error as Error).message;
  } finally {
    await db.remove();
  }
  if (store === 'redis') {
    run.redis_used_memory_after_removal = await usedMemory();
    if (withBullmq) {
      log(
        `\n== anchor bullmq backlog: ${depth.toLocaleString('en-US')} jobs (addBulk of ${opts.fillBatch})`,
      );
      try {
        run.bullmq = {
          result: await runBullmqBacklog(
            depth,
            opts.fillBatch,
            Math.max(opts.phaseTimeoutS * 1000, 600_000),
            (line) => log(`  [bullmq backlog] ${line}`),
          ),
        };
      } catch (error) {
        log(`   bullmq backlog: ${(error as Error).message}`);
        run.bullmq = { error: (error as Error).message };
      }
    }
  }
  return run;
}

interface AnchorRun {
  result?: Obj;
  error?: string;
  /** BullMQ: redis-server's CPU time over the whole script. */
  cpu?: CpuFigures;
  /** CPU seconds per process role in each phase (cpu.ts). */
  phase_cpu?: Record<string, RoleSeconds>;
  peak_rss_mib?: Partial<Record<Role, number>>;
  cpu_problem?: string;
}

async function runAnchor(opts: BenchOptions, anchor: Anchor): Promise<AnchorRun> {
  const file = anchor === 'bullmq' ? 'bullmq-bench.js' : 'graphile-bench.js';
  const env: Record<string, string> = {
    ...commonEnv(opts, opts.phases),
    NODE_PATH,
    ...(anchor === 'bullmq'
      ? { REDIS_HOST, REDIS_PORT: String(REDIS_PORT) }
      : { DATABASE_URL: POSTGRES_URL, GW_BATCHING: '1' }),
  };
  log(`\n== anchor ${anchor}: ${file}${anchor === 'graphile' ? ' (GW_BATCHING=1)' : ''}`);
  const redisPid = anchor === 'bullmq' ? (redis?.pid ?? null) : null;
  const redisCpu0 = cpuSeconds(redisPid);
  const net0 = anchor === 'bullmq' ? await redisNetBytes() : null;
  const sampler = samplerFor(anchor);
  const out = await runNodeScript(join(ANCHORS_DIR, file), {
    cwd: ANCHORS_DIR,
    env,
    hardTimeoutMs: hardTimeout(opts),
    label: anchor,
    onPhase: sampler.onPhase,
  });
  await sampler.close();
  const perPhase = {
    phase_cpu: phaseSeconds(sampler.marks),
    peak_rss_mib: sampler.peakRss,
    ...(sampler.problem ? { cpu_problem: sampler.problem } : {}),
  };
  const redisCpu = cpuDelta(redisCpu0, cpuSeconds(redisPid));
  const cpu: CpuFigures | undefined =
    anchor === 'bullmq'
      ? {
          jobs: jobsOf(opts, opts.phases),
          server_s: null,
          redis_server_s: redisCpu,
          ...netDelta(net0, await redisNetBytes()),
        }
      : undefined;
  if (out.json === undefined)
    return {
      error: out.timedOut ? 'hard time limit' : `exit ${out.code}, no result`,
      cpu,
      ...perPhase,
    };
  if (typeof out.json.error === 'string')
    return { result: out.json, error: out.json.error, cpu, ...perPhase };
  return { result: out.json, cpu, ...perPhase };
}

interface WrkRun {
  store: StoreName;
  result?: WrkResult;
  error?: string;
  /** The recorded Fastify + Redis ceiling shown beside it (not measured in this run). */
  recorded: ReturnType<typeof readRecordedCeiling>;
}

/** The wrk phase on a fresh server and store (wrk.ts). */
async function runWrkOn(opts: BenchOptions, store: StoreName, tmp: string): Promise<WrkRun> {
  const db = freshStore(store, tmp, `${store}_wrk`);
  log(`\n== ojs ${store} wrk: enqueue, fetch, ack (-t1 -c50, ${opts.wrkSeconds} s)`);
  const run: WrkRun = { store, recorded: readRecordedCeiling(ANCHORS_DIR, 'redis') };
  try {
    // The server's store processes (redis-server, its PostgreSQL backends), read as in the phases.
    const sampler = samplerFor(store);
    try {
      run.result = await withServer(db.spec, db.serverEnv, (server) => {
        sampler.server = server.pid;
        return runWrkPhase(
          server.url,
          server.pid,
          () => sampler.read(),
          tmp,
          opts.wrkSeconds,
          opts.wrkBacklog,
          (line) => log(`  [ojs ${store} wrk] ${line}`),
        );
      });
    } finally {
      await sampler.close();
    }
    const failed = run.result.ops.find((o) => o.error);
    if (failed) run.error = failed.error;
  } catch (error) {
    run.error = (error as Error).message;
    log(`   wrk on ${store}: ${run.error}`);
  } finally {
    await db.remove();
  }
  return run;
}

interface StartupRun {
  result?: StartupResult;
  error?: string;
  /** The repository's TypeScript ran, not the installed build. */
  source: boolean;
}

/** The startup phase: the server `--server` selects (installed build by default). */
async function runStartupPhase(opts: BenchOptions, tmp: string): Promise<StartupRun> {
  const source = serverEntry === undefined;
  const entry = serverEntry ?? join(ROOT, 'packages/cli/src/main.ts');
  log(`\n== ojs startup: ${opts.startupRuns} starts of ${entry}`);
  try {
    const result = await runStartup(entry, tmp, opts.startupRuns, opts.phaseTimeoutS * 1000);
    const failed = result.runs.find((r) => r.error);
    return { result, source, ...(failed ? { error: failed.error } : {}) };
  } catch (error) {
    return { source, error: (error as Error).message };
  }
}

/** The `ojs` command the server processes run, packed and installed as npm installs it. */
async function installPackedServer(root: string): Promise<string> {
  return (await installServer(root)).entry;
}

async function main(argv: string[]): Promise<number> {
  let opts: BenchOptions;
  try {
    opts = parseOptions(argv);
    if (!opts.observability) observabilityEnv = { OJS_LOG_LEVEL: 'silent', OJS_METRICS: 'off' };
    if (opts.webhooks) webhookReceiver = await startWebhookReceiver();
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`bench: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!existsSync(join(ANCHORS_DIR, 'common.js'))) {
    process.stderr.write(
      `bench: ${ANCHORS_DIR}/common.js not found: the bench runs through the anchors' harness (set OJS_BENCH_ANCHORS_DIR)\n`,
    );
    return 2;
  }
  if (!isLoopbackHost(REDIS_HOST)) {
    process.stderr.write(`bench: REDIS_HOST ${REDIS_HOST} is not a loopback address\n`);
    return 2;
  }
  installCleanup();
  const started = new Date();
  const anchorPhases = opts.phases.filter(isAnchorPhase);

  // Services: a missing one skips what needs it, with the reason in the output.
  let stores = opts.stores;
  let anchors = opts.anchors.filter(() => anchorPhases.length > 0);
  const pgProblem =
    stores.includes('postgres') || anchors.includes('graphile')
      ? await postgresProblem()
      : undefined;
  if (pgProblem) {
    note(`skipped PostgreSQL runs: ${pgProblem}`);
    stores = stores.filter((s) => s !== 'postgres');
    anchors = anchors.filter((a) => a !== 'graphile');
  }
  if (anchors.includes('bullmq') || stores.includes('redis')) {
    const problem = await redisReachable(REDIS_HOST, REDIS_PORT);
    if (problem) {
      if (anchors.includes('bullmq')) note(`skipped the BullMQ anchor: ${problem}`);
      if (stores.includes('redis')) note(`skipped the Redis runs: ${problem}`);
      anchors = anchors.filter((a) => a !== 'bullmq');
      stores = stores.filter((s) => s !== 'redis');
    }
  }
  if (anchors.includes('bullmq') || stores.includes('redis')) {
    try {
      redis = await redisInfo();
    } catch (error) {
      note(`INFO from Redis failed (${(error as Error).message}): no redis-server CPU figures`);
    }
  }
  if (stores.includes('redis')) {
    note(
      `redis: our server on Redis ${redis?.version ?? '?'} at ${REDIS_HOST}:${REDIS_PORT} db 0 under its own key prefix (ojs-bench-<pid>-redis_<mode>, deleted after each run), the Redis BullMQ runs on; redis-server's CPU (pid ${redis?.pid ?? '?'}, /proc) is read at each phase boundary, ours and BullMQ's, and counts any other client of that Redis too.`,
    );
    if (opts.phases.includes('backlog'))
      note(
        `redis backlog: ${opts.redisBacklog.toLocaleString('en-US')} queued jobs (--redis-backlog), not --backlog: they live in Redis's memory; per-1,000,000 figures are scaled linearly from that depth. Redis memory: used_memory (the whole Redis, so other clients' keys move it too) and the MEMORY USAGE sum of the keys of our prefix (of bull:<queue>:* for BullMQ's backlog of the same depth, addBulk of ${opts.fillBatch}).`,
      );
  }
  if (opts.modes.includes('in-process') && stores.includes('redis') && anchorPhases.length > 0) {
    note(
      'in-process on Redis: the producer process and the worker process each run an engine on the same key prefix (a pub/sub message wakes the idle worker), no server.',
    );
  }
  if (
    opts.modes.includes('in-process') &&
    stores.some((s) => s === 'sqlite' || s === 'sqlite-normal') &&
    anchorPhases.length > 0
  ) {
    note(
      'in-process on SQLite: the producer (bench) process and the worker process each run an engine on the same SQLite file (WAL), no server; the idle worker is woken by the store watching the WAL file (inotify) and PRAGMA data_version, SQLite having no LISTEN/NOTIFY.',
    );
  }
  if (opts.modes.includes('in-process') && stores.includes('postgres') && anchorPhases.length > 0) {
    note(
      'in-process on PostgreSQL: the producer process and the worker process each run an engine on the same schema (LISTEN/NOTIFY wakes the idle worker), no server.',
    );
  }
  if (opts.modes.includes('raw') && opts.phases.includes('drain_bulk')) {
    note(
      'raw mode: plain HTTP worker loop (fetch count 50, then one ACK per job, 50 in flight); only enqueue_bulk and drain_bulk.',
    );
  }
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  log(
    `bench: ${cpus().length} cores, load average ${load}; stores ${stores.join(',')}; modes ${opts.modes.join(',')}; anchors ${anchors.join(',') || 'none'}`,
  );
  if (loadavg()[0]! > 1)
    note(
      `load average at start ${load} on ${cpus().length} cores: other work is running, figures are noisier`,
    );

  const needsServer =
    opts.phases.includes('startup') ||
    (stores.length > 0 && (opts.phases.includes('backlog') || opts.phases.includes('wrk'))) ||
    (stores.length > 0 && anchorPhases.length > 0 && opts.modes.some((m) => m !== 'in-process'));
  if (needsServer)
    note(
      opts.server === 'packed'
        ? 'server: the packages packed and installed as npm installs them (built JavaScript), from the working tree'
        : "server: the repository's TypeScript sources (--server source)",
    );
  const tmp = mkdtempSync(join(tmpdir(), 'ojs-bench-'));
  const ours: OurRun[] = [];
  const backlogs: BacklogRun[] = [];
  const wrks: WrkRun[] = [];
  let startup: StartupRun | undefined;
  const anchorResults: Partial<Record<Anchor, AnchorRun>> = {};
  try {
    if (opts.server === 'packed' && needsServer) {
      // What users run: `npm install @ojs/cli` gives built JavaScript, which
      // starts without Node's TypeScript stripper (~18 MiB per thread that
      // loads .ts). Built from the working tree, so uncommitted changes count.
      const t = performance.now();
      log('\n== packing and installing the server packages (--server packed)');
      try {
        serverEntry = await installPackedServer(join(tmp, 'packed'));
      } catch (error) {
        process.stderr.write(
          `bench: packing the server failed (--server source runs the repository's sources): ${(error as Error).message}\n`,
        );
        return 1;
      }
      log(`   installed in ${((performance.now() - t) / 1000).toFixed(0)} s: ${serverEntry}`);
    }
    for (const store of stores) {
      if (anchorPhases.length > 0) {
        for (const mode of opts.modes) {
          if (mode === 'raw' && !opts.phases.includes('drain_bulk')) continue;
          ours.push(await runOurs(opts, store, mode, tmp));
        }
      }
      if (opts.phases.includes('backlog'))
        backlogs.push(
          await runBacklogPhase(
            opts,
            store,
            tmp,
            opts.anchors.includes('bullmq') && redis !== undefined,
          ),
        );
      if (opts.phases.includes('wrk')) wrks.push(await runWrkOn(opts, store, tmp));
    }
    if (opts.phases.includes('startup')) startup = await runStartupPhase(opts, tmp);
    for (const anchor of anchors) anchorResults[anchor] = await runAnchor(opts, anchor);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  // Per-phase CPU that could not be read is said, not left as blank cells.
  const cpuRuns: [string, { result?: Obj; phase_cpu?: Obj; cpu_problem?: string }][] = [
    ...ours.map((r) => [`ojs ${r.store} ${r.mode}`, r] as [string, OurRun]),
    ...Object.entries(anchorResults).map(([a, r]) => [`anchor ${a}`, r] as [string, AnchorRun]),
  ];
  for (const [label, r] of cpuRuns) {
    if (r.cpu_problem) note(`${label}: ${r.cpu_problem}`);
    if (r.result && Object.keys(r.phase_cpu ?? {}).length === 0)
      note(
        `${label}: no phase boundary came from common.js (see phase-probe.ts): no per-phase CPU`,
      );
  }

  const rows: Row[] = [];
  for (const store of stores) {
    const anchor = anchorResults[ANCHOR_OF[store]];
    const anchorSpend = (phase: string): PhaseSpend | undefined =>
      anchor
        ? { seconds: anchor.phase_cpu?.[phase], jobs: phaseJobs(anchor.result, phase) }
        : undefined;
    for (const run of ours.filter((r) => r.store === store)) {
      const spend = (phase: string): PhaseSpend => ({
        seconds: run.phase_cpu?.[phase],
        jobs: phaseJobs(run.result, phase),
      });
      // Each phase's rate, then its CPU per job by process, ours and the anchor's.
      for (const phase of run.phases) {
        rows.push(
          ...anchorPhaseRows(store, run.mode, run.result, anchor?.result, [phase], run.error),
        );
        rows.push(cpuRow(store, run.mode, phase, spend(phase), anchorSpend(phase)));
      }
      const all = (f: (phase: string) => PhaseSpend | undefined) => {
        const spends = run.phases.map(f);
        return spends.every((x) => x === undefined)
          ? undefined
          : sumSpends(spends.flatMap((x) => (x ? [x] : [])));
      };
      rows.push(
        cpuRow(
          store,
          run.mode,
          'all phases',
          all(spend)!,
          all(anchorSpend),
          store === 'redis' && run.mode !== 'raw' ? redisTraffic(run.cpu, anchor?.cpu) : '',
        ),
      );
      if (run.mode !== 'in-process')
        rows.push(
          peakRssRow(store, run.mode, run.server_peak_rss_mib ?? null, run.peak_rss_mib ?? {}),
        );
    }
    for (const b of backlogs.filter((x) => x.store === store))
      rows.push(...backlogRows(store, b.result, b.error, b.bullmq?.result));
    for (const w of wrks.filter((x) => x.store === store))
      rows.push(...wrkRows(store, w.result, w.recorded, w.error));
  }
  if (startup) rows.push(...startupRows(startup.result, startup.source, startup.error));
  const finished = new Date();
  process.stdout.write(`${renderTable(rows)}\n\n`);
  for (const [anchor, r] of Object.entries(anchorResults)) {
    const res = r.result;
    process.stdout.write(
      `anchor ${anchor}: ${res ? `${res.system}, ${JSON.stringify(res.versions)}, node ${res.node}, ${res.total_s} s` : ''}${r.error ? ` error: ${r.error}` : ''}\n`,
    );
  }
  for (const n of notes) process.stdout.write(`note: ${n}\n`);

  const out = opts.out
    ? resolve(opts.out)
    : join(PACKAGE_DIR, 'results', `bench-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(resolve(out, '..'), { recursive: true });
  const report = {
    started_at: started.toISOString(),
    finished_at: finished.toISOString(),
    duration_s: Math.round((finished.getTime() - started.getTime()) / 100) / 10,
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      memory_gib: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      load_average_at_end: loadavg(),
    },
    git: gitInfo(),
    options: { ...opts, stores, anchors },
    notes,
    ours,
    backlog: backlogs,
    wrk: wrks,
    startup,
    anchors: anchorResults,
    table: rows,
  };
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\nraw figures: ${out} (${report.duration_s} s)\n`);
  // One JSON line of the table's figures (rate, ratio, CPU per job by process) for scripts.
  process.stdout.write(
    `${JSON.stringify({ commit: (report.git as Obj).head, rows: rows.map(({ detail: _, ...r }) => r) })}\n`,
  );
  const failed =
    ours.some((r) => r.error) ||
    backlogs.some((b) => b.error) ||
    wrks.some((w) => w.error) ||
    startup?.error !== undefined;
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
