/**
 * Test modes and assertion helpers (ojs-testing, features §18).
 *
 *   const t = testing.fake();          // every OjsClient now talks to a private engine
 *   await app.signUp('ada@example.com');
 *   t.assertEnqueued('email.send', { args: ['ada@example.com'] });
 *   t.register('email.send', handler); // or t.useWorker(worker)
 *   await t.drain();
 *   t.assertCompleted('email.send');
 *   testing.restore();                 // back to the real backend
 *
 * Each context runs the real OJS engine (`@ojs/engine`) on a private
 * in-memory SQLite store (`@ojs/store-sqlite`, node:sqlite) through the
 * in-process transport, so validation, state rules, unique policies, retry
 * decisions and workflows are the engine's own: test mode and production
 * cannot disagree (decision 0087). Both packages are optional peer
 * dependencies loaded on first use, and node:sqlite needs Node >= 22.13;
 * without them the first call fails with an error saying so. Importing
 * `@ojs/sdk` never loads them.
 *
 * Modes are chosen explicitly, never from the environment:
 *
 * - fake (default): jobs wait in the engine; the enqueue middleware runs (it
 *   runs in the client); handlers and execution middleware run only in
 *   `drain()`, which claims jobs one at a time from the engine and settles
 *   each with ACK or NACK, so the engine decides retries, backoff and
 *   discards. When nothing is runnable and a retry is due later, drain moves
 *   the context's clock to it (retries happen within one drain, without
 *   sleeping); scheduled jobs wait for their time (freezeTime/advanceTime)
 *   unless `withScheduled`, which moves the clock to them too. Workflows
 *   run as on a server; cron entries are stored, not fired.
 * - inline: enqueue runs the handler at once, through both chains, and
 *   resolves to the completed job (result included); a handler error
 *   rejects the enqueue (the job is left `discarded` with the error); no
 *   retries; `scheduled_at` is ignored. `drain()` is a no-op.
 *
 * Assertions are synchronous: the context keeps a copy of the engine's jobs
 * and workflows, read again after every operation of its transport and at
 * the end of drain().
 *
 * Isolation: `testing.fake()` / `.inline()` install a context for the whole
 * process until `restore()` (nesting is a stack). For tests that run in
 * parallel in one process use `testing.run('fake', async (t) => ...)`,
 * which scopes the context to that async call tree.
 */
import { AssertionError } from 'node:assert';
import { AsyncLocalStorage } from 'node:async_hooks';
import { isDeepStrictEqual } from 'node:util';
import type { Engine, EngineOptions } from '@ojs/engine';
import { JobTimeoutError } from './errors.ts';
import type { EventStreamOptions, EventStreamQuery } from './event-stream.ts';
import { InProcessTransport } from './in-process.ts';
import { type ExecutionMiddleware, jobContext, runExecutionChain } from './middleware.ts';
import { setTestTransportResolver } from './test-hook.ts';
import type {
  Job,
  JobEnvelope,
  JobState,
  OjsEvent,
  PushResult,
  Transport,
  Workflow,
} from './types.ts';
import { uuidv7 } from './uuid.ts';
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
  /** Also run scheduled jobs that are not due yet (the clock moves to them). */
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

type Obj = Record<string, unknown>;
type Registration = { handler: JobHandler<unknown[]>; options: HandlerOptions };

/** One context's engine on its private in-memory store, and the transport over it. */
interface Backend {
  engine: Engine;
  transport: InProcessTransport;
  close(): Promise<void>;
}

/**
 * What the test modes use of the two peers, declared here: a type import of
 * @ojs/store-sqlite would compile its sources (import.meta) into the SDK's
 * CommonJS build.
 */
type EngineModule = { Engine: new (options: EngineOptions) => Engine };
type SqliteModule = {
  SqliteStore: new (options: {
    path: string;
  }) => EngineOptions['store'] & { init(): Promise<void>; close(): Promise<void> };
};

/** The most jobs a context's synchronous copy holds (a test never gets near it). */
const MIRRORED_JOBS = 100_000;

/**
 * node:sqlite is unflagged from Node 22.13 (and 23.4): older versions get a
 * clear error instead of a fallback engine, which would be a second
 * implementation of the rules again.
 */
