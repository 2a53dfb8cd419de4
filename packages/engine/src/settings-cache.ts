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

/** The cached reads of one kind (get or list): by namespace, then key or key prefix. */
type Reads = Map<string, Map<string, Entry<unknown>>>;

export class SettingsCache {
  readonly #store: Store;
  readonly #ttlMs: number;
  // Two levels rather than one composite key: a read on the enqueue path
  // (three per job) builds no key string and hashes none.
  readonly #gets: Reads = new Map();
  readonly #lists: Reads = new Map();

  readonly #now: () => number;

  constructor(store: Store, ttlMs = 1000, now: () => number = () => performance.now()) {
    this.#store = store;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  #cached<T>(reads: Reads, namespace: string, key: string, load: () => Promise<T>): Promise<T> {
    const now = this.#now();
    let entries = reads.get(namespace);
    const hit = entries?.get(key) as Entry<T> | undefined;
    if (hit !== undefined && now - hit.at < this.#ttlMs) {
      if (now - hit.at >= this.#ttlMs / 2 && !hit.refreshing) {
        this.#refresh(entries!, key, hit, load, now);
      }
      return hit.value;
    }
    const value = load();
    if (entries === undefined) {
      entries = new Map();
      reads.set(namespace, entries);
    } else if (entries.size >= MAX_ENTRIES) {
      // Keys include worker ids, which come and go: bound each namespace.
      entries.clear();
    }
    const entry: Entry<T> = { value, at: now };
    entries.set(key, entry);
    // A failed read is not cached.
    value.catch(() => {
      if (entries.get(key) === entry) entries.delete(key);
    });
    return value;
  }

  /** Reloads `key` in the background; the entry is replaced only by a successful load. */
  #refresh<T>(
    entries: Map<string, Entry<unknown>>,
    key: string,
    hit: Entry<T>,
    load: () => Promise<T>,
    at: number,
  ): void {
    hit.refreshing = true;
    load().then(
      (loaded) => {
        // Invalidated or replaced meanwhile: that newer state wins.
        if (entries.get(key) === hit) {
          entries.set(key, { value: Promise.resolve(loaded), at });
        }
      },
      () => {
        // The old entry stays until it expires; the next read after that loads again.
        hit.refreshing = false;
      },
    );
  }

  get(namespace: string, key: string): Promise<SettingRecord | null> {
    return this.#cached(this.#gets, namespace, key, () => this.#store.getSetting(namespace, key));
  }

  list(namespace: string, keyPrefix: string): Promise<SettingRecord[]> {
    return this.#cached(this.#lists, namespace, keyPrefix, () =>
      this.#store.listSettings(namespace, keyPrefix),
    );
  }

  /** After a local write to a namespace: its cached reads are dropped. */
  invalidate(namespace: string): void {
    this.#gets.delete(namespace);
    this.#lists.delete(namespace);
  }

  /** After a local write of one key: only that key's cached read is dropped. */
  forget(namespace: string, key: string): void {
    this.#gets.get(namespace)?.delete(key);
  }

  clear(): void {
    this.#gets.clear();
    this.#lists.clear();
  }
}
