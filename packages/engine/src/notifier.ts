/**
 * In-process wake-ups for waiting fetches: whoever makes a job available
 * calls notify(), and every waiter re-tries its claim. Waiters also wake on
 * their own deadline, so a missed signal costs latency, never a job.
 */
export class Notifier {
  readonly #waiters = new Set<() => void>();

  notify(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves on the next notify(), after `timeoutMs`, or when `signal` aborts. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<void> {
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
