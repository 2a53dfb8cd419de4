/**
 * Middleware (ojs-middleware, features §10): an enqueue chain run by the
 * client before a job is sent, and an execution chain run by the worker
 * around the handler.
 *
 * Identity: every middleware is registered under a string name, and
 * `insertBefore` / `insertAfter` / `remove` take that name. Names need not
 * be unique (duplicates are allowed); the name operations act on the first
 * entry with the name.
 *
 * - Enqueue: `async (job, next) => next(job)` in insertion order. Return the
 *   (possibly modified) envelope from `next` to continue, return `null` to
 *   drop the job (not an error: the caller gets `null`), throw to reject the
 *   enqueue. The `id` cannot be changed (it is restored if a middleware does).
 * - Execution: `async (job, ctx, next) => next()`, an onion: the first added
 *   is the outermost. Call `next()` once to continue (a second call throws),
 *   or not at all to short-circuit; what the chain returns becomes the
 *   job's result. Errors propagate outward to the worker, which reports them.
 *
 * Each call takes a snapshot of the chain, so changing it never affects a job
 * already flowing through. The worker freezes its execution chain at start().
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomFillSync } from 'node:crypto';
import type { Job, JobEnvelope } from './types.ts';

export type EnqueueNext = (job: JobEnvelope) => Promise<JobEnvelope | null>;
export type EnqueueMiddleware = (
  job: JobEnvelope,
  next: EnqueueNext,
) => Promise<JobEnvelope | null> | JobEnvelope | null;

/** The per-execution context handlers and execution middleware receive. */
export interface JobContext<Args extends unknown[] = unknown[]> {
  readonly job: Job<Args>;
  readonly args: Args;
  readonly id: string;
  readonly type: string;
  readonly queue: string;
  /** 1 on the first execution. */
  readonly attempt: number;
  readonly maxAttempts: number | undefined;
  readonly workerId: string;
  /** Aborted on cancellation, execution timeout, lost lease or shutdown; `reason` says which. */
  readonly signal: AbortSignal;
  /** Workflow data (features §3.3), when the job belongs to one. */
  readonly workflowId: string | undefined;
  /** Chain: `[previous result]`; graph: dependency results in `dependsOn` order. */
  readonly parentResults: unknown;
  /** Graph workflows: this step's id, and its dependencies' results by step id. */
  readonly stepId?: string;
  readonly parentResultsByStep?: Record<string, unknown>;
  /** Mutable per-execution map shared by middleware and the handler. */
  readonly metadata: Record<string, unknown>;
  /** Sets the result reported on ACK (used when the chain returns undefined). */
  setResult(value: unknown): void;
  /** Sends a heartbeat now, extending the lease. */
  heartbeat(): Promise<void>;
  /**
   * Reports progress (0.0 to 1.0, optional message and data) of this job;
   * it also extends the lease. Resolves once the server stored it.
   */
  progress(value: number, message?: string, data?: Record<string, unknown>): Promise<void>;
  log(
    level: 'debug' | 'info' | 'warn' | 'error',
    message: string,
    fields?: Record<string, unknown>,
  ): void;
}

/** What a runner (the worker, or the test modes' drain) supplies to a job's context. */
export interface JobContextRunner {
  readonly workerId: string;
  readonly signal: AbortSignal;
  heartbeat: JobContext['heartbeat'];
  progress: JobContext['progress'];
  log: JobContext['log'];
}

/**
 * The one place a handler's context is built from a fetched job, so the worker and the
 * test modes hand handlers the same fields. `result()` reads what `setResult` stored.
 */
export function jobContext(
  job: Job,
  runner: JobContextRunner,
): { ctx: JobContext; result(): { set: boolean; value: unknown } } {
  let value: unknown;
  let set = false;
  const ctx: JobContext = {
    job,
    args: job.args,
    id: job.id,
    type: job.type,
    queue: job.queue,
    attempt: job.attempt,
    maxAttempts: job.max_attempts,
    workerId: runner.workerId,
    signal: runner.signal,
    workflowId: job.workflow_id,
    parentResults: job.parent_results,
    stepId: job.workflow_step_id,
    parentResultsByStep: job.parent_results_by_step,
    metadata: {},
    setResult: (result) => {
      value = result;
      set = true;
    },
    heartbeat: runner.heartbeat,
    progress: runner.progress,
    log: runner.log,
  };
  return { ctx, result: () => ({ set, value }) };
}

