/**
 * The engine's subscription to its store's cross-process wake-ups
 * (`Store.onJobsAvailable`). A store whose wake-ups are pushed (PostgreSQL
 * LISTEN) is subscribed for the engine's whole life. A store that has to
 * poll for them (`Store.polledWakeups`: SQLite reads `PRAGMA data_version`
 * every 5 ms, and watches the WAL's folder) is subscribed only while a
 * fetch waits, and for `lingerMs` after the last one ended, so a worker
 * re-polling right away does not turn the watch off and on: an idle server
 * with no worker waiting polls nothing (the watch was 200 reads a second,
 * about a third of an idle SQLite server's CPU), and a busy one whose
 * fetches always fill watches nothing either (decision 0081).
 */
import type { Store } from '@ojs/core';

export class Wakeups {
  readonly #store: Store;
  readonly #listener: () => void;
  readonly #lingerMs: number;
  readonly #polled: boolean;
  #unsubscribe: (() => void) | undefined;
  /** How many times the watch started: tells a gap in the watch (see mark). */
  #starts = 0;
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
   * The watch as it is now, for `covers`: taken before a claim, it tells
   * afterwards whether every commit since that claim began was watched.
   */
  mark(): number {
    return this.#unsubscribe === undefined ? -1 : this.#starts;
  }

  /**
   * Whether the store was watched without a gap since `mark` was taken: a
   * commit of another process after that point has woken, or will wake,
   * the notifier. If not, a fetch that just started the watch claims once
   * more before it waits (a commit between its claim and the watch's start
   * would otherwise be missed).
   */
  covers(mark: number): boolean {
    // A store without wake-ups has no other process to watch.
    if (this.#store.onJobsAvailable === undefined) return true;
    return mark !== -1 && this.#unsubscribe !== undefined && this.#starts === mark;
  }

  /**
   * A fetch is about to wait: watch from now on. Returns its release. A
   * fetch takes it only once its claim came back short, so a busy worker
   * whose fetches always fill never costs a watch (on SQLite an inotify
   * event for every write of the WAL, decision 0081).
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
    if (this.#unsubscribe !== undefined) this.#starts++;
  }

  #stop(): void {
    const unsubscribe = this.#unsubscribe;
    this.#unsubscribe = undefined;
    unsubscribe?.();
  }
}
