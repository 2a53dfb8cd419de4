/**
 * Group commit for node:sqlite (DESIGN §6). node:sqlite is synchronous and
 * with `synchronous=FULL` every COMMIT fsyncs, so one transaction per
 * request would cost one fsync per job and stall the event loop for each.
 * Instead, the first write of an event-loop turn opens a transaction; every
 * write arriving in the same turn (enqueues, claims, ACKs of many concurrent
 * requests) runs inside it, each in its own SAVEPOINT so a failing write
 * rolls back alone; one COMMIT (one fsync) at the end of the turn
 * (setImmediate) makes them all durable together. No caller hears of its
 * write before that COMMIT: an HTTP 2xx still means "on disk".
 *
 * Reads run at once, but a read made while a group is open may have seen
 * that group's uncommitted writes, so it too answers only after the COMMIT
 * (and fails if the COMMIT fails): nobody is told of data that never became
 * durable.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { TOTAL_CHANGES } from './statements.ts';
import type { WalSync } from './wal-sync.ts';

/** Thrown by a write to roll back its own changes and answer `value`. */
export class Rollback<T> {
  readonly value: T;
  constructor(value: T) {
    this.value = value;
  }
}

/**
 * The group open in this process, across all connections. node:sqlite
 * blocks the thread while it waits for the write lock, so a second
 * connection to the same file (two stores in one process) must never wait
 * for a group that only this thread's next turn would commit: opening a
 * group first commits any other open one.
 */
let openGroup: GroupCommit | null = null;

/**
 * Commits the group open in this process, if any: for a connection about
 * to take the write lock outside any group (a store's migration at init).
 * A group can stay open across turns (held for the sync in flight), and
 * node:sqlite would block this thread on a lock only this thread's next
 * turn releases, until busy_timeout ("database is locked").
 */
