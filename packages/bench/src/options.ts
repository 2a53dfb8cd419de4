/**
 * Command-line flags of `npm run bench`, parsed strictly: an unknown flag, a
 * positional argument, a malformed number or an unknown list item is an
 * error (exit code 2), never ignored.
 */
import { parseArgs } from 'node:util';

/** The anchor phases (../shared/bench-anchors/common.js), in the order they run. */
export const ANCHOR_PHASES = [
  'enqueue_seq',
  'enqueue_single',
  'drain_single',
  'enqueue_bulk',
  'drain_bulk',
  'latency_idle',
  'steady_e2e',
] as const;
/**
 * backlog: claim+ack at depth (ours only); wrk: single HTTP requests driven by
 * wrk (enqueue, fetch, ack; server CPU per request); startup: the installed
 * server's start-to-first-answer time and idle RSS.
 */
export const PHASES = [...ANCHOR_PHASES, 'backlog', 'wrk', 'startup'] as const;
export type Phase = (typeof PHASES)[number];

export const STORES = ['sqlite', 'sqlite-normal', 'postgres', 'redis'] as const;
export type StoreName = (typeof STORES)[number];

/**
 * http: SDK client and SDK worker over HTTP to a server process;
 * in-process: SDK client and worker each on their own engine over the store (no server);
 * raw: plain HTTP fetch (count 50) + one ACK per job, drain_bulk only;
 * grpc: SDK client and SDK worker over the server's gRPC binding (GrpcTransport).
 */
export const MODES = ['http', 'in-process', 'raw', 'grpc'] as const;
export type Mode = (typeof MODES)[number];

/**
 * packed: the server as npm installs it (every package `npm pack`ed, built
 * to JavaScript, installed in a throwaway folder), what users run;
 * source: the repository's TypeScript sources, stripped by Node at start.
 */
export const SERVERS = ['packed', 'source'] as const;
export type ServerBuild = (typeof SERVERS)[number];

export const ANCHORS = ['bullmq', 'graphile'] as const;
export type Anchor = (typeof ANCHORS)[number];

export interface BenchOptions {
  stores: StoreName[];
  modes: Mode[];
  n: number;
  seq: number;
  lat: number;
  backlog: number;
  /** Queued jobs of the backlog phase on Redis (held in Redis's memory; figures also scaled to 1,000,000). */
  redisBacklog: number;
  /** Jobs per batch enqueue of the backlog fill (and of BullMQ's backlog on Redis). */
  fillBatch: number;
  phases: Phase[];
  anchors: Anchor[];
  phaseTimeoutS: number;
  /** wrk's -d for the enqueue and fetch runs of the wrk phase (ACK: half). */
  wrkSeconds: number;
  /** Jobs queued before the wrk fetch run. */
  wrkBacklog: number;
  /** Starts measured by the startup phase. */
  startupRuns: number;
  out: string | undefined;
  server: ServerBuild;
  /** false: the server runs with logging and metrics off (their cost, issue 16). */
  observability: boolean;
  /** A webhook subscription to every event (`*`), delivered to a receiver in the bench process. */
  webhooks: boolean;
  help: boolean;
}

function onOff(flag: string, value: string): boolean {
  if (value !== 'on' && value !== 'off')
    throw new UsageError(`--${flag}: '${value}' is not on or off`);
  return value === 'on';
}

export const USAGE = `Usage: npm run bench -- [flags]

  --stores LIST     sqlite (synchronous=FULL, the default), sqlite-normal, postgres, redis
                    (default sqlite,postgres; redis: our server on Redis next to BullMQ on the same Redis)
  --store LIST      the same as --stores (one of the two)
  --modes LIST      http, in-process, raw, grpc (default all four)
  --n N             jobs per enqueue/drain/steady phase (default 20000)
  --seq N           jobs of enqueue_seq (default 1000)
  --lat N           jobs of latency_idle (default 500)
  --backlog N       queued jobs of the backlog phase (default 1000000, at least 2000)
  --redis-backlog N the same on Redis, whose jobs live in Redis's memory (default 200000, at least
                    2000; memory figures are also given scaled to 1,000,000 jobs)
  --fill-batch N    jobs per batch enqueue of the backlog fill (default 10000, the server's maximum)
  --phases LIST     ${PHASES.join(', ')} (default all)
  --anchors X       on, off, or a list of bullmq, graphile (default on)
  --wrk-seconds S   duration of the wrk enqueue and fetch runs (default 5; ACK runs half of it)
  --wrk-backlog N   jobs queued before the wrk fetch run (default 200000)
  --startup-runs N  server starts timed by the startup phase (default 3; the median is shown)
  --phase-timeout S time limit of each phase in seconds (default 180)
  --server X        packed (the default: the packages built and installed as npm installs them, what
                    users run) or source (this repository's TypeScript, as npm start runs it)
  --out FILE        JSON file of all raw figures (default packages/bench/results/bench-<time>.json)
  --observability X on (the server's defaults: logs at info, metrics) or off (OJS_LOG_LEVEL=silent,
                    OJS_METRICS=off): run twice to see what logging + metrics cost
  --webhooks X      off (default) or on: the server gets a webhook subscription to every event
                    (\`*\`), delivered to a receiver on loopback that answers 204: what webhooks cost
  -h, --help        this text
`;

