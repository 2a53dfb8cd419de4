/**
 * OjsClient: the producer side (SDK guidelines §19.1). Enqueue, batch
 * enqueue, job info / cancel / activate, workflows, cron, queues, dead
 * letter, events, and manifest-based feature detection.
 *
 * Every job id is generated here (UUIDv7) before the first try, so the
 * transport can repeat an enqueue after a transient failure without ever
 * creating the job twice.
 *
 * Typed args: `new OjsClient<{ 'email.send': [to: string, subject: string] }>()`
 * makes `enqueue('email.send', [...])` check the args against the map.
 */

import { OjsAdmin } from './admin.ts';
import type { CodecChain } from './codec.ts';
import { DEFAULT_URL, envAuthToken, envQueues, envUrl } from './config.ts';
import { UnsupportedFeatureError, ValidationError } from './errors.ts';
import type { EventStreamOptions, EventStreamQuery } from './event-stream.ts';
import { uuidv7 } from './generated/uuid.ts';
import type { GraphDefinition } from './graph.ts';
import { HttpTransport, type TransportRetryOptions, toPushBody } from './http.ts';
import { type EnqueueMiddleware, MiddlewareChain, runEnqueueChain } from './middleware.ts';
import { activeTestTransport } from './test-hook.ts';
import { loadTracing, traceEnqueue } from './tracing.ts';
import {
  type BatchEntry,
  type CronJob,
  type CronRegistration,
  type Duration,
  type EnqueueOptions,
  type EventPage,
  type EventQuery,
  type Job,
  type JobEnvelope,
  type JobProgress,
  type JobState,
  type ListOptions,
  type Manifest,
  type OjsEvent,
  type Page,
  type QueueInfo,
  type QueueStats,
  type RequestOptions,
  type RetryPolicy,
  TERMINAL_STATES,
  type Transport,
  type UniquePolicy,
  type WireRetryPolicy,
  type WireUniquePolicy,
  type Workflow,
  type WorkflowCallbacks,
  type WorkflowDefinition,
  type WorkflowJobSpec,
} from './types.ts';
import { OjsWebhooks } from './webhooks.ts';

/** Job type -> args tuple. The default accepts any type with any args. */
export type JobTypeMap = Record<string, unknown[]>;

export interface ClientOptions {
  /** Server base URL (env OJS_BACKEND_URL, default http://127.0.0.1:8080). */
  url?: string;
  /** A transport to use instead of HTTP (e.g. `new InProcessTransport(engine)`). */
  transport?: Transport;
  authToken?: string;
  headers?: Record<string, string>;
  /**
   * The tenant this client acts for (ext-multi-tenancy): sent as
   * X-OJS-Tenant, so its jobs carry meta.tenant_id and it sees only them.
   */
  tenant?: string;
  /** Operation timeout in ms (default 30 s). */
  timeoutMs?: number;
  /** Transport retries of transient failures; `false` disables them. */
  retry?: TransportRetryOptions | false;
  /** A fetch implementation (default: node:http with keep-alive on Node, the global fetch elsewhere). */
  fetch?: typeof fetch;
  /** Node without `fetch`: connections per origin (default 64); more requests wait for one. */
  maxSockets?: number;
  /**
   * HTTP: send the pushes made in one event-loop turn (e.g. many concurrent
   * `enqueue` calls) as one request to the server's `endpoints.push_many`,
   * each still answered on its own (default true). A lone push, or a server
   * without the endpoint, uses POST /ojs/v1/jobs.
   */
  coalescePushes?: boolean;
  /** Queue used when an enqueue names none (env OJS_QUEUE, default `default`). */
  defaultQueue?: string;
  /**
   * Encode every job's args with this chain before sending (encryption
   * extension): after the enqueue middleware, unique keys from plaintext.
   */
  codec?: CodecChain;
}

type Obj = Record<string, unknown>;

/** Milliseconds or an ISO 8601 duration -> ISO 8601 duration. */
export function toIsoDuration(value: Duration): string {
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value) || value < 0) {
    throw new ValidationError(`Invalid duration ${value}: use milliseconds >= 0 or "PT1S".`, {
      code: 'invalid_request',
    });
  }
  return `PT${Number((value / 1000).toFixed(3))}S`;
}

