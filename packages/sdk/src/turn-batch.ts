/**
 * The values added during one event-loop turn, handed over together after
 * it: how the HTTP and in-process transports coalesce concurrent pushes.
 */

/** Runs `fn` after the current turn (its I/O callbacks and microtasks). */
const afterTurn: (fn: () => void) => void =
  typeof setImmediate === 'function' ? (fn) => setImmediate(fn) : (fn) => setTimeout(fn, 0);

export class TurnBatch<T> {
  #items: T[] = [];
  readonly #flush: (items: T[]) => void;

  constructor(flush: (items: T[]) => void) {
    this.#flush = flush;
  }

  /** Adds `item` to this turn's batch; the first of a turn schedules the flush. */
  add(item: T): void {
    if (this.#items.length === 0) {
      afterTurn(() => {
        const items = this.#items;
        this.#items = [];
        this.#flush(items);
      });
    }
    this.#items.push(item);
  }
}