export class UsageError extends Error {}

function integer(flag: string, value: string, min: number, max: number): number {
  const cleaned = value.replaceAll('_', '');
  if (!/^\d+$/.test(cleaned)) throw new UsageError(`--${flag}: '${value}' is not an integer`);
  const n = Number(cleaned);
  if (n < min || n > max) {
    throw new UsageError(`--${flag}: ${n} is out of range (${min}..${max})`);
  }
  return n;
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`--${flag}: unknown '${value}' (one of ${allowed.join(', ')})`);
  }
  return value as T;
}

function list<T extends string>(flag: string, value: string, allowed: readonly T[]): T[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new UsageError(`--${flag}: empty list`);
  const out: T[] = [];
  for (const item of items) {
    const value = oneOf(flag, item, allowed);
    if (!out.includes(value)) out.push(value);
  }
  return out;
}

export function parseOptions(argv: string[]): BenchOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        stores: { type: 'string' },
        store: { type: 'string' },
        modes: { type: 'string', default: MODES.join(',') },
        n: { type: 'string', default: '20000' },
        seq: { type: 'string', default: '1000' },
        lat: { type: 'string', default: '500' },
        backlog: { type: 'string', default: '1000000' },
        'redis-backlog': { type: 'string', default: '200000' },
        'fill-batch': { type: 'string', default: '10000' },
        phases: { type: 'string', default: PHASES.join(',') },
        anchors: { type: 'string', default: 'on' },
        'phase-timeout': { type: 'string', default: '180' },
        'wrk-seconds': { type: 'string', default: '5' },
        'wrk-backlog': { type: 'string', default: '200000' },
        'startup-runs': { type: 'string', default: '3' },
        out: { type: 'string' },
        server: { type: 'string', default: 'packed' },
        observability: { type: 'string', default: 'on' },
        webhooks: { type: 'string', default: 'off' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const phases = list('phases', values.phases as string, PHASES);
  // A drain needs the backlog its enqueue phase leaves (as in the anchors' harness).
  if (
    phases.includes('drain_single') &&
    !phases.includes('enqueue_single') &&
    !phases.includes('enqueue_seq')
  ) {
    throw new UsageError('--phases: drain_single drains what enqueue_seq/enqueue_single left');
  }
  if (phases.includes('drain_bulk') && !phases.includes('enqueue_bulk')) {
    throw new UsageError('--phases: drain_bulk drains what enqueue_bulk left');
  }
  // Without drain_single the single enqueues' backlog is still queued when
  // drain_bulk starts: it drains both, and its rate and CPU per job count
  // only the bulk half (figures off by 2x, as session 21's gRPC runs were).
  if (
    phases.includes('drain_bulk') &&
    !phases.includes('drain_single') &&
    (phases.includes('enqueue_single') || phases.includes('enqueue_seq'))
  ) {
    throw new UsageError(
      '--phases: drain_bulk would also drain the backlog enqueue_seq/enqueue_single left (its figures would count half the jobs it ran): add drain_single',
    );
  }
  if (values.stores !== undefined && values.store !== undefined) {
    throw new UsageError('--store and --stores are the same flag: give one of them');
  }
  const storesValue = (values.stores ?? values.store ?? 'sqlite,postgres') as string;
  const anchorsValue = values.anchors as string;
  const anchors =
    anchorsValue === 'on'
      ? [...ANCHORS]
      : anchorsValue === 'off'
        ? []
        : list('anchors', anchorsValue, ANCHORS);
  return {
    stores: list(values.store === undefined ? 'stores' : 'store', storesValue, STORES),
    modes: list('modes', values.modes as string, MODES),
    n: integer('n', values.n as string, 1, 10_000_000),
    seq: integer('seq', values.seq as string, 1, 10_000_000),
    lat: integer('lat', values.lat as string, 1, 1_000_000),
    backlog: integer('backlog', values.backlog as string, 2000, 100_000_000),
    redisBacklog: integer('redis-backlog', values['redis-backlog'] as string, 2000, 100_000_000),
    fillBatch: integer('fill-batch', values['fill-batch'] as string, 1, 10_000),
    phases: PHASES.filter((p) => phases.includes(p)),
    anchors,
    phaseTimeoutS: integer('phase-timeout', values['phase-timeout'] as string, 5, 3600),
    wrkSeconds: integer('wrk-seconds', values['wrk-seconds'] as string, 1, 600),
    wrkBacklog: integer('wrk-backlog', values['wrk-backlog'] as string, 1000, 10_000_000),
    startupRuns: integer('startup-runs', values['startup-runs'] as string, 1, 50),
    out: values.out as string | undefined,
    server: oneOf('server', values.server as string, SERVERS),
    observability: onOff('observability', values.observability as string),
    webhooks: onOff('webhooks', values.webhooks as string),
    help: values.help === true,
  };
}

/** The SKIP list for common.js: every anchor phase not selected. */
export function skipList(phases: readonly Phase[], only?: readonly Phase[]): string[] {
  return ANCHOR_PHASES.filter(
    (p) => !phases.includes(p) || (only !== undefined && !only.includes(p)),
  );
}
