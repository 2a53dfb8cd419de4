/**
 * Concurrent single operations coalesced into one store call. The requests
 * a server parses in one event-loop turn (50 clients with one PUSH or one
 * ACK each) each call the engine on their own; the store work of a call
 * is mostly per call (a transaction or savepoint, a statement, a round
 * trip), so the calls of one turn are handed to the store together after
 * it, and each caller gets its own item's result.
 *
 * Each item is still decided on its own, exactly as if it had come alone:
 * the batch operation answers per item (a refused item does not refuse the
 * others), so coalescing changes the cost, never an answer.
 */

/** Runs `fn` after the current turn: its I/O callbacks and microtasks. */
const afterTurn = (fn: () => void) => setImmediate(fn);

interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export class TurnBatch<T, R> {
  #waiting: Waiting<T, R>[] = [];
  readonly #run: (items: T[]) => Promise<R[]>;
  readonly #max: number;

  /**
   * `run` answers one result per item, in item order; if it throws (a store
   * failure), every caller of the batch gets that error. At most `max`
   * items go in one call; a full batch is handed over at once.
   */
  constructor(run: (items: T[]) => Promise<R[]>, max: number) {
    this.#run = run;
    this.#max = max;
  }

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.#waiting.length === 0) afterTurn(() => this.#flush());
      this.#waiting.push({ item, resolve, reject });
      if (this.#waiting.length >= this.#max) this.#flush();
    });
  }

  #flush(): void {
    const batch = this.#waiting;
    if (batch.length === 0) return;
    this.#waiting = [];
    let running: Promise<R[]>;
    try {
      running = this.#run(batch.map((waiting) => waiting.item));
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (results) => {
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!);
      },
      (error: unknown) => {
        for (const waiting of batch) waiting.reject(error);
      },
    );
  }
}
