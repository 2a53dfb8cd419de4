/**
 * Test modes and assertion helpers (ojs-testing, features §18).
 *
 *   const t = testing.fake();          // every OjsClient now enqueues into memory
 *   await app.signUp('ada@example.com');
 *   t.assertEnqueued('email.send', { args: ['ada@example.com'] });
 *   t.register('email.send', handler); // or t.useWorker(worker)
 *   await t.drain();
 *   t.assertCompleted('email.send');
 *   testing.restore();                 // back to the real backend
 *
 * Modes are chosen explicitly, never from the environment:
 *
 * - fake (default): an in-memory backend; envelopes get UUIDv7 ids and the
 *   real validation and state rules (type/queue patterns, args array,
 *   priority range, duplicate ids, cancel of terminal jobs -> 409); the
 *   enqueue middleware runs (it runs in the client); handlers and execution
 *   middleware run only in `drain()`, which processes jobs FIFO, retries a
 *   failure immediately while attempts remain (no backoff, no visibility
 *   timeouts, no rate limits) and runs jobs enqueued by handlers too.
 *   Scheduled jobs wait for their time (see freezeTime/advanceTime) unless
 *   `withScheduled`. Workflows and cron entries are stored, not executed.
 * - inline: enqueue runs the handler at once, through both chains, and
 *   resolves to the completed job (result included); a handler error
 *   rejects the enqueue (the job is left `discarded` with the error); no
 *   retries; `scheduled_at` is ignored; states go available -> active ->
 *   completed. `drain()` is a no-op.
 *
 * Isolation: `testing.fake()` / `.inline()` install a context for the whole
 * process until `restore()` (nesting is a stack). For tests that run in
 * parallel in one process use `testing.run('fake', async (t) => ...)`,
 * which scopes the context to that async call tree.
 */
import { AssertionError } from 'node:assert';
import { AsyncLocalStorage } from 'node:async_hooks';
import { isDeepStrictEqual } from 'node:util';
import {
  ConflictError,
  DiscardError,
  DuplicateJobError,
  JobNotFoundError,
  NotFoundError,
  ValidationError,
} from './errors.ts';
import { type ExecutionMiddleware, type JobContext, runExecutionChain } from './middleware.ts';
import { setTestTransportResolver } from './test-hook.ts';
import {
  type AckRequest,
  type CronJob,
  type EventPage,
  type EventQuery,
  type FetchRequest,
  type HeartbeatResponse,
  type Job,
  type JobEnvelope,
  type JobState,
  type ListOptions,
  type Manifest,
  type NackRequest,
  type OjsEvent,
  type Page,
  type PushResult,
  QUEUE_COUNT_STATES,
  type QueueInfo,
  type QueueStats,
  type Transport,
  type Workflow,
} from './types.ts';
import { isUuidv7, uuidv7 } from './uuid.ts';
import type { HandlerOptions, JobHandler } from './worker.ts';
import { describeError } from './worker.ts';

export type TestMode = 'fake' | 'inline';

export interface JobFilter {
  type?: string;
  /** Deep-equal args. */
  args?: unknown[];
  queue?: string;
  /** Every key given must deep-equal the job's meta value. */
  meta?: Record<string, unknown>;
  state?: JobState;
}

export interface AssertEnqueuedOptions extends Omit<JobFilter, 'type'> {
  /** Exact number of matching jobs (default: at least one). */
  count?: number;
}

export interface DrainOptions {
  queue?: string;
  /** Stop after this many executions (default 10,000). */
  maxJobs?: number;
  /** Give up after this long (default 30 s). */
  timeoutMs?: number;
  /** Also run scheduled jobs that are not due yet. */
  withScheduled?: boolean;
}

export interface DrainResult {
  processed: number;
  completed: number;
  failed: number;
}

export interface Performance {
  job: Job;
  attempt: number;
  outcome: 'completed' | 'failed';
  result?: unknown;
  error?: unknown;
}

/** Anything with handlers and execution middleware (an OjsWorker). */
export interface HandlerSource {
  readonly types: string[];
  handlerFor(type: string): { handler: JobHandler<unknown[]>; options: HandlerOptions } | undefined;
  readonly middleware: { list(): readonly ExecutionMiddleware[] };
}

const JOB_TYPE_PATTERN = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
const QUEUE_PATTERN = /^[a-z0-9][a-z0-9.-]*$/;
const TERMINAL: JobState[] = ['completed', 'cancelled', 'discarded'];

type Obj = Record<string, unknown>;

function invalid(message: string, field: string): ValidationError {
  return new ValidationError(message, { code: 'invalid_payload', status: 400, details: { field } });
}

function describe(job: Job): string {
  return `${job.type}(${JSON.stringify(job.args)}) queue=${job.queue} state=${job.state} meta=${JSON.stringify(job.meta)}`;
}

