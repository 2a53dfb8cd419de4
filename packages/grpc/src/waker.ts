/**
 * A sleep that something else can end early: stream loops wait for work
 * or a while, and a settlement, a shutdown or a cancel wakes them.
 */
export class Waker {
  #wake: (() => void) | undefined;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.#wake === done) self.#wake = undefined;
        resolve();
      }
      this.#wake = done;
    });
  }

  wake(): void {
    this.#wake?.();
  }
}
