/**
 * Real servers on each store for the tests that must give the same answer
 * everywhere (hostile input, fuzz): `ojs serve` pieces via startServer on a
 * temporary SQLite file, and on PostgreSQL in a schema of its own that is
 * dropped afterwards. PostgreSQL comes from OJS_TEST_POSTGRES_URL; when it
 * is unreachable its runs are skipped with the reason, except under CI=true.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '@ojs/engine';
import type { FastifyInstance } from 'fastify';
import { type ServeOptions, startServer } from '../src/serve.ts';

export type StoreKind = 'sqlite' | 'postgres';

export const POSTGRES_URL =
  process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

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

type PgClient = {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: string, listener: () => void): void;
};

async function withPg<T>(fn: (client: PgClient) => Promise<T>): Promise<T> {
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
function postgresProblem(): Promise<string | undefined> {
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

/** The stores to run on, printing why PostgreSQL is skipped. */
export async function storeKinds(): Promise<StoreKind[]> {
  const reason = await postgresProblem();
  if (reason === undefined) return ['sqlite', 'postgres'];
  process.stdout.write(`# skipping PostgreSQL runs: ${reason}\n`);
  return ['sqlite'];
}

export async function startLiveServer(
  kind: StoreKind,
  options: Omit<ServeOptions, 'store' | 'port'> = {},
): Promise<LiveServer> {
  let store: string;
  let cleanup: () => Promise<void>;
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ojs-live-'));
    store = `sqlite:${join(dir, 'ojs.db')}`;
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const schema = `ojs_live_${process.pid}_${randomBytes(4).toString('hex')}`;
    const url = new URL(POSTGRES_URL);
    url.searchParams.set('schema', schema);
    store = url.toString();
    cleanup = () => withPg(async (c) => void (await c.query(`DROP SCHEMA "${schema}" CASCADE`)));
  }
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
