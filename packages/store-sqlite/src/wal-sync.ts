/**
 * Durable commits without stalling the store's thread (decision 0016).
 *
 * With `synchronous=FULL` SQLite fsyncs the WAL inside every COMMIT, and
 * node:sqlite blocks its thread for it: nothing else runs on the store's
 * thread while the disk works, so the next group cannot even start. Instead
 * the connection runs with `synchronous=NORMAL` (a COMMIT only appends to
 * the WAL, which in WAL mode cannot corrupt the database, only lose the
 * latest transactions on power loss) and this class makes each group
 * durable itself before anyone hears of it: after the COMMIT, one
 * `fdatasync` of the WAL file on libuv's thread pool; the group's callers
 * are answered when it completes. Groups committed while a sync runs share
 * the next one, so there is at most one sync in flight and the thread keeps
 * executing the next group meanwhile.
 *
 * Why this is as durable as FULL: fsync flushes the file (the inode), not
 * one descriptor, so a sync started after COMMIT returned covers that
 * commit's frames. If a checkpoint reset the WAL in between, those frames
 * were already copied into the database file and synced by the checkpoint
 * (SQLite syncs the WAL before and the database after every checkpoint).
 *
 * Reads: a read may see data that is not yet durable (our own last group,
 * or another process's commit: PRAGMA data_version tells), so it too is
 * answered only after a sync that started after it, unless nothing changed
 * since the last completed sync.
 */
import { closeSync, fdatasync, openSync } from 'node:fs';

export interface SyncWaiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class WalSync {
  readonly #walPath: string;
  /** PRAGMA data_version of the store's connection (changes on other connections' commits). */
  readonly #dataVersion: () => number;
  #fd: number | undefined;
  /** Waiting for the next sync to start. */
  #waiting: SyncWaiter[] = [];
  #syncing = false;
  /** The batch of the sync in flight, and data_version when it started. */
  #inflight: SyncWaiter[] = [];
  #inflightVersion: number | undefined;
  /** Our own commits since the last sync started. */
  #unsynced = false;
  /** data_version when the last completed sync started (undefined: none yet). */
  #syncedVersion: number | undefined;
  #idle: (() => void)[] = [];
  /** Run when the sync in flight completes, before the next one starts. */
  #onSyncDone: (() => void)[] = [];

  readonly #syncFile: typeof fdatasync;

  /** `syncFile`: fs.fdatasync, or a stand-in that tests control. */
  constructor(
    databasePath: string,
    dataVersion: () => number,
    syncFile: (
      fd: number,
      callback: (error: NodeJS.ErrnoException | null) => void,
    ) => void = fdatasync,
  ) {
    this.#walPath = `${databasePath}-wal`;
    this.#dataVersion = dataVersion;
    this.#syncedVersion = dataVersion();
    this.#syncFile = syncFile as typeof fdatasync;
  }

  /** A group committed: its waiters hear of it once a sync started after now completes. */
  afterCommit(waiters: SyncWaiter[]): void {
    this.#unsynced = true;
    for (const waiter of waiters) this.#waiting.push(waiter);
    this.#start();
  }

  /** A read outside any group: answered now if everything it could have seen is durable. */
  afterRead(waiter: SyncWaiter): void {
    if (!this.#unsynced) {
      const version = this.#dataVersion();
      if (!this.#syncing && version === this.#syncedVersion) {
        waiter.resolve();
        return;
      }
      // Nothing committed since the sync in flight started: that sync covers
      // everything this read could have seen.
      if (this.#syncing && version === this.#inflightVersion) {
        this.#inflight.push(waiter);
        return;
      }
    }
    this.#waiting.push(waiter);
    this.#start();
  }

  /** True while a sync is in flight: a commit made now is answered only after the next one. */
  get syncing(): boolean {
    return this.#syncing;
  }

  /**
   * Runs `fn` when the sync in flight completes, before the next sync
   * starts, so what `fn` commits joins that next sync. At once when idle.
   */
  onSyncDone(fn: () => void): void {
    if (!this.#syncing) fn();
    else this.#onSyncDone.push(fn);
  }

  /** Resolves once no sync is running or waiting (before close). */
  settled(): Promise<void> {
    if (!this.#syncing && this.#waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #start(): void {
    if (this.#syncing) return;
    if (this.#waiting.length === 0) {
      for (const resolve of this.#idle.splice(0)) resolve();
      return;
    }
    const batch = this.#waiting;
    this.#waiting = [];
    this.#unsynced = false;
    const version = this.#dataVersion();
    let fd: number;
    try {
      // Opened on first use: the WAL file exists once the connection wrote.
      this.#fd ??= openSync(this.#walPath, 'r');
      fd = this.#fd;
    } catch (error) {
      for (const waiter of batch) waiter.reject(error);
      this.#start();
      return;
    }
    this.#syncing = true;
    this.#inflight = batch;
    this.#inflightVersion = version;
    this.#syncFile(fd, (error) => {
      this.#syncing = false;
      this.#inflight = [];
      if (error) {
        // Not known to be on disk: the callers get a store error, never a success.
        this.#unsynced = true;
        for (const waiter of batch) waiter.reject(error);
      } else {
        this.#syncedVersion = version;
        for (const waiter of batch) waiter.resolve();
      }
      for (const fn of this.#onSyncDone.splice(0)) fn();
      this.#start();
    });
  }
}
