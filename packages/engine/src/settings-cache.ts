/**
 * A short-lived read cache over the store's settings (schemas, validation
 * modes, routing rules), read on every enqueue. Local writes invalidate at
 * once; a write made through another server process is seen within
 * `ttlMs` (1 s by default), which is the documented staleness of
 * configuration across processes.
 */
import type { SettingRecord, Store } from '@ojs/core';

const MAX_ENTRIES = 10_000;

interface Entry<T> {
  value: Promise<T>;
  at: number;
}

export class SettingsCache {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #entries = new Map<string, Entry<unknown>>();

  constructor(store: Store, ttlMs = 1000) {
    this.#store = store;
    this.#ttlMs = ttlMs;
  }

  #cached<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = performance.now();
    const hit = this.#entries.get(key) as Entry<T> | undefined;
    if (hit !== undefined && now - hit.at < this.#ttlMs) return hit.value;
    const value = load();
    // Keys include worker ids, which come and go: bound the map.
    if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(key, { value, at: now });
    // A failed read is not cached.
    value.catch(() => this.#entries.delete(key));
    return value;
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