function requireSqlite(): void {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  if (major > 23 || (major === 23 && minor >= 4) || (major === 22 && minor >= 13)) return;
  throw new Error(
    `The SDK's test modes run the OJS engine on node:sqlite, which needs Node >= 22.13 (this is ${process.version}).`,
  );
}

async function openBackend(clock: { now(): number }): Promise<Backend> {
  requireSqlite();
  let engineModule: EngineModule;
  let sqliteModule: SqliteModule;
  try {
    // Names in variables: bundlers and the CommonJS emit must not resolve
    // these optional peers when the SDK itself is loaded.
    const engineName = '@ojs/engine';
    const sqliteName = '@ojs/store-sqlite';
    engineModule = (await import(engineName)) as EngineModule;
    sqliteModule = (await import(sqliteName)) as SqliteModule;
  } catch (error) {
    throw new Error(
      "The SDK's test modes run the real OJS engine: npm install --save-dev @ojs/engine @ojs/store-sqlite",
      { cause: error },
    );
  }
  const store = new sqliteModule.SqliteStore({ path: ':memory:' });
  await store.init();
  // No start(): no background timers; drain() promotes due jobs itself.
  const engine = new engineModule.Engine({ store, clock, testMode: true });
  return {
    engine,
    transport: new InProcessTransport(engine),
    async close() {
      await engine.stop();
      await store.close();
    },
  };
}

function describe(job: Job): string {
  return `${job.type}(${JSON.stringify(job.args)}) queue=${job.queue} state=${job.state} meta=${JSON.stringify(job.meta)}`;
}

/** When a retryable (or, asked for, scheduled) job next becomes due, in ms. */
function dueAt(job: Job, withScheduled: boolean): number | undefined {
  if (job.state === 'retryable') {
    const next = (job as { next_attempt_at?: string }).next_attempt_at ?? job.scheduled_at;
    return next === undefined ? undefined : Date.parse(next);
  }
  if (withScheduled && job.state === 'scheduled' && job.scheduled_at !== undefined) {
    return Date.parse(job.scheduled_at);
  }
  return undefined;
}

/** The transport methods a context forwards to its in-process transport. */
const FORWARDED = new Set(
  Object.getOwnPropertyNames(InProcessTransport.prototype).filter((name) => name !== 'constructor'),
);

/** One test's engine with its handlers, clock and assertions. */
export class TestContext {
  readonly mode: TestMode;
  /** What every OjsClient and OjsWorker uses while this context is active. */
  readonly transport: Transport;
  readonly performed: Performance[] = [];
  readonly #handlers = new Map<string, Registration>();
  #middleware: readonly ExecutionMiddleware[] = [];
  readonly #failNext = new Map<string, unknown[]>();
  readonly #failAll = new Map<string, unknown>();
  #frozenAt: number | undefined;
  #offsetMs = 0;
  #backend: Promise<Backend> | undefined;
  /** The engine's jobs (enqueue order) and the workflows created here, as last read. */
  #jobs: Job[] = [];
  readonly #workflows = new Map<string, Workflow>();
  /** Reads of the engine started / the newest applied: an older read never overwrites a newer one. */
  #reads = 0;
  #applied = 0;

  constructor(mode: TestMode) {
    this.mode = mode;
    this.transport = this.#forwarding();
  }

  // ---------------------------------------------------------------- the engine

