/**
 * In-process wake-ups for waiting fetches: whoever makes a job available
 * calls notify(), and every waiter re-tries its claim. Waiters also wake on
 * their own deadline, so a missed signal costs latency, never a job.
 *
 * A notify that lands while a fetch is still claiming (its claim ran before
 * the job committed and came back empty) must not be lost: the fetch reads
 * `generation` before claiming and passes it to wait(), which returns at
 * once if a notify happened since.
 */
export class Notifier {
  readonly #waiters = new Set<() => void>();
  #generation = 0;

  /** Counts notify() calls. */
  get generation(): number {
    return this.#generation;
  }

  notify(): void {
    this.#generation++;
    // Called for every job stored; most calls find nobody waiting.
    if (this.#waiters.size === 0) return;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  /**
   * Resolves on the next notify(), after `timeoutMs`, or when `signal`
   * aborts; at once when a notify happened after `since` (a generation).
   */
  wait(timeoutMs: number, signal?: AbortSignal, since?: number): Promise<void> {
    if (since !== undefined && since !== this.#generation) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      this.#waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  get waiting(): number {
    return this.#waiters.size;
  }
}
