/**
 * An ordered middleware chain with the management operations of
 * ojs-middleware §4 (add, prepend, insertBefore, insertAfter, remove).
 * Middleware are identified by name. The enqueue chain runs in insertion
 * order; a middleware returns the (possibly modified) job to continue or
 * null to drop it (not an error), and throws to reject it.
 */
import { type JobRecord, OjsError } from '@ojs/core';

export type EnqueueMiddleware = (
  job: JobRecord,
  next: (job: JobRecord) => Promise<JobRecord | null>,
) => Promise<JobRecord | null>;

interface Entry<M> {
  name: string;
  fn: M;
}

export class MiddlewareChain<M> {
  #entries: Entry<M>[] = [];
  /**
   * How long one job may take through the whole chain before it is refused
   * with a 500 (0: no bound). A hook that hangs must not hold the request
   * forever, nor let the job through.
   */
  timeoutMs = 0;

  #index(name: string): number {
    const index = this.#entries.findIndex((e) => e.name === name);
    if (index < 0) throw new Error(`No middleware named '${name}' in the chain.`);
    return index;
  }

  add(name: string, fn: M): this {
    this.#entries = [...this.#entries, { name, fn }];
    return this;
  }

  prepend(name: string, fn: M): this {
    this.#entries = [{ name, fn }, ...this.#entries];
    return this;
  }

  insertBefore(existing: string, name: string, fn: M): this {
    const index = this.#index(existing);
    this.#entries = [...this.#entries.slice(0, index), { name, fn }, ...this.#entries.slice(index)];
    return this;
  }

  insertAfter(existing: string, name: string, fn: M): this {
    const index = this.#index(existing) + 1;
    this.#entries = [...this.#entries.slice(0, index), { name, fn }, ...this.#entries.slice(index)];
    return this;
  }

  remove(name: string): this {
    this.#index(name);
    this.#entries = this.#entries.filter((e) => e.name !== name);
    return this;
  }

  get size(): number {
    return this.#entries.length;
  }

  names(): string[] {
    return this.#entries.map((e) => e.name);
  }

  /** A snapshot: changes made while a job flows through do not affect it. */
  list(): readonly M[] {
    return this.#entries.map((e) => e.fn);
  }

  /** A snapshot of the names and middleware, in chain order. */
  entries(): readonly Readonly<Entry<M>>[] {
    return this.#entries;
  }
}

/**
 * What a middleware threw, as the error the request answers: an OjsError
 * as it is; an error that carries its own string `code` and HTTP `status`
 * (a hook module that imports nothing) as an OjsError with them; anything
 * else as a 500 naming the middleware, never a silent success.
 */
export function middlewareError(name: string, error: unknown): OjsError {
  if (error instanceof OjsError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const message = typeof e.message === 'string' ? e.message : String(error);
  if (
    typeof e.code === 'string' &&
    /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(e.code) &&
    typeof e.status === 'number' &&
    Number.isInteger(e.status) &&
    e.status >= 400 &&
    e.status <= 599
  ) {
    const details: Record<string, unknown> =
      typeof e.details === 'object' && e.details !== null && !Array.isArray(e.details)
        ? { ...(e.details as Record<string, unknown>) }
        : {};
    const after = e.retryAfterSeconds ?? e.retry_after_seconds;
    if (typeof after === 'number') details.retry_after_seconds = after;
    details.hook ??= name;
    return new OjsError(e.code, message, details, undefined, {
      status: e.status,
      ...(typeof e.retryable === 'boolean' ? { retryable: e.retryable } : {}),
    });
  }
  return new OjsError('internal_error', `Enqueue hook '${name}' failed: ${message}`, {
    hook: name,
  });
}

/**
 * Runs the enqueue chain; the id is restored if a middleware changed it
 * (must not). Whatever a middleware throws becomes an OjsError
 * (`middlewareError`), and a chain slower than `chain.timeoutMs` is a 500.
 */
export async function runEnqueueChain(
  chain: MiddlewareChain<EnqueueMiddleware>,
  job: JobRecord,
): Promise<JobRecord | null> {
  const entries = chain.entries();
  const call = async (index: number, current: JobRecord): Promise<JobRecord | null> => {
    if (index >= entries.length) return current;
    const { name, fn } = entries[index]!;
    let result: JobRecord | null;
    try {
      result = await fn(current, (j) => call(index + 1, j));
    } catch (error) {
      throw middlewareError(name, error);
    }
    if (result !== null && result.id !== job.id) result.id = job.id;
    return result;
  };
  const timeoutMs = chain.timeoutMs;
  if (timeoutMs <= 0 || entries.length === 0) return call(0, job);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new OjsError(
            'internal_error',
            `Enqueue hooks (${chain.names().join(', ')}) did not answer within ${timeoutMs} ms; the job was not enqueued.`,
            { timeout_ms: timeoutMs },
          ),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([call(0, job), late]);
  } finally {
    clearTimeout(timer);
  }
}