export function commitOpenGroup(): void {
  openGroup?.flush();
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class GroupCommit {
  readonly #db: DatabaseSync;
  /**
   * Every write opens and releases its SAVEPOINT: prepared once, since
   * `exec` compiles its text on each call (0.35 µs of the pair's 1.2 µs).
   */
  readonly #savepoint: StatementSync;
  readonly #release: StatementSync;
  /** Waiters of the open group; null when no transaction is open. */
  #group: Waiter[] | null = null;
  /** Waiters of the open group answered at its COMMIT, before the fsync (write's `durable: false`). */
  #committedOnly: Waiter[] = [];
  /** The open group waits for the sync in flight before it commits (see #endOfTurn). */
  #deferred = false;
  /** Writes per group before it commits early (bounds the transaction). */
  readonly #maxWrites: number;
  #writes = 0;
  /** Work that must join the open group's transaction just before its COMMIT. */
  #beforeCommit: (() => void)[] = [];
  #groupNumber = 0;
  /** Changes whenever what the transaction holds may shrink: a new group or a rolled-back write. */
  #epoch = 0;

  /** When set, a committed group is answered only once this made it durable. */
  readonly #sync: WalSync | undefined;
  /** `SELECT total_changes()`: rows changed on this connection so far. */
  readonly #totalChanges: StatementSync;
  /** total_changes() when the open group began. */
  #changesAtOpen = 0;

  constructor(db: DatabaseSync, options: { maxWrites?: number; sync?: WalSync } = {}) {
    this.#db = db;
    this.#savepoint = db.prepare('SAVEPOINT ojs_write');
    this.#release = db.prepare('RELEASE ojs_write');
    this.#maxWrites = options.maxWrites ?? 10_000;
    this.#sync = options.sync;
    this.#totalChanges = db.prepare(TOTAL_CHANGES);
  }

  #changes(): number {
    return (this.#totalChanges.get() as { n: number }).n;
  }

  /**
   * Runs `fn` now inside the open group; resolves with its value once the
   * group committed and (with a WalSync) is on disk. `durable: false`
   * answers at COMMIT without waiting for the fsync: for writes whose loss
   * on power failure only repeats work the protocol already repeats (a
   * claim: the job returns to available and runs again, at least once;
   * the lost claim's ACK is refused by its fence). Never for writes whose
   * caller is told "stored" (enqueue, ACK, NACK, cancel).
   */
  write<T>(fn: () => T, durable = true): Promise<T> {
    const group = this.#open();
    const db = this.#db;
    this.#savepoint.run();
    let value: T;
    try {
      value = fn();
      this.#release.run();
    } catch (error) {
      db.exec('ROLLBACK TO ojs_write');
      db.exec('RELEASE ojs_write');
      this.#epoch++;
      // Nothing of this write remains, so its answer need not wait for the group.
      if (error instanceof Rollback) return Promise.resolve(error.value as T);
      return Promise.reject(error);
    }
    const done = new Promise<T>((resolve, reject) => {
      (durable ? group : this.#committedOnly).push({ resolve: () => resolve(value), reject });
    });
    // A claim is answered at COMMIT: a group held for the sync commits at the end of this turn.
    if (!durable && this.#deferred) {
      setImmediate(() => {
        if (this.#group === group) this.flush();
      });
    }
    if (++this.#writes >= this.#maxWrites) this.flush();
    return done;
  }

  /** Identifies the open group (a new number per transaction); opens one if needed. */
  currentGroup(): number {
    this.#open();
    return this.#groupNumber;
  }

  /**
   * A number that stays the same while everything written in the open group
   * so far is still there (no new group, no rolled-back write): a cache of
   * "this row exists" keyed on it is never stale.
   */
  currentEpoch(): number {
    this.#open();
    return this.#epoch;
  }

  /**
   * Runs `fn` inside the open group's transaction just before it commits
   * (e.g. writing back a counter kept in memory during the group). If it
   * throws, the whole group rolls back and every write of it fails.
   */
  beforeCommit(fn: () => void): void {
    this.#open();
    this.#beforeCommit.push(fn);
  }

  /** Runs a read now; answers after the open group (if any) committed. */
  read<T>(fn: () => T): Promise<T> {
    const value = fn();
    const group = this.#group;
    if (group === null) {
      const sync = this.#sync;
      if (sync === undefined) return Promise.resolve(value);
      return new Promise<T>((resolve, reject) => {
        sync.afterRead({ resolve: () => resolve(value), reject });
      });
    }
    return new Promise<T>((resolve, reject) => {
      group.push({ resolve: () => resolve(value), reject });
    });
  }

  #open(): Waiter[] {
    if (this.#group !== null) return this.#group;
    if (openGroup !== null && openGroup !== this) openGroup.flush();
    this.#db.exec('BEGIN IMMEDIATE');
    this.#changesAtOpen = this.#changes();
    openGroup = this;
    const group: Waiter[] = [];
    this.#group = group;
    this.#writes = 0;
    this.#groupNumber++;
    this.#epoch++;
    this.#beforeCommit = [];
    setImmediate(() => {
      if (this.#group === group) this.#endOfTurn(group);
    });
    return group;
  }

  /**
   * The end of the turn that opened a group. While a WAL sync is in flight,
   * a group committed now would be answered only after the next sync
   * anyway, so it stays open until the sync in flight completes and commits
   * then, just before the next sync starts: writes arriving meanwhile share
   * its one COMMIT instead of each turn writing its own WAL frames for the
   * same pages (and the checkpointer copying them). Nobody waits longer for
   * durability. A group holding a claim (answered at COMMIT) commits now.
   */
  #endOfTurn(group: Waiter[]): void {
    const sync = this.#sync;
    if (sync === undefined || !sync.syncing || this.#committedOnly.length > 0) {
      this.flush();
      return;
    }
    this.#deferred = true;
    sync.onSyncDone(() => {
      if (this.#group === group) this.flush();
    });
  }

  /** Commits the open group now (end of turn, size bound, close). */
  flush(): void {
    const group = this.#group;
    if (group === null) return;
    this.#group = null;
    const committedOnly = this.#committedOnly;
    this.#committedOnly = [];
    this.#deferred = false;
    if (openGroup === this) openGroup = null;
    const hooks = this.#beforeCommit;
    this.#beforeCommit = [];
    let wrote = true;
    try {
      for (const hook of hooks) hook();
      wrote = this.#changes() !== this.#changesAtOpen;
      this.#db.exec('COMMIT');
    } catch (error) {
      try {
        this.#db.exec('ROLLBACK');
      } catch {
        // The failed COMMIT may already have ended the transaction.
      }
      for (const waiter of group) waiter.reject(error);
      for (const waiter of committedOnly) waiter.reject(error);
      return;
    }
    for (const waiter of committedOnly) waiter.resolve();
    const sync = this.#sync;
    if (sync === undefined) for (const waiter of group) waiter.resolve();
    else if (wrote) sync.afterCommit(group);
    // A group that changed no row (a claim or a promotion that found
    // nothing, as every idle tick and waiting fetch does) appended nothing
    // to the WAL: its writes were reads, answered as reads are (after a
    // sync only if what they saw may not be on disk yet), not after an
    // fdatasync of their own.
    else for (const waiter of group) sync.afterRead(waiter);
  }
}
