/**
 * Schema migrations: the numbered files in ../sql, applied in order, once
 * each, recorded in <schema>.schema_migrations. One transaction holds
 * pg_advisory_xact_lock on the schema's migration key, so any number of
 * processes starting at once (or `ojs migrate` next to running servers)
 * apply each file exactly once; the others wait and then find nothing to do.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import {
  assertSchemaName,
  DEFAULT_SCHEMA,
  lockText,
  quoteSchema,
  splitSchemaParam,
} from './names.ts';

const SQL_DIR = new URL('../sql/', import.meta.url);

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function loadMigrations(dir: URL = SQL_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file,
      sql: readFileSync(new URL(file, dir), 'utf8'),
    }));
}

/** Anything that hands out a client: a pg.Pool (or a test double of it). */
export interface Connectable {
  connect(): Promise<pg.PoolClient>;
}

/**
 * Creates the schema if needed and applies the pending migrations.
 * Returns the names of the files applied now (empty when up to date).
 * Versions recorded by a newer release are left alone.
 */
export async function migrate(
  pool: Connectable,
  schema: string = DEFAULT_SCHEMA,
  migrations: Migration[] = loadMigrations(),
): Promise<string[]> {
  assertSchemaName(schema);
  const client = await pool.connect();
  // Set when the connection cannot be trusted any more: release() then destroys it.
  let broken: Error | undefined;
  const onClientError = (error: Error) => {
    broken ??= error;
  };
  client.on('error', onClientError);
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
      lockText.migrate(schema),
    ]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteSchema(schema)}`);
    await client.query(`SET LOCAL search_path TO ${quoteSchema(schema)}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ version: number }>(
      'SELECT version FROM schema_migrations',
    );
    const done = new Set(rows.map((row) => row.version));
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.name);
    }
    await client.query('COMMIT');
    return applied;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.removeListener('error', onClientError);
    client.release(broken);
  }
}

const USAGE = `Usage: ojs migrate --store postgres://USER@HOST:PORT/DB [--schema NAME]

Applies the PostgreSQL store's pending schema migrations and exits.
  --store URL     the database (default: $OJS_STORE)
  --schema NAME   the schema holding the store's tables (default: the URL's ?schema=,
                  else $OJS_POSTGRES_SCHEMA, else 'ojs')
Servers also migrate automatically at start; running this first lets a
deployment apply migrations once, before new processes start.`;

/** `ojs migrate`: returns the process exit code (0 ok, 1 failure, 2 usage). */
export async function migrateMain(
  argv: string[],
  io: { out: (line: string) => void; err: (line: string) => void } = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  },
): Promise<number> {
  let values: { store?: string; schema?: string; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        store: { type: 'string' },
        schema: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    io.err(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const rest = positionals.filter((arg) => arg !== 'migrate');
  const store = values.store ?? rest[0] ?? process.env.OJS_STORE;
  if (store === undefined || !/^postgres(ql)?:\/\//.test(store) || rest.length > 1) {
    io.err(`ojs migrate needs a postgres:// store URL.\n\n${USAGE}`);
    return 2;
  }
  const split = splitSchemaParam(store);
  const schema = values.schema ?? split.schema ?? process.env.OJS_POSTGRES_SCHEMA ?? DEFAULT_SCHEMA;
  try {
    assertSchemaName(schema);
  } catch (error) {
    io.err((error as Error).message);
    return 2;
  }
  const pool = new pg.Pool({
    connectionString: split.connectionString,
    max: 1,
    connectionTimeoutMillis: 10_000,
    application_name: 'ojs-migrate',
  });
  pool.on('error', (error) => io.err(`PostgreSQL connection error: ${error.message}`));
  try {
    const applied = await migrate(pool, schema);
    if (applied.length === 0) io.out(`Schema '${schema}' is up to date.`);
    for (const name of applied) io.out(`Applied ${name} to schema '${schema}'.`);
    return 0;
  } catch (error) {
    io.err(`Migration failed: ${(error as Error).message}`);
    return 1;
  } finally {
    await pool.end().catch((error: Error) => io.err(`Closing the pool failed: ${error.message}`));
  }
}
