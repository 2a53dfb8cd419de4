/**
 * An ordered middleware chain with the management operations of
 * ojs-middleware §4 (add, prepend, insertBefore, insertAfter, remove).
 * Middleware are identified by name. The enqueue chain runs in insertion
 * order; a middleware returns the (possibly modified) job to continue or
 * null to drop it (not an error), and throws to reject it.
 */
import type { JobRecord } from '@ojs/core';

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
}

/** Runs the enqueue chain; the id is restored if a middleware changed it (must not). */
export async function runEnqueueChain(
  chain: MiddlewareChain<EnqueueMiddleware>,
  job: JobRecord,
): Promise<JobRecord | null> {
  const fns = chain.list();
  const call = async (index: number, current: JobRecord): Promise<JobRecord | null> => {
    if (index >= fns.length) return current;
    const result = await fns[index]!(current, (j) => call(index + 1, j));
    if (result !== null && result.id !== job.id) result.id = job.id;
    return result;
  };
  return call(0, job);
}
