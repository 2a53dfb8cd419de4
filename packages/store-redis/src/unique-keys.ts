/**
 * Unique keys as one batch of inserts sees them (insertJobs, and the new
 * jobs of a commit): each key's holder as read before the batch, then the
 * jobs of the batch itself as they take keys, so a later job of the batch
 * meets an earlier one as SQLite's transaction would. The first time a key
 * is looked at, the apply call is guarded on its holder as read: a holder
 * that changed in between makes the batch read and decide again.
 */
import { type JobRecord, uniqueConflicts } from '@ojs/core';
import type { Ops } from './scripts.ts';

export interface Lock {
  job: JobRecord;
  at: number;
}

/** The distinct unique keys of the jobs that have a unique policy (the keys to read). */
export function uniqueKeysOf(jobs: readonly JobRecord[]): string[] {
  return [
    ...new Set(jobs.flatMap((j) => (j.unique && j.unique_key !== undefined ? [j.unique_key] : []))),
  ];
}

export class UniqueKeys {
  readonly #read: Map<string, Lock>;
  readonly #taken = new Map<string, Lock>();
  readonly #guarded = new Set<string>();
  readonly #ops: Ops;
  readonly #now: number;

  constructor(read: Map<string, Lock>, ops: Ops, now: number) {
    this.#read = read;
    this.#ops = ops;
    this.#now = now;
  }

  /** The job holding `job`'s key in a way its policy conflicts with (core uniqueConflicts), if any. */
  holder(job: JobRecord): JobRecord | undefined {
    const key = job.unique_key;
    if (key === undefined) return undefined;
    if (!this.#guarded.has(key)) {
      this.#guarded.add(key);
      this.#ops.uniqueHolder(key, this.#read.get(key)?.job.id ?? '');
    }
    const lock = this.#taken.get(key) ?? this.#read.get(key);
    return job.unique !== undefined &&
      lock !== undefined &&
      lock.job.id !== job.id &&
      uniqueConflicts(lock.job, job.unique, lock.at, this.#now)
      ? lock.job
      : undefined;
  }

  /** `job` (inserted by the batch) now holds its key. */
  take(job: JobRecord): void {
    if (job.unique_key !== undefined) this.#taken.set(job.unique_key, { job, at: this.#now });
  }
}
