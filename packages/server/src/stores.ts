/**
 * Store selection from one string (`--store` / OJS_STORE):
 *   sqlite:PATH | PATH.db | :memory:   embedded SQLite (default ./data/ojs.db)
 *   postgres://... | postgresql://...  PostgreSQL (@ojs/store-postgres)
 *   redis://... | rediss://...         Redis (@ojs/store-redis, when installed)
 * Any other scheme is refused with this list (checkStoreSpec).
 * Shared stores are loaded on demand so the default install stays small.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { closestName, type Store } from '@ojs/core';
import { SqliteStore, SqliteThreadStore } from '@ojs/store-sqlite';

export const DEFAULT_STORE = 'sqlite:./data/ojs.db';

export interface StoreOptions {
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  /** SQLite on its own thread (default false: on the event loop, decision 0080). */
  sqliteThread?: boolean;
  /** The SQLite store thread gives memory back after bursts when quiet (core startQuietGc). */
  quietGc?: boolean;
  /** Background errors of a shared store (idle connections, listener); logged, never fatal. */
  onError?: (error: Error, context: string) => void;
  /** A shared store's notes at start (Redis: what its persistence means for an acknowledged job). */
  log?: (level: 'info' | 'warn', message: string) => void;
}

/** The store specs `--store` accepts, for error messages and `--help`. */
export const SUPPORTED_STORES =
  'sqlite:PATH, PATH (a file), :memory:, postgres://USER@HOST:PORT/DB (or postgresql://), redis://HOST:PORT (or rediss://)';

const SCHEMES = ['sqlite', 'postgres', 'postgresql', 'redis', 'rediss'];

/**
 * A spec that starts with a scheme this server does not know is refused:
 * `postgress://...` (a typo) must not silently become a SQLite file in a
 * folder named `postgress:`. One-letter schemes are Windows drive letters.
 */
export function checkStoreSpec(spec: string): void {
  if (spec === ':memory:') return;
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(spec)?.[1];
  if (scheme === undefined || SCHEMES.includes(scheme.toLowerCase())) return;
  const guess = closestName(scheme, SCHEMES);
  throw new Error(
    `Unknown store scheme '${scheme}:' in '${describeStore(spec)}'${guess ? ` (did you mean '${guess}:'?)` : ''}. Supported: ${SUPPORTED_STORES}.${spec.includes('//') ? '' : ` A SQLite file whose name contains ':' is written sqlite:${spec} or ./${spec}.`}`,
  );
}

/**
 * A shared store's package, loaded on demand; a clear error when it is not
 * installed. `load` imports it by its literal name, so the installed build
 * bundles it with the rest (decision 0108).
 */
async function importStorePackage(
  load: () => Promise<unknown>,
  name: string,
  what: string,
): Promise<Record<string, unknown>> {
  try {
    return (await load()) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(name)) {
      throw new Error(
        `The ${what} store needs the package ${name}, which is not installed in this build. Supported here: ${SUPPORTED_STORES}.`,
      );
    }
    throw error;
  }
}

export async function createStore(spec: string, options: StoreOptions = {}): Promise<Store> {
  checkStoreSpec(spec);
  if (spec.startsWith('postgres://') || spec.startsWith('postgresql://')) {
    const { PostgresStore } = (await importStorePackage(
      () => import('@ojs/store-postgres'),
      '@ojs/store-postgres',
      'PostgreSQL',
    )) as {
      PostgresStore: new (options: {
        connectionString: string;
        onError?: StoreOptions['onError'];
      }) => Store;
    };
    return new PostgresStore({ connectionString: spec, onError: options.onError });
  }
  if (spec.startsWith('redis://') || spec.startsWith('rediss://')) {
    const { url, prefix } = redisSpec(spec);
    const { RedisStore } = (await importStorePackage(
      () => import('@ojs/store-redis'),
      '@ojs/store-redis',
      'Redis',
    )) as {
      RedisStore: new (options: {
        url: string;
        prefix?: string;
        onError?: StoreOptions['onError'];
        log?: StoreOptions['log'];
      }) => Store;
    };
    return new RedisStore({ url, prefix, onError: options.onError, log: options.log });
  }
  const path = spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : spec;
  if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
  const sqliteOptions = { path, synchronous: options.sqliteSynchronous };
  // On the event loop by default (decision 0080): crossing to a store
  // thread cost more than it saved on every measured phase.
  return options.sqliteThread === true
    ? new SqliteThreadStore({ ...sqliteOptions, quietGc: options.quietGc })
    : // The server's bindings only serialise the records they are handed
      // (decision 0111): the store keeps its claimed jobs as they are.
      new SqliteStore({ ...sqliteOptions, recordsReadOnly: true });
}

/** Query parameters a Redis store spec may carry. */
const REDIS_PARAMS = ['prefix'];

/**
 * A Redis spec's connection URL and key prefix
 * (`redis://host:6379/0?prefix=myapp`): several deployments share one Redis
 * by prefix. Any other query parameter is refused by name, so a typo is not
 * silently ignored.
 */
export function redisSpec(spec: string): { url: string; prefix?: string } {
  const url = new URL(spec);
  for (const name of url.searchParams.keys()) {
    if (!REDIS_PARAMS.includes(name)) {
      const guess = closestName(name, REDIS_PARAMS);
      throw new Error(
        `Unknown parameter '${name}' in the Redis store spec${guess ? ` (did you mean '${guess}'?)` : ''}; supported: ${REDIS_PARAMS.join(', ')}.`,
      );
    }
  }
  const prefix = url.searchParams.get('prefix') ?? undefined;
  url.search = '';
  return { url: url.toString(), prefix };
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
