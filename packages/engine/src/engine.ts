/**
 * The OJS operations (PUSH, FETCH, ACK, FAIL, BEAT, CANCEL, INFO, ACTIVATE,
 * dead letter, queues, events) over a Store. Each state change follows the
 * same shape: read the job, let core decide the next record, commit it with
 * a guard on the rev that was read; if the guard fails, someone else moved
 * the job first, so read again and decide again.
 */
import {
  activate,
  advanceWorkflow,
  assignTenant,
  type ClaimRequest,
  type Clock,
  type Commit,
  cancel,
  cancelWorkflow,
  checkRequestJson,
  checkRequestText,
  childOutcome,
  conflict,
  createWorkflow,
  decideSettlement,
  type EventFilter,
  enqueueEvents,
  eventTenant,
  expire,
  type FailureReport,
  type HandlerDeclaration,
  type InsertResult,
  inTenant,
  interleaveByQueue,
  interleaveTakes,
  invalidRequest,
  isExpirable,
  isRefusedInsert,
  isTerminal,
  JOB_STATES,
  type JobRecord,
  jobEvent,
  jobSpecs,
  makeEvent,
  notFound,
  OjsError,
  type OjsEvent,
  type OutboxConsume,
  optionWarnings,
  type Page,
  type ProgressUpdate,
  parseEnqueueRequest,
  parseHandlers,
  progressToWire,
  type QueueStats,
  type RetentionPolicy,
  recordProgress,
  reviveDeadLetter,
  type SchedulingStrategy,
  type SettleItem,
  type StateCounts,
  type Store,
  systemClock,
  type TenantScope,
  toIso,
  toWire,
  validateQueueName,
  type WorkflowMember,
  type WorkflowRecord,
  workflowBodyForTenant,
  workflowTenant,
  workflowToWire,
} from '@ojs/core';
import {
  buildManifest,
  type EngineCapabilities,
  engineCapabilities,
  MAX_PUSH_MANY,
} from './capabilities.ts';
import type { EngineContext, WorkerDirective } from './context.ts';
import { CronScheduler, cronToWire } from './cron.ts';
import { addEnqueueHooks, type EnqueueHook } from './enqueue-hooks.ts';
import { EventTail } from './event-tail.ts';
import { WaitingFetches } from './fetch-waits.ts';
import { JobAdmin } from './job-admin.ts';
import { type EnqueueMiddleware, MiddlewareChain, runEnqueueChain } from './middleware.ts';
import { Notifier } from './notifier.ts';
import { JobObservers } from './observability/lifecycle.ts';
import { ErrorThrottle, type Logger, silentLogger } from './observability/log.ts';
import { OutboxRelay, type OutboxRelayOptions } from './outbox-relay.ts';
import { type QueuePressure, QueueSettingsRegistry, setsRetry } from './queue-settings.ts';
import { type RetentionOptions, RetentionPruner } from './retention.ts';
import { VersionRouter } from './routing.ts';
import { FairScheduler } from './scheduling.ts';
import { SchemaRegistry, type ValidationMode } from './schemas.ts';
import { BackgroundServices, type ServiceIntervals } from './services.ts';
import { SettingsCache } from './settings-cache.ts';
import type { TenantWeight } from './tenant-fairness.ts';
import { type TenancyOptions, TenantRegistry } from './tenants.ts';
import { TurnBatch } from './turn-batch.ts';
import { Wakeups } from './wakeups.ts';
import { type WebhookOptions, WebhookService } from './webhooks/service.ts';
import * as responses from './wire-responses.ts';
import { WorkerRegistry, type WorkerState } from './workers.ts';

export interface EngineOptions {
  store: Store;
  clock?: Clock;
  /** Default visibility timeout; must exceed ~70 s (a cron test holds a job 65 s). */
  visibilityTimeoutMs?: number;
  /** Upper bound of a fetch's long-poll wait. */
  maxFetchWaitMs?: number;
  /**
   * How often a waiting fetch looks at the store without being notified
   * (jobs that become available by time, not by a write). Default 250 ms.
   */
  fetchRecheckMs?: number;
  /**
   * A store that polls for cross-process wake-ups (`Store.polledWakeups`)
   * is watched while fetches wait and this long after the last one ended.
   * Default 2000 ms.
   */
  wakeupLingerMs?: number;
  /** Largest `count` a single fetch may claim. */
  maxFetchCount?: number;
  /** Largest number of jobs in one batch enqueue. */
  maxBatchSize?: number;
  /** Events kept by the pruner. */
  eventRetention?: number;
  intervals?: Partial<ServiceIntervals>;
  /** Enables the reset operation and the suite's heartbeat test directives. */
  testMode?: boolean;
  /**
   * Refuse unfenced worker calls: FETCH and heartbeat must carry `worker_id`,
   * ACK and NACK `worker_id` and `attempt`. Without them a worker whose lease
   * expired could settle a job another worker now holds.
   */
  requireFencing?: boolean;
  /** Default schema validation mode at enqueue (features §9; SHOULD default to warn). */
  schemaValidation?: ValidationMode;
  random?: () => number;
  /** Retention of finished jobs per final state (ms; null keeps), over DEFAULT_RETENTION. */
  retention?: Partial<RetentionPolicy>;
  /** Batch sizes of the retention pruner. */
  retentionPruner?: RetentionOptions;
  /** The process's logger (pino); silent when not given. */
  logger?: Logger;
  /** The webhooks extension: target policy, retry schedule, delivery loop (webhooks/service.ts). */
  webhooks?: WebhookOptions;
  /** Transactional enqueue's relay (outbox-relay.ts); only a store with an outbox has one. */
  outbox?: OutboxRelayOptions;
  /** Multi-tenancy (tenants.ts): strict mode. */
  tenancy?: TenancyOptions;
  /**
   * Hooks added to `enqueueMiddleware` in order (loadEnqueueHooks: the
   * built-ins by name and operators' modules, decision 0105).
   */
  enqueueHooks?: readonly EnqueueHook[];
  /** How long one job may spend in the enqueue chain before a 500 (default 5000 ms; 0: no bound). */
  enqueueHookTimeoutMs?: number;
}

export interface FetchRequest {
  queues: string[];
  count?: number;
  workerId?: string;
  visibilityTimeoutMs?: number;
  /** Long poll: wait up to this long for a job when none is available now. */
  waitMs?: number;
  /** Version routing: job types and version ranges this worker runs (VER-003). */
  handlers?: HandlerDeclaration[];
  signal?: AbortSignal;
  /** The request's tenant: only its jobs are claimed (absent: every tenant's). */
  tenant?: string;
  /**
   * Fair scheduling: the worker's pool (else its registration's), and the
   * fetch's own strategy and weights (a pool's config wins). With a pool,
   * `queues` may be empty: the pool's queues are fetched.
   */
  pool?: string;
  strategy?: SchedulingStrategy;
  weights?: Record<string, number>;
}

export interface AckRequest {
  jobId: string;
  result?: unknown;
  workerId?: string;
  attempt?: number;
  /** The request's tenant: another tenant's job is not found. */
  tenant?: string;
}

export interface NackRequest {
  jobId: string;
  error: FailureReport & { backtrace?: unknown };
  requeue?: boolean;
  workerId?: string;
  attempt?: number;
  /** The request's tenant: another tenant's job is not found. */
  tenant?: string;
}

export interface HeartbeatRequest {
  workerId?: string;
  jobIds: string[];
  /** The state the worker reports (recorded in the worker registry). */
  workerState?: WorkerState;
  /** Active jobs as a count, when the worker sends one instead of ids. */
  activeJobs?: number;
  /** Registry details the worker sends (hostname, pid, queues, concurrency, version). */
  info?: {
    hostname?: string;
    pid?: number;
    queues?: string[];
    concurrency?: number;
    version?: string;
    /** Fair scheduling: the worker's pool. */
    pool?: string;
  };
  handlers?: HandlerDeclaration[];
  visibilityTimeoutMs?: number;
  /**
   * Record the beat in the worker registry (default true). gRPC per-job
   * beats (one job id each) say false: the worker's own beat records it.
   */
  recordWorker?: boolean;
  /** The request's tenant: another tenant's jobs are not held (not extended). */
  tenant?: string;
}

/** One settled item of a batched acknowledgement, in request order (acks, then nacks). */
export type SettleOutcome =
  | { jobId: string; status: 'ok'; job: JobRecord }
  | { jobId: string; status: 'conflict' | 'not_found' | 'invalid'; error: OjsError };

export interface SettleBatchRequest {
  acks?: AckRequest[];
  nacks?: NackRequest[];
}

/** Largest number of items (acks + nacks) in one batched acknowledgement. */
export const MAX_ACK_BATCH = 1000;