export type ExecutionNext = () => Promise<unknown>;
export type ExecutionMiddleware = (
  job: Job,
  ctx: JobContext,
  next: ExecutionNext,
) => Promise<unknown> | unknown;

interface Entry<M> {
  readonly name: string;
  readonly fn: M;
}

/** An ordered, named middleware list with the ojs-middleware §4 operations. */
export class MiddlewareChain<M> {
  #entries: readonly Entry<M>[] = [];
  #frozenBy: string | undefined;

  #check(): void {
    if (this.#frozenBy !== undefined) {
      throw new Error(`The middleware chain is frozen: ${this.#frozenBy}.`);
    }
  }

  #index(name: string): number {
    const index = this.#entries.findIndex((e) => e.name === name);
    if (index < 0) throw new Error(`No middleware named '${name}' in the chain.`);
    return index;
  }

  /** Appends (runs after every middleware added before it). */
  add(name: string, fn: M): this {
    this.#check();
    this.#entries = [...this.#entries, { name, fn }];
    return this;
  }

  /** Inserts at the front (runs before every middleware already there). */
  prepend(name: string, fn: M): this {
    this.#check();
    this.#entries = [{ name, fn }, ...this.#entries];
    return this;
  }

  /** Inserts so that `fn` runs immediately before `existing`. */
  insertBefore(existing: string, name: string, fn: M): this {
    this.#check();
    const index = this.#index(existing);
    this.#entries = [...this.#entries.slice(0, index), { name, fn }, ...this.#entries.slice(index)];
    return this;
  }

  /** Inserts so that `fn` runs immediately after `existing`. */
  insertAfter(existing: string, name: string, fn: M): this {
    this.#check();
    const index = this.#index(existing) + 1;
    this.#entries = [...this.#entries.slice(0, index), { name, fn }, ...this.#entries.slice(index)];
    return this;
  }

  /** Removes the first middleware with this name; throws if there is none. */
  remove(name: string): this {
    this.#check();
    const index = this.#index(name);
    this.#entries = [...this.#entries.slice(0, index), ...this.#entries.slice(index + 1)];
    return this;
  }

  has(name: string): boolean {
    return this.#entries.some((e) => e.name === name);
  }

  /** Names in execution order. */
  names(): string[] {
    return this.#entries.map((e) => e.name);
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Refuses further changes (the worker calls this at start()). */
  freeze(reason: string): void {
    this.#frozenBy = reason;
  }

  unfreeze(): void {
    this.#frozenBy = undefined;
  }

  /** A snapshot of the middleware in order. */
  list(): readonly M[] {
    return this.#entries.map((e) => e.fn);
  }
}

/** Runs the enqueue chain on an envelope; resolves to the envelope to send or null (dropped). */
export async function runEnqueueChain(
  chain: MiddlewareChain<EnqueueMiddleware>,
  envelope: JobEnvelope,
): Promise<JobEnvelope | null> {
  const fns = chain.list();
  const id = envelope.id;
  const call = async (index: number, current: JobEnvelope): Promise<JobEnvelope | null> => {
    if (index >= fns.length) return current;
    const result = await fns[index]!(current, (job) => call(index + 1, job));
    if (result === undefined) {
      throw new Error(
        'An enqueue middleware returned undefined; return the job from next(job), or null to drop it.',
      );
    }
    if (result !== null && result.id !== id) result.id = id;
    return result;
  };
  return call(0, envelope);
}

/** Runs the execution chain (onion) around `handler`. */
export function runExecutionChain(
  chain: readonly ExecutionMiddleware[],
  job: Job,
  ctx: JobContext,
  handler: () => Promise<unknown>,
): Promise<unknown> {
  const call = async (index: number): Promise<unknown> => {
    if (index >= chain.length) return handler();
    let called = false;
    return chain[index]!(job, ctx, () => {
      if (called) return Promise.reject(new Error('next() was called more than once.'));
      called = true;
      return call(index + 1);
    });
  };
  return call(0);
}