/** The in-memory backend of the fake and inline modes. */
export class FakeTransport implements Transport {
  readonly kind = 'fake';
  readonly abortableFetch = true;
  readonly jobs = new Map<string, Job>();
  readonly workflows = new Map<string, Workflow & { definition: Obj }>();
  readonly crons = new Map<string, CronJob>();
  readonly events: OjsEvent[] = [];
  readonly paused = new Set<string>();
  readonly #context: TestContext;
  #seq = 0;
  readonly #order = new Map<string, number>();

  constructor(context: TestContext) {
    this.#context = context;
  }

  #now(): string {
    return new Date(this.#context.now()).toISOString();
  }

  #event(type: string, job: Job, data: Obj = {}): void {
    this.events.push({
      id: uuidv7(),
      type,
      time: this.#now(),
      subject: job.id,
      data: { job_id: job.id, job_type: job.type, queue: job.queue, state: job.state, ...data },
    });
  }

  #get(id: string): Job {
    const job = this.jobs.get(id);
    if (job === undefined) {
      throw new JobNotFoundError(`Job '${id}' not found.`, {
        code: 'not_found',
        status: 404,
        details: { resource_type: 'job', resource_id: id },
      });
    }
    return job;
  }

  /** Jobs in enqueue order. */
  ordered(): Job[] {
    return [...this.jobs.values()].sort((a, b) => this.#order.get(a.id)! - this.#order.get(b.id)!);
  }

  #validate(envelope: JobEnvelope): void {
    if (typeof envelope.type !== 'string' || !JOB_TYPE_PATTERN.test(envelope.type)) {
      throw invalid(`type '${String(envelope.type)}' is invalid.`, 'type');
    }
    if (!Array.isArray(envelope.args)) throw invalid('args must be a JSON array.', 'args');
    if (typeof envelope.queue !== 'string' || !QUEUE_PATTERN.test(envelope.queue)) {
      throw invalid(`queue '${String(envelope.queue)}' is invalid.`, 'options.queue');
    }
    if (!isUuidv7(envelope.id)) throw invalid('id must be a lowercase UUIDv7.', 'id');
    const p = envelope.priority;
    if (p !== undefined && (!Number.isInteger(p) || p < -100 || p > 100)) {
      throw invalid('priority must be an integer between -100 and 100.', 'options.priority');
    }
    try {
      JSON.stringify(envelope);
    } catch {
      throw invalid('The job is not JSON-serialisable.', 'args');
    }
  }

  #build(envelope: JobEnvelope): Job {
    const now = this.#now();
    const copy = structuredClone(envelope) as JobEnvelope;
    const { scheduled_at, pending, retry, ...rest } = copy;
    const job: Job = {
      ...rest,
      specversion: '1.0',
      state: 'available',
      priority: copy.priority ?? 0,
      attempt: 0,
      max_attempts: retry?.max_attempts ?? 3,
      created_at: now,
      enqueued_at: now,
    };
    if (retry !== undefined) job.retry = retry;
    if (scheduled_at !== undefined) {
      job.scheduled_at = scheduled_at;
      if (this.#context.mode === 'fake' && Date.parse(scheduled_at) > this.#context.now()) {
        job.state = 'scheduled';
      }
    }
    if (pending === true) job.state = 'pending';
    return job;
  }

  #uniqueMatch(job: Job): Job | undefined {
    const unique = job.unique;
    if (unique === undefined) return undefined;
    const keys = unique.keys ?? ['type', 'queue', 'args'];
    const states = unique.states ?? ['scheduled', 'available', 'pending', 'active', 'retryable'];
    const key = (j: Job) => JSON.stringify(keys.map((k) => j[k]));
    return [...this.jobs.values()].find((j) => states.includes(j.state) && key(j) === key(job));
  }

  #insert(envelope: JobEnvelope): PushResult {
    this.#validate(envelope);
    if (this.jobs.has(envelope.id)) {
      throw new DuplicateJobError(`A job with id '${envelope.id}' already exists.`, {
        code: 'duplicate',
        status: 409,
        details: { existing_job_id: envelope.id },
      });
    }
    const job = this.#build(envelope);
    const existing = this.#uniqueMatch(job);
    if (existing !== undefined) {
      const onConflict = job.unique?.on_conflict ?? 'reject';
      if (onConflict === 'ignore' || onConflict === 'use_existing') {
        return { job: structuredClone(existing), status: 'existing' };
      }
      if (onConflict === 'reject') {
        throw new DuplicateJobError('A job with the same unique key already exists.', {
          code: 'duplicate',
          status: 409,
          details: { existing_job_id: existing.id },
        });
      }
    }
    this.jobs.set(job.id, job);
    this.#order.set(job.id, this.#seq++);
    this.#event('job.enqueued', job);
    return { job: structuredClone(job), status: 'created' };
  }

  async manifest(): Promise<Manifest> {
    return {
      specversion: '1.0',
      implementation: {
        name: `ojs-sdk-${this.#context.mode}`,
        version: '0.1.0',
        language: 'typescript',
      },
      conformance_level: 4,
      protocols: ['in-memory'],
      backend: 'memory',
      capabilities: {
        batch_enqueue: true,
        cron_jobs: true,
        dead_letter: true,
        delayed_jobs: true,
        workflows: true,
        unique_jobs: true,
        pause_resume: true,
        priority_queues: true,
      },
    };
  }

  async health(): Promise<Obj> {
    return { status: 'ok', backend: { type: 'memory', status: 'ok' } };
  }

  async push(envelope: JobEnvelope): Promise<PushResult> {
    const result = this.#insert(envelope);
    if (this.#context.mode === 'inline' && result.status === 'created') {
      const job = this.jobs.get(envelope.id)!;
      if (job.state !== 'pending') {
        await this.#context.execute(job, { inline: true });
        return { job: structuredClone(job), status: 'created' };
      }
    }
    return result;
  }

  async pushBatch(envelopes: JobEnvelope[]): Promise<Job[]> {
    // Atomic like the real batch: validate everything first.
    const ids = new Set<string>();
    for (const envelope of envelopes) {
      this.#validate(envelope);
      if (this.jobs.has(envelope.id) || ids.has(envelope.id)) {
        throw new DuplicateJobError(`A job with id '${envelope.id}' already exists.`, {
          code: 'duplicate',
          status: 409,
          details: { existing_job_id: envelope.id },
        });
      }
      ids.add(envelope.id);
    }
    const out: Job[] = [];
    for (const envelope of envelopes) out.push((await this.push(envelope)).job!);
    return out;
  }

  async getJob(id: string): Promise<Job> {
    return structuredClone(this.#get(id));
  }

  async cancelJob(id: string): Promise<Job> {
    const job = this.#get(id);
    if (TERMINAL.includes(job.state)) {
      throw new ConflictError(`Cannot cancel job '${id}': it is ${job.state}.`, {
        code: 'conflict',
        status: 409,
        details: { job_id: id, current_state: job.state },
      });
    }
    job.state = 'cancelled';
    job.cancelled_at = this.#now();
    this.#event('job.cancelled', job);
    return structuredClone(job);
  }

  async activateJob(id: string): Promise<Job> {
    const job = this.#get(id);
    if (job.state !== 'pending') {
      throw new ConflictError(`Cannot activate job '${id}': it is ${job.state}, not pending.`, {
        code: 'conflict',
        status: 409,
        details: { job_id: id, current_state: job.state, expected_state: 'pending' },
      });
    }
    job.state = 'available';
    if (this.#context.mode === 'inline') await this.#context.execute(job, { inline: true });
    return structuredClone(job);
  }

  /** Jobs that may run now, FIFO by priority then enqueue order. */
  runnable(queues?: readonly string[], withScheduled = false): Job[] {
    const now = this.#context.now();
    return this.ordered()
      .filter((job) => queues === undefined || queues.includes(job.queue))
      .filter((job) => !this.paused.has(job.queue))
      .filter(
        (job) =>
          job.state === 'available' ||
          ((job.state === 'scheduled' || job.state === 'retryable') &&
            (withScheduled ||
              job.scheduled_at === undefined ||
              Date.parse(job.scheduled_at) <= now)),
      )
      .sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0));
  }

  async fetchJobs(request: FetchRequest): Promise<Job[]> {
    const jobs = this.runnable(request.queues).slice(0, request.count);
    for (const job of jobs) {
      job.state = 'active';
      job.attempt += 1;
      job.started_at = this.#now();
      if (request.worker_id !== undefined) job.worker_id = request.worker_id;
    }
    return jobs.map((j) => structuredClone(j));
  }

  #active(id: string): Job {
    const job = this.#get(id);
    if (job.state !== 'active') {
      throw new ConflictError(`Job '${id}' is ${job.state}, not active.`, {
        code: 'conflict',
        status: 409,
        details: { job_id: id, current_state: job.state, expected_state: 'active' },
      });
    }
    return job;
  }

  complete(job: Job, result: unknown): void {
    job.state = 'completed';
    job.completed_at = this.#now();
    if (result !== undefined) job.result = result;
    delete job.error;
    this.#event('job.completed', job);
  }

  fail(
    job: Job,
    error: NackRequest['error'],
    options: { requeue?: boolean; noRetry?: boolean } = {},
  ): void {
    if (options.requeue) {
      job.state = 'available';
      return;
    }
    const entry = { ...error, attempt: job.attempt, occurred_at: this.#now() };
    job.error = entry;
    job.errors = [...(job.errors ?? []), entry];
    const max = job.max_attempts ?? 3;
    const nonRetryable = job.retry?.non_retryable_errors ?? [];
    const type = error.type ?? error.code;
    const discard =
      options.noRetry ||
      error.retryable === false ||
      nonRetryable.some((p) => (p.endsWith('.*') ? type.startsWith(p.slice(0, -1)) : p === type)) ||
      job.attempt >= max;
    job.state = discard ? 'discarded' : 'retryable';
    if (discard) {
      job.discarded_at = this.#now();
      job.completed_at = job.discarded_at;
    }
    this.#event(discard ? 'job.discarded' : 'job.retrying', job, { error: entry });
  }

  async ack(request: AckRequest): Promise<Obj> {
    const job = this.#active(request.job_id);
    this.complete(job, request.result);
    return { id: job.id, job_id: job.id, state: job.state, completed_at: job.completed_at };
  }

  async nack(request: NackRequest): Promise<Obj> {
    const job = this.#active(request.job_id);
    this.fail(job, request.error, { requeue: request.requeue });
    return { id: job.id, job_id: job.id, state: job.state, attempt: job.attempt };
  }

  async heartbeat(request: { active_jobs: string[] }): Promise<HeartbeatResponse> {
    const extended: string[] = [];
    const cancelled: string[] = [];
    for (const id of request.active_jobs) {
      const job = this.jobs.get(id);
      if (job?.state === 'active') extended.push(id);
      else if (job?.state === 'cancelled') cancelled.push(id);
    }
    return { directive: 'running', jobsExtended: extended, jobsCancelled: cancelled, raw: {} };
  }

  #queueNames(): string[] {
    return [...new Set(['default', ...[...this.jobs.values()].map((j) => j.queue)])].sort();
  }

  async listQueues(query: ListOptions): Promise<Page<QueueInfo>> {
    const names = this.#queueNames();
    const offset = query.offset ?? 0;
    const limit = query.limit ?? 50;
    const items = names.slice(offset, offset + limit).map((name) => {
      const paused = this.paused.has(name);
      return { name, paused, status: paused ? ('paused' as const) : ('active' as const) };
    });
    return {
      items,
      pagination: {
        total: names.length,
        limit,
        offset,
        has_more: offset + items.length < names.length,
      },
    };
  }

  async queueStats(name: string): Promise<QueueStats> {
    const stats: QueueStats = { name, paused: this.paused.has(name), raw: {} };
    const counts: Obj = {};
    for (const state of QUEUE_COUNT_STATES) {
      const n = [...this.jobs.values()].filter((j) => j.queue === name && j.state === state).length;
      stats[state] = n;
      counts[state] = n;
    }
    stats.raw = { queue: { name, paused: stats.paused, ...counts } };
    return stats;
  }

  async setQueuePaused(name: string, paused: boolean): Promise<QueueInfo> {
    if (paused) this.paused.add(name);
    else this.paused.delete(name);
    return { name, paused, status: paused ? 'paused' : 'active' };
  }

  #deadLetter(queue?: string): Job[] {
    return this.ordered().filter(
      (j) =>
        j.state === 'discarded' &&
        j.retry?.on_exhaustion === 'dead_letter' &&
        (queue === undefined || j.queue === queue),
    );
  }

  async listDeadLetter(query: ListOptions & { queue?: string }): Promise<Page<Job>> {
    const all = this.#deadLetter(query.queue);
    const offset = query.offset ?? 0;
    const limit = query.limit ?? 50;
    const items = all.slice(offset, offset + limit).map((j) => structuredClone(j));
    return {
      items,
      pagination: {
        total: all.length,
        limit,
        offset,
        has_more: offset + items.length < all.length,
      },
    };
  }

  #deadLetterJob(id: string): Job {
    const job = this.#deadLetter().find((j) => j.id === id);
    if (job === undefined) {
      throw new NotFoundError(`Dead letter job '${id}' not found.`, {
        code: 'not_found',
        status: 404,
        details: { resource_type: 'dead_letter_job', resource_id: id },
      });
    }
    return job;
  }

  async retryDeadLetter(id: string): Promise<Job> {
    const job = this.#deadLetterJob(id);
    job.state = 'available';
    job.attempt = 0;
    delete job.error;
    delete job.discarded_at;
    delete job.completed_at;
    return structuredClone(job);
  }

  async deleteDeadLetter(id: string): Promise<void> {
    this.#deadLetterJob(id);
    this.jobs.delete(id);
  }

  async registerCron(body: Obj): Promise<CronJob> {
    const name = String(body.name);
    if (this.crons.has(name)) {
      throw new ConflictError(`Cron job '${name}' already exists.`, {
        code: 'conflict',
        status: 409,
      });
    }
    const cron: CronJob = {
      name,
      expression: String(body.expression),
      timezone: typeof body.timezone === 'string' ? body.timezone : 'UTC',
      overlap_policy: typeof body.overlap_policy === 'string' ? body.overlap_policy : 'skip',
      enabled: body.enabled !== false,
      job_template: body.job_template as CronJob['job_template'],
      created_at: this.#now(),
    };
    this.crons.set(name, cron);
    return structuredClone(cron);
  }

  async listCron(): Promise<CronJob[]> {
    return [...this.crons.values()].map((c) => structuredClone(c));
  }

  async getCron(name: string): Promise<CronJob> {
    const cron = this.crons.get(name);
    if (cron === undefined) {
      throw new NotFoundError(`Cron job '${name}' not found.`, {
        code: 'not_found',
        status: 404,
        details: { resource_type: 'cron', resource_id: name },
      });
    }
    return structuredClone(cron);
  }

  async unregisterCron(name: string): Promise<void> {
    await this.getCron(name);
    this.crons.delete(name);
  }

  async createWorkflow(body: Obj): Promise<Workflow> {
    const type = body.type;
    if (type === undefined && Array.isArray(body.steps) && body.steps.length > 0) {
      // The graph form (workflowGraph): stored with its steps waiting, not executed.
      const steps = body.steps as Obj[];
      const workflow: Workflow & { definition: Obj } = {
        id: uuidv7(),
        state: 'running',
        created_at: this.#now(),
        definition: structuredClone(body),
        steps_total: steps.length,
        steps_completed: 0,
        steps: steps.map((step) => ({
          id: String(step.id),
          type: String(step.type),
          state: 'waiting',
          job_id: null,
          depends_on: (step.depends_on as string[] | undefined) ?? [],
        })),
      };
      if (typeof body.name === 'string') workflow.name = body.name;
      this.workflows.set(workflow.id, workflow);
      return structuredClone(workflow);
    }
    if (type !== 'chain' && type !== 'group' && type !== 'batch') {
      throw invalid('workflow type must be chain, group or batch.', 'type');
    }
    const members = (type === 'chain' ? body.steps : body.jobs) as unknown;
    if (!Array.isArray(members) || members.length === 0) {
      throw invalid(
        `a ${type} needs at least one ${type === 'chain' ? 'step' : 'job'}.`,
        type === 'chain' ? 'steps' : 'jobs',
      );
    }
    const workflow: Workflow & { definition: Obj } = {
      id: uuidv7(),
      type,
      state: 'running',
      created_at: this.#now(),
      definition: structuredClone(body),
      ...(type === 'chain'
        ? { steps_total: members.length, steps_completed: 0 }
        : { jobs_total: members.length, jobs_completed: 0 }),
    };
    if (typeof body.name === 'string') workflow.name = body.name;
    this.workflows.set(workflow.id, workflow);
    return structuredClone(workflow);
  }

  async getWorkflow(id: string): Promise<Workflow> {
    const workflow = this.workflows.get(id);
    if (workflow === undefined) {
      throw new NotFoundError(`Workflow '${id}' not found.`, {
        code: 'not_found',
        status: 404,
        details: { resource_type: 'workflow', resource_id: id },
      });
    }
    return structuredClone(workflow);
  }

  async cancelWorkflow(id: string): Promise<Workflow> {
    await this.getWorkflow(id);
    const workflow = this.workflows.get(id)!;
    workflow.state = 'cancelled';
    return structuredClone(workflow);
  }

  async listEvents(query: EventQuery): Promise<EventPage> {
    let events = this.events;
    if (query.after !== undefined) {
      const index = events.findIndex((e) => e.id === query.after);
      events = events.slice(index + 1);
    }
    events = events.filter(
      (e) =>
        (query.types === undefined || query.types.includes(e.type)) &&
        (query.queues === undefined || query.queues.includes(String(e.data?.queue))) &&
        (query.jobTypes === undefined || query.jobTypes.includes(String(e.data?.job_type))),
    );
    const limit = query.limit ?? 100;
    const page = events.slice(0, limit);
    return {
      events: page,
      cursor: page.at(-1)?.id ?? query.after ?? null,
      hasMore: events.length > limit,
    };
  }
}