export interface HeartbeatResult {
  state: WorkerDirective;
  jobsExtended: string[];
  jobsCancelled: string[];
  serverTime: string;
}

export type EnqueueResult =
  | { status: 'created'; job: JobRecord; warnings?: string[]; pressure?: QueuePressure }
  | { status: 'existing'; job: JobRecord }
  | { status: 'dropped' };

/** One item of `enqueueMany`: the outcome of its own PUSH, or the error that refused it. */
export type EnqueueManyOutcome = EnqueueResult | { status: 'error'; error: OjsError };

const MAX_GUARD_RETRIES = 20;
/** Longest cancellation reason kept in a job's meta. */
const MAX_CANCEL_REASON_BYTES = 1024;
/** Settling a workflow job: each try, some contender on the workflow record wins. */
const WORKFLOW_GUARD_RETRIES = 200;
/** Unstarted workflow jobs past expires_at expired per promoter pass. */
const WORKFLOW_EXPIRY_BATCH = 500;

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Engine implements EngineContext {
  readonly store: Store;
  readonly clock: Clock;
  readonly testMode: boolean;
  readonly visibilityTimeoutMs: number;
  readonly maxFetchWaitMs: number;
  readonly fetchRecheckMs: number;
  readonly maxFetchCount: number;
  readonly maxBatchSize: number;
  readonly requireFencing: boolean;
  readonly enqueueMiddleware = new MiddlewareChain<EnqueueMiddleware>();
  readonly notifier = new Notifier();
  readonly #waitingFetches = new WaitingFetches();
  /** Long polls of identified workers waiting in this process now. */
  get waitingFetchCount(): number {
    return this.#waitingFetches.size;
  }
  readonly cron: CronScheduler = new CronScheduler(this);
  readonly routing: VersionRouter = new VersionRouter(this);
  /** Settings read on every enqueue (schemas, routing rules), cached briefly. */
  readonly settings: SettingsCache;
  /**
   * The HTTP binding's wire projections, for in-process clients (the SDK's
   * in-process transport) that must answer exactly what the server would.
   */
  readonly wire = {
    job: toWire,
    workflow: workflowToWire,
    cron: cronToWire,
    handlers: parseHandlers,
    /** The request limits every binding applies to a body (core limits.ts). */
    checkRequest: checkRequestJson,
    progress: progressToWire,
    /** A front door's manifest from `capabilities()` (capabilities.ts). */
    manifest: buildManifest,
    /** The HTTP binding's response bodies (wire-responses.ts). */
    ...responses,
  } as const;
  readonly schemas: SchemaRegistry;
  /** Finding jobs and acting on them (admin API, bulk operations). */
  readonly jobs: JobAdmin = new JobAdmin(this);
  /** Workers seen through heartbeats, and operator directives to them. */
  readonly workers: WorkerRegistry = new WorkerRegistry(this);
  /** Pools, the fetch's queue choice and the dispatch window (scheduling.ts). */
  readonly scheduling: FairScheduler;
  readonly queueSettings: QueueSettingsRegistry;
  readonly retention: RetentionPruner;
  /** The process's logger: services, stores and the binding log through it. */
  readonly logger: Logger;
  /** Background failures, logged once per outage and then summarised (log.ts). */
  readonly errors: ErrorThrottle;
  /** Who learns of each committed job change: logs, metrics, traces (observability/). */
  readonly observers = new JobObservers();
  /** Live event streams: followers of the event log (SSE). */
  readonly events: EventTail;
  /** Webhook subscriptions, the fan-out from the event log and the delivery loop. */
  readonly webhooks: WebhookService;
  /** Transactional enqueue: the store's outbox relayed into jobs (outbox-relay.ts). */
  readonly outbox: OutboxRelay;
  /** Tenants: records, auto-registration, enqueue limits, stats (tenants.ts). */
  readonly tenants: TenantRegistry;
  readonly #random: () => number;
  #draining = false;
  readonly #services: BackgroundServices;
  #lastPromotion = 0;
  #stopping = false;
  /** Cross-process wake-ups of waiting fetches (Store.onJobsAvailable). */
  readonly wakeups: Wakeups;

  constructor(options: EngineOptions) {
    this.store = options.store;
    this.clock = options.clock ?? options.store.clock ?? systemClock;
    this.testMode = options.testMode ?? false;
    this.visibilityTimeoutMs = options.visibilityTimeoutMs ?? 300_000;
    this.maxFetchWaitMs = options.maxFetchWaitMs ?? 30_000;
    this.fetchRecheckMs = options.fetchRecheckMs ?? 250;
    this.maxFetchCount = options.maxFetchCount ?? 1000;
    this.maxBatchSize = options.maxBatchSize ?? 10_000;
    this.requireFencing = options.requireFencing ?? false;
    addEnqueueHooks(this.enqueueMiddleware, options.enqueueHooks ?? []);
    this.enqueueMiddleware.timeoutMs = options.enqueueHookTimeoutMs ?? 5000;
    this.#random = options.random ?? Math.random;
    this.logger = options.logger ?? silentLogger;
    this.errors = new ErrorThrottle(this.logger);
    this.events = new EventTail(this);
    this.webhooks = new WebhookService(this, options.webhooks);
    this.outbox = new OutboxRelay(this, options.outbox);
    this.settings = new SettingsCache(this.store);
    this.scheduling = new FairScheduler(this);
    this.schemas = new SchemaRegistry(this, options.schemaValidation ?? 'warn');
    this.queueSettings = new QueueSettingsRegistry(this, options.retention);
    this.retention = new RetentionPruner(this, options.retentionPruner);
    this.tenants = new TenantRegistry(this, options.tenancy);
    this.wakeups = new Wakeups(
      this.store,
      () => this.notifier.notify(),
      options.wakeupLingerMs ?? 2000,
    );
    this.#services = new BackgroundServices(
      this,
      options.intervals,
      options.eventRetention ?? 100_000,
    );
  }

  now(): number {
    return this.clock.now();
  }

  /**
   * What this engine does: capability flags, extensions, limits, fencing
   * (capabilities.ts). Every manifest (HTTP, gRPC, in-process) is built
   * from it with `wire.manifest`.
   */
  capabilities(): EngineCapabilities {
    return engineCapabilities({
      store: this.store,
      maxBatchSize: this.maxBatchSize,
      maxFetchCount: this.maxFetchCount,
      maxFetchWaitMs: this.maxFetchWaitMs,
      maxAckBatch: MAX_ACK_BATCH,
      requireFencing: this.requireFencing,
    });
  }

  /** Starts the promoter, lease reaper and event pruner. */
  start(): void {
    this.#stopping = false;
    this.#services.start();
    this.webhooks.start();
    this.outbox.start();
  }

  /**
   * Graceful shutdown, first step: FETCH hands out no new jobs and health
   * reports `draining`, while every other operation (ACK, FAIL, heartbeats,
   * enqueues) goes on until stop().
   */
  beginDrain(): void {
    this.#draining = true;
    this.notifier.notify();
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** Stops the background services and ends every waiting fetch now (shutdown). */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.scheduling.stop();
    this.notifier.notify();
    await Promise.all([this.#services.stop(), this.webhooks.stop(), this.outbox.stop()]);
    this.wakeups.close();
    this.notifier.notify();
  }

  // ---------------------------------------------------------------- PUSH

  /**
   * PUSH: validates, runs the enqueue middleware chain and stores one job.
   * Concurrent PUSHes (the single requests of one event-loop turn) are
   * stored together: one `insertJobs` call for all of them (turn-batch.ts),
   * each answered as if it had come alone; by the store itself when it
   * coalesces its inserts (`Store.coalescesInserts`).
   */
  async enqueue(body: unknown, tenant?: TenantScope): Promise<EnqueueResult> {
    const item = tenant === undefined ? body : new ScopedBody(body, tenant);
    const outcome = this.store.coalescesInserts
      ? (await this.#push([item], 'each'))[0]!
      : await this.#pushes.add(item);
    if (outcome.status === 'error') throw outcome.error;
    return outcome;
  }

  readonly #pushes = new TurnBatch<unknown, EnqueueManyOutcome>(
    (bodies) => this.#push(bodies, 'each'),
    MAX_PUSH_MANY,
  );

  /**
   * Jobs now stored (a PUSH's, #push): the observers learn of them, waiting
   * fetches wake, new tenants register. No wake when the fetches were woken
   * already: by the store when the jobs became visible (wakesOnInsert), or
   * by #push when it issued the insert (pipelinedWrites). A sync later, the
   * fetch that took a job is gone, and a fetch waiting now (a worker's next
   * long poll) would claim for nothing; one that missed the first wake sees
   * it in the notifier's generation (notifier.ts).
   */
  async #stored(jobs: JobRecord[]): Promise<void> {
    this.observers.enqueued(jobs);
    if (
      !this.store.wakesOnInsert &&
      !this.store.pipelinedWrites &&
      jobs.some((job) => job.state === 'available')
    ) {
      this.notifier.notify();
    }
    await this.tenants.noteJobs(jobs);
  }

  /** What one PUSH answers for the store's result of its job (#stored reports the job). */
  #pushOutcome(job: JobRecord, result: InsertResult, warnings: string[]): EnqueueManyOutcome {
    switch (result.status) {
      case 'inserted':
        return warnings.length > 0
          ? { status: 'created', job: result.job, warnings }
          : { status: 'created', job: result.job };
      case 'existing':
        return { status: 'existing', job: result.existing };
      case 'duplicate_id':
        return {
          status: 'error',
          error: new OjsError('duplicate', `A job with id '${job.id}' already exists.`, {
            existing_job_id: job.id,
          }),
        };
      case 'rejected':
        return {
          status: 'error',
          error: new OjsError(
            'duplicate',
            `A job with the same unique key already exists (job '${result.existing.id}').`,
            { existing_job_id: result.existing.id, unique_key: job.unique_key },
          ),
        };
    }
  }

  /**
   * Independent PUSHes in one call (our `push-many` extension): each item is
   * validated, deduplicated and stored as `enqueue` would, and gets its own
   * outcome; a refused item changes nothing and does not affect the others.
   * Unlike `enqueueBatch` this is not atomic, but the common case is one
   * store write: the valid jobs go to `insertJobs` together, and if the
   * store refuses some (id or unique key taken, which makes it store
   * nothing), those get their refusal and the rest are inserted again, so
   * each round removes at least one job. Items are not ordered against each
   * other beyond that (concurrent pushes have no order).
   */
  async enqueueMany(bodies: unknown[], tenant?: TenantScope): Promise<EnqueueManyOutcome[]> {
    return this.#push(
      tenant === undefined ? bodies : bodies.map((body) => new ScopedBody(body, tenant)),
      'by-queue',
    );
  }

  /**
   * Outbox rows (transactional enqueue, outbox-relay.ts): each envelope is
   * a PUSH as over HTTP, and the insert of the stored jobs deletes their
   * rows (`consume.ids`, one per body) in the same atomic step.
   */
  relayOutbox(bodies: unknown[], consume: OutboxConsume): Promise<EnqueueManyOutcome[]> {
    return this.#push(bodies, 'each', consume);
  }

  /**
   * Independent PUSHes (`enqueueMany`, or the single PUSHes of one turn).
   * `units`: how the backpressure bound admits them, `each` item on its own
   * (separate requests) or the items of one queue together (one push-many
   * request: a queue that cannot take them all takes none).
   */
  async #push(
    items: unknown[],
    units: 'each' | 'by-queue',
    outbox?: OutboxConsume,
  ): Promise<EnqueueManyOutcome[]> {
    // An item is a body, or a ScopedBody when its request named a tenant.
    const bodies = items.map((item) => (item instanceof ScopedBody ? item.body : item));
    const now = this.now();
    const outcomes: EnqueueManyOutcome[] = new Array(bodies.length);
    let pending: {
      index: number;
      job: JobRecord;
      warnings: string[];
      pressure?: QueuePressure;
    }[] = [];
    const ids = new Set<string>();
    const explicitRetry = new Set<string>();
    const defaults = this.#enqueueDefaults;
    for (let index = 0; index < bodies.length; index++) {
      const body = bodies[index];
      try {
        const parsed = parseEnqueueRequest(body, now, defaults);
        const item = items[index];
        assignTenant(
          parsed,
          item instanceof ScopedBody ? item.tenant : undefined,
          this.tenants.strict,
        );
        if (parsed.meta.tenant_id !== undefined) this.tenants.armLimits();
        // No middleware (the common case): no chain to run, no promise per job.
        const job =
          this.enqueueMiddleware.size === 0
            ? parsed
            : await runEnqueueChain(this.enqueueMiddleware, parsed);
        if (job === null) {
          outcomes[index] = { status: 'dropped' };
          continue;
        }
        const warnings = optionWarnings(body);
        const versionWarnings = await this.#prepareVersioned(job);
        if (versionWarnings.length > 0) warnings.push(...versionWarnings);
        if (ids.has(job.id)) {
          // As if sent one after the other: the first of the id wins.
          outcomes[index] = this.#pushOutcome(job, { status: 'duplicate_id', existing: job }, []);
          continue;
        }
        ids.add(job.id);
        if (setsRetry(body)) explicitRetry.add(job.id);
        this.observers.enqueuing(job);
        pending.push({ index, job, warnings });
      } catch (error) {
        if (!(error instanceof OjsError)) throw error;
        outcomes[index] = { status: 'error', error };
      }
    }
    pending = await this.#admit(pending, units, explicitRetry, outcomes);
    while (pending.length > 0) {
      const jobs = pending.map((p) => p.job);
      const inserting = this.store.insertJobs(
        jobs,
        jobs.flatMap((job) => enqueueEvents(job, now)),
        now,
        // Relayed outbox rows: the item's row goes with its job (outbox-relay.ts).
        outbox === undefined
          ? undefined
          : { owner: outbox.owner, ids: pending.map((p) => outbox.ids[p.index]!) },
      );
      // A waiting fetch's claim joins the insert's group commit
      // (pipelinedWrites): the job is handed out at that COMMIT, before
      // the fsync the PUSH itself waits for.
      if (this.store.pipelinedWrites && jobs.some((job) => job.state === 'available')) {
        this.notifier.notify();
      }
      const results = await inserting;
      const refused = results.some(isRefusedInsert);
      const retry: typeof pending = [];
      const stored: JobRecord[] = [];
      for (const [k, item] of pending.entries()) {
        const result = results[k]!;
        if (refused && !isRefusedInsert(result)) {
          retry.push(item); // nothing was stored: insert it again without the refused ones
        } else {
          if (result.status === 'inserted') stored.push(result.job);
          const outcome = this.#pushOutcome(item.job, result, item.warnings);
          outcomes[item.index] =
            outcome.status === 'created' && item.pressure !== undefined
              ? { ...outcome, pressure: item.pressure }
              : outcome;
        }
      }
      // Reported once per store write, not per job.
      if (stored.length > 0) await this.#stored(stored);
      pending = retry;
    }
    return outcomes;
  }

  /**
   * Queue settings for independent PUSHes (default retry, and backpressure:
   * a unit that does not fit gets QUEUE_FULL, the others go on; see
   * `#push`). Returns the items still to insert, with the pressure each
   * created job reports.
   */
  async #admit<T extends { index: number; job: JobRecord; pressure?: QueuePressure }>(
    pending: T[],
    units: 'each' | 'by-queue',
    explicitRetry: ReadonlySet<string>,
    outcomes: EnqueueManyOutcome[],
  ): Promise<T[]> {
    let groups: T[][];
    if (units === 'each') groups = pending.map((item) => [item]);
    else {
      const byQueue = new Map<string, T[]>();
      for (const item of pending) {
        const group = byQueue.get(item.job.queue);
        if (group === undefined) byQueue.set(item.job.queue, [item]);
        else group.push(item);
      }
      groups = [...byQueue.values()];
    }
    const answers = await this.queueSettings.admitEach(
      groups.map((group) => group.map((item) => item.job)),
      explicitRetry,
    );
    const admitted: T[] = [];
    for (const [k, group] of groups.entries()) {
      const answer = answers[k];
      for (const item of group) {
        if (answer instanceof OjsError) outcomes[item.index] = { status: 'error', error: answer };
        else {
          if (answer !== undefined) item.pressure = answer;
          admitted.push(item);
        }
      }
    }
    return units === 'each' ? admitted : admitted.sort((a, b) => a.index - b.index);
  }

  /** Canary routing, then schema validation of args (throws 422 in strict mode). */
  async #prepareVersioned(job: JobRecord): Promise<string[]> {
    // Args are checked against the version the producer built them for,
    // before canary routing picks the version that runs them.
    const warnings = await this.schemas.check(job);
    await this.routing.route(job);
    return warnings;
  }

  /**
   * Atomic batch enqueue: every job is validated first; one invalid job
   * rejects the batch and nothing is stored.
   */
  async enqueueBatch(
    bodies: unknown,
    report: { warnings?: { index: number; warnings: string[] }[]; pressure?: QueuePressure } = {},
    tenant?: TenantScope,
  ): Promise<JobRecord[]> {
    if (!Array.isArray(bodies) || bodies.length === 0) {
      throw new OjsError('invalid_payload', 'jobs must be a non-empty array of job envelopes.', {
        field: 'jobs',
      });
    }
    if (bodies.length > this.maxBatchSize) {
      throw new OjsError(
        'invalid_request',
        `A batch may hold at most ${this.maxBatchSize} jobs (got ${bodies.length}).`,
        {
          field: 'jobs',
          max: this.maxBatchSize,
          actual: bodies.length,
        },
      );
    }
    const now = this.now();
    const jobs: JobRecord[] = [];
    const explicitRetry = new Set<string>();
    for (const [index, body] of bodies.entries()) {
      try {
        const parsed = parseEnqueueRequest(body, now, {
          visibilityTimeoutMs: this.visibilityTimeoutMs,
        });
        assignTenant(parsed, tenant, this.tenants.strict);
        if (parsed.meta.tenant_id !== undefined) this.tenants.armLimits();
        const job =
          this.enqueueMiddleware.size === 0
            ? parsed
            : await runEnqueueChain(this.enqueueMiddleware, parsed);
        // A dropped job is left out of the batch; the rest proceeds (documented choice).
        if (job !== null) {
          if (setsRetry(body)) explicitRetry.add(job.id);
          const warnings = [...optionWarnings(body), ...(await this.#prepareVersioned(job))];
          if (warnings.length > 0) {
            report.warnings ??= [];
            report.warnings.push({ index, warnings });
          }
          this.observers.enqueuing(job);
          jobs.push(job);
        }
      } catch (error) {
        if (error instanceof OjsError) {
          throw new OjsError(
            error.code,
            `jobs[${index}]: ${error.message}`,
            { index, ...error.details },
            error.hint,
            // A hook's own status and retryability stay with its refusal.
            { status: error.status, retryable: error.retryable },
          );
        }
        throw error;
      }
    }
    const ids = new Set<string>();
    for (const job of jobs) {
      if (ids.has(job.id))
        throw new OjsError('duplicate', `The batch contains id '${job.id}' twice.`);
      ids.add(job.id);
    }
    const pressure = await this.queueSettings.admit(jobs, explicitRetry);
    if (pressure !== undefined) report.pressure = pressure;
    const events = jobs.flatMap((job) => enqueueEvents(job, now));
    const results = await this.store.insertJobs(jobs, events, now);
    const refused = results.find(isRefusedInsert);
    if (refused !== undefined) {
      throw new OjsError(
        'duplicate',
        `The batch was not stored: job '${refused.existing.id}' already exists or holds a unique key.`,
        {
          existing_job_id: refused.existing.id,
        },
      );
    }
    if (!this.store.wakesOnInsert) this.notifier.notify();
    const stored = results.map((r) =>
      r.status === 'inserted' ? r.job : (r as { existing: JobRecord }).existing,
    );
    this.observers.enqueued(stored);
    await this.tenants.noteJobs(stored);
    return stored;
  }

  // ---------------------------------------------------------------- INFO / CANCEL / ACTIVATE

  /** INFO; a job of another tenant than `tenant` (when given) is not found. */
  async getJob(id: string, tenant?: TenantScope): Promise<JobRecord> {
    const job = await this.store.getJob(id);
    if (job === null || !inTenant(job, tenant)) throw notFound('job', id);
    return job;
  }

  /**
   * A job's event stream (SSE and in-process alike): its opening snapshot,
   * and where its live tail starts. The position is read before the
   * snapshot, so an event committed between the two is delivered (at worst
   * a transition the snapshot shows) and never skipped: the stream always
   * sees its job's end. The newest event of the whole log is as good a start
   * as the newest of this job's: nothing after it can be missed.
   */
  async openJobStream(
    id: string,
    tenant?: TenantScope,
  ): Promise<{
    job: JobRecord;
    after: string | undefined;
    start: ReturnType<typeof responses.jobStreamStart>;
  }> {
    const after = await this.events.latestId();
    const job = await this.getJob(id, tenant);
    return { job, after, start: responses.jobStreamStart(job, this.now()) };
  }

  /**
   * Reads a job, lets `decide` compute the write, commits it guarded on the
   * rev read. Retries when another writer got there first.
   */
  async #transition(
    id: string,
    decide: (job: JobRecord, now: number) => { job: JobRecord; events: OjsEvent[] },
    tries = MAX_GUARD_RETRIES,
  ): Promise<{ before: JobRecord; after: JobRecord }> {
    for (let attempt = 0; attempt < tries; attempt++) {
      // Contenders on one record (the steps of a workflow settling at once)
      // back off with jitter, so each retry is likely to find the record quiet.
      if (attempt >= 3) await delay(this.#random() * Math.min(50, 2 ** attempt));
      const before = await this.getJob(id);
      const now = this.now();
      const { job, events } = decide(before, now);
      if (await this.#commitJobChange(before, job, events, now)) return { before, after: job };
    }
    throw new OjsError('conflict', `Job '${id}' is changing too fast to update; retry.`, {
      job_id: id,
    });
  }

  /**
   * Commits one job transition guarded on the rev read. When it ends a
   * workflow job, the workflow's advancement (its record and the jobs it
   * enqueues) joins the same atomic commit, so a crash never loses a step.
   */
  async #commitJobChange(
    before: JobRecord,
    after: JobRecord,
    events: OjsEvent[],
    now: number,
  ): Promise<boolean> {
    const commit: Commit = {
      now,
      updates: [{ job: after, expectRev: before.rev }],
      events: [...events],
    };
    if (after.workflow_id !== undefined && isTerminal(after.state)) {
      await this.#advanceWorkflows(commit, await this.store.getWorkflow(after.workflow_id), after);
    }
    if (!(await this.store.commit(commit))) return false;
    if (commit.inserts !== undefined) this.observers.enqueued(commit.inserts);
    if (after.state === 'available' || commit.inserts?.some((job) => job.state === 'available')) {
      this.notifier.notify();
    }
    return true;
  }

  /**
   * Adds to `commit` the advancement of `workflow` by its member that ended,
   * and, when that ends the workflow and it is nested, of its parent by it,
   * up to the outermost level: every record guarded on the rev read.
   */
  async #advanceWorkflows(
    commit: Commit,
    workflow: WorkflowRecord | null,
    member: WorkflowMember,
  ): Promise<void> {
    const now = commit.now ?? this.now();
    for (let current = workflow, ended = member; current !== null; ) {
      const advance = advanceWorkflow(current, ended, now, this.#enqueueDefaults);
      if (advance === null) return;
      for (const job of advance.inserts) await this.routing.route(job);
      commit.workflowUpdates ??= [];
      commit.workflowInserts ??= [];
      commit.inserts ??= [];
      commit.events ??= [];
      commit.workflowUpdates.push({ workflow: advance.workflow, expectRev: current.rev });
      commit.workflowInserts.push(...advance.workflows);
      commit.inserts.push(...advance.inserts);
      commit.events.push(
        ...advance.events,
        ...advance.inserts.flatMap((job) => enqueueEvents(job, now)),
      );
      const parent = advance.workflow.parent;
      if (current.state !== 'running' || advance.workflow.state === 'running' || !parent) return;
      ended = childOutcome(advance.workflow);
      current = await this.store.getWorkflow(parent.workflow_id);
    }
  }

  /**
   * Read-decide-commit of one job, retried on a stale guard (admin actions,
   * progress); a workflow job's advancement joins the commit.
   */
  transitionJob(
    id: string,
    decide: (job: JobRecord, now: number) => { job: JobRecord; events: OjsEvent[] },
  ): Promise<{ before: JobRecord; after: JobRecord }> {
    return this.#transition(id, decide);
  }

  /**
   * Progress of an active job (features §15): clamped, monotonic within the
   * attempt, extends the lease. An update for a job that is not active is
   * ignored (the job is returned as it is), as the spec requires.
   */
  async progress(id: string, update: ProgressUpdate, tenant?: TenantScope): Promise<JobRecord> {
    const ignored = new Error('not active');
    try {
      const { after } = await this.#transition(id, (job, now) => {
        checkTenant(job, tenant);
        const decided = recordProgress(job, update, now);
        if (decided === null) throw ignored;
        return decided;
      });
      return after;
    } catch (error) {
      if (error === ignored) return this.getJob(id, tenant);
      throw error;
    }
  }

  get #enqueueDefaults() {
    return { visibilityTimeoutMs: this.visibilityTimeoutMs };
  }

  // ---------------------------------------------------------------- WORKFLOWS

  /**
   * A workflow of `tenant` (when given): its tenant is written into every
   * job request it holds (a request naming another is refused), so all its
   * jobs, those enqueued later included, belong to it.
   */
  async createWorkflow(body: unknown, tenant?: TenantScope): Promise<WorkflowRecord> {
    const now = this.now();
    const scoped = tenant === undefined ? body : workflowBodyForTenant(body, tenant);
    const { workflow, workflows, jobs, events } = createWorkflow(
      scoped,
      now,
      this.#enqueueDefaults,
    );
    if (tenant !== undefined) {
      for (const record of [workflow, ...workflows]) record.tenant_id = tenant.id;
    }
    for (const job of jobs) assignTenant(job, undefined, this.tenants.strict);
    // Every step's args are checked now, nested workflows' too (strict mode
    // rejects the workflow); jobs enqueued later are only routed, so an ACK
    // never fails on a schema.
    for (const { spec, path } of jobSpecs(workflow, now, this.#enqueueDefaults)) {
      try {
        await this.schemas.check(
          parseEnqueueRequest({ args: [], ...spec }, now, this.#enqueueDefaults),
        );
      } catch (error) {
        if (error instanceof OjsError)
          throw new OjsError(
            error.code,
            `${path}: ${error.message}`,
            { path, ...error.details },
            error.hint,
          );
        throw error;
      }
    }
    for (const job of jobs) await this.routing.route(job);
    await this.store.commit({
      now,
      workflowInserts: [workflow, ...workflows],
      inserts: jobs,
      events: [...events, ...jobs.flatMap((job) => enqueueEvents(job, now))],
    });
    this.observers.enqueued(jobs);
    this.notifier.notify();
    await this.tenants.noteJobs(jobs);
    return workflow;
  }

  async getWorkflow(id: string, tenant?: TenantScope): Promise<WorkflowRecord> {
    const workflow = await this.store.getWorkflow(id);
    if (workflow === null || (tenant !== undefined && workflowTenant(workflow) !== tenant.id)) {
      throw notFound('workflow', id);
    }
    return workflow;
  }

  /**
   * The jobs a workflow's wire form refines its step states with (`active`,
   * `started_at`): read for the graph form only, whose steps show them.
   */
  async workflowJobs(workflow: WorkflowRecord): Promise<JobRecord[] | undefined> {
    return workflow.type === 'dag' ? this.store.listWorkflowJobs(workflow.id) : undefined;
  }

  /**
   * Cancels a running workflow with its running nested workflows and every
   * non-terminal job of them, in one commit. A nested workflow cancelled on
   * its own ends its parent's step as cancelled (the parent advances).
   */
  async cancelWorkflow(id: string, tenant?: TenantScope): Promise<WorkflowRecord> {
    for (let tries = 0; tries < MAX_GUARD_RETRIES; tries++) {
      const workflow = await this.getWorkflow(id, tenant);
      const now = this.now();
      const commit: Commit = { now, workflowUpdates: [], updates: [], events: [] };
      let cancelled: WorkflowRecord | undefined;
      for (let level = [workflow]; level.length > 0; ) {
        const children: WorkflowRecord[] = [];
        for (const target of level) {
          const jobs = await this.store.listWorkflowJobs(target.id);
          const result = cancelWorkflow(target, jobs, now);
          cancelled ??= result.workflow;
          const byId = new Map(jobs.map((job) => [job.id, job]));
          commit.workflowUpdates!.push({ workflow: result.workflow, expectRev: target.rev });
          commit.updates!.push(
            ...result.jobs.map((job) => ({ job, expectRev: byId.get(job.id)!.rev })),
          );
          commit.events!.push(
            ...result.events,
            ...result.jobs.map((job) =>
              jobEvent('job.cancelled', job, { reason: 'workflow_cancelled' }, now),
            ),
          );
          for (const step of target.steps) {
            if (step.workflow_id === undefined || step.state !== 'pending') continue;
            const child = await this.store.getWorkflow(step.workflow_id);
            if (child?.state === 'running') children.push(child);
          }
        }
        level = children;
      }
      if (workflow.parent !== undefined) {
        const parent = await this.store.getWorkflow(workflow.parent.workflow_id);
        await this.#advanceWorkflows(commit, parent, childOutcome(cancelled!));
      }
      if (await this.store.commit(commit)) {
        for (const update of commit.updates!) this.observers.settled(update.job);
        if (commit.inserts !== undefined) this.observers.enqueued(commit.inserts);
        if (commit.inserts?.some((job) => job.state === 'available')) this.notifier.notify();
        return cancelled!;
      }
    }
    throw conflict(`Workflow '${id}' is changing too fast to cancel; retry.`);
  }

  async cancel(id: string, tenant?: TenantScope): Promise<JobRecord> {
    return (await this.cancelJob(id, undefined, tenant)).after;
  }

  /**
   * CANCEL, returning the job before and after (the binding reports
   * previous_state). A reason is kept in the job's `meta.cancel_reason` and
   * in the job.cancelled event.
   */
  async cancelJob(
    id: string,
    reason?: string,
    tenant?: TenantScope,
  ): Promise<{ before: JobRecord; after: JobRecord }> {
    if (reason !== undefined) checkRequestText('reason', reason, MAX_CANCEL_REASON_BYTES);
    const change = await this.#transition(id, (job, now) => {
      checkTenant(job, tenant);
      const cancelled = cancel(job, now);
      const data: Record<string, unknown> = { previous_state: job.state };
      if (reason !== undefined) {
        cancelled.meta = { ...cancelled.meta, cancel_reason: reason };
        data.reason = reason;
      }
      return { job: cancelled, events: [jobEvent('job.cancelled', cancelled, data, now)] };
    });
    this.observers.settled(change.after);
    return change;
  }

  async activate(id: string, tenant?: TenantScope): Promise<JobRecord> {
    const { after } = await this.#transition(id, (job, now) => {
      checkTenant(job, tenant);
      return { job: activate(job, now), events: [] };
    });
    this.notifier.notify();
    return after;
  }

  // ---------------------------------------------------------------- FETCH

  async fetch(request: FetchRequest): Promise<JobRecord[]> {
    if (
      !Array.isArray(request.queues) ||
      (request.queues.length === 0 && request.pool === undefined)
    ) {
      throw invalidRequest('queues must be a non-empty array of queue names.', { field: 'queues' });
    }
    for (const queue of request.queues) {
      // A bad queue name in a fetch is a bad request, not a bad envelope.
      try {
        validateQueueName(queue, 'queues[]');
      } catch (error) {
        if (error instanceof OjsError) throw invalidRequest(error.message, error.details);
        throw error;
      }
    }
    if (this.requireFencing) requireField(request.workerId, 'worker_id', 'a fetch');
    const count = request.count ?? 1;
    if (!Number.isInteger(count) || count < 1 || count > this.maxFetchCount) {
      throw invalidRequest(`count must be an integer between 1 and ${this.maxFetchCount}.`, {
        field: 'count',
      });
    }
    // The wait runs from receipt: reads before the first claim count against it.
    const waitMs = Math.min(Math.max(request.waitMs ?? 0, 0), this.maxFetchWaitMs);
    const deadline = this.now() + waitMs;
    // Graceful shutdown: a draining server, or a worker that is quiet or
    // draining (its heartbeat, or an operator), gets no new jobs.
    if (this.#draining) return [];
    let listed: Promise<void> | undefined;
    if (request.workerId !== undefined) {
      if (!(await this.workers.mayFetch(request.workerId))) return [];
      // A new worker's listing is written beside its first claim, not before
      // it (its claim joins its turn's as any other), and awaited before the answer.
      listed = this.workers.seen(request.workerId, request.queues, request.pool);
    }
    try {
      const handlers = await this.#handlersFor(request);
      if (waitMs <= 0 || request.workerId === undefined)
        return await this.#claimLoop(request, handlers, count, deadline, request.signal);
      const wait = this.#waitingFetches.enter(request.workerId, request.signal);
      try {
        return await this.#claimLoop(request, handlers, count, deadline, wait.signal);
      } finally {
        wait.leave();
      }
    } finally {
      await listed;
    }
  }

  /** Claims now, and while nothing comes and the deadline is ahead, waits for a notify and claims again. */
  async #claimLoop(
    request: FetchRequest,
    handlers: HandlerDeclaration[] | undefined,
    count: number,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<JobRecord[]> {
    // Cross-process wake-ups are watched only once a claim came back short
    // and the fetch is about to wait (decision 0081).
    let release: (() => void) | undefined;
    try {
      for (;;) {
        const mark = this.wakeups.mark();
        const { jobs, seen } = await this.#claimOnce(
          request,
          handlers,
          count,
          release !== undefined,
        );
        const remaining = deadline - this.now();
        if (
          jobs.length > 0 ||
          remaining <= 0 ||
          signal?.aborted ||
          this.#stopping ||
          this.#draining
        ) {
          return jobs;
        }
        if (release === undefined) {
          release = this.wakeups.hold();
          // Another process's commit between that claim and the watch's
          // start would wake nobody: claim once more, now watched.
          if (!this.wakeups.covers(mark)) continue;
        }
        // Bounded slices: a job promoted by time (not by a notify) is still picked up.
        await this.notifier.wait(Math.min(remaining, this.fetchRecheckMs), signal, seen);
      }
    } finally {
      release?.();
    }
  }

  /**
   * One claim, with the notifier generation seen before it (for the wait
   * after). `woken`: a fetch that waited claims at once, not with the
   * turn's claims: woken by a PUSH, its claim joins that PUSH's group
   * commit on SQLite (pipelinedWrites), and the job is handed out at that
   * COMMIT instead of after its fsync.
   */
  async #claimOnce(
    request: FetchRequest,
    handlers: HandlerDeclaration[] | undefined,
    count: number,
    woken: boolean,
  ): Promise<{ jobs: JobRecord[]; seen: number }> {
    const now = this.now();
    // Promote lazily too, so a due job never waits for the next promoter
    // tick. Issued, not awaited, before the claim: a store that orders its
    // calls (SQLite) runs both in one group commit, so the claim sees what
    // was promoted without a commit of its own in between.
    // A failed promotion is reported like the promoter's (it runs again),
    // not as this fetch's failure: a fetch that claimed jobs must answer.
    let promoted: Promise<void> | undefined;
    if (now - this.#lastPromotion >= 50) {
      this.#lastPromotion = now;
      promoted = this.store.promoteDueJobs(now).then(
        () => this.errors.succeeded('lazy promotion'),
        (error: unknown) => this.errors.failed('lazy promotion', error, 'promotion failed'),
      );
    }
    const seen = this.notifier.generation;
    const dispatch = await this.tenants.dispatch();
    const plan = await this.scheduling.plan({
      queues: request.queues,
      count,
      workerId: request.workerId,
      pool: request.pool,
      strategy: request.strategy,
      weights: request.weights,
    });
    if (plan.queues.length === 0 || plan.count === 0) {
      await promoted;
      return { jobs: [], seen };
    }
    const claim: ClaimRequest = {
      queues: plan.queues,
      count: plan.count,
      workerId: request.workerId,
      visibilityTimeoutMs: request.visibilityTimeoutMs,
      handlers,
      now,
    };
    if (plan.takes !== undefined) claim.takes = plan.takes;
    if (request.tenant !== undefined) claim.tenant = request.tenant;
    if (dispatch.limits !== undefined) claim.tenantConcurrency = dispatch.limits;
    // Tenants are interleaved (tenant-fairness.ts) when the fetch names none
    // and more than one exists, unless the queues' own split (takes) is set:
    // a pool's queue shares then decide, tenant by tenant order of claim.
    // A weighted or round-robin claim is its own: its takes come from the
    // pool's carried counts, which a sum with other claims would not follow.
    const claiming =
      request.tenant === undefined && dispatch.tenants !== undefined && claim.takes === undefined
        ? this.#fairClaim(claim, dispatch.tenants)
        : woken || plan.policy !== undefined
          ? this.store.claimJobs(claim)
          : this.#claims.add(claim);
    const claimed = await claiming;
    // A claim that took jobs is answered without waiting for the lazy
    // promotion beside it: on PostgreSQL the promotion runs on another
    // connection, so the claim could not see its result anyway, and on
    // SQLite it was ordered before the claim. An empty claim still waits
    // for it, so a fetch that found nothing does not end (or wait) before
    // the jobs promoted for it are there.
    if (claimed.length === 0) await promoted;
    let jobs = claimed;
    if (plan.takes !== undefined) {
      this.scheduling.record(plan, claimed);
      jobs = interleaveByQueue(claimed, plan.queues);
    }
    this.observers.started(jobs);
    return { jobs, seen };
  }

  /**
   * A claim over every tenant, its slots interleaved among them by
   * weighted round-robin (tenant-fairness.ts); slots a tenant cannot fill
   * go to one claim over all tenants, so no job waits while a slot is free.
   */
  async #fairClaim(claim: ClaimRequest, tenants: TenantWeight[]): Promise<JobRecord[]> {
    const roundRobin = this.tenants.roundRobin;
    const jobs: JobRecord[] = [];
    for (const [tenant, slots] of roundRobin.plan(tenants, claim.count, claim.now)) {
      const got = await this.store.claimJobs({ ...claim, tenant, count: slots });
      roundRobin.claimed(
        tenant,
        got.map((job) => job.priority),
      );
      if (got.length < slots) roundRobin.idle(tenant, claim.now);
      jobs.push(...got);
    }
    if (jobs.length < claim.count) {
      jobs.push(...(await this.store.claimJobs({ ...claim, count: claim.count - jobs.length })));
    }
    return jobs;
  }

  /**
   * The claims of one event-loop turn: those that ask the same thing (the
   * same queues, worker, lease and handlers; e.g. the count-1 fetches of
   * one worker's slots) are one `claimJobs` for their total count, its
   * jobs handed out in request order; the others go to the store as they
   * are, still in the same turn.
   */
  readonly #claims = new TurnBatch<ClaimRequest, JobRecord[]>(async (requests) => {
    if (requests.length === 1) return [await this.store.claimJobs(requests[0]!)];
    // Each group is one claim; a group full to the fetch maximum is closed
    // and the next request asking the same thing opens another.
    const groups: { total: number; members: number[] }[] = [];
    const open = new Map<string, { total: number; members: number[] }>();
    for (const [index, request] of requests.entries()) {
      const key = JSON.stringify([
        request.queues,
        request.workerId ?? null,
        request.visibilityTimeoutMs ?? null,
        request.handlers ?? null,
        request.tenant ?? null,
        request.takes !== undefined,
      ]);
      let group = open.get(key);
      if (group === undefined || group.total + request.count > this.maxFetchCount) {
        group = { total: 0, members: [] };
        open.set(key, group);
        groups.push(group);
      }
      group.total += request.count;
      group.members.push(index);
    }
    const answers: JobRecord[][] = new Array(requests.length);
    await Promise.all(
      groups.map(async ({ total, members }) => {
        const first = requests[members[0]!]!;
        const claim: ClaimRequest = { ...first, count: total };
        // C17's interleave, dealt again for the group's total, and the
        // group's jobs interleaved before each member takes its slice.
        if (first.takes !== undefined) claim.takes = interleaveTakes(first.queues, total);
        let jobs = await this.store.claimJobs(claim);
        if (first.takes !== undefined && members.length > 1) {
          jobs = interleaveByQueue(jobs, first.queues);
        }
        let taken = 0;
        for (const index of members) {
          const want = requests[index]!.count;
          answers[index] = jobs.slice(taken, taken + want);
          taken += want;
        }
      }),
    );
    return answers;
  }, MAX_ACK_BATCH);

  // ---------------------------------------------------------------- ACK / FAIL

  /**
   * ACK and NACK of one job. Concurrent ones (the single requests of one
   * event-loop turn) are settled together: one `settleJobs` batch
   * (turn-batch.ts), each item fenced and answered on its own.
   */
  async ack(request: AckRequest): Promise<JobRecord> {
    this.#checkFenced(request, 'an ACK');
    return settledOrThrow(await this.#settles.add(ackItem(request)));
  }

  async nack(request: NackRequest): Promise<JobRecord> {
    this.#checkFenced(request, 'a NACK');
    return settledOrThrow(await this.#settles.add(nackItem(request)));
  }

  readonly #settles = new TurnBatch<SettleItem, SettleOutcome>(
    (items) => this.#settle(items),
    MAX_ACK_BATCH,
  );

  /** With requireFencing, an outcome must name its worker and attempt (400 otherwise). */
  #checkFenced(request: { workerId?: string; attempt?: number }, what: string, path = ''): void {
    if (!this.requireFencing) return;
    requireField(request.workerId, `${path}worker_id`, what);
    requireField(request.attempt, `${path}attempt`, what);
  }

  /**
   * Batched ACK/NACK (our extension `ack-batch`): one store batch for all
   * items, each fenced on its own; a stale or unknown item is reported in its
   * slot and does not stop the others. Outcomes in order: acks, then nacks.
   */
  async settleBatch(request: SettleBatchRequest): Promise<SettleOutcome[]> {
    // Checked here, not in each binding, so HTTP, gRPC and the in-process
    // transport refuse the same batches with the same error.
    const total = (request.acks?.length ?? 0) + (request.nacks?.length ?? 0);
    if (total === 0) {
      throw invalidRequest('Send at least one item in acks or nacks.', { field: 'acks' });
    }
    if (total > MAX_ACK_BATCH) {
      throw invalidRequest(
        `A batched acknowledgement holds at most ${MAX_ACK_BATCH} items (got ${total}).`,
        { field: 'acks', max: MAX_ACK_BATCH, actual: total },
      );
    }
    // An unfenced item refuses the whole batch, like any malformed item.
    for (const [index, ack] of (request.acks ?? []).entries()) {
      this.#checkFenced(ack, 'an ACK', `acks[${index}].`);
    }
    for (const [index, nack] of (request.nacks ?? []).entries()) {
      this.#checkFenced(nack, 'a NACK', `nacks[${index}].`);
    }
    return this.#settle([
      ...(request.acks ?? []).map(ackItem),
      ...(request.nacks ?? []).map(nackItem),
    ]);
  }

  /**
   * Settles active jobs through the store's batched operation (no read
   * before the write). Jobs of a workflow come back unwritten and are
   * settled one by one with their workflow's advancement in one commit.
   */
  async #settle(items: SettleItem[]): Promise<SettleOutcome[]> {
    if (items.length === 0) return [];
    const results = await this.store.settleJobs({ items, now: this.now(), random: this.#random });
    const outcomes: SettleOutcome[] = [];
    let available = false;
    for (const [index, result] of results.entries()) {
      const item = items[index]!;
      let outcome: SettleOutcome;
      switch (result.status) {
        case 'settled':
          outcome = { jobId: item.id, status: 'ok', job: result.job };
          break;
        case 'not_found':
          outcome = { jobId: item.id, status: 'not_found', error: notFound('job', item.id) };
          break;
        case 'conflict': {
          // Another tenant's job is refused as unknown (decideSettlement).
          const error = asOjsError(result.error);
          outcome = { jobId: item.id, status: statusOf(error), error };
          break;
        }
        case 'workflow':
          outcome = await this.#settleWorkflowJob(item);
          break;
      }
      outcomes.push(outcome);
      if (outcome.status !== 'ok') continue;
      this.observers.settled(outcome.job, item.settlement.kind === 'expire');
      if (outcome.job.state === 'available') available = true;
      if (outcome.job.routed_version !== undefined) {
        await this.routing.observe(outcome.job, countsAsFailure(item));
      }
    }
    if (available) this.notifier.notify();
    return outcomes;
  }

  async #settleWorkflowJob(item: SettleItem): Promise<SettleOutcome> {
    try {
      // Every step of a workflow guards the same workflow record: a fan-in
      // of many steps ending together retries more often than a job alone.
      const { after } = await this.#transition(
        item.id,
        (job, now) => decideSettlement(job, item, now, this.#random),
        WORKFLOW_GUARD_RETRIES,
      );
      return { jobId: item.id, status: 'ok', job: after };
    } catch (error) {
      if (!(error instanceof OjsError)) throw error;
      return { jobId: item.id, status: statusOf(error), error };
    }
  }

  /** Lease reaper step: expired visibility or execution deadline, settled as one batch. */
  async expireLeases(limit = 500): Promise<number> {
    const expired = await this.store.findExpiredLeases(this.now(), limit);
    await this.#settle(
      expired.map((job) => ({
        id: job.id,
        workerId: job.worker_id,
        attempt: job.attempt,
        settlement: { kind: 'expire' },
      })),
    );
    return expired.length;
  }

  async promoteDueJobs(): Promise<number> {
    const now = this.now();
    this.#lastPromotion = now;
    const promoted = await this.store.promoteDueJobs(now);
    if (promoted > 0) this.notifier.notify();
    await this.expireWorkflowJobs(now);
    return promoted;
  }

  /**
   * Unstarted workflow jobs past expires_at: the store's promotion leaves
   * them, so each one is discarded here through the same commit as its
   * workflow's advancement (an expired step ends its workflow's branch like
   * any other failure). Returns how many were expired.
   */
  async expireWorkflowJobs(now = this.now()): Promise<number> {
    const expiring = await this.store.findExpiringWorkflowJobs(now, WORKFLOW_EXPIRY_BATCH);
    let expired = 0;
    for (const found of expiring) {
      try {
        await this.#transition(
          found.id,
          (job, at) => {
            if (!isExpirable(job, at)) throw conflict(`Job '${job.id}' is no longer expirable.`);
            const out = expire(job, at);
            const data = { created_at: job.created_at, expired_at: toIso(at) };
            return { job: out, events: [jobEvent('job.expired', out, data, at)] };
          },
          WORKFLOW_GUARD_RETRIES,
        );
        expired++;
      } catch (error) {
        // Claimed, cancelled or expired by another process meanwhile: nothing to do.
        if (!(error instanceof OjsError) || error.code !== 'conflict') throw error;
      }
    }
    return expired;
  }

  // ---------------------------------------------------------------- BEAT

  /**
   * Worker registration (WP §3): records the handlers a worker declares so
   * fetches that do not repeat them are still routed by version (VER-003).
   */
  async registerWorker(
    workerId: string,
    handlers: HandlerDeclaration[] | undefined,
    info: Record<string, unknown> = {},
  ): Promise<void> {
    const store = this.store;
    const now = this.now();
    const value = {
      ...info,
      worker_id: workerId,
      handlers: handlers?.map((h) => ({ type: h.type, versions: h.range.text })),
      last_seen_at: toIso(now),
    };
    for (let tries = 0; tries < MAX_GUARD_RETRIES; tries++) {
      const existing = await store.getSetting('worker', workerId);
      const merged =
        existing === null
          ? value
          : { ...existing.value, ...value, handlers: value.handlers ?? existing.value.handlers };
      if (
        (await store.putSetting('worker', workerId, merged, existing?.rev ?? null, now)) !== null
      ) {
        this.settings.invalidate('worker');
        return;
      }
    }
  }

  /**
   * The handlers a fetch routes by: those it sends, else the worker's
   * declaration in the shared directory. A declared worker's record is read
   * on each fetch, so a re-declaration through another server process
   * routes by its new ranges at once; that a worker has no declaration (the
   * common case, and a fetch is the hot path) is cached: a first
   * declaration through another process is seen within the cache's TTL.
   */
  async #handlersFor(request: FetchRequest): Promise<HandlerDeclaration[] | undefined> {
    if (request.handlers !== undefined) return request.handlers;
    if (request.workerId === undefined) return undefined;
    const cached = await this.settings.get('worker', request.workerId);
    const record = cached === null ? null : await this.store.getSetting('worker', request.workerId);
    const declared = record?.value.handlers;
    return Array.isArray(declared) ? parseHandlers(declared) : undefined;
  }

  async heartbeat(request: HeartbeatRequest): Promise<HeartbeatResult> {
    if (this.requireFencing) requireField(request.workerId, 'worker_id', 'a heartbeat');
    if (request.workerId !== undefined && request.handlers !== undefined) {
      await this.registerWorker(request.workerId, request.handlers);
    }
    const jobsExtended: string[] = [];
    const jobsCancelled: string[] = [];
    let directive: WorkerDirective = 'running';
    const results = await this.store.extendLeases(
      request.jobIds.map((id) => ({
        id,
        workerId: request.workerId,
        visibilityTimeoutMs: request.visibilityTimeoutMs,
        tenant: request.tenant,
      })),
      this.now(),
    );
    if (request.workerId !== undefined && request.recordWorker !== false) {
      const told = await this.workers.heartbeat({
        workerId: request.workerId,
        state: request.workerState,
        activeJobIds: request.jobIds,
        activeJobs: request.activeJobs,
        ...request.info,
      });
      directive = strongerDirective(directive, told);
      // A worker that is stopping (or told to quiet) fetches nothing: end its long poll now.
      const stopping = request.workerState !== undefined && request.workerState !== 'running';
      if (stopping || told !== 'running') this.#waitingFetches.end(request.workerId);
    }
    for (const result of results) {
      if (result.status === 'cancelled') jobsCancelled.push(result.job.id);
      if (result.status !== 'extended') continue;
      jobsExtended.push(result.job.id);
      if (this.testMode) directive = strongerDirective(directive, testDirective(result.job));
    }
    return { state: directive, jobsExtended, jobsCancelled, serverTime: toIso(this.now()) };
  }

  // ---------------------------------------------------------------- DEAD LETTER

  async listDeadLetter(
    queue: string | undefined,
    limit: number,
    offset: number,
    tenant?: TenantScope,
  ): Promise<Page<JobRecord>> {
    if (tenant === undefined) return this.store.listDeadLetter(queue, limit, offset);
    const filter = {
      states: ['discarded' as const],
      deadLetter: true,
      tenant: tenant.id,
      ...(queue === undefined ? {} : { queues: [queue] }),
    };
    const [items, total] = await Promise.all([
      this.store.listJobs({ filter, limit, offset, order: 'asc' }),
      this.store.countJobs(filter),
    ]);
    return { items, total };
  }

  async #deadLetterJob(id: string, tenant?: TenantScope): Promise<JobRecord> {
    const job = await this.store.getJob(id);
    if (job === null || job.state !== 'discarded' || !job.dead_letter || !inTenant(job, tenant))
      throw notFound('dead_letter_job', id);
    return job;
  }

  async retryDeadLetter(id: string, tenant?: TenantScope): Promise<JobRecord> {
    await this.#deadLetterJob(id, tenant);
    const { after } = await this.#transition(id, (job, now) => {
      if (!job.dead_letter || !inTenant(job, tenant)) throw notFound('dead_letter_job', id);
      const revived = reviveDeadLetter(job, now);
      return { job: revived, events: [jobEvent('dead_letter.retried', revived, {}, now)] };
    });
    this.notifier.notify();
    return after;
  }

  async deleteDeadLetter(id: string, tenant?: TenantScope): Promise<void> {
    for (let tries = 0; tries < MAX_GUARD_RETRIES; tries++) {
      const job = await this.#deadLetterJob(id, tenant);
      const event = jobEvent('dead_letter.deleted', job, {}, this.now());
      if (await this.store.commit({ deletes: [{ id, expectRev: job.rev }], events: [event] }))
        return;
    }
    throw conflict(`Dead letter job '${id}' is changing too fast to delete; retry.`);
  }

  // ---------------------------------------------------------------- QUEUES / EVENTS

  async listQueues() {
    const queues = await this.store.listQueues();
    // The `default` queue always exists (Level 0).
    if (!queues.some((q) => q.name === 'default'))
      queues.unshift({ name: 'default', paused: false });
    return queues;
  }

  /**
   * Why a fetch of these queues returned nothing (`explain` on FETCH): the
   * server or the worker is draining or quiet, or each queue's blocks
   * (paused, empty, queue concurrency or rate limit in use).
   */
  async explainEmptyFetch(queues: string[], workerId?: string) {
    const reasons: string[] = [];
    if (this.#draining) reasons.push('server_draining');
    if (workerId !== undefined && !(await this.workers.mayFetch(workerId))) {
      reasons.push('worker_not_running');
    }
    const states = await Promise.all(queues.map((queue) => this.queueSettings.state(queue)));
    return {
      reasons,
      queues: states.map((s) => ({ queue: s.name, blocked_by: s.blocked_by, note: s.note })),
    };
  }

  /** A queue's stats; with `tenant`, its counts cover that tenant's jobs only (C13). */
  async queueStats(name: string, tenant?: TenantScope): Promise<QueueStats> {
    validateQueueName(name, 'queue');
    const now = this.now();
    if (tenant === undefined) return this.store.queueStats(name, now);
    const filter = { queues: [name], tenant: tenant.id };
    const count = (extra: object) => this.store.countJobs({ ...filter, ...extra });
    const [info, counts, lastMinute, lastHour, failedHour] = await Promise.all([
      this.store.queueStats(name, now),
      Promise.all(JOB_STATES.map((state) => count({ states: [state] }))),
      count({ states: ['completed'], finishedFrom: now - 60_000 }),
      count({ states: ['completed'], finishedFrom: now - 3_600_000 }),
      count({ states: ['discarded'], finishedFrom: now - 3_600_000 }),
    ]);
    return {
      name,
      paused: info.paused,
      counts: Object.fromEntries(JOB_STATES.map((s, i) => [s, counts[i]!])) as StateCounts,
      completed_last_minute: lastMinute,
      completed_last_hour: lastHour,
      failed_last_hour: failedHour,
    };
  }

  async setQueuePaused(name: string, paused: boolean) {
    validateQueueName(name, 'queue');
    const now = this.now();
    const info = await this.store.setQueuePaused(name, paused, now);
    await this.store.appendEvents([
      makeEvent(paused ? 'queue.paused' : 'queue.resumed', name, { queue: name }, now),
    ]);
    if (!paused) this.notifier.notify();
    return info;
  }

  /**
   * Events of the log; with `tenant`, only events about its jobs (their
   * `data.tenant_id`; events of untenanted jobs are the default tenant's).
   * The log has no tenant index: pages are read until `limit` match or
   * the log ends.
   */
  async listEvents(filter: EventFilter, tenant?: TenantScope): Promise<OjsEvent[]> {
    if (tenant === undefined) return this.store.listEvents(filter);
    const matched: OjsEvent[] = [];
    let after = filter.after;
    for (let pages = 0; pages < 50; pages++) {
      const page = await this.store.listEvents({ ...filter, after });
      for (const event of page) {
        if (eventTenant(event) === tenant.id) matched.push(event);
        if (matched.length >= filter.limit) return matched;
      }
      if (page.length < filter.limit || filter.newestFirst) return matched;
      after = page.at(-1)!.id;
    }
    return matched;
  }

  async health(): Promise<{ ok: boolean; latencyMs: number; error?: string; draining: boolean }> {
    const started = performance.now();
    const draining = this.#draining;
    try {
      await this.store.ping();
      this.errors.succeeded('store ping');
      // Whole milliseconds: the health schema declares latency_ms an integer.
      return { ok: true, latencyMs: Math.round(performance.now() - started), draining };
    } catch (error) {
      this.errors.failed('store ping', error, 'store unreachable');
      return {
        ok: false,
        latencyMs: Math.round(performance.now() - started),
        error: String(error),
        draining,
      };
    }
  }

  /** Wipes the store. Test mode only: the suite calls it before every test. */
  async reset(): Promise<void> {
    if (!this.testMode) throw new OjsError('not_found', 'Reset is only available in test mode.');
    await this.store.reset();
    this.settings.clear();
    this.webhooks.forget();
    this.tenants.forgetAll();
    this.#draining = false;
  }
}