// ---------------------------------------------------------------- trace context (built-in)

/** W3C trace context carried in `meta.traceparent` / `meta.tracestate`. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const traceStorage = new AsyncLocalStorage<TraceContext>();

function randomHex(bytes: number): string {
  const buffer = new Uint8Array(bytes);
  // All-zero ids are invalid (W3C): retry in that (astronomically unlikely) case.
  do randomFillSync(buffer);
  while (buffer.every((b) => b === 0));
  return Array.from(buffer, (b) => b.toString(16).padStart(2, '0')).join('');
}

export function parseTraceparent(
  value: unknown,
): { version: string; traceId: string; parentId: string; flags: string } | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (match === null || match[1] === 'ff') return undefined;
  if (/^0+$/.test(match[2]!) || /^0+$/.test(match[3]!)) return undefined;
  return { version: match[1]!, traceId: match[2]!, parentId: match[3]!, flags: match[4]! };
}

/** A new traceparent: a child of `parent` when given, else a new sampled root. */
export function newTraceparent(parent?: string): string {
  const parsed = parseTraceparent(parent);
  const traceId = parsed?.traceId ?? randomHex(16);
  const flags = parsed?.flags ?? '01';
  return `00-${traceId}-${randomHex(8)}-${flags}`;
}

/** The trace context of the job being executed (set by `traceContextExecution`), if any. */
export function currentTraceContext(): TraceContext | undefined {
  return traceStorage.getStore();
}

/** Runs `fn` with `context` as the current trace context (e.g. from an incoming HTTP request). */
export function withTraceContext<T>(context: TraceContext, fn: () => T): T {
  return traceStorage.run(context, fn);
}

export interface TraceContextOptions {
  /** Where the producer's current context comes from (default: the job being executed, if any). */
  current?: () => TraceContext | undefined;
  /** Start a new root trace when there is no current context (default true). */
  createRoot?: boolean;
}

/**
 * Enqueue middleware: writes `meta.traceparent` (and `tracestate`) unless
 * the job already has one. The context is the current one (inside a
 * handler: the executing job's, so follow-up jobs join its trace), else a
 * new root.
 */
export function traceContextEnqueue(options: TraceContextOptions = {}): EnqueueMiddleware {
  const current = options.current ?? currentTraceContext;
  const createRoot = options.createRoot ?? true;
  return (job, next) => {
    if (parseTraceparent(job.meta.traceparent) === undefined) {
      const context = current();
      if (context !== undefined) {
        job.meta = { ...job.meta, traceparent: newTraceparent(context.traceparent) };
        if (context.tracestate !== undefined) job.meta.tracestate = context.tracestate;
      } else if (createRoot) {
        job.meta = { ...job.meta, traceparent: newTraceparent() };
      }
    }
    return next(job);
  };
}

/**
 * Execution middleware: extracts `meta.traceparent`, starts a child span id
 * for this execution (in `ctx.metadata.traceparent`) and makes it the current
 * context while the handler runs, so jobs it enqueues continue the trace.
 */
export function traceContextExecution(): ExecutionMiddleware {
  return (job, ctx, next) => {
    const incoming = parseTraceparent(job.meta?.traceparent);
    if (incoming === undefined) return next();
    const context: TraceContext = { traceparent: newTraceparent(job.meta.traceparent as string) };
    if (typeof job.meta.tracestate === 'string') context.tracestate = job.meta.tracestate;
    ctx.metadata.traceparent = context.traceparent;
    ctx.metadata.trace_id = incoming.traceId;
    ctx.metadata.parent_span_id = incoming.parentId;
    return traceStorage.run(context, next);
  };
}

/** Both halves of the trace-context middleware, for `client` and `worker`. */
export const traceContext = {
  enqueue: traceContextEnqueue,
  execution: traceContextExecution,
  current: currentTraceContext,
  run: withTraceContext,
} as const;