export function toWireRetry(policy: RetryPolicy): WireRetryPolicy {
  const out: WireRetryPolicy = {};
  if (policy.maxAttempts !== undefined) out.max_attempts = policy.maxAttempts;
  if (policy.initialInterval !== undefined)
    out.initial_interval = toIsoDuration(policy.initialInterval);
  if (policy.backoffCoefficient !== undefined) out.backoff_coefficient = policy.backoffCoefficient;
  if (policy.maxInterval !== undefined) out.max_interval = toIsoDuration(policy.maxInterval);
  if (policy.jitter !== undefined) out.jitter = policy.jitter;
  if (policy.nonRetryableErrors !== undefined)
    out.non_retryable_errors = [...policy.nonRetryableErrors];
  if (policy.onExhaustion !== undefined) out.on_exhaustion = policy.onExhaustion;
  if (policy.backoffType !== undefined) out.backoff_type = policy.backoffType;
  return out;
}

export function toWireUnique(policy: UniquePolicy): WireUniquePolicy {
  const out: WireUniquePolicy = {};
  if (policy.keys !== undefined) out.keys = [...policy.keys];
  if (policy.period !== undefined) out.period = toIsoDuration(policy.period);
  if (policy.onConflict !== undefined) out.on_conflict = policy.onConflict;
  if (policy.states !== undefined) out.states = [...policy.states];
  return out;
}

function toTime(value: Date | string, field: string): string {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) {
      throw new ValidationError(`${field} is an invalid Date.`, { code: 'invalid_request' });
    }
    return value.toISOString();
  }
  return value;
}

/** Builds the wire envelope for one job from camelCase options. */
export function buildEnvelope(
  type: string,
  args: unknown[],
  options: Omit<EnqueueOptions, 'signal'>,
  defaultQueue: string,
): JobEnvelope {
  if (typeof type !== 'string' || type === '') {
    throw new ValidationError('type must be a non-empty string.', {
      code: 'invalid_payload',
      details: { field: 'type' },
    });
  }
  if (!Array.isArray(args)) {
    throw new ValidationError('args must be an array.', {
      code: 'invalid_payload',
      details: { field: 'args' },
    });
  }
  const envelope: JobEnvelope = {
    ...options.extensions,
    specversion: '1.0',
    id: options.id ?? uuidv7(),
    type,
    queue: options.queue ?? defaultQueue,
    args,
    meta: { ...options.meta },
  };
  if (options.priority !== undefined) envelope.priority = options.priority;
  if (options.timeoutMs !== undefined) envelope.timeout_ms = options.timeoutMs;
  if (options.visibilityTimeoutMs !== undefined)
    envelope.visibility_timeout_ms = options.visibilityTimeoutMs;
  if (options.scheduledAt !== undefined) {
    envelope.scheduled_at = toTime(options.scheduledAt, 'scheduledAt');
  } else if (options.delayMs !== undefined) {
    envelope.scheduled_at = new Date(Date.now() + options.delayMs).toISOString();
  }
  if (options.expiresAt !== undefined) envelope.expires_at = toTime(options.expiresAt, 'expiresAt');
  if (options.retry !== undefined) envelope.retry = toWireRetry(options.retry);
  if (options.unique !== undefined) envelope.unique = toWireUnique(options.unique);
  if (options.tags !== undefined) envelope.tags = [...options.tags];
  if (options.schema !== undefined) envelope.schema = options.schema;
  if (options.pending !== undefined) envelope.pending = options.pending;
  if (options.rateLimit !== undefined) envelope.rate_limit = { ...options.rateLimit };
  if (options.version !== undefined) envelope.version = options.version;
  return envelope;
}

const LEVEL_OF_CAPABILITY: Record<string, number> = {
  dead_letter: 1,
  delayed_jobs: 2,
  job_ttl: 2,
  cron_jobs: 2,
  workflows: 3,
  batch_enqueue: 4,
  priority_queues: 4,
  unique_jobs: 4,
  pause_resume: 4,
  rate_limiting: 4,
};

