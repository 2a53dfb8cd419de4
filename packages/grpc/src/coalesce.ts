/**
 * Calls that arrive in the same event-loop turn go to the engine as one
 * batch: concurrent Enqueue RPCs as `enqueueMany` (each item validated,
 * deduplicated and stored as a lone PUSH would be, the push-many path of
 * decision 0017), concurrent Ack/Nack RPCs as `settleBatch` (each item
 * fenced and settled on its own, the ack-batch path of decision 0008).
 * Every call still gets its own answer or its own error; a store write per
 * batch instead of per call is what makes unary gRPC keep up with HTTP's
 * batched endpoints. A lone call waits one turn at most.
 */

export type Outcome<O> = { ok: O } | { error: unknown };

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(error: unknown): void;
}

const afterTurn = (fn: () => void) => setImmediate(fn);

export class Coalescer<I, O> {
  readonly #run: (items: I[]) => Promise<Outcome<O>[]>;
  readonly #max: number;
  #waiting: Waiting<I, O>[] = [];
  #scheduled = false;

  constructor(run: (items: I[]) => Promise<Outcome<O>[]>, max = 1000) {
    this.#run = run;
    this.#max = max;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        afterTurn(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const all = this.#waiting;
    this.#waiting = [];
    for (let start = 0; start < all.length; start += this.#max) {
      const batch = all.slice(start, start + this.#max);
      this.#run(batch.map((w) => w.item)).then(
        (outcomes) => {
          for (const [i, waiting] of batch.entries()) {
            const outcome = outcomes[i];
            if (outcome === undefined) waiting.reject(new Error('no outcome for a batched call'));
            else if ('ok' in outcome) waiting.resolve(outcome.ok);
            else waiting.reject(outcome.error);
          }
        },
        (error: unknown) => {
          for (const waiting of batch) waiting.reject(error);
        },
      );
    }
  }
}
