/**
 * Job counts per (queue, state), kept by the store's own writes
 * (decision 0038). Every write to ojs_jobs knows the state it leaves and
 * the state it enters; the deltas of a group are summed in memory and
 * written as one upsert per (queue, state) pair just before the group's
 * COMMIT, in the same transaction: a drain of 100 jobs writes two rows of
 * ojs_job_counts, not 400 (the row triggers of migration 007 cost 28 % of
 * the CPU of a claim + ACK).
 *
 * A write of the group that rolls back (its SAVEPOINT) takes its deltas
 * with it: deltas are staged per write and merged into the group only
 * when the write succeeded.
 */
import type { StatementSync } from 'node:sqlite';
import type { GroupCommit } from './group-commit.ts';

/** ? = queue, ? = state, ? = delta. */
export const ADD_JOB_COUNT = `INSERT INTO ojs_job_counts (queue, state, n) VALUES (?, ?, ?)
  ON CONFLICT (queue, state) DO UPDATE SET n = n + excluded.n`;

const SEPARATOR = '\u0000';

export class JobCountDeltas {
  readonly #upsert: () => StatementSync;
  /** Deltas of the write in progress (staged until it succeeds). */
  #staged = new Map<string, number>();
  /** Deltas of the open group, by group number. */
  #group: { number: number; deltas: Map<string, number> } | undefined;

  constructor(upsert: () => StatementSync) {
    this.#upsert = upsert;
  }

  /** One job entered (`delta` 1) or left (`delta` -1) the pair. */
  add(queue: string, state: string, delta: number): void {
    const key = queue + SEPARATOR + state;
    this.#staged.set(key, (this.#staged.get(key) ?? 0) + delta);
  }

  /** A job moved from one pair to another (no-op when both are the same). */
  move(fromQueue: string, fromState: string, toQueue: string, toState: string): void {
    if (fromQueue === toQueue && fromState === toState) return;
    this.add(fromQueue, fromState, -1);
    this.add(toQueue, toState, 1);
  }

  /** The write in progress rolled back: its deltas never happened. */
  discardWrite(): void {
    this.#staged.clear();
  }

  /** The write in progress succeeded: its deltas join the open group's. */
  keepWrite(group: GroupCommit): void {
    if (this.#staged.size === 0) return;
    const number = group.currentGroup();
    if (this.#group?.number !== number) {
      const open = { number, deltas: new Map<string, number>() };
      this.#group = open;
      group.beforeCommit(() => this.#flush(open.deltas));
    }
    const deltas = this.#group.deltas;
    for (const [key, delta] of this.#staged) deltas.set(key, (deltas.get(key) ?? 0) + delta);
    this.#staged.clear();
  }

  /**
   * The pair's delta not yet in ojs_job_counts: the write in progress and
   * the rest of the open group. Inside the group's transaction the pair's
   * count is its row's n plus this (the group holds the write lock).
   */
  pending(queue: string, state: string): number {
    const key = queue + SEPARATOR + state;
    return (this.#staged.get(key) ?? 0) + (this.#group?.deltas.get(key) ?? 0);
  }

  /** Everything in the jobs table was deleted in this group (reset): no delta of it applies. */
  forgetGroup(): void {
    this.#staged.clear();
    this.#group?.deltas.clear();
  }

  #flush(deltas: Map<string, number>): void {
    // Written now (or rolled back with the group): no longer pending.
    if (this.#group?.deltas === deltas) this.#group = undefined;
    const upsert = this.#upsert();
    for (const [key, delta] of deltas) {
      if (delta === 0) continue;
      const at = key.indexOf(SEPARATOR);
      upsert.run(key.slice(0, at), key.slice(at + 1), delta);
    }
  }
}