/** One test's fake or inline backend with its handlers, clock and assertions. */
export class TestContext {
  readonly mode: TestMode;
  readonly transport: FakeTransport;
  readonly performed: Performance[] = [];
  readonly #handlers = new Map<
    string,
    { handler: JobHandler<unknown[]>; options: HandlerOptions }
  >();
  #middleware: readonly ExecutionMiddleware[] = [];
  readonly #failNext = new Map<string, unknown[]>();
  readonly #failAll = new Map<string, unknown>();
  #frozenAt: number | undefined;
  #offsetMs = 0;

  constructor(mode: TestMode) {
    this.mode = mode;
    this.transport = new FakeTransport(this);
  }

  // ---------------------------------------------------------------- handlers and time

  /** Registers a handler for drain (fake) and enqueue (inline). */
  register<Args extends unknown[] = unknown[]>(
    type: string,
    handler: JobHandler<Args>,
    options: HandlerOptions = {},
  ): this {
    this.#handlers.set(type, { handler: handler as JobHandler<unknown[]>, options });
    return this;
  }

  /** Uses a worker's handlers and execution middleware. */
  useWorker(worker: HandlerSource): this {
    for (const type of worker.types) {
      const registration = worker.handlerFor(type);
      if (registration !== undefined) this.#handlers.set(type, registration);
    }
    this.#middleware = worker.middleware.list();
    return this;
  }

