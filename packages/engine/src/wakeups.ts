/**
 * The engine's subscription to its store's cross-process wake-ups
 * (`Store.onJobsAvailable`). A store whose wake-ups are pushed (PostgreSQL
 * LISTEN) is subscribed for the engine's whole life. A store that has to
 * poll for them (`Store.polledWakeups`: SQLite reads `PRAGMA data_version`
 * every 5 ms) is subscribed only while a fetch may wait, and for
 * `lingerMs` after the last one ended, so a worker re-polling right away
 * does not turn the watch off and on: an idle server with no worker
 * waiting polls nothing (the watch was 200 reads a second, about a third
 * of an idle SQLite server's CPU).
 */
import type { Store } from '@ojs/core';

export class Wakeups {
  readonly #store: Store;
  readonly #listener: () => void;
  readonly #lingerMs: number;
  readonly #polled: boolean;
  #unsubscribe: (() => void) | undefined;
  #holders = 0;
  #linger: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(store: Store, listener: () => void, lingerMs: number) {
    this.#store = store;
    this.#listener = listener;
    this.#lingerMs = lingerMs;
    this.#polled = store.polledWakeups === true;
    if (!this.#polled) this.#subscribe();
  }

  /** Whether the store is being watched now (operations and tests). */
  get watching(): boolean {
    return this.#unsubscribe !== undefined;
  }

  /**
   * A fetch may wait: watch from now on (before its first claim, so a
   * commit between that claim and the wait is seen). Returns its release.
   */
  hold(): () => void {
    if (!this.#polled) return () => {};
    this.#holders++;
    clearTimeout(this.#linger);
    this.#linger = undefined;
    this.#subscribe();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holders > 0 || this.#closed) return;
      this.#linger = setTimeout(() => {
        this.#linger = undefined;
        if (this.#holders === 0) this.#stop();
      }, this.#lingerMs);
      // Never the reason a process stays alive.
      this.#linger.unref();
    };
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#linger);
    this.#linger = undefined;
    this.#stop();
  }

  #subscribe(): void {
    if (this.#unsubscribe !== undefined || this.#closed) return;
    this.#unsubscribe = this.#store.onJobsAvailable?.(this.#listener);
  }

  #stop(): void {
    const unsubscribe = this.#unsubscribe;
    this.#unsubscribe = undefined;
    unsubscribe?.();
  }
}
