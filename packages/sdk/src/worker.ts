/**
 * OjsWorker: the consumer side (SDK guidelines §19.1, worker protocol
 * http-binding digest §8).
 *
 * - Fetch: two loops, each with one fetch in flight (one's round trip
 *   hides behind the other's), ask for `count` = their share of the free
 *   room (half of it, up to 1000) as soon as any room frees; the worker
 *   never holds more than `concurrency` + `prefetch` jobs (prefetch 'auto'
 *   by default: the jobs finished during one fetch round trip, at most
 *   the fetch limit). A job counts from its fetch until its
 *   outcome is recorded; up to `concurrency` run at once, the others wait
 *   in a buffer (leased, heartbeated, requeued at once on stop). When the
 *   manifest declares `long_poll_fetch` the request carries `wait_ms` and
 *   the server holds it until a job arrives; otherwise (or when an empty
 *   answer comes back early) fetches are spaced `pollIntervalMs` apart.
 * - Outcomes: every ACK/NACK carries `worker_id` and the fetched job's
 *   `attempt` (fencing). When the manifest declares `endpoints.ack_batch`
 *   they are queued and sent as one batched call when `ackBatchSize` are
 *   pending, `ackBatchDelayMs` after the first, or at once when no other
 *   job could join the batch; otherwise (or after a 404 on the batch path)
 *   one call per job. A refused item (stale attempt, lost lease, unknown
 *   job) is reported on `error` and never retried; a failed call is retried
 *   by the transport; a batch over the server's body limit goes again in
 *   halves.
 * - Heartbeat: every `heartbeatIntervalMs` with the worker state and the ids
 *   of its jobs (one beat per `limits.max_heartbeat_jobs` of them); it
 *   extends their leases. The answer's directive is obeyed
 *   (`quiet`: stop fetching; `terminate`: graceful stop), `jobs_cancelled`
 *   aborts those handlers (signal reason JobCancelledError), and a job the
 *   server did not extend (lease lost) is aborted with LeaseLostError.
 * - Execution timeout (per type, else the job's `timeout_ms`, else
 *   `jobTimeoutMs`): the handler's signal is aborted and the job is NACKed
 *   with code and type `timeout`.
 * - Errors: NACKed with `{code: 'handler_error', type: <error name>, message,
 *   retryable, details: {error_class}, backtrace}`; backtraces are limited to
 *   50 frames and 10,000 characters. DiscardError sends `retryable: false`.
 * - Shutdown (stop(), SIGTERM, SIGINT, heartbeat `terminate`): stop fetching,
 *   report `terminate`, wait for active jobs up to `shutdownTimeoutMs`, then
 *   abort the rest (ShutdownError) and NACK them with `requeue: true` and
 *   type `shutdown` so they return to `available` without losing an attempt.
 *   Buffered jobs are requeued at once; pending outcomes are sent before
 *   stop() resolves. A second signal skips the wait. SIGTSTP -> quiet,
 *   SIGCONT -> running.
 *
 * Settlement is exactly-once per fetched job: ACK, NACK, or nothing (cancelled
 * or lease lost). A handler that ignores its signal keeps running, but its
 * outcome after settlement is dropped.
 */

import { hostname } from 'node:os';
import { manifestSupports } from './client.ts';
import { type CodecChain, ENCRYPTED_PLACEHOLDER, isEncoded } from './codec.ts';
import {
  consoleLogger,
  DEFAULT_URL,
  envAuthToken,
  envInt,
  envQueues,
  envUrl,
  isLogLevel,
  type Logger,
  type LogLevel,
  silentLogger,
} from './config.ts';
import {
  AuthenticationError,
  ConflictError,
  DiscardError,
  JobCancelledError,
  JobTimeoutError,
  LeaseLostError,
  NotFoundError,
  OjsError,
  PayloadTooLargeError,
  ShutdownError,
  SnoozeError,
  UnsupportedFeatureError,
} from './errors.ts';
import { uuidv7 } from './generated/uuid.ts';
import { HttpTransport, type TransportRetryOptions } from './http.ts';
import { attachWorkerMetrics, type WorkerMetricsOptions } from './metrics.ts';
import {
  type ExecutionMiddleware,
  type JobContext,
  jobContext,
  MiddlewareChain,
  runExecutionChain,
} from './middleware.ts';
import { loadTracing, traceProcess } from './tracing.ts';
import type {
  AckBatchResponse,
  AckRequest,
  HeartbeatResponse,
  Job,
  Manifest,
  NackRequest,
  Transport,
} from './types.ts';

export type JobHandler<Args extends unknown[] = unknown[]> = (
  ctx: JobContext<Args>,
) => Promise<unknown> | unknown;

export interface HandlerOptions {
  /** Execution timeout for this type (overrides the job's `timeout_ms`). */
  timeoutMs?: number;
  /**
   * Job versions this handler accepts (job-versioning extension): "*"
   * (default, any and unversioned), "2.0", ">=1.0 <3.0", ">=1.0, <2.0".
   * The server then hands this worker only jobs whose version the range
   * admits; unversioned jobs go to any worker of the type.
   */
  versions?: string;
}

export type WorkerState = 'idle' | 'running' | 'quiet' | 'terminate' | 'terminated';