  /** Execution middleware used by drain / inline runs. */
  useMiddleware(...middleware: ExecutionMiddleware[]): this {
    this.#middleware = [...this.#middleware, ...middleware];
    return this;
  }

  now(): number {
    return (this.#frozenAt ?? Date.now()) + this.#offsetMs;
  }

  /** Stops the clock (at `at`, default now) for timestamps and scheduled jobs. */
  freezeTime(at: Date | number = Date.now()): this {
    this.#frozenAt = typeof at === 'number' ? at : at.getTime();
    this.#offsetMs = 0;
    return this;
  }

  advanceTime(ms: number): this {
    this.#offsetMs += ms;
    return this;
  }

  /** The next execution of `type` throws `error` instead of running the handler. */
  failNext(type: string, error: unknown = new Error(`failNext(${type})`)): this {
    const queue = this.#failNext.get(type) ?? [];
    queue.push(error);
    this.#failNext.set(type, queue);
    return this;
  }

  /** Every execution of `type` throws `error` (until clearAll). */
  failAll(type: string, error: unknown = new Error(`failAll(${type})`)): this {
    this.#failAll.set(type, error);
    return this;
  }

  // ---------------------------------------------------------------- execution

  /** Runs one job through the execution chain and its handler; updates its state. */
  async execute(job: Job, options: { inline?: boolean } = {}): Promise<Performance> {
    const registration = this.#handlers.get(job.type);
    if (registration === undefined) {
      throw new Error(
        `No handler registered for job type '${job.type}' in the ${this.mode} test context (use register() or useWorker()).`,
      );
    }
    job.state = 'active';
    job.attempt += 1;
    job.started_at = new Date(this.now()).toISOString();
    const controller = new AbortController();
    let result: unknown;
    let resultSet = false;
    const snapshot = structuredClone(job);
    const ctx: JobContext = {
      job: snapshot,
      args: snapshot.args,
      id: job.id,
      type: job.type,
      queue: job.queue,
      attempt: job.attempt,
      maxAttempts: job.max_attempts,
      workerId: `test-${this.mode}`,
      signal: controller.signal,
      workflowId: job.workflow_id,
      parentResults: job.parent_results,
      stepId: job.workflow_step_id,
      parentResultsByStep: job.parent_results_by_step,
      metadata: {},
      setResult: (value) => {
        result = value;
        resultSet = true;
      },
      heartbeat: async () => {},
      // Kept on the job as the server would (clamped, never lowered), for assertions.
      progress: async (value, message, data) => {
        const previous = (job as { progress?: { value: number } }).progress?.value ?? 0;
        const stored = Math.max(previous, Math.min(1, Math.max(0, value)));
        Object.assign(job, { progress: { value: stored, message, data } });
      },
      log: () => {},
    };
    const failNext = this.#failNext.get(job.type);
    let injected: { error: unknown } | undefined;
    if (failNext !== undefined && failNext.length > 0) injected = { error: failNext.shift() };
    else if (this.#failAll.has(job.type)) injected = { error: this.#failAll.get(job.type) };
    const timeoutMs = registration.options.timeoutMs ?? job.timeout_ms;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const run = runExecutionChain(this.#middleware, snapshot, ctx, async () => {
        if (injected !== undefined) throw injected.error;
        return registration.handler(ctx);
      });
      const value =
        timeoutMs === undefined
          ? await run
          : await Promise.race([
              run,
              new Promise((_, reject) => {
                timer = setTimeout(() => {
                  const error = new Error(`Job exceeded its execution timeout of ${timeoutMs} ms.`);
                  error.name = 'timeout';
                  controller.abort(error);
                  reject(error);
                }, timeoutMs);
              }),
            ]);
      const final = value === undefined && resultSet ? result : value;
      this.transport.complete(job, final);
      const performance: Performance = {
        job: structuredClone(job),
        attempt: job.attempt,
        outcome: 'completed',
        result: final,
      };
      this.performed.push(performance);
      return performance;
    } catch (error) {
      this.transport.fail(job, describeError(error), {
        noRetry: options.inline === true || error instanceof DiscardError,
      });
      const performance: Performance = {
        job: structuredClone(job),
        attempt: job.attempt,
        outcome: 'failed',
        error,
      };
      this.performed.push(performance);
      if (options.inline) throw error;
      return performance;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Fake mode: runs runnable jobs FIFO (higher priority first) until none is
   * left, including jobs enqueued meanwhile and immediate retries of
   * failures. Inline mode: nothing to do.
   */
  async drain(options: DrainOptions = {}): Promise<DrainResult> {
    const result: DrainResult = { processed: 0, completed: 0, failed: 0 };
    if (this.mode === 'inline') return result;
    const maxJobs = options.maxJobs ?? 10_000;
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    const queues = options.queue === undefined ? undefined : [options.queue];
    while (result.processed < maxJobs) {
      if (Date.now() > deadline)
        throw new Error(`drain() timed out after ${result.processed} jobs.`);
      const [next] = this.transport.runnable(queues, options.withScheduled ?? false);
      if (next === undefined) break;
      const performance = await this.execute(next);
      result.processed++;
      if (performance.outcome === 'completed') result.completed++;
      else result.failed++;
    }
    return result;
  }

  /** Runs a handler directly with these args (SDK guidelines `perform`); resolves to its result. */
  async perform(
    type: string,
    args: unknown[] = [],
    options: { queue?: string; meta?: Obj } = {},
  ): Promise<unknown> {
    const job: Job = {
      specversion: '1.0',
      id: uuidv7(),
      type,
      queue: options.queue ?? 'default',
      args,
      meta: options.meta ?? {},
      state: 'available',
      attempt: 0,
    };
    const performance = await this.execute(job, { inline: true });
    return performance.result;
  }

  // ---------------------------------------------------------------- queries and assertions

  #matches(job: Job, filter: JobFilter): boolean {
    if (filter.type !== undefined && job.type !== filter.type) return false;
    if (filter.queue !== undefined && job.queue !== filter.queue) return false;
    if (filter.state !== undefined && job.state !== filter.state) return false;
    if (filter.args !== undefined && !isDeepStrictEqual(job.args, filter.args)) return false;
    if (filter.meta !== undefined) {
      for (const [key, value] of Object.entries(filter.meta)) {
        if (!isDeepStrictEqual(job.meta?.[key], value)) return false;
      }
    }
    return true;
  }

  /** Every job enqueued in this context (in order) matching the filter. */
  allEnqueued(filter: JobFilter = {}): Job[] {
    return this.transport
      .ordered()
      .filter((job) => this.#matches(job, filter))
      .map((job) => structuredClone(job));
  }

  #fail(message: string, jobs: Job[], operator: string): never {
    const list = jobs.length === 0 ? '  (none)' : jobs.map((j) => `  - ${describe(j)}`).join('\n');
    throw new AssertionError({ message: `${message}\nJobs in this context:\n${list}`, operator });
  }

  assertEnqueued(type: string, options: AssertEnqueuedOptions = {}): Job[] {
    const { count, ...filter } = options;
    const matching = this.allEnqueued({ ...filter, type });
    const ok = count === undefined ? matching.length > 0 : matching.length === count;
    if (!ok) {
      this.#fail(
        `Expected ${count === undefined ? 'at least one' : count} '${type}' job(s) matching ${JSON.stringify(filter)}, found ${matching.length}.`,
        this.transport.ordered(),
        'assertEnqueued',
      );
    }
    return matching;
  }