/** A PUSH body with the tenant its request named (an unscoped PUSH is its body alone). */
class ScopedBody {
  readonly body: unknown;
  readonly tenant: TenantScope;
  constructor(body: unknown, tenant: TenantScope) {
    this.body = body;
    this.tenant = tenant;
  }
}

function requireField(value: unknown, field: string, what: string): void {
  if (value === undefined) {
    throw invalidRequest(
      `${field} is required in ${what}: this server requires fencing (--require-fencing).`,
      { field },
    );
  }
}

function ackItem(request: AckRequest): SettleItem {
  const item: SettleItem = {
    id: request.jobId,
    workerId: request.workerId,
    attempt: request.attempt,
    settlement: { kind: 'complete', result: request.result },
  };
  if (request.tenant !== undefined) item.tenant = request.tenant;
  return item;
}

function nackItem(request: NackRequest): SettleItem {
  const item: SettleItem = {
    id: request.jobId,
    workerId: request.workerId,
    attempt: request.attempt,
    settlement: { kind: 'fail', error: request.error, requeue: request.requeue },
  };
  if (request.tenant !== undefined) item.tenant = request.tenant;
  return item;
}

/** Inside a decision: a job of another tenant than the request's is not found (nothing written). */
function checkTenant(job: JobRecord, tenant: TenantScope | undefined): void {
  if (!inTenant(job, tenant)) throw notFound('job', job.id);
}

