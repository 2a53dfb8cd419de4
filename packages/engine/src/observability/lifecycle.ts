/**
 * Job lifecycle observers: what logs, metrics and traces learn about jobs.
 * The engine reports each committed change once, after the store confirmed
 * it, with the records it already holds (no extra reads, no copies): jobs
 * stored by a PUSH, batch, workflow step or cron; jobs claimed by a FETCH;
 * jobs settled (ACK, FAIL, lease expiry, requeue) or cancelled.
 *
 * With no observer registered the engine pays one length check per call.
 */
import type { JobRecord } from '@ojs/core';

export interface JobObserver {
  /** A job about to be stored by a PUSH, batch or push-many (after the enqueue middleware). */
  enqueuing?(job: JobRecord): void;
  /** Jobs now stored (available, scheduled or pending). */
  enqueued?(jobs: readonly JobRecord[]): void;
  /** Jobs a FETCH claimed (state active, attempt incremented). */
  started?(jobs: readonly JobRecord[]): void;
  /**
   * A job left `active` or was cancelled: `job` is the record after the change
   * (completed, retryable, available again after a lease expiry or requeue,
   * discarded, cancelled). `expired` is set for a lease expiry.
   */
  settled?(job: JobRecord, expired: boolean): void;
}

/** The engine's fan-out to its observers. */
export class JobObservers {
  readonly #enqueuing: ((job: JobRecord) => void)[] = [];
  readonly #enqueued: ((jobs: readonly JobRecord[]) => void)[] = [];
  readonly #started: ((jobs: readonly JobRecord[]) => void)[] = [];
  readonly #settled: ((job: JobRecord, expired: boolean) => void)[] = [];

  add(observer: JobObserver): void {
    if (observer.enqueuing) this.#enqueuing.push(observer.enqueuing.bind(observer));
    if (observer.enqueued) this.#enqueued.push(observer.enqueued.bind(observer));
    if (observer.started) this.#started.push(observer.started.bind(observer));
    if (observer.settled) this.#settled.push(observer.settled.bind(observer));
  }

  enqueuing(job: JobRecord): void {
    for (const observe of this.#enqueuing) observe(job);
  }

  enqueued(jobs: readonly JobRecord[]): void {
    if (jobs.length === 0) return;
    for (const observe of this.#enqueued) observe(jobs);
  }

  started(jobs: readonly JobRecord[]): void {
    if (jobs.length === 0) return;
    for (const observe of this.#started) observe(jobs);
  }

  get observesSettled(): boolean {
    return this.#settled.length > 0;
  }

  settled(job: JobRecord, expired = false): void {
    for (const observe of this.#settled) observe(job, expired);
  }
}

/** Milliseconds between two ISO timestamps of a job, or undefined when either is missing. */
export function elapsedMs(from: string | undefined, to: string | undefined): number | undefined {
  if (from === undefined || to === undefined) return undefined;
  return nonNegative(Date.parse(to) - Date.parse(from));
}

function nonNegative(ms: number): number | undefined {
  return Number.isFinite(ms) ? Math.max(0, ms) : undefined;
}

/** An ISO timestamp in epoch ms; the last one read is remembered. */
class TimestampReader {
  #text: string | undefined;
  #ms = Number.NaN;

  ms(text: string): number {
    if (text !== this.#text) {
      this.#ms = Date.parse(text);
      this.#text = text;
    }
    return this.#ms;
  }
}

/**
 * `elapsedMs` for an observer that reads one kind of interval per job
 * (queue time, attempt duration), with the same results. The jobs of a batch
 * share their timestamps: enqueued, claimed or settled together, they carry
 * the same `enqueued_at`, `started_at` or `completed_at`. So each end
 * remembers the last timestamp it parsed, and a batch costs a string
 * comparison per job where it cost two Date.parse calls (~0.4 µs each).
 */
export class Elapsed {
  readonly #from = new TimestampReader();
  readonly #to = new TimestampReader();

  ms(from: string | undefined, to: string | undefined): number | undefined {
    if (from === undefined || to === undefined) return undefined;
    return nonNegative(this.#to.ms(to) - this.#from.ms(from));
  }
}

/** When the job finished its current attempt (the timestamp its new state carries). */
export function finishedAt(job: JobRecord): string | undefined {
  return job.completed_at ?? job.discarded_at ?? job.cancelled_at ?? job.error?.occurred_at;
}
