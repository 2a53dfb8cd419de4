/**
 * Durability after an asynchronous commit (decision 0115): the enqueue
 * statement commits without waiting for the WAL flush, so its jobs are
 * visible, and announced, at COMMIT; `flush()` resolves once the WAL is on
 * disk past that COMMIT, and only then is the enqueuer told "stored".
 *
 * Callers share flushes, as PostgreSQL's own group commit shares fsyncs: a
 * flush covers every commit that returned before it was sent, so a caller
 * that finds one in flight (perhaps sent before its own commit) waits for
 * the next one, which starts when that one ends and serves every caller
 * that came meanwhile. At most one flush runs and one waits.
 */
export class WalFlush {
  readonly #run: () => Promise<void>;
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;

  constructor(run: () => Promise<void>) {
    this.#run = run;
  }

  /** Resolves once every commit that returned before this call is flushed. */
  flush(): Promise<void> {
    if (this.#running === undefined) return this.#start();
    this.#next ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#next = undefined;
        return this.#start();
      });
    return this.#next;
  }

  #start(): Promise<void> {
    const running = this.#run().finally(() => {
      if (this.#running === running) this.#running = undefined;
    });
    this.#running = running;
    return running;
  }
}
