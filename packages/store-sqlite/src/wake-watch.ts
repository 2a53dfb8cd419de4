/**
 * Wake-ups across connections to one SQLite file (other server processes,
 * or an application embedding the engine in several processes). SQLite has
 * no LISTEN/NOTIFY, but `PRAGMA data_version` changes whenever another
 * connection commits to the file, never for this connection's own commits.
 * While someone listens, it is read every few milliseconds (microseconds
 * each); a change wakes the engine's waiting fetches, which re-claim.
 * Without it, a fetch long-polling in one process saw a job enqueued by
 * another only at its next 250 ms re-claim.
 */
export class WakeWatch {
  readonly #read: () => number;
  readonly #intervalMs: number;
  readonly #listeners = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  #last = 0;

  constructor(readDataVersion: () => number, intervalMs = 5) {
    this.#read = readDataVersion;
    this.#intervalMs = intervalMs;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (this.#timer === undefined) {
      try {
        this.#last = this.#read();
      } catch {
        this.#last = -1; // not open yet: the first read after init counts as a change
      }
      this.#timer = setInterval(() => this.#poll(), this.#intervalMs);
      // Never the reason a process stays alive.
      this.#timer.unref();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.stop();
    };
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
  }
}
