/**
 * Test helpers: a real OJS server (HTTP) on a temporary store, and the two
 * transports the end-to-end suites run over (HTTP and in-process).
 *
 * Stores: SQLite (a temporary file) always; PostgreSQL when it answers at
 * OJS_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test)
 * and @ojs/store-postgres loads, each server in a schema of its own that is
 * dropped afterwards; Redis when it answers at OJS_TEST_REDIS_URL (default
 * redis://127.0.0.1:6379) and @ojs/store-redis loads, each server under a
 * key prefix of its own whose keys are deleted afterwards. Without a
 * reachable shared store its runs are skipped with a printed reason, except
 * under CI=true where they fail. OJS_SDK_TEST_STORES=sqlite (or =postgres,
 * =redis, or a comma-separated list) restricts the list.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '@ojs/core';
import { Engine, JobTracing } from '@ojs/engine';
import { startGrpcServer } from '@ojs/grpc';
import { OjsClient, OjsWorker, type Transport, type WorkerOptions } from '@ojs/sdk';
import { GrpcTransport } from '@ojs/sdk/grpc';
import { InProcessTransport } from '@ojs/sdk/in-process';
import { buildApp, buildManifest, DECLARED_CONFORMANCE_LEVEL, startServer } from '@ojs/server';
import { SqliteStore } from '@ojs/store-sqlite';

export type Mode = 'http' | 'in-process' | 'grpc';
export const MODES: Mode[] = ['http', 'in-process'];
/** The multi-process suites also run their workers over the gRPC binding. */
export const PROCESS_MODES: Mode[] = [...MODES, 'grpc'];
export type StoreKind = 'sqlite' | 'postgres' | 'redis';

export const POSTGRES_URL =
  process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.OJS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The stores OJS_SDK_TEST_STORES asks for (all three by default). */
export function wantedStores(): string[] {
  return (process.env.OJS_SDK_TEST_STORES ?? 'sqlite,postgres,redis').split(',');
}

export interface TestServer {
  url: string;
  engine: Engine;
  kind: StoreKind;
  /**
   * How a child process opens the same store: `sqlite:PATH`, the PostgreSQL
   * URL, or the Redis spec `redis://HOST:PORT/0?prefix=NAME`.
   */
  store: string;
  /** PostgreSQL schema of this server's store. */
  schema?: string;
  /** Redis key prefix of this server's store. */
  prefix?: string;
  /** `host:port` of the server's gRPC binding. */
  grpcAddress: string;
  close(): Promise<void>;
  /** A transport for `mode` (in-process talks to this server's engine directly). */
  transport(mode: Mode): Transport | undefined;
  client(mode?: Mode): OjsClient;
  worker(mode: Mode, options?: WorkerOptions): OjsWorker;
}

type PostgresModule = {
  PostgresStore: new (options: {
    connectionString: string;
    schema?: string;
    pool?: { max?: number };
    onError?: (error: Error) => void;
  }) => Store;
};

/** Smaller pools where many processes share one PostgreSQL (children, probes). */
const POOL = { pool: { max: 5 } };

export async function loadPostgres(): Promise<PostgresModule> {
  const name = '@ojs/store-postgres';
  return (await import(name)) as PostgresModule;
}

let postgresCheck: Promise<string | undefined> | undefined;

/** undefined when the PostgreSQL store can be used, else the reason it cannot. */
export function postgresUnavailable(): Promise<string | undefined> {
  postgresCheck ??= (async () => {
    let store: Store | undefined;
    const schema = testSchema();
    let PostgresStore: PostgresModule['PostgresStore'];
    try {
      ({ PostgresStore } = await loadPostgres());
    } catch (error) {
      return `@ojs/store-postgres is not installed: ${(error as Error).message}`;
    }
    try {
      store = new PostgresStore({
        ...POOL,
        connectionString: POSTGRES_URL,
        schema,
        onError: () => {},
      });
      await store.init();
      await probeEngine(store);
      return undefined;
    } catch (error) {
      const reason = `PostgreSQL store unusable at ${POSTGRES_URL}: ${(error as Error).message}`;
      // In CI a missing database is a failure, not a skip.
      if (process.env.CI === 'true') throw new Error(reason);
      return reason;
    } finally {
      await dropSchemaOf(store, schema).catch(() => {});
    }
  })();
  return postgresCheck;
}

