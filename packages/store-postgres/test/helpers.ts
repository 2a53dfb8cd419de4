/**
 * Test plumbing: the database URL (OJS_TEST_POSTGRES_URL), a schema per
 * test file (dropped afterwards), stores on it, an admin connection, and
 * the skip rule: without a reachable server the tests skip with a printed
 * reason, except under CI=true where they fail.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PostgresStore, type PostgresStoreOptions } from '../src/index.ts';

export const POSTGRES_URL =
  process.env.OJS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let checked: Promise<string | undefined> | undefined;

/** undefined when PostgreSQL answers; otherwise the reason to skip (throws under CI=true). */
export function unavailable(): Promise<string | undefined> {
  checked ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      return undefined;
    } catch (error) {
      const reason = `PostgreSQL unreachable at ${POSTGRES_URL} (${(error as Error).message}); set OJS_TEST_POSTGRES_URL`;
      if (process.env.CI === 'true')
        throw new Error(`${reason} (CI=true: failing instead of skipping)`);
      console.log(`# skipping PostgreSQL tests: ${reason}`);
      return reason;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return checked;
}

/** A fresh schema name for one test file. */
export function testSchema(label: string): string {
  return `ojs_t_${label}_${process.pid}_${randomBytes(3).toString('hex')}`.slice(0, 48);
}

export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({
    connectionString: POSTGRES_URL,
    application_name: 'ojs-test-admin',
  });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await withAdmin((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** Terminates the backends whose application_name starts with `prefix`; returns how many. */
export async function terminateBackends(prefix: string): Promise<number> {
  return withAdmin(async (client) => {
    const { rows } = await client.query<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
        WHERE application_name LIKE $1 || '%' AND pid <> pg_backend_pid()`,
      [prefix],
    );
    return rows.filter((row) => row.ok).length;
  });
}

export async function openStore(
  schema: string,
  options: Partial<PostgresStoreOptions> = {},
): Promise<PostgresStore> {
  const store = new PostgresStore({
    connectionString: POSTGRES_URL,
    schema,
    clockSyncIntervalMs: 0,
    applicationName: `ojs-test-${schema}`,
    onError: () => {},
    ...options,
  });
  await store.init();
  return store;
}

/** Resolves when `predicate` holds, polling; rejects after `timeoutMs`. */
export async function eventually(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every plan node of an EXPLAIN (FORMAT JSON) tree. */
export function planNodes(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [plan, ...children.flatMap(planNodes)];
}