export interface WorkerOptions {
  /** Server base URL (env OJS_BACKEND_URL, default http://127.0.0.1:8080). */
  url?: string;
  transport?: Transport;
  authToken?: string;
  headers?: Record<string, string>;
  /** The tenant this worker fetches for (X-OJS-Tenant): it is handed that tenant's jobs only. */
  tenant?: string;
  /** Transport retries of transient failures (the fetch loop also backs off by itself). */
  retry?: TransportRetryOptions | false;
  /** Operation timeout of the HTTP transport (long-poll fetches get their wait added). */
  timeoutMs?: number;
  /**
   * A fetch implementation for the HTTP transport (e.g. one with custom TLS).
   * Default: node:http with keep-alive on Node, the global fetch elsewhere.
   */
  fetch?: typeof fetch;
  /** Node without `fetch`: connections to the server (default the larger of 64 and concurrency + 2). */
  maxSockets?: number;
  /** Queues in priority order (env OJS_QUEUE comma-separated, default ['default']; none with a `pool`). */
  queues?: string[];
  /**
   * Fair scheduling: the one pool this worker belongs to (sent on every
   * fetch and heartbeat). The server picks among the pool's queues by its
   * strategy; an isolated pool's queues reach only its workers.
   */
  pool?: string;
  /** Jobs run at once (env OJS_CONCURRENCY, default 10). */
  concurrency?: number;
  /** Unique per process; default a UUIDv7. */
  workerId?: string;
  /** Long-poll wait per fetch when the server supports it (default 5000 ms). */
  pollWaitMs?: number;
  /** Sleep after an empty fetch when the server does not long-poll (default 1000 ms). */
  pollIntervalMs?: number;
  /** `true`/`false` forces long polling on/off; default: ask the manifest. */
  longPoll?: boolean;
  /** Default 5000 ms (WP). */
  heartbeatIntervalMs?: number;
  /** Lease requested on fetch and on every heartbeat (default 30000 ms). */
  visibilityTimeoutMs?: number;
  /** Grace period for active jobs on shutdown (env OJS_SHUTDOWN_TIMEOUT s, default 25 s). */
  shutdownTimeoutMs?: number;
  /** Execution timeout when neither the type nor the job sets one (default none). */
  jobTimeoutMs?: number;
  /**
   * Decode encoded args with this chain before the handler runs (encryption
   * extension); a job that does not decode fails without retry (CodecError).
   */
  codec?: CodecChain;
  /** Handle SIGTERM/SIGINT (graceful stop) and SIGTSTP/SIGCONT (quiet/resume). Default true. */
  handleSignals?: boolean;
  /** After a signal-initiated stop completes, exit the process with code 0. Default true. */
  exitOnSignal?: boolean;
  logger?: Logger;
  logLevel?: LogLevel;
  /** Backtrace limits sent with errors (defaults 50 frames, 10,000 characters). */
  maxBacktraceFrames?: number;
  maxBacktraceChars?: number;
  /**
   * Jobs leased ahead of free slots, so the next job can start as soon as a
   * handler finishes. They hold a lease (renewed by heartbeats) while they
   * wait and are requeued at once on stop. A number (0..1000) fixes it;
   * `'auto'` (the default) leases ahead as many jobs as the worker finishes
   * during one fetch round trip, at most the fetch limit (the server's
   * `max_fetch_count`, 1000): none while jobs run long compared with a fetch
   * (nothing is held back from other workers), hundreds for jobs shorter
   * than a millisecond, so the next batch arrives before the current one
   * runs out and claims are large.
   */
  prefetch?: number | 'auto';
  /**
   * Report outcomes in batched ACK/NACK calls when the server declares them
   * (manifest `endpoints.ack_batch`). Default true; false: one call per job.
   */
  ackBatch?: boolean;
  /**
   * Send a batch once this many outcomes are pending (default 1000, 1..1000).
   * A batch the server refuses as too large is sent again in halves.
   */
  ackBatchSize?: number;
  /**
   * Prometheus metrics in the application's prom-client Registry
   * (`{ registry }`; metrics.ts). prom-client must be installed.
   */
  metrics?: WorkerMetricsOptions;
  /** ...or at the latest this long after the first of them (default 2 ms). */
  ackBatchDelayMs?: number;
}

export interface WorkerEvents {
  jobStarted: { job: Job };
  jobCompleted: { job: Job; result: unknown; durationMs: number };
  jobFailed: { job: Job; error: unknown; durationMs: number; response?: Record<string, unknown> };
  jobCancelled: { job: Job };
  jobTimedOut: { job: Job; timeoutMs: number };
  jobRequeued: { job: Job };
  directive: { directive: 'running' | 'quiet' | 'terminate' };
  /** `job`: the job whose outcome was refused (conflict, not found) or could not be sent. */
  error: { error: unknown; operation: string; job?: Job };
  stopped: Record<string, never>;
}

type Listener<E extends keyof WorkerEvents> = (event: WorkerEvents[E]) => void;

interface ActiveJob {
  job: Job;
  controller: AbortController;
  /**
   * buffered: leased, waiting for a slot (prefetch); running: in its handler;
   * settling: outcome decided, being recorded (or dropped).
   */
  phase: 'buffered' | 'running' | 'settling';
  settled: boolean;
  startedAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Resolves when the job's slot is released (after its ACK/NACK completed). */
  done: Promise<void>;
  release: () => void;
}

type Outcome =
  | { kind: 'ack'; result: unknown }
  | { kind: 'nack'; error: NackRequest['error']; requeue?: boolean; cause?: unknown };

/** A decided outcome on its way to the server. */
interface Report {
  entry: ActiveJob;
  outcome: Outcome;
  durationMs: number;
}
type AckReport = Report & { outcome: { kind: 'ack' } };
type NackReport = Report & { outcome: { kind: 'nack' } };

const isAck = (report: Report): report is AckReport => report.outcome.kind === 'ack';

/** The server has no batched acknowledgement: undeclared, or the route is missing. */
function isMissingEndpoint(error: unknown): boolean {
  return (
    error instanceof UnsupportedFeatureError ||
    (error instanceof OjsError && [404, 405, 501].includes(error.status))
  );
}

/** An integer option within bounds (TypeError otherwise, like `concurrency`). */
function intOption(name: string, value: unknown, min: number, max: number, or = ''): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(
      `${name} must be ${or}an integer from ${min} to ${max} (got ${JSON.stringify(value)}).`,
    );
  }
  return value;
}

/** Exponential moving average (weight 1/5 to the newest sample). */
function movingAverage(average: number | undefined, sample: number): number {
  return average === undefined ? sample : average + (sample - average) / 5;
}

interface Registration {
  handler: JobHandler<unknown[]>;
  options: HandlerOptions;
}

const MAX_MESSAGE_CHARS = 4096;
/** The largest fetch `count` and batched acknowledgement the HTTP binding allows. */
const MAX_FETCH_COUNT = 1000;
/** Fetch requests a worker keeps in flight (see #fetchLoop). */
const FETCHES_IN_FLIGHT = 2;
const MAX_ACK_BATCH = 1000;
/** Job ids per heartbeat when the manifest does not say (this server's limit). */
const MAX_HEARTBEAT_JOBS = 1000;
const VERSIONING_EXTENSION = 'urn:ojs:ext:experimental:job-versioning';

/** Splits an error's stack into frames, bounded in count and total size. */
export function backtraceOf(error: unknown, maxFrames = 50, maxChars = 10_000): string[] {
  if (!(error instanceof Error) || typeof error.stack !== 'string') return [];
  const frames: string[] = [];
  let total = 0;
  for (const line of error.stack.split('\n')) {
    const frame = line.trim();
    if (!frame.startsWith('at ')) continue;
    const clipped = frame.length > 500 ? `${frame.slice(0, 500)}…` : frame;
    if (frames.length >= maxFrames || total + clipped.length > maxChars) break;
    frames.push(clipped);
    total += clipped.length;
  }
  return frames;
}

