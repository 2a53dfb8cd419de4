/**
 * Wake-ups across connections to one SQLite file (other server processes,
 * or an application embedding the engine in several processes). SQLite has
 * no LISTEN/NOTIFY, but `PRAGMA data_version` changes whenever another
 * connection commits to the file, never for this connection's own commits.
 * While someone listens, it is read every few milliseconds (microseconds
 * each); a change wakes the engine's waiting fetches, which re-claim.
 * Without it, a fetch long-polling in one process saw a job enqueued by
 * another only at its next 250 ms re-claim.
 *
 * The poll alone made a waiting fetch in another process wait 2.5 ms on
 * average (half the interval) for a job. So the WAL file is watched too
 * (`fs.watch` on its folder: inotify on Linux): a commit appends to the WAL,
 * and the event reads data_version at once. The poll stays, for file
 * systems without change events and for a watch that failed; our own
 * commits fire the watch too and find data_version unchanged. While the
 * watch holds, the poll is only its safety net and runs every 100 ms:
 * every 5 ms it woke a server 200 times a second for as long as any fetch
 * waited, i.e. always with an idle worker (decision 0127).
 */
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

export class WakeWatch {
  readonly #read: () => number;
  readonly #intervalMs: number;
  readonly #watchedIntervalMs: number;
  readonly #walPath: string | undefined;
  readonly #listeners = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  #watcher: FSWatcher | undefined;
  /** A read is scheduled for this turn (change events come in bursts). */
  #scheduled = false;
  #last = 0;

  /**
   * `walPath`: the database's WAL file, watched for changes (none: the poll
   * only); `intervalMs`: the poll's interval without a watch;
   * `watchedIntervalMs`: with one (at most `intervalMs`' default of 100).
   */
  constructor(
    readDataVersion: () => number,
    options: { walPath?: string; intervalMs?: number; watchedIntervalMs?: number } = {},
  ) {
    this.#read = readDataVersion;
    this.#intervalMs = options.intervalMs ?? 5;
    this.#watchedIntervalMs = Math.max(this.#intervalMs, options.watchedIntervalMs ?? 100);
    this.#walPath = options.walPath;
  }

  /** The poll's interval now: slow while the WAL's folder is watched. */
  get pollIntervalMs(): number {
    return this.#watcher === undefined ? this.#intervalMs : this.#watchedIntervalMs;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (this.#timer === undefined) {
      try {
        this.#last = this.#read();
      } catch {
        this.#last = -1; // not open yet: the first read after init counts as a change
      }
      this.#watchWal();
      this.#startPoll();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.stop();
    };
  }

  #startPoll(): void {
    clearInterval(this.#timer);
    this.#timer = setInterval(() => this.#poll(), this.pollIntervalMs);
    // Never the reason a process stays alive.
    this.#timer.unref();
  }

  /** Watches the WAL's folder (the WAL itself may not exist yet, or be recreated). */
  #watchWal(): void {
    const walPath = this.#walPath;
    if (walPath === undefined) return;
    const name = basename(walPath);
    try {
      const watcher = watch(dirname(walPath), { persistent: false }, (_event, file) => {
        if (file === name) this.#schedule();
      });
      // A watch that fails (folder removed, too many watches) leaves the
      // poll, at its own pace again.
      watcher.on('error', () => {
        watcher.close();
        if (this.#watcher !== watcher) return;
        this.#watcher = undefined;
        if (this.#timer !== undefined) this.#startPoll();
      });
      this.#watcher = watcher;
    } catch {
      // No change events here: the poll alone.
    }
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (this.#timer !== undefined) this.#poll();
    });
  }

  #poll(): void {
    let version: number;
    try {
      version = this.#read();
    } catch {
      return; // closed or busy: the next tick reads again
    }
    if (version === this.#last) return;
    this.#last = version;
    for (const listener of [...this.#listeners]) listener();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