  /** The engine, opened on first use (the test modes' optional peers load here). */
  #open(): Promise<Backend> {
    if (this.#backend === undefined) {
      this.#backend = openBackend({ now: () => this.now() });
      // Handled here so a context that never gets used reports nothing; callers still see the error.
      this.#backend.catch(() => {});
    }
    return this.#backend;
  }

  /** A Transport whose every call waits for the engine, then refreshes the assertions' copy. */
  #forwarding(): Transport {
    return new Proxy({} as Transport, {
      get: (_target, name) => {
        if (name === 'kind') return this.mode;
        if (name === 'abortableFetch') return true;
        if (typeof name !== 'string' || !FORWARDED.has(name)) return undefined;
        if (name === 'streamEvents') {
          const open = () => this.#open();
          return async function* (query: EventStreamQuery, options?: EventStreamOptions) {
            yield* (await open()).transport.streamEvents(query, options) as AsyncIterable<OjsEvent>;
          };
        }
        return async (...args: unknown[]) => {
          const { transport } = await this.#open();
          try {
            if (this.mode === 'inline' && (name === 'push' || name === 'pushBatch')) {
              return await this.#inlinePush(transport, args[0] as JobEnvelope | JobEnvelope[]);
            }
            if (this.mode === 'inline' && name === 'activateJob') {
              return await this.#runInline(transport, await transport.activateJob(String(args[0])));
            }
            const call = (transport as unknown as Record<string, (...a: unknown[]) => unknown>)[
              name
            ]!;
            const result = await call.apply(transport, args);
            if (name === 'createWorkflow') {
              const workflow = result as Workflow;
              this.#workflows.set(workflow.id, workflow);
            }
            return result;
          } finally {
            await this.#refresh();
          }
        };
      },
    });
  }

  /** Reads every job, and the workflows created here, for the synchronous assertions. */
  async #refresh(): Promise<void> {
    const { engine, transport } = await this.#open();
    const read = ++this.#reads;
    const page = await engine.jobs.list({
      filter: {},
      limit: MIRRORED_JOBS,
      order: 'asc',
      countTotal: false,
    });
    const workflows = await Promise.all(
      [...this.#workflows.keys()].map((id) => transport.getWorkflow(id).catch(() => undefined)),
    );
    if (read < this.#applied) return;
    this.#applied = read;
    this.#jobs = page.jobs.map((record) => structuredClone(engine.wire.job(record)) as Job);
    for (const workflow of workflows) {
      if (workflow !== undefined) this.#workflows.set(workflow.id, workflow);
    }
  }

  /** Closes the engine and its store (restore() and the end of testing.run do). */
  async close(): Promise<void> {
    const backend = this.#backend;
    this.#backend = undefined;
    if (backend !== undefined) await (await backend.catch(() => undefined))?.close();
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

  /** The context's clock: the engine's too (timestamps, schedules, backoff, leases). */
  now(): number {
    return (this.#frozenAt ?? Date.now()) + this.#offsetMs;
  }

  /** Stops the clock (at `at`, default now). */
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

  #registration(type: string): Registration {
    const registration = this.#handlers.get(type);
    if (registration === undefined) {
      throw new Error(
        `No handler registered for job type '${type}' in the ${this.mode} test context (use register() or useWorker()).`,
      );
    }
    return registration;
  }

  /** The fetch declaration that limits claims to the types this context can run. */
  #declared(): { type: string; versions: string }[] {
    return [...this.#handlers].map(([type, { options }]) => ({
      type,
      versions: options.versions ?? '*',
    }));
  }

  /** Runs one job through the execution middleware and its handler (failures injected first). */
  async #invoke(job: Job, transport?: InProcessTransport): Promise<Performance> {
    const registration = this.#registration(job.type);
    const controller = new AbortController();
    const { ctx, result } = jobContext(job, {
      workerId: `test-${this.mode}`,
      signal: controller.signal,
      heartbeat: async () => {},
      // Stored by the engine (clamped, never lowered) when the job is in it; perform()'s is not.
      progress: async (value, message, data) => {
        await transport?.progress(job.id, {
          progress: value,
          ...(message === undefined ? {} : { message }),
          ...(data === undefined ? {} : { data }),
        });
      },
      log: () => {},
    });
    const failNext = this.#failNext.get(job.type);
    let injected: { error: unknown } | undefined;
    if (failNext !== undefined && failNext.length > 0) injected = { error: failNext.shift() };
    else if (this.#failAll.has(job.type)) injected = { error: this.#failAll.get(job.type) };
    const timeoutMs = registration.options.timeoutMs ?? job.timeout_ms;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const run = runExecutionChain(this.#middleware, job, ctx, async () => {
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
                  const error = new JobTimeoutError(timeoutMs);
                  controller.abort(error);
                  reject(error);
                }, timeoutMs);
              }),
            ]);
      const stored = result();
      const final = value === undefined && stored.set ? stored.value : value;
      return { job, attempt: job.attempt, outcome: 'completed', result: final };
    } catch (error) {
      return { job, attempt: job.attempt, outcome: 'failed', error };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Runs a claimed job and settles it with ACK or NACK, as a worker does:
   * the engine decides what a failure means (retry, backoff, discard).
   * Inline runs never retry.
   */
  async #execute(transport: InProcessTransport, job: Job, inline = false): Promise<Performance> {
    const performance = await this.#invoke(job, transport);
    const fence = { job_id: job.id, worker_id: `test-${this.mode}`, attempt: job.attempt };
    if (performance.outcome === 'completed') {
      await transport.ack({ ...fence, result: performance.result });
    } else {
      const error = describeError(performance.error);
      if (inline) error.retryable = false;
      await transport.nack({ ...fence, error });
    }
    performance.job = await transport.getJob(job.id);
    this.performed.push(performance);
    return performance;
  }

  /** Claims the next job of a registered type from `queues` (the engine's order). */
  async #claim(transport: InProcessTransport, queues: string[]): Promise<Job | undefined> {
    if (queues.length === 0 || this.#handlers.size === 0) return undefined;
    const [job] = await transport.fetchJobs({
      queues,
      count: 1,
      worker_id: `test-${this.mode}`,
      handlers: this.#declared(),
    });
    return job;
  }

  async #inlinePush(
    transport: InProcessTransport,
    envelopes: JobEnvelope | JobEnvelope[],
  ): Promise<PushResult | Job[]> {
    // Inline runs now: a schedule would only keep the job from running.
    const now = (envelope: JobEnvelope): JobEnvelope => {
      const { scheduled_at: _ignored, ...rest } = envelope;
      return rest;
    };
    if (Array.isArray(envelopes)) {
      const jobs = await transport.pushBatch(envelopes.map(now));
      const out: Job[] = [];
      for (const job of jobs) out.push(await this.#runInline(transport, job));
      return out;
    }
    const pushed = await transport.push(now(envelopes));
    if (pushed.status !== 'created' || pushed.job === null) return pushed;
    return { job: await this.#runInline(transport, pushed.job), status: 'created' };
  }

  /** Inline mode: claims this available job and runs it now; a failure rejects. */
  async #runInline(transport: InProcessTransport, job: Job): Promise<Job> {
    if (job.state !== 'available') return job;
    this.#registration(job.type);
    const [claimed] = await transport.fetchJobs({
      queues: [job.queue],
      count: 1,
      worker_id: 'test-inline',
      handlers: [{ type: job.type, versions: '*' }],
    });
    if (claimed === undefined) return job;
    const performance = await this.#execute(transport, claimed, true);
    if (performance.outcome === 'failed') throw performance.error;
    return performance.job;
  }

  /**
   * Fake mode: runs runnable jobs of registered types one at a time, in the
   * order the engine hands them out (queues by name), until none is left,
   * including jobs enqueued meanwhile, workflow steps and retries (the clock
   * moves to a retry that is due later). A job of a type with no handler
   * left available at the end is an error. Inline mode: nothing to do.
   */
  async drain(options: DrainOptions = {}): Promise<DrainResult> {
    const result: DrainResult = { processed: 0, completed: 0, failed: 0 };
    if (this.mode === 'inline') return result;
    const { engine, transport } = await this.#open();
    const maxJobs = options.maxJobs ?? 10_000;
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    const wanted = (queue: string) => options.queue === undefined || queue === options.queue;
    let open: string[] = [];
    try {
      while (result.processed < maxJobs) {
        if (Date.now() > deadline)
          throw new Error(`drain() timed out after ${result.processed} jobs.`);
        await engine.promoteDueJobs();
        const queues = await engine.listQueues();
        open = queues.filter((q) => !q.paused && wanted(q.name)).map((q) => q.name);
        const job = await this.#claim(transport, open);
        if (job === undefined) {
          if (await this.#skipToNextDue(open, options.withScheduled ?? false)) continue;
          break;
        }
        const performance = await this.#execute(transport, job);
        result.processed++;
        if (performance.outcome === 'completed') result.completed++;
        else result.failed++;
      }
    } finally {
      await this.#refresh();
    }
    const stranded = this.#jobs.find(
      (job) =>
        job.state === 'available' && open.includes(job.queue) && !this.#handlers.has(job.type),
    );
    if (stranded !== undefined && result.processed < maxJobs) this.#registration(stranded.type);
    return result;
  }

  /** Moves the clock to the next retry (or scheduled job) of a runnable type, if not due yet; false if none. */
  async #skipToNextDue(queues: string[], withScheduled: boolean): Promise<boolean> {
    await this.#refresh();
    const now = this.now();
    let next: number | undefined;
    for (const job of this.#jobs) {
      if (!queues.includes(job.queue) || !this.#handlers.has(job.type)) continue;
      const due = dueAt(job, withScheduled);
      if (due !== undefined && (next === undefined || due < next)) next = due;
    }
    if (next === undefined) return false;
    // A job that fell due since the last promotion only needs the next one.
    if (next > now) this.advanceTime(next - now);
    return true;
  }

  /** Runs a handler directly with these args (SDK guidelines `perform`); resolves to its result. */
  async perform(
    type: string,
    args: unknown[] = [],
    options: { queue?: string; meta?: Obj } = {},
  ): Promise<unknown> {
    // Not stored: the job never reaches the engine, so nothing settles it.
    const job: Job = {
      specversion: '1.0',
      id: uuidv7(),
      type,
      queue: options.queue ?? 'default',
      args,
      meta: options.meta ?? {},
      state: 'active',
      attempt: 1,
    };
    const performance = await this.#invoke(job);
    this.performed.push(performance);
    if (performance.outcome === 'failed') throw performance.error;
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
    return this.#jobs
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
        this.#jobs,
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
      this.#fail(`Expected a completed '${type}' job.`, this.#jobs, 'assertCompleted');
    return matching;
  }

  /** A failed job: `retryable` (failed, will retry) or `discarded`. */
  assertFailed(type: string, filter: Omit<JobFilter, 'type'> = {}): Job[] {
    const matching = this.allEnqueued({ ...filter, type }).filter(
      (j) => j.state === 'retryable' || j.state === 'discarded',
    );
    if (matching.length === 0)
      this.#fail(`Expected a failed '${type}' job.`, this.#jobs, 'assertFailed');
    return matching;
  }

  assertJobState(id: string, state: JobState): void {
    const job = this.#jobs.find((j) => j.id === id);
    if (job === undefined || job.state !== state) {
      this.#fail(
        `Expected job ${id} to be ${state}, it is ${job?.state ?? 'missing'}.`,
        job ? [job] : [],
        'assertJobState',
      );
    }
  }

  assertWorkflowCreated(filter: { type?: string; name?: string } = {}): Workflow {
    const found = [...this.#workflows.values()].find(
      (w) =>
        (filter.type === undefined || w.type === filter.type) &&
        (filter.name === undefined || w.name === filter.name),
    );
    if (found === undefined) {
      throw new AssertionError({
        message: `Expected a workflow matching ${JSON.stringify(filter)}; created: ${JSON.stringify([...this.#workflows.values()].map((w) => ({ type: w.type, name: w.name })))}`,
        operator: 'assertWorkflowCreated',
      });
    }
    return structuredClone(found);
  }

  /** Forgets every job, workflow, cron entry, event, execution and injected failure. */
  clearAll(): void {
    this.#jobs = [];
    this.#workflows.clear();
    // A read of the engine still in flight must not bring the old jobs back.
    this.#applied = ++this.#reads;
    // The engine's reset (jobs, workflows, cron entries, events, paused
    // queues) runs before the next call of the transport, which waits for it.
    if (this.#backend !== undefined) {
      this.#backend = this.#backend.then(async (backend) => {
        await backend.engine.reset();
        return backend;
      });
      this.#backend.catch(() => {});
    }
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
    // Each context's engine closes in the background: nothing waits on it.
    const left = options.all ? stack.splice(0) : stack.splice(-1);
    for (const context of left) void context.close();
  },
  /** Runs `fn` in its own context, visible only to its async call tree (parallel-safe). */
  run<T>(mode: TestMode, fn: (context: TestContext) => Promise<T> | T): Promise<T> {
    const context = new TestContext(mode);
    return scoped.run(context, async () => {
      try {
        return await fn(context);
      } finally {
        await context.close();
      }
    });
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
