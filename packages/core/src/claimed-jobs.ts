/**
 * The jobs a store claimed, kept until they are settled, so an ACK or a
 * FAIL of one is decided on the copy instead of reading its row first
 * (decision 0076; each store's settleJobs). The store guards the write on
 * state 'active', attempt, rev and worker_id as the copy has them and
 * decides a refused item again on the row, so a stale copy never settles a
 * job: it costs one extra read. The lease, the one field that changes
 * without a new rev, plays no part in an ACK's or a FAIL's decision, and
 * lease expiries always read the row.
 *
 * Bounded in jobs and in the length of their JSON, the oldest dropped
 * first; a job whose JSON is longer than KEPT_CHARS_PER_JOB is not kept.
 */
import type { JobRecord } from './job-types.ts';

/** JSON characters all copies may take together. */
export const KEPT_CHARS = 32 * 1024 * 1024;
/** A job whose JSON is longer is not kept: its settlement reads the row. */
export const KEPT_CHARS_PER_JOB = 64 * 1024;

interface Kept {
  job: JobRecord;
  chars: number;
}

export class ClaimedJobs {
  readonly #kept = new Map<string, Kept>();
  readonly #maxJobs: number;
  #chars = 0;

  /** At most `maxJobs` copies (0: none) and KEPT_CHARS of JSON. */
  constructor(maxJobs: number) {
    this.#maxJobs = maxJobs;
  }

  /**
   * Keeps the job `id` whose JSON is `chars` long; `copy` makes the object
   * kept, only when it is (the store's own object, or a copy where its
   * caller holds the one it returned).
   */
  keep(id: string, chars: number, copy: () => JobRecord): void {
    if (this.#maxJobs === 0) return;
    this.take(id);
    if (chars > KEPT_CHARS_PER_JOB) return;
    this.#kept.set(id, { job: copy(), chars });
    this.#chars += chars;
    while (this.#kept.size > this.#maxJobs || this.#chars > KEPT_CHARS) {
      const oldest = this.#kept.keys().next();
      if (oldest.done === true) break;
      this.take(oldest.value);
    }
  }

  /** Whether a copy of `id` is kept. */
  has(id: string): boolean {
    return this.#kept.has(id);
  }

  /** The copy of `id`, no longer kept; undefined if there is none. */
  take(id: string): JobRecord | undefined {
    const kept = this.#kept.get(id);
    if (kept === undefined) return undefined;
    this.#kept.delete(id);
    this.#chars -= kept.chars;
    return kept.job;
  }

  get size(): number {
    return this.#kept.size;
  }

  clear(): void {
    this.#kept.clear();
    this.#chars = 0;
  }
}