/** A round trip through an engine: the store must implement what this engine needs. */
async function probeEngine(store: Store): Promise<void> {
  const engine = new Engine({ store });
  const created = await engine.enqueue({
    type: 'probe.job',
    args: [],
    options: { queue: 'probe' },
  });
  const [claimed] = await engine.fetch({ queues: ['probe'], count: 1, workerId: 'probe' });
  if (created.status !== 'created' || claimed === undefined)
    throw new Error('probe job not claimed');
  await engine.ack({ jobId: claimed.id, workerId: 'probe' });
  await engine.heartbeat({ workerId: 'probe', jobIds: [] });
}

type RedisModule = {
  RedisStore: new (options: {
    url?: string;
    prefix?: string;
    onError?: (error: Error, context: string) => void;
  }) => Store;
  dropPrefix: (prefix: string, url?: string) => Promise<number>;
};

export async function loadRedis(): Promise<RedisModule> {
  const name = '@ojs/store-redis';
  return (await import(name)) as RedisModule;
}

/** A fresh key prefix for one server's Redis store. */
export function testPrefix(label = 'sdk'): string {
  return `ojs-${label}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** The `--store` spec of a Redis store under `prefix` (the server's `?prefix=` form). */
export function redisSpec(prefix: string, url = REDIS_URL): string {
  const spec = new URL(url);
  spec.searchParams.set('prefix', prefix);
  return spec.toString();
}

/** Deletes every key of a prefix: SCAN MATCH `{prefix}:*`, then UNLINK. */
export async function dropPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  await (await loadRedis()).dropPrefix(prefix, url);
}

async function closeAndDropPrefix(store: Store | undefined, prefix: string): Promise<void> {
  await store?.close().catch(() => {});
  await dropPrefix(prefix);
}

let redisCheck: Promise<string | undefined> | undefined;

/** undefined when the Redis store can be used, else the reason it cannot. */
export function redisUnavailable(): Promise<string | undefined> {
  redisCheck ??= (async () => {
    let store: Store | undefined;
    const prefix = testPrefix('probe');
    let RedisStore: RedisModule['RedisStore'];
    try {
      ({ RedisStore } = await loadRedis());
    } catch (error) {
      return `@ojs/store-redis is not installed: ${(error as Error).message}`;
    }
    try {
      store = new RedisStore({ url: REDIS_URL, prefix, onError: () => {} });
      await store.init();
      await probeEngine(store);
      return undefined;
    } catch (error) {
      const reason = `Redis store unusable at ${REDIS_URL}: ${(error as Error).message}`;
      // In CI a missing Redis is a failure, not a skip.
      if (process.env.CI === 'true') throw new Error(reason);
      return reason;
    } finally {
      await closeAndDropPrefix(store, prefix).catch(() => {});
    }
  })();
  return redisCheck;
}

/** Stores the end-to-end suites run on (printing why PostgreSQL or Redis is skipped). */
export async function testStores(): Promise<StoreKind[]> {
  const wanted = wantedStores();
  const stores: StoreKind[] = [];
  if (wanted.includes('sqlite')) stores.push('sqlite');
  if (wanted.includes('postgres')) {
    const reason = await postgresUnavailable();
    if (reason === undefined) stores.push('postgres');
    else process.stdout.write(`# skipping PostgreSQL runs: ${reason}\n`);
  }
  if (wanted.includes('redis')) {
    const reason = await redisUnavailable();
    if (reason === undefined) stores.push('redis');
    else process.stdout.write(`# skipping Redis runs: ${reason}\n`);
  }
  return stores;
}

/** Why a store's dedicated test file skips: undefined when it runs. */
export async function storeSkipReason(kind: 'postgres' | 'redis'): Promise<string | undefined> {
  if (!wantedStores().includes(kind)) return 'excluded by OJS_SDK_TEST_STORES';
  return kind === 'postgres' ? postgresUnavailable() : redisUnavailable();
}

function testSchema(): string {
  return `ojs_sdk_${process.pid}_${randomBytes(4).toString('hex')}`;
}