/** Canary rollback counts failed attempts: a requeue (shutdown) is not one. */
function countsAsFailure(item: SettleItem): boolean {
  const settlement = item.settlement;
  return (
    settlement.kind === 'expire' || (settlement.kind === 'fail' && settlement.requeue !== true)
  );
}

function statusOf(error: OjsError): 'conflict' | 'not_found' | 'invalid' {
  return error.code === 'not_found'
    ? 'not_found'
    : error.code === 'conflict'
      ? 'conflict'
      : 'invalid';
}

function asOjsError(error: Error): OjsError {
  return error instanceof OjsError ? error : conflict(error.message);
}

function settledOrThrow(outcome: SettleOutcome): JobRecord {
  if (outcome.status === 'ok') return outcome.job;
  throw outcome.error;
}

const DIRECTIVE_RANK: Record<WorkerDirective, number> = { running: 0, quiet: 1, terminate: 2 };

function strongerDirective(a: WorkerDirective, b: WorkerDirective): WorkerDirective {
  return DIRECTIVE_RANK[b] > DIRECTIVE_RANK[a] ? b : a;
}

/** Suite hook (test mode only): meta.test_directive steers the heartbeat answer. */
function testDirective(job: JobRecord): WorkerDirective {
  const value = job.meta.test_directive;
  return value === 'quiet' || value === 'terminate' ? value : 'running';
}