  refuteEnqueued(type: string, filter: Omit<JobFilter, 'type'> = {}): void {
    const matching = this.allEnqueued({ ...filter, type });
    if (matching.length > 0) {
      this.#fail(
        `Expected no '${type}' job matching ${JSON.stringify(filter)}, found ${matching.length}.`,
        matching,
        'refuteEnqueued',
      );
    }
  }

  /** Alias of refuteEnqueued (SDK guidelines name). */
  assertNotEnqueued(type: string, filter: Omit<JobFilter, 'type'> = {}): void {
    this.refuteEnqueued(type, filter);
  }

  #performed(
    type: string,
    filter: Omit<JobFilter, 'type'>,
    outcome?: Performance['outcome'],
  ): Performance[] {
    return this.performed.filter(
      (p) =>
        (outcome === undefined || p.outcome === outcome) &&
        this.#matches(p.job, { ...filter, type, state: undefined }),
    );
  }

  assertPerformed(
    type: string,
    filter: Omit<JobFilter, 'type'> & { count?: number } = {},
  ): Performance[] {
    const { count, ...rest } = filter;
    const matching = this.#performed(type, rest);
    if (count === undefined ? matching.length === 0 : matching.length !== count) {
      this.#fail(
        `Expected '${type}' to have been performed${count === undefined ? '' : ` ${count} time(s)`}, got ${matching.length}.`,
        this.performed.map((p) => p.job),
        'assertPerformed',
      );
    }
    return matching;
  }

  refutePerformed(type: string, filter: Omit<JobFilter, 'type'> = {}): void {
    const matching = this.#performed(type, filter);
    if (matching.length > 0)
      this.#fail(
        `Expected '${type}' not to have been performed, got ${matching.length}.`,
        matching.map((p) => p.job),
        'refutePerformed',
      );
  }

  assertCompleted(type: string, filter: Omit<JobFilter, 'type'> = {}): Job[] {
    const matching = this.allEnqueued({ ...filter, type, state: 'completed' });
    if (matching.length === 0)
      this.#fail(
        `Expected a completed '${type}' job.`,
        this.transport.ordered(),
        'assertCompleted',
      );
    return matching;
  }

  /** A failed job: `retryable` (failed, will retry) or `discarded`. */
  assertFailed(type: string, filter: Omit<JobFilter, 'type'> = {}): Job[] {
    const matching = this.allEnqueued({ ...filter, type }).filter(
      (j) => j.state === 'retryable' || j.state === 'discarded',
    );
    if (matching.length === 0)
      this.#fail(`Expected a failed '${type}' job.`, this.transport.ordered(), 'assertFailed');
    return matching;
  }

  assertJobState(id: string, state: JobState): void {
    const job = this.transport.jobs.get(id);
    if (job === undefined || job.state !== state) {
      this.#fail(
        `Expected job ${id} to be ${state}, it is ${job?.state ?? 'missing'}.`,
        job ? [job] : [],
        'assertJobState',
      );
    }
  }

  assertWorkflowCreated(filter: { type?: string; name?: string } = {}): Workflow {
    const found = [...this.transport.workflows.values()].find(
      (w) =>
        (filter.type === undefined || w.type === filter.type) &&
        (filter.name === undefined || w.name === filter.name),
    );
    if (found === undefined) {
      throw new AssertionError({
        message: `Expected a workflow matching ${JSON.stringify(filter)}; created: ${JSON.stringify([...this.transport.workflows.values()].map((w) => ({ type: w.type, name: w.name })))}`,
        operator: 'assertWorkflowCreated',
      });
    }
    return structuredClone(found);
  }

  /** Forgets every job, workflow, cron entry, execution and injected failure. */
  clearAll(): void {
    this.transport.jobs.clear();
    this.transport.workflows.clear();
    this.transport.crons.clear();
    this.transport.events.length = 0;
    this.transport.paused.clear();
    this.performed.length = 0;
    this.#failNext.clear();
    this.#failAll.clear();
  }

  /** Alias of clearAll (SDK guidelines name). */
  clear(): void {
    this.clearAll();
  }
}

