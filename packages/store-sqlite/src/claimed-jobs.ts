/**
 * The jobs this store claimed, as it wrote them, until they are settled
 * (SqliteStoreOptions.keepClaimed). An ACK or a FAIL of a kept job is
 * decided on this copy instead of reading and parsing its row: the read
 * was about a fifth of a settlement's cost on the store's thread.
 *
 * A kept copy may be stale: another process sharing the file may have
 * reaped and re-claimed the job, or a write of this store outside claim
 * and settle may have changed it. It never decides alone: the settlement's
 * UPDATE is guarded in the statement on state, attempt, rev and worker id
 * as the copy has them, so a stale copy changes no row, and the settlement
 * is then decided again on the row as read (SqliteStore#settleOne). The
 * one field that changes without a new rev, the lease (a heartbeat), plays
 * no part in an ACK's or a FAIL's decision, and both clear it.
 *
 * Only for a store whose claimed jobs leave by copy (the store thread's
 * replies are structured clones): where the caller gets the very objects
 * (a SqliteStore used directly), a handler changing its job's args would
 * change the copy that is later written.
 */
import type { JobRecord } from '@ojs/core';

export class ClaimedJobs {
  readonly #jobs = new Map<string, JobRecord>();
  readonly #max: number;

  /** `max`: the most copies kept (the oldest goes first); 0 keeps none. */
  constructor(max: number) {
    this.#max = max;
  }

  keep(job: JobRecord): void {
    if (this.#max === 0) return;
    this.#jobs.delete(job.id);
    this.#jobs.set(job.id, job);
    if (this.#jobs.size > this.#max) {
      const oldest = this.#jobs.keys().next();
      if (oldest.done !== true) this.#jobs.delete(oldest.value);
    }
  }

  /** The kept copy of `id`, no longer kept; undefined if there is none. */
  take(id: string): JobRecord | undefined {
    const job = this.#jobs.get(id);
    if (job !== undefined) this.#jobs.delete(id);
    return job;
  }

  get size(): number {
    return this.#jobs.size;
  }

  clear(): void {
    this.#jobs.clear();
  }
}