/** The NACK error object for something a handler threw. */
export function describeError(
  error: unknown,
  limits: { maxFrames?: number; maxChars?: number } = {},
): NackRequest['error'] {
  const asError = error instanceof Error ? error : undefined;
  let message = asError ? asError.message : String(error);
  if (message.length > MAX_MESSAGE_CHARS) message = `${message.slice(0, MAX_MESSAGE_CHARS)}…`;
  const name = asError?.name || asError?.constructor?.name || typeof error;
  const ownType = (error as { type?: unknown } | null)?.type;
  const type = typeof ownType === 'string' && ownType !== '' ? ownType : name;
  const details: Record<string, unknown> = { error_class: name };
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' || typeof code === 'number') details.error_code = code;
  const out: NackRequest['error'] = { code: 'handler_error', type, message, details };
  const ownRetryable = (error as { retryable?: unknown } | null)?.retryable;
  if (typeof ownRetryable === 'boolean') out.retryable = ownRetryable;
  if (error instanceof DiscardError) {
    out.type = 'discard';
    out.retryable = false;
  } else if (error instanceof SnoozeError) {
    out.type = 'snooze';
    out.retryable = true;
    details.snooze_ms = error.delayMs;
  }
  const backtrace = backtraceOf(error, limits.maxFrames, limits.maxChars);
  if (backtrace.length > 0) out.backtrace = backtrace;
  return out;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export class OjsWorker<TMap extends Record<string, unknown[]> = Record<string, unknown[]>> {
  readonly workerId: string;
  readonly queues: readonly string[];
  /** The worker's pool (fair scheduling), if any. */
  readonly pool: string | undefined;
  readonly concurrency: number;
  /** Execution middleware (onion; first added is outermost). Frozen by start(). */
  readonly middleware = new MiddlewareChain<ExecutionMiddleware>();
  readonly transport: Transport;
  readonly logger: Logger;

  readonly #handlers = new Map<string, Registration>();
  #versionRouting = false;
  readonly #active = new Map<string, ActiveJob>();
  readonly #listeners = new Map<keyof WorkerEvents, Set<(event: never) => void>>();
  readonly #options: WorkerOptions;
  readonly #pollWaitMs: number;
  readonly #pollIntervalMs: number;
  readonly #heartbeatIntervalMs: number;
  readonly #visibilityTimeoutMs: number;
  readonly #shutdownTimeoutMs: number;
  /** A fixed prefetch, or undefined for 'auto' (see #prefetch). */
  readonly #fixedPrefetch: number | undefined;
  /** 'auto' prefetch: moving averages of a full fetch's round trip and of a job's run time, ms. */
  #fetchMs: number | undefined;
  #jobMs: number | undefined;
  readonly #ackBatchSize: number;
  readonly #ackBatchDelayMs: number;
  /** Decided from the manifest at start; turned off for good if the endpoint is missing. */
  #batchAcks = false;
  #maxFetch = MAX_FETCH_COUNT;
  /** Job ids one heartbeat may carry (the manifest's `limits.max_heartbeat_jobs`). */
  #maxHeartbeatJobs = MAX_HEARTBEAT_JOBS;
  /** Jobs in their handler (at most `concurrency`). */
  #running = 0;
  /** Leased jobs waiting for a slot, in fetch order. */
  readonly #buffer: ActiveJob[] = [];
  /** Outcomes waiting for the next batch. */
  readonly #pending: Report[] = [];
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #flushImmediate: ReturnType<typeof setImmediate> | undefined;
  #state: WorkerState = 'idle';
  /** start() is loading its optional dependencies. */
  #starting = false;
  #longPoll: boolean | undefined;
  #loop: Promise<void> | undefined;
  #heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  #heartbeatInFlight: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  /** Aborted when the worker stops: wakes sleeps and slot waits. */
  readonly #stopController = new AbortController();
  /** Aborts the in-flight fetch, only on transports where that cannot strand claimed jobs. */
  #fetchController = new AbortController();
  /** Fetch loops waiting for a slot to free or the state to change. */
  #wakers: (() => void)[] = [];
  /** Jobs asked for by the fetches in flight (see #fetchLoop). */
  #reserved = 0;
  /** Fetches in flight, and whether the last one to answer found the queues drained. */
  #fetching = 0;
  #drained = false;
  #forceStop: (() => void) | undefined;
  #signalHandlers: Array<[NodeJS.Signals, () => void]> = [];
  #execution: readonly ExecutionMiddleware[] = [];

  constructor(options: WorkerOptions = {}) {
    this.#options = options;
    this.workerId = options.workerId ?? uuidv7();
    this.pool = options.pool;
    this.queues = options.queues ?? envQueues() ?? (options.pool === undefined ? ['default'] : []);
    if (this.queues.length === 0 && this.pool === undefined) {
      throw new TypeError('A worker needs at least one queue (or a pool).');
    }
    this.concurrency = options.concurrency ?? envInt('OJS_CONCURRENCY') ?? 10;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw new TypeError(`concurrency must be a positive integer (got ${this.concurrency}).`);
    }
    this.#pollWaitMs = options.pollWaitMs ?? 5_000;
    this.#pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.#heartbeatIntervalMs = options.heartbeatIntervalMs ?? 5_000;
    this.#visibilityTimeoutMs = options.visibilityTimeoutMs ?? 30_000;
    const envShutdown = envInt('OJS_SHUTDOWN_TIMEOUT');
    this.#shutdownTimeoutMs =
      options.shutdownTimeoutMs ?? (envShutdown === undefined ? 25_000 : envShutdown * 1000);
    this.#longPoll = options.longPoll;
    this.#fixedPrefetch =
      (options.prefetch ?? 'auto') === 'auto'
        ? undefined
        : intOption('prefetch', options.prefetch, 0, MAX_FETCH_COUNT, "'auto' or ");
    // As large as the server takes (decision 0128): with short jobs a round is
    // one fetch of hundreds, reported in one request instead of one per 100.
    this.#ackBatchSize = intOption(
      'ackBatchSize',
      options.ackBatchSize ?? MAX_ACK_BATCH,
      1,
      MAX_ACK_BATCH,
    );
    this.#ackBatchDelayMs = options.ackBatchDelayMs ?? 2;
    if (!Number.isFinite(this.#ackBatchDelayMs) || this.#ackBatchDelayMs < 0) {
      throw new TypeError(
        `ackBatchDelayMs must be a non-negative number of milliseconds (got ${this.#ackBatchDelayMs}).`,
      );
    }
    this.logger =
      options.logger ??
      (options.logLevel === 'silent'
        ? silentLogger
        : consoleLogger(isLogLevel(options.logLevel) ? options.logLevel : undefined));
    this.transport =
      options.transport ??
      new HttpTransport({
        url: options.url ?? envUrl() ?? DEFAULT_URL,
        authToken: options.authToken ?? envAuthToken(),
        headers: options.headers,
        tenant: options.tenant,
        retry: options.retry,
        timeoutMs: options.timeoutMs,
        fetch: options.fetch,
        // Every running job may need its own ACK/NACK, besides a fetch and a heartbeat.
        maxSockets: options.maxSockets ?? Math.max(64, this.concurrency + 2),
      });
  }

  get state(): WorkerState {
    return this.#state;
  }

  /** Ids of the jobs this worker holds. */
  get activeJobIds(): string[] {
    return [...this.#active.keys()];
  }

  // ---------------------------------------------------------------- registration and events

  /** Registers the handler of a job type; `ctx.args` is typed from the worker's type map. */
  register<K extends keyof TMap & string>(
    type: K,
    handler: JobHandler<TMap[K]>,
    options: HandlerOptions = {},
  ): this {
    if (this.#state !== 'idle') throw new Error('Register handlers before start().');
    this.#handlers.set(type, { handler: handler as JobHandler<unknown[]>, options });
    return this;
  }

  /** Registered job types. */
  get types(): string[] {
    return [...this.#handlers.keys()];
  }

  /** The handler of a type, for the testing helpers. */
  handlerFor(
    type: string,
  ): { handler: JobHandler<unknown[]>; options: HandlerOptions } | undefined {
    return this.#handlers.get(type);
  }

  on<E extends keyof WorkerEvents>(event: E, listener: Listener<E>): this {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener as (event: never) => void);
    return this;
  }

  off<E extends keyof WorkerEvents>(event: E, listener: Listener<E>): this {
    this.#listeners.get(event)?.delete(listener as (event: never) => void);
    return this;
  }

  #emit<E extends keyof WorkerEvents>(event: E, payload: WorkerEvents[E]): void {
    for (const listener of this.#listeners.get(event) ?? []) {
      try {
        (listener as Listener<E>)(payload);
      } catch (error) {
        this.logger.error('worker event listener failed', { event, error: String(error) });
      }
    }
  }

  // ---------------------------------------------------------------- lifecycle

  /** Starts fetching and heartbeating; resolves once started. */
  async start(): Promise<void> {
    if (this.#state !== 'idle' || this.#starting) {
      throw new Error(
        `The worker is ${this.#starting ? 'starting' : this.#state}; create a new one.`,
      );
    }
    if (this.#handlers.size === 0) throw new Error('Register at least one handler before start().');
    this.#starting = true;
    try {
      // Optional peer dependencies, loaded before the first job runs.
      await loadTracing();
      if (this.#options.metrics !== undefined) {
        await attachWorkerMetrics(this, this.#options.metrics);
      }
    } finally {
      this.#starting = false;
    }
    this.middleware.freeze('the worker has started');
    this.#execution = this.middleware.list();
    this.#state = 'running';
    if (this.#options.handleSignals ?? true) this.#installSignals();
    this.#heartbeatTimer = setInterval(() => void this.#heartbeat(), this.#heartbeatIntervalMs);
    this.#loop = this.#fetch();
    this.logger.info('worker started', {
      worker_id: this.workerId,
      queues: this.queues,
      concurrency: this.concurrency,
      transport: this.transport.kind,
    });
  }

  /** Resolves when the worker has stopped. */
  async wait(): Promise<void> {
    await new Promise<void>((resolve) => {
      if (this.#state === 'terminated') return resolve();
      this.on('stopped', () => resolve());
    });
  }

  /**
   * Graceful stop: no more fetches, active jobs get `timeoutMs` (default
   * the shutdown timeout) to finish, the rest are requeued. Idempotent.
   */
  stop(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.#state === 'idle') {
      this.#state = 'terminated';
      return Promise.resolve();
    }
    this.#stopping ??= this.#shutdown(options.timeoutMs ?? this.#shutdownTimeoutMs);
    return this.#stopping;
  }

  /** Quiet: finish active jobs, fetch no more (until resume()). */
  quiet(): void {
    if (this.#state !== 'running') return;
    this.#state = 'quiet';
    this.logger.info('worker quiet', { worker_id: this.workerId });
  }

  /** Back to running from quiet (never from terminate). */
  resume(): void {
    if (this.#state !== 'quiet') return;
    this.#state = 'running';
    this.#wakeAll();
    this.logger.info('worker resumed', { worker_id: this.workerId });
  }

  async #shutdown(graceMs: number): Promise<void> {
    this.#state = 'terminate';
    this.logger.info('worker stopping', {
      worker_id: this.workerId,
      active_jobs: this.#active.size,
      grace_ms: graceMs,
    });
    this.#stopController.abort();
    if (this.transport.abortableFetch) this.#fetchController.abort();
    else {
      // Over HTTP, cutting the long poll could lose jobs the server claims in
      // that instant. Instead the heartbeat says `terminate`, and the server
      // answers this worker's waiting fetch at once (whatever it carries is
      // requeued below); a server without that waits out wait_ms.
      void this.#heartbeatInFlight?.then(() => this.#heartbeat());
      if (this.#heartbeatInFlight === undefined) void this.#heartbeat();
    }
    this.#wakeAll();
    // Outcomes waiting for their batch go now (later ones are sent at once while stopping).
    this.#flush();
    // The in-flight fetch finishes (jobs it brings are requeued at once).
    await this.#loop;
    // Jobs leased ahead that never started go straight back.
    for (const entry of this.#buffer.splice(0)) {
      void this.#requeue(entry, new ShutdownError('The worker is stopping; job requeued.'));
    }
    void this.#heartbeat();

    const forced = new Promise<void>((resolve) => {
      this.#forceStop = resolve;
    });
    const graceOver = new AbortController();
    await Promise.race([this.#allSettled(), sleep(graceMs, graceOver.signal), forced]);
    graceOver.abort();
    const remaining = [...this.#active.values()].filter((entry) => !entry.settled);
    if (remaining.length > 0) {
      this.logger.warn('grace period over: requeueing active jobs', {
        worker_id: this.workerId,
        jobs: remaining.map((e) => e.job.id),
      });
    }
    await Promise.all(remaining.map((entry) => this.#requeue(entry, new ShutdownError())));
    // Every outcome recorded (or given up on) before stop() resolves.
    await this.#allSettled();
    clearInterval(this.#heartbeatTimer);
    await this.#heartbeatInFlight;
    // A transport the worker made: end its idle keep-alive connections.
    if (this.#options.transport === undefined) await this.transport.close?.();
    this.#removeSignals();
    this.#state = 'terminated';
    this.logger.info('worker stopped', { worker_id: this.workerId });
    this.#emit('stopped', {});
  }

  #allSettled(): Promise<void> {
    return Promise.all([...this.#active.values()].map((entry) => entry.done)).then(() => {
      // Jobs may have been added by the last fetch meanwhile.
      if (this.#active.size > 0) return this.#allSettled();
    });
  }

  #installSignals(): void {
    if (typeof process === 'undefined' || typeof process.on !== 'function') return;
    const exitOnSignal = this.#options.exitOnSignal ?? true;
    const onStop = (signal: NodeJS.Signals) => () => {
      if (this.#stopping !== undefined) {
        // Second signal: skip the grace period.
        this.logger.warn('second signal: requeueing active jobs now', { signal });
        this.#forceStop?.();
        return;
      }
      this.logger.info('signal received, stopping gracefully', { signal });
      this.stop().then(
        () => {
          if (exitOnSignal) process.exit(0);
        },
        (error: unknown) => {
          this.logger.error('graceful stop failed', { error: String(error) });
          if (exitOnSignal) process.exit(1);
        },
      );
    };
    const handlers: Array<[NodeJS.Signals, () => void]> = [
      ['SIGTERM', onStop('SIGTERM')],
      ['SIGINT', onStop('SIGINT')],
    ];
    if (process.platform !== 'win32') {
      handlers.push(['SIGTSTP', () => this.quiet()], ['SIGCONT', () => this.resume()]);
    }
    for (const [signal, handler] of handlers) process.on(signal, handler);
    this.#signalHandlers = handlers;
  }

  #removeSignals(): void {
    for (const [signal, handler] of this.#signalHandlers) process.off(signal, handler);
    this.#signalHandlers = [];
  }

  // ---------------------------------------------------------------- fetch loop

  /** A method, so TypeScript does not narrow the state across awaits. */
  #isStopping(): boolean {
    return this.#state === 'terminate' || this.#state === 'terminated';
  }

  /** Resolves when a slot is free, the state changes, or the worker stops. */
  #waitForChange(): Promise<void> {
    return new Promise((resolve) => this.#wakers.push(resolve));
  }

  #wakeAll(): void {
    const wakers = this.#wakers;
    this.#wakers = [];
    for (const wake of wakers) wake();
  }

  /** Reads the manifest once: long poll, version routing, batched ACK, fetch limit. */
  async #readManifest(): Promise<void> {
    let manifest: Manifest | undefined;
    try {
      manifest = await this.transport.manifest({ signal: this.#stopController.signal });
    } catch (error) {
      this.logger.warn('manifest unavailable; polling without long-poll, one ACK per call', {
        error: String(error),
      });
    }
    this.#longPoll ??= manifest?.capabilities?.long_poll_fetch === true;
    if (manifest === undefined) return;
    this.#versionRouting = manifestSupports(manifest, VERSIONING_EXTENSION);
    const declared = manifest.endpoints?.ack_batch;
    this.#batchAcks =
      (this.#options.ackBatch ?? true) &&
      typeof this.transport.ackBatch === 'function' &&
      typeof declared === 'string' &&
      declared !== '';
    const limit = manifest.limits?.max_fetch_count;
    if (typeof limit === 'number' && Number.isInteger(limit) && limit >= 1) {
      this.#maxFetch = Math.min(MAX_FETCH_COUNT, limit);
    }
    const beatLimit = manifest.limits?.max_heartbeat_jobs;
    if (typeof beatLimit === 'number' && Number.isInteger(beatLimit) && beatLimit >= 1) {
      this.#maxHeartbeatJobs = beatLimit;
    }
  }

  /** Handler declarations for version routing (only to servers that declare the extension). */
  #handlerDeclarations(): { handlers?: { type: string; versions: string }[] } {
    if (!this.#versionRouting) return {};
    return {
      handlers: [...this.#handlers].map(([type, r]) => ({
        type,
        versions: r.options.versions ?? '*',
      })),
    };
  }

  /** Most jobs the worker holds at once: running, leased ahead, or being reported. */
  get #capacity(): number {
    return this.concurrency + this.#prefetch;
  }

  /**
   * Jobs leased ahead of free slots. 'auto': the jobs `concurrency` handlers
   * finish during one fetch round trip (0 until both were measured).
   */
  get #prefetch(): number {
    if (this.#fixedPrefetch !== undefined) return this.#fixedPrefetch;
    if (this.#fetchMs === undefined || this.#jobMs === undefined) return 0;
    // A handler faster than the clock's millisecond counts as half of one.
    const perRoundTrip = (this.concurrency * this.#fetchMs) / Math.max(this.#jobMs, 0.5);
    // Bounded by the fetch limit, not by concurrency: short jobs then come in
    // claims of hundreds instead of concurrency / 2, and a claim's fixed cost
    // (request, transaction, statements) is shared by more jobs (decision
    // 0114: drain 20-40 % less CPU per job on both stores). What is leased
    // ahead is still only what this worker finishes in one round trip.
    return Math.min(this.#maxFetch, Math.round(perRoundTrip));
  }

  /** Reads the manifest, then runs FETCHES_IN_FLIGHT fetch loops until the worker stops. */
  async #fetch(): Promise<void> {
    await this.#readManifest();
    await Promise.all(Array.from({ length: FETCHES_IN_FLIGHT }, () => this.#fetchLoop()));
  }

  async #fetchLoop(): Promise<void> {
    let failures = 0;
    while (this.#state === 'running' || this.#state === 'quiet') {
      // Jobs running or waiting to run fill at most concurrency + prefetch slots.
      // A finished job whose outcome is still being reported (queued for the next
      // batched ACK, or in flight) frees its slot at once, so the next fetch
      // overlaps the report instead of waiting a round trip for it; such jobs
      // still hold their lease, so they are bounded too, by one ACK batch.
      // Several fetches are in flight so that one round trip's latency hides
      // behind another's; each asks for its share of the room, and what the
      // others asked for is reserved for them.
      const unsettled = this.#running + this.#buffer.length + this.#reserved;
      const room = Math.min(
        this.#capacity - unsettled,
        this.#capacity + this.#ackBatchSize - this.#active.size - this.#reserved,
      );
      // While the queues are drained, one fetch waiting at the server is
      // enough: a second one would only be woken with it by every enqueue and
      // claim nothing (an empty claim per job on the server). A fetch that
      // comes back full wakes the other loops again.
      const redundant = this.#drained && this.#fetching > 0;
      if (this.#state === 'quiet' || room <= 0 || redundant) {
        await this.#waitForChange();
        continue;
      }
      let jobs: Job[];
      const count = Math.min(room, this.#maxFetch, Math.ceil(this.#capacity / FETCHES_IN_FLIGHT));
      const started = Date.now();
      this.#reserved += count;
      this.#fetching++;
      try {
        jobs = await this.transport.fetchJobs(
          {
            queues: [...this.queues],
            count,
            worker_id: this.workerId,
            visibility_timeout_ms: this.#visibilityTimeoutMs,
            ...(this.#longPoll ? { wait_ms: this.#pollWaitMs } : {}),
            ...this.#handlerDeclarations(),
            ...(this.pool === undefined ? {} : { pool: this.pool }),
          },
          { signal: this.#fetchController.signal },
        );
        failures = 0;
        // Only a fetch the server filled measures the round trip: a shorter
        // answer may have waited (long poll) for jobs to arrive.
        if (jobs.length === count) {
          this.#fetchMs = movingAverage(this.#fetchMs, Date.now() - started);
        }
      } catch (error) {
        this.#reserved -= count;
        this.#fetching--;
        this.#drained = false;
        if (this.#isStopping()) break;
        failures++;
        const delay = Math.min(30_000, 250 * 2 ** Math.min(failures, 7)) * (0.5 + Math.random());
        this.logger.warn('fetch failed; backing off', {
          worker_id: this.workerId,
          error: String(error),
          delay_ms: Math.round(delay),
        });
        this.#emit('error', { error, operation: 'fetch' });
        await sleep(delay, this.#stopController.signal);
        continue;
      }
      this.#reserved -= count;
      this.#fetching--;
      const drained = jobs.length < count;
      if (this.#drained && !drained) this.#wakeAll();
      this.#drained = drained;
      // Up to `count` jobs had room when asked for (an 'auto' capacity may
      // have shrunk since: the buffer holds them anyway, no round trip wasted).
      let accepted = 0;
      for (const job of jobs) {
        if (this.#state === 'running' && accepted < count) {
          accepted++;
          this.#buffer.push(this.#track(job));
        } else this.#requeueFetched(job);
      }
      this.#startBuffered();
      // Without long poll, or when the server answers an empty long poll early, poll at
      // most once per pollIntervalMs. A working long poll returns empty only after wait_ms.
      const elapsed = Date.now() - started;
      if (jobs.length === 0 && elapsed < this.#pollIntervalMs) {
        await sleep(this.#pollIntervalMs - elapsed, this.#stopController.signal);
      }
    }
  }

  /** A job fetched while stopping (or beyond capacity): straight back to available. */
  #requeueFetched(job: Job): void {
    const entry = this.#track(job);
    void this.#requeue(entry, new ShutdownError('The worker is stopping; job requeued.'));
  }

  /** Starts buffered jobs while execution slots are free (FIFO: the server's order). */
  #startBuffered(): void {
    while (this.#running < this.concurrency && this.#buffer.length > 0 && !this.#isStopping()) {
      const entry = this.#buffer.shift()!;
      // Settled while waiting (cancelled through the heartbeat): nothing to run.
      if (entry.phase === 'buffered') this.#run(entry);
    }
  }

  // ---------------------------------------------------------------- execution

  #track(job: Job): ActiveJob {
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    const entry: ActiveJob = {
      job,
      controller: new AbortController(),
      phase: 'buffered',
      settled: false,
      startedAt: Date.now(),
      timer: undefined,
      done,
      release: () => {
        if (this.#active.get(job.id) === entry) this.#active.delete(job.id);
        release();
        this.#wakeAll();
      },
    };
    this.#active.set(job.id, entry);
    return entry;
  }

  #run(entry: ActiveJob): void {
    const { job } = entry;
    entry.phase = 'running';
    entry.startedAt = Date.now();
    this.#running++;
    const registration = this.#handlers.get(job.type);
    if (registration === undefined) {
      // Another worker on the queue may have the handler: retry, don't discard.
      void this.#settle(entry, {
        kind: 'nack',
        error: {
          code: 'handler_error',
          type: 'no_handler_registered',
          message: `No handler registered for job type '${job.type}' on worker ${this.workerId}.`,
          retryable: true,
        },
      });
      return;
    }
    const timeoutMs =
      registration.options.timeoutMs ?? job.timeout_ms ?? this.#options.jobTimeoutMs;
    if (timeoutMs !== undefined && timeoutMs > 0) {
      entry.timer = setTimeout(() => this.#timeout(entry, timeoutMs), timeoutMs);
    }
    this.#emit('jobStarted', { job });
    this.logger.debug('job started', {
      'ojs.job.id': job.id,
      'ojs.job.type': job.type,
      'ojs.job.queue': job.queue,
      attempt: job.attempt,
      ...(isEncoded(job) ? { args: ENCRYPTED_PLACEHOLDER } : {}),
    });
    const { ctx, result } = jobContext(job, {
      workerId: this.workerId,
      signal: entry.controller.signal,
      heartbeat: () => this.#heartbeat(),
      progress: async (value, message, data) => {
        const transport = this.transport;
        if (transport.progress === undefined) {
          throw new UnsupportedFeatureError('This transport cannot report job progress.', {
            code: 'unsupported',
            operation: 'progress',
            jobId: job.id,
          });
        }
        await transport.progress(
          job.id,
          {
            progress: value,
            ...(message === undefined ? {} : { message }),
            ...(data === undefined ? {} : { data }),
          },
          { signal: entry.controller.signal },
        );
      },
      log: (level, message, fields) =>
        this.logger[level](message, { 'ojs.job.id': job.id, 'ojs.job.type': job.type, ...fields }),
    });
    let outcome: Promise<unknown>;
    const span = traceProcess(job, this.workerId);
    const codec = this.#options.codec;
    const execute =
      codec === undefined || !isEncoded(job)
        ? () => runExecutionChain(this.#execution, job, ctx, async () => registration.handler(ctx))
        : async () => {
            // Decoded before any middleware or the handler sees the job (ENC: M).
            const plain = await codec.decodeJob(job);
            Object.assign(ctx, { job: plain, args: plain.args });
            return runExecutionChain(this.#execution, plain, ctx, async () =>
              registration.handler(ctx),
            );
          };
    try {
      outcome = span === undefined ? execute() : span.run(execute);
    } catch (error) {
      outcome = Promise.reject(error);
    }
    outcome.then(
      (value) => {
        span?.end();
        if (entry.settled) return;
        const stored = result();
        void this.#settle(entry, {
          kind: 'ack',
          result: value === undefined && stored.set ? stored.value : value,
        });
      },
      (error: unknown) => {
        span?.end(error);
        if (entry.settled) return;
        void this.#settle(entry, {
          kind: 'nack',
          error: describeError(error, {
            maxFrames: this.#options.maxBacktraceFrames,
            maxChars: this.#options.maxBacktraceChars,
          }),
          cause: error,
        });
      },
    );
  }

  #timeout(entry: ActiveJob, timeoutMs: number): void {
    if (entry.settled) return;
    const error = new JobTimeoutError(timeoutMs);
    entry.controller.abort(error);
    this.#emit('jobTimedOut', { job: entry.job, timeoutMs });
    void this.#settle(entry, {
      kind: 'nack',
      error: {
        code: 'timeout',
        type: 'timeout',
        message: error.message,
        retryable: true,
        details: { timeout_ms: timeoutMs },
      },
      cause: error,
    });
  }

  async #requeue(entry: ActiveJob, reason: ShutdownError): Promise<void> {
    if (entry.settled) return;
    entry.controller.abort(reason);
    await this.#settle(entry, {
      kind: 'nack',
      requeue: true,
      error: {
        code: 'handler_error',
        type: 'shutdown',
        message: reason.message,
        retryable: true,
        details: { reason: 'ShutdownError' },
      },
    });
  }

  /**
   * Decides the outcome of a job exactly once and frees its execution slot
   * at once; the job keeps counting against the worker's capacity until the
   * outcome is recorded (or could not be). Resolves then.
   */
  #settle(entry: ActiveJob, outcome: Outcome | { kind: 'drop' }): Promise<void> {
    if (entry.settled) return entry.done;
    entry.settled = true;
    clearTimeout(entry.timer);
    const ran = entry.phase === 'running';
    if (ran) this.#running--;
    entry.phase = 'settling';
    // A slot is free: the fetch loop may fetch again (see #fetchLoop's room).
    this.#wakeAll();
    if (outcome.kind === 'drop') entry.release();
    else {
      const report: Report = { entry, outcome, durationMs: Date.now() - entry.startedAt };
      if (ran) this.#jobMs = movingAverage(this.#jobMs, report.durationMs);
      if (this.#batchAcks) this.#queueReport(report);
      else void this.#reportOne(report);
    }
    this.#startBuffered();
    return entry.done;
  }

  // ---------------------------------------------------------------- reporting outcomes

  #ackRequest(report: Report & { outcome: { kind: 'ack' } }): AckRequest {
    const { job } = report.entry;
    const request: AckRequest = { job_id: job.id, worker_id: this.workerId };
    // Fencing: the server refuses the outcome of an attempt that is no longer current.
    if (typeof job.attempt === 'number') request.attempt = job.attempt;
    request.result = report.outcome.result;
    return request;
  }

  #nackRequest(report: Report & { outcome: { kind: 'nack' } }): NackRequest {
    const { job } = report.entry;
    const request: NackRequest = {
      job_id: job.id,
      worker_id: this.workerId,
      error: report.outcome.error,
    };
    if (typeof job.attempt === 'number') request.attempt = job.attempt;
    if (report.outcome.requeue) request.requeue = true;
    return request;
  }

  /**
   * One ACK or NACK call (servers without the batched acknowledgement, or
   * the items of a refused batch). `mayHaveLanded`: a refused batch may have
   * settled some items before failing, so a conflict showing the item's own
   * outcome already in place counts as recorded (as for a repeated ACK).
   */
  async #reportOne(report: Report, mayHaveLanded = false): Promise<void> {
    try {
      const response = isAck(report)
        ? await this.transport.ack(this.#ackRequest(report))
        : await this.transport.nack(this.#nackRequest(report as NackReport));
      this.#recorded(report, response);
    } catch (error) {
      const state = error instanceof ConflictError ? error.details.current_state : undefined;
      const landed =
        mayHaveLanded &&
        typeof state === 'string' &&
        (isAck(report) ? state === 'completed' : state !== 'active');
      if (landed) this.#recorded(report, { id: report.entry.job.id, state });
      else this.#notRecorded(report, error);
    } finally {
      report.entry.release();
    }
  }

  /**
   * Queues an outcome for the next batch: sent when `ackBatchSize` are
   * pending or `ackBatchDelayMs` after the first, or as soon as nothing else
   * could join the batch (no job running or waiting to, or the worker is stopping).
   */
  #queueReport(report: Report): void {
    this.#pending.push(report);
    if (this.#pending.length >= this.#ackBatchSize) {
      this.#flush();
    } else if (this.#isStopping() || (this.#running === 0 && this.#buffer.length === 0)) {
      // setImmediate, not now: handlers finishing in this same tick still share the batch.
      this.#flushImmediate ??= setImmediate(() => this.#flush());
    } else {
      this.#flushTimer ??= setTimeout(() => this.#flush(), this.#ackBatchDelayMs);
    }
  }

  /** Sends every pending outcome (in batches of at most ackBatchSize). */
  #flush(): void {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    if (this.#flushImmediate !== undefined) clearImmediate(this.#flushImmediate);
    this.#flushImmediate = undefined;
    while (this.#pending.length > 0) {
      void this.#sendBatch(this.#pending.splice(0, this.#ackBatchSize));
    }
  }

  async #sendBatch(batch: Report[]): Promise<void> {
    if (!this.#batchAcks || this.transport.ackBatch === undefined) {
      for (const report of batch) void this.#reportOne(report);
      return;
    }
    const acks = batch.filter(isAck);
    const nacks = batch.filter((r): r is NackReport => !isAck(r));
    let response: AckBatchResponse;
    try {
      // The transport retries transient failures with its backoff.
      response = await this.transport.ackBatch({
        acks: acks.map((r) => this.#ackRequest(r)),
        nacks: nacks.map((r) => this.#nackRequest(r)),
      });
    } catch (error) {
      if (isMissingEndpoint(error)) {
        // The server has no batched acknowledgement after all: single calls from now on.
        if (this.#batchAcks) {
          this.#batchAcks = false;
          this.logger.info('batched acknowledgement unavailable; one ACK/NACK per call', {
            worker_id: this.workerId,
            error: String(error),
          });
        }
        for (const report of batch) void this.#reportOne(report);
        return;
      }
      if (batch.length > 1 && error instanceof PayloadTooLargeError) {
        // Over the server's body limit (large results): refused before anything
        // changed, so the halves go again as batches of their own, down to
        // single calls, which pin the error on a result too large by itself.
        const half = Math.ceil(batch.length / 2);
        for (const part of [batch.slice(0, half), batch.slice(half)]) {
          if (part.length === 1) void this.#reportOne(part[0]!);
          else void this.#sendBatch(part);
        }
        return;
      }
      if (
        batch.length > 1 &&
        !(error instanceof AuthenticationError) &&
        !(error instanceof OjsError && error.retryable)
      ) {
        // The request as a whole was refused, not failed in transit (one result that
        // cannot be serialised or stored, say): one call per job gives every other job
        // its outcome and pins the error on the culprit.
        this.logger.warn('batched acknowledgement refused; reporting one job per call', {
          worker_id: this.workerId,
          jobs: batch.length,
          error: String(error),
        });
        for (const report of batch) void this.#reportOne(report, true);
        return;
      }
      // Gave up after the transport's retries: the leases expire and the server hands
      // these jobs out again (at-least-once).
      this.logger.error('could not report job outcomes', {
        worker_id: this.workerId,
        jobs: batch.map((r) => r.entry.job.id),
        error: String(error),
      });
      for (const report of batch) {
        this.#emit('error', { error, operation: report.outcome.kind, job: report.entry.job });
        report.entry.release();
      }
      return;
    }
    const ordered: Report[] = [...acks, ...nacks];
    for (let i = 0; i < ordered.length; i++) {
      const report = ordered[i]!;
      const result = response.results[i];
      if (result === undefined) {
        this.#notRecorded(
          report,
          new OjsError('The server sent no result for this job.', {
            code: 'invalid_response',
            operation: report.outcome.kind,
            jobId: report.entry.job.id,
          }),
        );
      } else if (result.status === 'ok') {
        this.#recorded(report, {
          id: result.job_id,
          job_id: result.job_id,
          state: result.state,
          ...(result.attempt === undefined ? {} : { attempt: result.attempt }),
        });
      } else {
        // Never retried: the server has decided (stale attempt, another lease, gone).
        this.#notRecorded(report, result.error);
      }
      report.entry.release();
    }
  }

  /** The server recorded the outcome. */
  #recorded(report: Report, response: Record<string, unknown>): void {
    const { job } = report.entry;
    const { outcome, durationMs } = report;
    if (outcome.kind === 'ack') {
      this.logger.debug('job completed', { 'ojs.job.id': job.id, duration_ms: durationMs });
      this.#emit('jobCompleted', { job, result: outcome.result, durationMs });
    } else if (outcome.requeue) {
      this.logger.info('job requeued', { 'ojs.job.id': job.id });
      this.#emit('jobRequeued', { job });
    } else {
      // Visible at the default level: a job that fails all its attempts must
      // not disappear without a trace on the console (issue 16).
      const fields = {
        'ojs.job.id': job.id,
        'ojs.job.type': job.type,
        'ojs.job.queue': job.queue,
        'ojs.job.attempt': job.attempt,
        'ojs.job.state': response.state,
        duration_ms: durationMs,
        error: {
          code: outcome.error.code,
          type: outcome.error.type,
          message: outcome.error.message,
        },
      };
      if (response.state === 'discarded') this.logger.error('job discarded', fields);
      else this.logger.warn('job failed', fields);
      this.#emit('jobFailed', { job, error: outcome.cause ?? outcome.error, durationMs, response });
    }
  }

  /** The outcome was refused (stale, not found) or could not be sent. */
  #notRecorded(report: Report, error: unknown): void {
    const { job } = report.entry;
    const operation = report.outcome.kind;
    // A conflict or not-found means the job is no longer this worker's (lease expired
    // and handed out again, stale attempt, cancelled, deleted). Otherwise the lease
    // expires and the server hands the job out again (at-least-once).
    const stale =
      error instanceof ConflictError ||
      error instanceof NotFoundError ||
      (error instanceof OjsError && (error.status === 409 || error.status === 404));
    (stale ? this.logger.warn : this.logger.error)(
      stale
        ? 'job no longer held by this worker; outcome not recorded'
        : 'could not report job outcome',
      { 'ojs.job.id': job.id, operation, error: String(error) },
    );
    this.#emit('error', { error, operation, job });
  }

  // ---------------------------------------------------------------- heartbeat

  #heartbeat(): Promise<void> {
    if (this.#heartbeatInFlight !== undefined) return this.#heartbeatInFlight;
    if (this.#state === 'idle' || this.#state === 'terminated') return Promise.resolve();
    // Jobs whose outcome is still on its way keep their lease too.
    const ids = [...this.#active.keys()];
    const state =
      this.#state === 'terminate' ? 'terminate' : this.#state === 'quiet' ? 'quiet' : 'running';
    // A worker leasing ahead, with a round's outcomes on their way, can hold
    // more jobs than one heartbeat may name (the server refuses the whole
    // beat, and no lease would be extended): one beat per share of the ids.
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length || i === 0; i += this.#maxHeartbeatJobs) {
      chunks.push(ids.slice(i, i + this.#maxHeartbeatJobs));
    }
    const beat = async (chunk: string[]) => {
      const sent = chunk.map((id) => this.#active.get(id)!).filter((e) => !e.settled);
      let response: HeartbeatResponse;
      try {
        response = await this.transport.heartbeat({
          worker_id: this.workerId,
          state,
          active_jobs: chunk,
          active_job_ids: chunk,
          visibility_timeout_ms: this.#visibilityTimeoutMs,
          hostname: hostname(),
          pid: process.pid,
          queues: [...this.queues],
          concurrency: this.concurrency,
          ...(this.pool === undefined ? {} : { pool: this.pool }),
        });
      } catch (error) {
        // WP §8.4: keep the current state and try again at the next interval.
        this.logger.warn('heartbeat failed', { worker_id: this.workerId, error: String(error) });
        this.#emit('error', { error, operation: 'heartbeat' });
        return;
      }
      this.#applyHeartbeat(response, sent);
    };
    this.#heartbeatInFlight = Promise.all(chunks.map(beat))
      .then(() => {})
      .finally(() => {
        this.#heartbeatInFlight = undefined;
      });
    return this.#heartbeatInFlight;
  }

  #applyHeartbeat(response: HeartbeatResponse, sent: ActiveJob[]): void {
    const cancelled = new Set(response.jobsCancelled);
    // A Set: a worker leasing ahead holds up to a thousand jobs, and a
    // lookup per job in the answer's array would be quadratic per beat.
    const extended =
      response.jobsExtended === undefined ? undefined : new Set(response.jobsExtended);
    for (const entry of sent) {
      if (entry.settled) continue;
      if (cancelled.has(entry.job.id)) {
        entry.controller.abort(new JobCancelledError());
        this.logger.info('job cancelled by the server', { 'ojs.job.id': entry.job.id });
        this.#emit('jobCancelled', { job: entry.job });
        void this.#settle(entry, { kind: 'drop' });
      } else if (extended !== undefined && !extended.has(entry.job.id)) {
        entry.controller.abort(new LeaseLostError());
        this.logger.warn('lease lost; abandoning job', { 'ojs.job.id': entry.job.id });
        void this.#settle(entry, { kind: 'drop' });
      }
    }
    const { directive } = response;
    if (directive === 'quiet' && this.#state === 'running') {
      this.#emit('directive', { directive });
      this.quiet();
    } else if (
      directive === 'terminate' &&
      (this.#state === 'running' || this.#state === 'quiet')
    ) {
      this.#emit('directive', { directive });
      void this.stop();
    }
  }
}

export { OjsWorker as Worker };
