/**
 * The long polls waiting in this process, by worker id, so that a worker
 * that announces it is stopping (a heartbeat with state quiet, drain or
 * terminate) gets its waiting FETCH answered at once, empty, instead of
 * after `wait_ms`. The answer is an ordinary response, so a job claimed in
 * the same instant is delivered (and requeued by the stopping worker), never
 * stranded as a cut connection would strand it. A heartbeat that reaches
 * another server process than the poll leaves it to end at `wait_ms`.
 */
export class WaitingFetches {
  readonly #byWorker = new Map<string, Set<AbortController>>();

  /** Registers one waiting fetch; its signal also follows the request's own. */
  enter(
    workerId: string,
    requestSignal: AbortSignal | undefined,
  ): { signal: AbortSignal; leave: () => void } {
    const controller = new AbortController();
    const set = this.#byWorker.get(workerId) ?? new Set<AbortController>();
    this.#byWorker.set(workerId, set);
    set.add(controller);
    const signal =
      requestSignal === undefined
        ? controller.signal
        : AbortSignal.any([requestSignal, controller.signal]);
    const leave = () => {
      set.delete(controller);
      if (set.size === 0 && this.#byWorker.get(workerId) === set) this.#byWorker.delete(workerId);
    };
    return { signal, leave };
  }

  /** How many fetches wait now (operations and tests). */
  get size(): number {
    let n = 0;
    for (const set of this.#byWorker.values()) n += set.size;
    return n;
  }

  /** Ends every fetch of this worker that is waiting now. */
  end(workerId: string): void {
    for (const controller of this.#byWorker.get(workerId) ?? []) controller.abort();
  }
}