async function dropSchemaOf(store: Store | undefined, schema?: string): Promise<void> {
  if (store === undefined) return;
  await store.close().catch(() => {});
  if (schema === undefined) return;
  const { default: pg } = (await import('pg' as string)) as {
    default: {
      Client: new (o: {
        connectionString: string;
      }) => {
        connect(): Promise<void>;
        query(sql: string): Promise<unknown>;
        end(): Promise<void>;
        on(e: string, f: () => void): void;
      };
    };
  };
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

function withModes(base: Omit<TestServer, 'transport' | 'client' | 'worker'>): TestServer {
  const out: TestServer = {
    ...base,
    transport(mode) {
      if (mode === 'grpc') return new GrpcTransport({ address: base.grpcAddress });
      return mode === 'in-process' ? new InProcessTransport(base.engine) : undefined;
    },
    client(mode = 'http') {
      return new OjsClient({ url: base.url, transport: out.transport(mode) });
    },
    worker(mode, workerOptions = {}) {
      return new OjsWorker({
        url: base.url,
        transport: out.transport(mode),
        handleSignals: false,
        logLevel: 'silent',
        pollWaitMs: 500,
        pollIntervalMs: 50,
        ...workerOptions,
      });
    },
  };
  return out;
}

export async function startTestServer(options: { store?: StoreKind } = {}): Promise<TestServer> {
  const kind = options.store ?? 'sqlite';
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-sdk-test-'));
    const store = `sqlite:${join(dir, 'ojs.db')}`;
    const server = await startServer({
      port: 0,
      store,
      testMode: true,
      sqliteSynchronous: 'NORMAL',
      logLevel: 'silent',
    });
    return withModes({
      url: server.url,
      engine: server.engine,
      kind,
      store,
      grpcAddress: server.grpcAddress!,
      async close() {
        await server.close();
        rmSync(dir, { recursive: true, force: true });
      },
    });
  }
  // PostgreSQL and Redis: the server's pieces assembled by hand, so the
  // store gets its own schema (PostgreSQL) or key prefix (Redis).
  let store: Store;
  let spec: string;
  let schema: string | undefined;
  let prefix: string | undefined;
  let drop: () => Promise<void>;
  if (kind === 'redis') {
    const { RedisStore } = await loadRedis();
    const keyPrefix = testPrefix();
    prefix = keyPrefix;
    spec = redisSpec(keyPrefix);
    store = new RedisStore({ url: REDIS_URL, prefix: keyPrefix, onError: () => {} });
    drop = () => closeAndDropPrefix(store, keyPrefix);
  } else {
    const { PostgresStore } = await loadPostgres();
    const pgSchema = testSchema();
    schema = pgSchema;
    spec = POSTGRES_URL;
    store = new PostgresStore({
      ...POOL,
      connectionString: POSTGRES_URL,
      schema,
      onError: () => {},
    });
    drop = () => dropSchemaOf(store, pgSchema);
  }
  await store.init();
  const engine = new Engine({ store, testMode: true });
  // As `ojs serve` does: server spans once a tracer provider is registered.
  engine.observers.add(new JobTracing());
  const config: Parameters<typeof buildApp>[0] = { testMode: true, logger: false };
  const grpc = await startGrpcServer({
    engine,
    port: 0,
    manifest: () => buildManifest(engine, config),
    conformanceLevel: DECLARED_CONFORMANCE_LEVEL,
  });
  config.grpc = { port: grpc.port };
  const app = await buildApp(config, engine);
  engine.start();
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return withModes({
    url: `http://127.0.0.1:${port}`,
    engine,
    kind,
    store: spec,
    schema,
    prefix,
    grpcAddress: grpc.address,
    async close() {
      const grpcClosed = grpc.close();
      await app.close();
      await engine.stop();
      await grpcClosed;
      await drop();
    },
  });
}

/** Opens the store a TestServer uses, from another process (child workers, extra engines). */
export async function openStore(spec: string, schema?: string): Promise<Store> {
  if (spec.startsWith('redis')) {
    // The server's spec form: redis://HOST:PORT/DB?prefix=NAME.
    const url = new URL(spec);
    const prefix = url.searchParams.get('prefix') ?? undefined;
    url.search = '';
    const { RedisStore } = await loadRedis();
    const store = new RedisStore({ url: url.toString(), prefix, onError: () => {} });
    await store.init();
    return store;
  }
  if (spec.startsWith('postgres')) {
    const { PostgresStore } = await loadPostgres();
    const store = new PostgresStore({ ...POOL, connectionString: spec, schema, onError: () => {} });
    await store.init();
    return store;
  }
  const store = new SqliteStore({ path: spec.replace(/^sqlite:/, ''), synchronous: 'NORMAL' });
  await store.init();
  return store;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns a value other than undefined/false. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline)
      throw new Error(`Timed out waiting for ${options.what ?? 'condition'}.`);
    await sleep(options.intervalMs ?? 20);
  }
}
