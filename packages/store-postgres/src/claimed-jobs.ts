/**
 * Copies of the jobs this process claimed, as claimed, until they are
 * settled (PostgresStoreOptions.keepClaimed). An ACK or a FAIL of a kept
 * job is decided on the copy and written by one guarded statement, with no
 * `lockJobs` read of the row before it (settle.ts).
 *
 * A copy may be stale: another process sharing the database reaped and
 * re-claimed the job, someone cancelled it, any write bumped its rev. It
 * never settles a job alone: the write is guarded on state 'active',
 * attempt, rev and worker_id as the copy has them, so a stale copy changes
 * no row, and the settlement is then decided again on the row as read. The
 * one field that changes without a new rev, the lease (heartbeats), plays
 * no part in an ACK's or a FAIL's decision, and both clear it.
 *
 * Why a copy and not the claimed object itself: the store runs on the
 * caller's thread, and claimJobs hands its JobRecords to the engine, whose
 * callers get those very objects (Engine.fetch used in-process); a handler
 * changing its job's args or errors would otherwise change what the
 * settlement decides on and writes. The copy is a second JSON.parse of the
 * document as the claim statement returned it (jsonb as text, the claim's
 * own parse being the first): ~3.8 µs for a small job on this machine
 * (a JSON round trip of the object took ~7 µs, structuredClone ~9 µs),
 * against the read's round trip, row lock and document parse it saves.
 * The text's length also bounds the memory the copies may take.
 */
import type { JobRecord } from '@ojs/core';

/** JSON characters all copies may take together (the oldest go first). */
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

  /** At most `maxJobs` copies (0: none) and KEPT_CHARS of JSON, the oldest evicted first. */
  constructor(maxJobs: number) {
    this.#maxJobs = maxJobs;
  }

  /**
   * Keeps a copy of `job` (the caller keeps its object), parsed from `text`,
   * the job's JSON when at hand (the claim's row as sent: parsing it again
   * is half the cost of a JSON round trip of the object).
   */
  keep(job: JobRecord, text = JSON.stringify(job)): void {
    if (this.#maxJobs === 0) return;
    this.take(job.id);
    if (text.length > KEPT_CHARS_PER_JOB) return;
    this.#kept.set(job.id, { job: JSON.parse(text) as JobRecord, chars: text.length });
    this.#chars += text.length;
    while (this.#kept.size > this.#maxJobs || this.#chars > KEPT_CHARS) {
      const oldest = this.#kept.keys().next();
      if (oldest.done === true) break;
      this.take(oldest.value);
    }
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
