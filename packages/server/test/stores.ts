/**
 * Real servers on each store for the tests that must give the same answer
 * everywhere (hostile input, fuzz): `ojs serve` pieces via startServer on a
 * temporary SQLite file, on PostgreSQL in a schema of its own that is
 * dropped afterwards, and on Redis under a key prefix of its own whose keys
 * are deleted afterwards. PostgreSQL comes from OJS_TEST_POSTGRES_URL and
 * Redis from OJS_TEST_REDIS_URL; when one is unreachable its runs are
 * skipped with the reason, except under CI=true.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { dropRedisPrefix } from '../../../scripts/lib.ts';
import { type ServeOptions, startServer } from '../src/serve.ts';

export type StoreKind = 'sqlite' | 'postgres' | 'redis';

export const POSTGRES_URL =
  process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export const REDIS_URL = process.env.OJS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface LiveServer {
  kind: StoreKind;
  url: string;
  /** The store spec a child process opens the same store with. */
  store: string;
  engine: Engine;
  app: FastifyInstance;
  /** The gRPC binding's port, when served. */
  grpcPort?: number;
  close(): Promise<void>;
}

export type PgClient = {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: string, listener: () => void): void;
};

export async function withPg<T>(fn: (client: PgClient) => Promise<T>): Promise<T> {
  const name = 'pg';
  const { default: pg } = (await import(name)) as {
    default: { Client: new (o: { connectionString: string }) => PgClient };
  };
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

let postgresCheck: Promise<string | undefined> | undefined;

/** undefined when PostgreSQL answers; else why not (thrown under CI=true). */
export function postgresProblem(): Promise<string | undefined> {
  postgresCheck ??= withPg(async (client) => {
    await client.query('SELECT 1');
  }).then(
    () => undefined,
    (error: Error) => {
      const reason = `PostgreSQL unreachable at ${POSTGRES_URL}: ${error.message}`;
      if (process.env.CI === 'true') throw new Error(reason);
      return reason;
    },
  );
  return postgresCheck;
}

let redisCheck: Promise<string | undefined> | undefined;

/** undefined when Redis answers; else why not (thrown under CI=true). */
function redisProblem(): Promise<string | undefined> {
  redisCheck ??= (async () => {
    // No reconnection: an unreachable Redis must not keep the test process alive.
    const redis = new Redis(REDIS_URL, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      connectTimeout: 3000,
      retryStrategy: () => null,
    });
    // The socket's own error (ECONNREFUSED ...) says more than "Connection is closed".
    let cause: Error | undefined;
    redis.on('error', (error: Error) => {
      cause ??= error;
    });
    try {
      await redis.connect();
      await redis.ping();
    } catch (error) {
      throw cause ?? error;
    } finally {
      redis.disconnect();
    }
  })().then(
    () => undefined,
    (error: Error) => {
      const reason = `Redis unreachable at ${REDIS_URL}: ${error.message}`;
      if (process.env.CI === 'true') throw new Error(reason);
      return reason;
    },
  );
  return redisCheck;
}

/** The stores to run on, printing why PostgreSQL or Redis is skipped. */
export async function storeKinds(): Promise<StoreKind[]> {
  const [postgres, redis] = await Promise.all([postgresProblem(), redisProblem()]);
  const kinds: StoreKind[] = ['sqlite'];
  if (postgres === undefined) kinds.push('postgres');
  else process.stdout.write(`# skipping PostgreSQL runs: ${postgres}\n`);
  if (redis === undefined) kinds.push('redis');
  else process.stdout.write(`# skipping Redis runs: ${redis}\n`);
  return kinds;
}

/** A fresh store of `kind` as a spec (a temporary file, a schema, a key prefix) and its removal. */
export function tempStore(kind: StoreKind): { store: string; cleanup: () => Promise<void> } {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-live-'));
    return {
      store: `sqlite:${join(dir, 'ojs.db')}`,
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  if (kind === 'redis') {
    const prefix = `ojs-live-${process.pid}-${randomBytes(4).toString('hex')}`;
    const url = new URL(REDIS_URL);
    url.searchParams.set('prefix', prefix);
    return { store: url.toString(), cleanup: () => dropRedisPrefix(REDIS_URL, prefix) };
  }
  const schema = `ojs_live_${process.pid}_${randomBytes(4).toString('hex')}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  return {
    store: url.toString(),
    cleanup: () => withPg(async (c) => void (await c.query(`DROP SCHEMA "${schema}" CASCADE`))),
  };
}

export async function startLiveServer(
  kind: StoreKind,
  options: Omit<ServeOptions, 'store' | 'port'> = {},
): Promise<LiveServer> {
  const { store, cleanup } = tempStore(kind);
  const server = await startServer({
    sqliteSynchronous: 'NORMAL',
    logLevel: 'silent',
    ...options,
    store,
    port: 0,
  });
  return {
    kind,
    url: server.url,
    store,
    engine: server.engine,
    app: server.app,
    ...(server.grpcPort === undefined ? {} : { grpcPort: server.grpcPort }),
    async close() {
      await server.close();
      await cleanup();
    },
  };
}
