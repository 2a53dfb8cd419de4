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
 * others), so coalescing changes the cost, never an answer. A batch that
 * throws is run again item by item, so an error reaches only the callers
 * whose item causes it.
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
   * `run` answers one result per item, in item order. At most `max`
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
    this.#call(batch.map((waiting) => waiting.item)).then(
      (results) => {
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!);
      },
      (error: unknown) => {
        if (batch.length === 1) batch[0]!.reject(error);
        // The store's batch operations are atomic: a batch that failed
        // wrote nothing. One item the store cannot take (a value it cannot
        // encode) must not fail the requests it happened to share a turn
        // with, so each goes again alone; in an outage, each fails alone.
        else
          for (const waiting of batch) {
            this.#call([waiting.item]).then(
              (results) => waiting.resolve(results[0]!),
              waiting.reject,
            );
          }
      },
    );
  }

  #call(items: T[]): Promise<R[]> {
    try {
      return this.#run(items);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
