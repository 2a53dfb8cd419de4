/**
 * A short-lived read cache over the store's settings (schemas, validation
 * modes, routing rules, worker states), read on every enqueue and fetch.
 * Local writes invalidate at once; a write made through another server
 * process is seen within `ttlMs` (1 s by default), which is the documented
 * staleness of configuration across processes.
 *
 * Refresh ahead: a read in the second half of an entry's life is answered
 * from the cache and reloads it in the background, so a key in steady use
 * never expires and no request waits for the store's round trip (on SQLite
 * a hop to the store thread, ~0.3 ms at idle, on the enqueue's path). An
 * entry counts its age from when its load started, so the bound holds.
 */
import type { SettingRecord, Store } from '@ojs/core';

const MAX_ENTRIES = 10_000;

interface Entry<T> {
  value: Promise<T>;
  /** When its load started. */
  at: number;
  /** A background reload of this entry is running. */
  refreshing?: boolean;
}

export class SettingsCache {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #entries = new Map<string, Entry<unknown>>();

  readonly #now: () => number;

  constructor(store: Store, ttlMs = 1000, now: () => number = () => performance.now()) {
    this.#store = store;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  #cached<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.#now();
    const hit = this.#entries.get(key) as Entry<T> | undefined;
    if (hit !== undefined && now - hit.at < this.#ttlMs) {
      if (now - hit.at >= this.#ttlMs / 2 && !hit.refreshing) this.#refresh(key, hit, load, now);
      return hit.value;
    }
    const value = load();
    // Keys include worker ids, which come and go: bound the map.
    if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
    const entry: Entry<T> = { value, at: now };
    this.#entries.set(key, entry);
    // A failed read is not cached.
    value.catch(() => {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
    });
    return value;
  }

  /** Reloads `key` in the background; the entry is replaced only by a successful load. */
  #refresh<T>(key: string, hit: Entry<T>, load: () => Promise<T>, at: number): void {
    hit.refreshing = true;
    load().then(
      (loaded) => {
        // Invalidated or replaced meanwhile: that newer state wins.
        if (this.#entries.get(key) === hit) {
          this.#entries.set(key, { value: Promise.resolve(loaded), at });
        }
      },
      () => {
        // The old entry stays until it expires; the next read after that loads again.
        hit.refreshing = false;
      },
    );
  }

  get(namespace: string, key: string): Promise<SettingRecord | null> {
    return this.#cached(`get\0${namespace}\0${key}`, () => this.#store.getSetting(namespace, key));
  }

  list(namespace: string, keyPrefix: string): Promise<SettingRecord[]> {
    return this.#cached(`list\0${namespace}\0${keyPrefix}`, () =>
      this.#store.listSettings(namespace, keyPrefix),
    );
  }

  /** After a local write to a namespace: its cached reads are dropped. */
  invalidate(namespace: string): void {
    for (const key of this.#entries.keys()) {
      if (key.split('\0')[1] === namespace) this.#entries.delete(key);
    }
  }

  /** After a local write of one key: only that key's cached read is dropped. */
  forget(namespace: string, key: string): void {
    this.#entries.delete(`get\0${namespace}\0${key}`);
  }

  clear(): void {
    this.#entries.clear();
  }
}
