/**
 * Store selection from one string (`--store` / OJS_STORE):
 *   sqlite:PATH | PATH.db | :memory:   embedded SQLite (default ./data/ojs.db)
 * Shared stores are loaded on demand so the default install stays small.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Store } from '@ojs/core';
import { SqliteStore, SqliteThreadStore } from '@ojs/store-sqlite';

export const DEFAULT_STORE = 'sqlite:./data/ojs.db';

export interface StoreOptions {
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  /** SQLite on its own thread (default): statements and fsyncs off the event loop. */
  sqliteThread?: boolean;
  /** Background errors of a shared store (idle connections, listener); logged, never fatal. */
  onError?: (error: Error, context: string) => void;
}

export async function createStore(spec: string, options: StoreOptions = {}): Promise<Store> {
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) {
    const moduleName = '@ojs/store-postgres';
    const { PostgresStore } = (await import(moduleName)) as {
      PostgresStore: new (options: {
        connectionString: string;
        onError?: StoreOptions['onError'];
      }) => Store;
    };
    return new PostgresStore({ connectionString: spec, onError: options.onError });
  }
  if (spec.startsWith('redis://') || spec.startsWith('rediss://')) {
    const moduleName = '@ojs/store-redis';
    const { RedisStore } = (await import(moduleName)) as {
      RedisStore: new (options: { url: string }) => Store;
    };
    return new RedisStore({ url: spec });
  }
  const path = spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : spec;
  if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
  const sqliteOptions = { path, synchronous: options.sqliteSynchronous };
  return options.sqliteThread === false
    ? new SqliteStore(sqliteOptions)
    : new SqliteThreadStore(sqliteOptions);
}

/** A printable form of the store spec with credentials removed. */
export function describeStore(spec: string): string {
  try {
    const url = new URL(spec);
    if (url.password) url.password = '***';
    return url.protocol === 'sqlite:' ? spec : url.toString();
  } catch {
    return spec;
  }
}