/** Feature detection from a manifest: capability flags, extensions (both forms) and `level:N`. */
export function manifestSupports(manifest: Manifest, feature: string): boolean {
  const level = typeof manifest.conformance_level === 'number' ? manifest.conformance_level : 0;
  const levelMatch = /^level:(\d)$/.exec(feature);
  if (levelMatch) return level >= Number(levelMatch[1]);
  const capabilities = manifest.capabilities ?? {};
  if (feature in capabilities) return capabilities[feature] === true;
  const extensions = manifest.extensions;
  const wanted = new Set([feature, `urn:ojs:ext:${feature}`, feature.replaceAll('_', '-')]);
  const matches = (entry: unknown) =>
    typeof entry === 'string'
      ? wanted.has(entry)
      : typeof entry === 'object' &&
        entry !== null &&
        (wanted.has(String((entry as Obj).name)) || wanted.has(String((entry as Obj).uri)));
  if (Array.isArray(extensions)) {
    if (extensions.some(matches)) return true;
  } else if (extensions !== undefined && typeof extensions === 'object') {
    for (const [key, group] of Object.entries(extensions)) {
      if (wanted.has(key)) return true;
      if (Array.isArray(group) && group.some(matches)) return true;
    }
  }
  const impliedLevel = LEVEL_OF_CAPABILITY[feature];
  return impliedLevel !== undefined && !(feature in capabilities) && level >= impliedLevel;
}

function isWorkflowDefinition(
  value: WorkflowJobSpec | WorkflowDefinition,
): value is WorkflowDefinition {
  return (
    Array.isArray((value as WorkflowDefinition).steps) ||
    Array.isArray((value as WorkflowDefinition).jobs)
  );
}

export class OjsClient<TMap extends JobTypeMap = JobTypeMap> {
  /** The OJS specification version this SDK implements. */
  static readonly specVersion = '1.0.0';
  readonly specVersion = '1.0.0';
  /** Enqueue middleware, run on every job before it is sent (also per batch entry and workflow step). */
  readonly enqueueMiddleware = new MiddlewareChain<EnqueueMiddleware>();
  readonly defaultQueue: string;
  readonly #transport: Transport;
  readonly #codec: CodecChain | undefined;
  #manifest: { transport: Transport; pending: Promise<Manifest> } | undefined;

  constructor(options: ClientOptions = {}) {
    this.defaultQueue = options.defaultQueue ?? envQueues()?.[0] ?? 'default';
    this.#codec = options.codec;
    this.#transport =
      options.transport ??
      new HttpTransport({
        url: options.url ?? envUrl() ?? DEFAULT_URL,
        authToken: options.authToken ?? envAuthToken(),
        headers: options.headers,
        tenant: options.tenant,
        timeoutMs: options.timeoutMs,
        retry: options.retry,
        fetch: options.fetch,
        maxSockets: options.maxSockets,
        coalescePushes: options.coalescePushes,
      });
  }

  /** The transport in use (the test-mode one while a testing context is active). */
  /** The admin API: find and act on jobs, queues, workers, dead letters (HTTP only). */
  readonly admin: OjsAdmin = new OjsAdmin(() => this.transport);
  /** Webhook subscriptions and the delivery log (`urn:ojs:ext:webhooks`, HTTP only). */
  readonly webhooks: OjsWebhooks = new OjsWebhooks(() => this.transport);

  get transport(): Transport {
    return activeTestTransport() ?? this.#transport;
  }

  // ---------------------------------------------------------------- enqueue

