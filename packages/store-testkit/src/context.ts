/**
 * The store under test, shared by every area of the suite. A fresh store is
 * made by the factory before each test and closed (and cleaned up) after it,
 * so no test sees another's data.
 */
import type { Store } from '@ojs/core';

export interface StoreUnderTest {
  /** An initialised, empty store. */
  store: Store;
  /** Removes what the factory created (temp files, schemas, key prefixes). */
  cleanup?: () => Promise<void>;
}

export type StoreFactory = () => Promise<StoreUnderTest>;

export class SuiteContext {
  #current: StoreUnderTest | undefined;
  #closed = false;

  /** The store of the running test; throws outside a test. */
  get store(): Store {
    if (this.#current === undefined) throw new Error('No store: the factory has not run yet.');
    return this.#current.store;
  }

  async open(factory: StoreFactory): Promise<void> {
    this.#current = await factory();
    this.#closed = false;
  }

  /** Closes the store now (a test about closed stores); cleanup still runs after the test. */
  async closeStore(): Promise<void> {
    if (this.#current === undefined || this.#closed) return;
    this.#closed = true;
    await this.#current.store.close();
  }

  async close(): Promise<void> {
    const current = this.#current;
    this.#current = undefined;
    if (current === undefined) return;
    try {
      if (!this.#closed) await current.store.close();
    } finally {
      await current.cleanup?.();
    }
  }
}