// ---------------------------------------------------------------- mode switching

const stack: TestContext[] = [];
const scoped = new AsyncLocalStorage<TestContext>();

function current(): TestContext | undefined {
  return scoped.getStore() ?? stack.at(-1);
}

setTestTransportResolver(() => current()?.transport);

function requireCurrent(): TestContext {
  const context = current();
  if (context === undefined)
    throw new Error('No test mode is active: call testing.fake() or testing.inline() first.');
  return context;
}

export const testing = {
  /** Enters fake mode for the whole process (until restore()); returns the context. */
  fake(): TestContext {
    const context = new TestContext('fake');
    stack.push(context);
    return context;
  },
  /** Enters inline mode for the whole process (until restore()). */
  inline(): TestContext {
    const context = new TestContext('inline');
    stack.push(context);
    return context;
  },
  /** Leaves the innermost process-wide mode (all of them with `{ all: true }`). */
  restore(options: { all?: boolean } = {}): void {
    if (options.all) stack.length = 0;
    else stack.pop();
  },
  /** Runs `fn` in its own context, visible only to its async call tree (parallel-safe). */
  run<T>(mode: TestMode, fn: (context: TestContext) => Promise<T> | T): Promise<T> {
    const context = new TestContext(mode);
    return scoped.run(context, async () => fn(context));
  },
  current,
  assertEnqueued: (type: string, options?: AssertEnqueuedOptions) =>
    requireCurrent().assertEnqueued(type, options),
  refuteEnqueued: (type: string, filter?: Omit<JobFilter, 'type'>) =>
    requireCurrent().refuteEnqueued(type, filter),
  assertNotEnqueued: (type: string, filter?: Omit<JobFilter, 'type'>) =>
    requireCurrent().refuteEnqueued(type, filter),
  allEnqueued: (filter?: JobFilter) => requireCurrent().allEnqueued(filter),
  clearAll: () => requireCurrent().clearAll(),
  drain: (options?: DrainOptions) => requireCurrent().drain(options),
  assertPerformed: (type: string, filter?: Omit<JobFilter, 'type'> & { count?: number }) =>
    requireCurrent().assertPerformed(type, filter),
  refutePerformed: (type: string, filter?: Omit<JobFilter, 'type'>) =>
    requireCurrent().refutePerformed(type, filter),
  assertCompleted: (type: string, filter?: Omit<JobFilter, 'type'>) =>
    requireCurrent().assertCompleted(type, filter),
  assertFailed: (type: string, filter?: Omit<JobFilter, 'type'>) =>
    requireCurrent().assertFailed(type, filter),
  assertJobState: (id: string, state: JobState) => requireCurrent().assertJobState(id, state),
  assertWorkflowCreated: (filter?: { type?: string; name?: string }) =>
    requireCurrent().assertWorkflowCreated(filter),
  failNext: (type: string, error?: unknown) => requireCurrent().failNext(type, error),
  failAll: (type: string, error?: unknown) => requireCurrent().failAll(type, error),
  freezeTime: (at?: Date | number) => requireCurrent().freezeTime(at),
  advanceTime: (ms: number) => requireCurrent().advanceTime(ms),
  perform: (type: string, args?: unknown[]) => requireCurrent().perform(type, args),
} as const;