  /** The enqueue middleware, then the codec chain (which sees what the middleware left). */
  async #prepare(envelope: JobEnvelope): Promise<JobEnvelope | null> {
    const passed = await runEnqueueChain(this.enqueueMiddleware, envelope);
    return passed === null || this.#codec === undefined
      ? passed
      : this.#codec.encodeEnvelope(passed);
  }

  /**
   * Enqueues one job. Resolves to the job as stored, or `null` when an
   * enqueue middleware dropped it (not an error; nothing was sent). With a
   * unique policy `onConflict: 'ignore'` the existing job is returned.
   */
  async enqueue<K extends keyof TMap & string>(
    type: K,
    args: TMap[K],
    options: EnqueueOptions = {},
  ): Promise<Job<TMap[K]> | null> {
    const envelope = await this.#prepare(buildEnvelope(type, args, options, this.defaultQueue));
    if (envelope === null) return null;
    await loadTracing();
    const span = traceEnqueue(envelope);
    try {
      const result = await this.transport.push(envelope, { signal: options.signal });
      span?.end();
      return result.job as Job<TMap[K]> | null;
    } catch (error) {
      span?.end(error);
      throw error;
    }
  }

  /**
   * Enqueues several jobs in one atomic request (POST /jobs/batch). The
   * enqueue middleware runs per job: a job it drops is left out of the batch;
   * a middleware error rejects the whole call before anything is sent.
   */
  async enqueueBatch(entries: BatchEntry[], options: RequestOptions = {}): Promise<Job[]> {
    const envelopes: JobEnvelope[] = [];
    for (const [index, entry] of entries.entries()) {
      try {
        const envelope = await this.#prepare(
          buildEnvelope(entry.type, entry.args ?? [], entry.options ?? {}, this.defaultQueue),
        );
        if (envelope !== null) envelopes.push(envelope);
      } catch (error) {
        if (error instanceof Error) error.message = `batch entry ${index}: ${error.message}`;
        throw error;
      }
    }
    if (envelopes.length === 0) return [];
    await loadTracing();
    const spans = envelopes.map(traceEnqueue);
    try {
      const jobs = await this.transport.pushBatch(envelopes, options);
      for (const span of spans) span?.end();
      return jobs;
    } catch (error) {
      for (const span of spans) span?.end(error);
      throw error;
    }
  }

  // ---------------------------------------------------------------- jobs

  getJob(id: string, options?: RequestOptions): Promise<Job> {
    return this.transport.getJob(id, options);
  }

  /** Cancels a job; an active job's worker learns it through its next heartbeat. */
  cancel(id: string, options?: RequestOptions): Promise<Job> {
    return this.transport.cancelJob(id, options);
  }

  /** Moves a `pending` job to `available`. */
  activate(id: string, options?: RequestOptions): Promise<Job> {
    return this.transport.activateJob(id, options);
  }

  /**
   * Polls a job until it reaches one of `states` (default: any terminal
   * state) and resolves to it; rejects on timeout.
   */
  async waitForJob(
    id: string,
    options: {
      states?: JobState[];
      timeoutMs?: number;
      intervalMs?: number;
      signal?: AbortSignal;
    } = {},
  ): Promise<Job> {
    const states = options.states ?? TERMINAL_STATES;
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const job = await this.getJob(id, options);
      if (states.includes(job.state)) return job;
      if (Date.now() >= deadline) {
        throw new Error(`Job ${id} is ${job.state}, not ${states.join('|')}, after the wait.`);
      }
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
    }
  }

  // ---------------------------------------------------------------- workflows

  async #workflowJob(spec: WorkflowJobSpec | WorkflowDefinition): Promise<Obj> {
    if (isWorkflowDefinition(spec)) return this.#workflowBody(spec);
    const envelope = await this.#prepare(
      buildEnvelope(spec.type, spec.args ?? [], spec.options ?? {}, this.defaultQueue),
    );
    if (envelope === null) {
      throw new ValidationError(`An enqueue middleware dropped workflow job '${spec.type}'.`, {
        code: 'invalid_request',
      });
    }
    // Workflow member ids are assigned by the server.
    const { id: _id, specversion: _v, ...rest } = toPushBody(envelope);
    if (spec.name !== undefined) rest.name = spec.name;
    return rest;
  }

  async #workflowBody(definition: WorkflowDefinition): Promise<Obj> {
    const body: Obj = { type: definition.type };
    if (definition.name !== undefined) body.name = definition.name;
    if (definition.steps !== undefined) {
      body.steps = [];
      for (const step of definition.steps)
        (body.steps as Obj[]).push(await this.#workflowJob(step));
    }
    if (definition.jobs !== undefined) {
      body.jobs = [];
      for (const job of definition.jobs) (body.jobs as Obj[]).push(await this.#workflowJob(job));
    }
    if (definition.callbacks !== undefined) {
      const callbacks: Obj = {};
      const { onSuccess, onFailure, onComplete } = definition.callbacks;
      if (onSuccess) callbacks.on_success = await this.#workflowJob(onSuccess);
      if (onFailure) callbacks.on_failure = await this.#workflowJob(onFailure);
      if (onComplete) callbacks.on_complete = await this.#workflowJob(onComplete);
      body.callbacks = callbacks;
    }
    return body;
  }

  /** Creates a workflow from a full definition (POST /workflows, Level 3). */
  async workflow(definition: WorkflowDefinition, options?: RequestOptions): Promise<Workflow> {
    return this.transport.createWorkflow(await this.#workflowBody(definition), options);
  }

  /** A chain: steps run one after the other; each sees the previous results. */
  chain(
    steps: Array<WorkflowJobSpec | WorkflowDefinition>,
    options: { name?: string; signal?: AbortSignal } = {},
  ): Promise<Workflow> {
    return this.workflow({ type: 'chain', name: options.name, steps }, options);
  }

  /** A group: jobs run in parallel, independently. */
  group(
    jobs: Array<WorkflowJobSpec | WorkflowDefinition>,
    options: { name?: string; signal?: AbortSignal } = {},
  ): Promise<Workflow> {
    return this.workflow({ type: 'group', name: options.name, jobs }, options);
  }

  /** A batch: a group with callbacks fired once every job is terminal. */
  batch(
    jobs: Array<WorkflowJobSpec | WorkflowDefinition>,
    callbacks: WorkflowCallbacks,
    options: { name?: string; signal?: AbortSignal } = {},
  ): Promise<Workflow> {
    return this.workflow({ type: 'batch', name: options.name, jobs, callbacks }, options);
  }

  /**
   * Creates a graph workflow (http-binding §4.15): steps with ids that run
   * once the steps they depend on have completed. Build the definition with
   * `graph(name).step(...)` (typed ids) or write it as a plain object.
   * Enqueue middleware runs on every step; the definition's options are the
   * defaults of every step's options.
   */
  async workflowGraph(definition: GraphDefinition, options?: RequestOptions): Promise<Workflow> {
    const steps: Obj[] = [];
    for (const step of definition.steps) {
      const { id, dependsOn, ...member } = step;
      // The graph's options are the defaults of its jobs, not of nested workflows.
      const merged =
        definition.options === undefined || isWorkflowDefinition(member)
          ? member
          : { ...member, options: { ...definition.options, ...member.options } };
      steps.push({ id, ...(await this.#workflowJob(merged)), depends_on: [...(dependsOn ?? [])] });
    }
    return this.transport.createWorkflow({ name: definition.name, steps }, options);
  }

  getWorkflow(id: string, options?: RequestOptions): Promise<Workflow> {
    return this.transport.getWorkflow(id, options);
  }

  cancelWorkflow(id: string, options?: RequestOptions): Promise<Workflow> {
    return this.transport.cancelWorkflow(id, options);
  }

  // ---------------------------------------------------------------- cron

  /**
   * Registers a cron job (POST /cron, Level 2). The body carries both the
   * OA shape (`expression`, `job_template`) and the spec/HB aliases (`cron`,
   * `type`, `args`, `options`) so servers following either accept it.
   */
  async registerCron(registration: CronRegistration, options?: RequestOptions): Promise<CronJob> {
    const template = await this.#workflowJob(registration.job);
    const body: Obj = {
      name: registration.name,
      expression: registration.expression,
      cron: registration.expression,
      job_template: template,
      type: template.type,
      args: template.args,
      options: template.options,
    };
    if (template.meta !== undefined) body.meta = template.meta;
    if (registration.timezone !== undefined) body.timezone = registration.timezone;
    if (registration.overlapPolicy !== undefined) body.overlap_policy = registration.overlapPolicy;
    if (registration.enabled !== undefined) body.enabled = registration.enabled;
    if (registration.description !== undefined) body.description = registration.description;
    return this.transport.registerCron(body, options);
  }

  listCron(options?: RequestOptions): Promise<CronJob[]> {
    return this.transport.listCron(options);
  }

  getCron(name: string, options?: RequestOptions): Promise<CronJob> {
    return this.transport.getCron(name, options);
  }

  unregisterCron(name: string, options?: RequestOptions): Promise<void> {
    return this.transport.unregisterCron(name, options);
  }

  // ---------------------------------------------------------------- queues

  async listQueues(query: ListOptions = {}, options?: RequestOptions): Promise<QueueInfo[]> {
    return (await this.transport.listQueues(query, options)).items;
  }

  listQueuesPage(query: ListOptions = {}, options?: RequestOptions): Promise<Page<QueueInfo>> {
    return this.transport.listQueues(query, options);
  }

  queueStats(name: string, options?: RequestOptions): Promise<QueueStats> {
    return this.transport.queueStats(name, options);
  }

  pauseQueue(name: string, options?: RequestOptions): Promise<QueueInfo> {
    return this.transport.setQueuePaused(name, true, options);
  }

  resumeQueue(name: string, options?: RequestOptions): Promise<QueueInfo> {
    return this.transport.setQueuePaused(name, false, options);
  }

  // ---------------------------------------------------------------- dead letter

  listDeadLetter(
    query: ListOptions & { queue?: string } = {},
    options?: RequestOptions,
  ): Promise<Page<Job>> {
    return this.transport.listDeadLetter(query, options);
  }

  /** Re-enqueues a dead-lettered job (same id, fresh attempts). */
  retryDeadLetter(id: string, options?: RequestOptions): Promise<Job> {
    return this.transport.retryDeadLetter(id, options);
  }

  deleteDeadLetter(id: string, options?: RequestOptions): Promise<void> {
    return this.transport.deleteDeadLetter(id, options);
  }

  // ---------------------------------------------------------------- progress

  /** Reports progress of an active job (workers usually call ctx.progress()). */
  async progress(
    jobId: string,
    value: number,
    message?: string,
    options?: RequestOptions,
  ): Promise<JobProgress> {
    const transport = this.transport;
    if (transport.progress === undefined) {
      throw new UnsupportedFeatureError('This transport cannot report job progress.', {
        code: 'unsupported',
        operation: 'progress',
        jobId,
      });
    }
    const update = message === undefined ? { progress: value } : { progress: value, message };
    return transport.progress(jobId, update, options);
  }

  /** A job's current progress (`progress: null` when none was reported). */
  getProgress(jobId: string, options?: RequestOptions): Promise<JobProgress> {
    const transport = this.transport;
    if (transport.getProgress === undefined) {
      throw new UnsupportedFeatureError('This transport cannot read job progress.', {
        code: 'unsupported',
        operation: 'get_progress',
        jobId,
      });
    }
    return transport.getProgress(jobId, options);
  }

  // ---------------------------------------------------------------- events, manifest

  events(query: EventQuery = {}, options?: RequestOptions): Promise<EventPage> {
    return this.transport.listEvents(query, options);
  }

  /**
   * Live events as an async iterator (http-binding §9.3: Server-Sent Events
   * over HTTP, the event log in-process): every event, a queue's
   * (`queue`), or one job's (`jobId`: its current state first, ending once
   * it finished), filtered by `types`, `queues`, `jobTypes`. Over HTTP it
   * reconnects by itself and resumes after the last event it delivered.
   * Stop it with `break` or `options.signal`.
   *
   *   for await (const event of client.subscribe({ jobId })) console.log(event.type);
   */
  subscribe(
    query: EventStreamQuery = {},
    options: EventStreamOptions = {},
  ): AsyncIterable<OjsEvent> {
    const transport = this.transport;
    if (transport.streamEvents === undefined) {
      throw new UnsupportedFeatureError('This transport cannot stream events.', {
        code: 'unsupported',
        operation: 'stream_events',
      });
    }
    return transport.streamEvents(query, options);
  }

  health(options?: RequestOptions): Promise<Obj> {
    return this.transport.health(options);
  }

  /** The server manifest, fetched once and cached (`refresh` fetches again). */
  manifest(options: { refresh?: boolean; signal?: AbortSignal } = {}): Promise<Manifest> {
    const transport = this.transport;
    // Cached per transport: a test mode switches the transport under the same client.
    if (this.#manifest === undefined || this.#manifest.transport !== transport || options.refresh) {
      const pending = transport.manifest(options);
      const entry = { transport, pending };
      this.#manifest = entry;
      pending.catch(() => {
        if (this.#manifest === entry) this.#manifest = undefined;
      });
    }
    return this.#manifest.pending;
  }

  /**
   * Whether the server declares a feature: a capability flag
   * (`workflows`, `cron_jobs`, `batch_enqueue`, ...), an extension (name or
   * URI, either manifest form), or `level:N`.
   */
  async supports(feature: string): Promise<boolean> {
    return manifestSupports(await this.manifest(), feature);
  }

  async close(): Promise<void> {
    await this.#transport.close?.();
  }
}

/** Alias with the short name. */
export { OjsClient as Client };
