/**
 * Transactional enqueue (PostgreSQL store, docs/transactional-enqueue.md):
 * a job written with the application's own database connection, inside
 * its own transaction, so the job exists if and only if that transaction
 * commits. These helpers call the SQL functions the store's schema
 * provides (`<schema>.enqueue`, `<schema>.enqueue_envelope`), which write
 * an outbox row; every `ojs serve` on the database relays committed rows
 * through the normal enqueue path, where they are validated. Nothing is
 * validated here: a refused envelope becomes an invalid outbox row, kept
 * with its error (`client.admin.outbox()`, `ojs outbox`, the dashboard).
 *
 * No driver is imported: the application passes what it already holds.
 *
 *   // pg: a Client or PoolClient inside BEGIN ... COMMIT (or a Pool, one statement)
 *   await client.query('BEGIN');
 *   await client.query('INSERT INTO orders ...');
 *   const id = await enqueueInTransaction(client, 'email.send', ['ada@example.com']);
 *   await client.query('COMMIT');
 *
 *   // postgres.js: `sql` or the transaction of `sql.begin`
 *   await sql.begin((tx) => enqueueInTransaction(tx, 'email.send', ['ada@example.com']));
 *
 *   // anything else: an adapter that runs one statement with $1-style parameters
 *   // on the transaction's connection and returns its rows (or {rows})
 *   await enqueueInTransaction({ query: (text, params) => trx.$queryRawUnsafe(text, ...params) }, ...);
 */

/** A row of a result, as drivers return them. */
export type SqlRow = Record<string, unknown>;

/**
 * The adapter for any library: run `text` (one statement, parameters
 * `$1`, `$2`, ... all strings or null) on the connection of the
 * application's transaction and return its rows, or an object with
 * `rows`. `pg`'s Client, PoolClient and Pool are such adapters already.
 *
 * - Kysely: `{ query: (text, params) => trx.executeQuery(CompiledQuery.raw(text, params)) }`
 * - Prisma: `{ query: (text, params) => tx.$queryRawUnsafe(text, ...params) }`
 */
export interface SqlAdapter {
  query(text: string, params: (string | null)[]): PromiseLike<{ rows: SqlRow[] } | SqlRow[]>;
}

/** postgres.js: `sql`, a reserved connection, or the transaction of `sql.begin`. */
export interface PostgresJsSql {
  unsafe(text: string, params: (string | null)[]): PromiseLike<SqlRow[]>;
}

/** The application's database connection or transaction. */
export type TransactionalDb = SqlAdapter | PostgresJsSql;

export interface TransactionalOptions {
  /** The store's schema (`?schema=NAME` of the server's store spec); default `ojs`. */
  schema?: string;
}

export interface TransactionalEnqueueOptions extends TransactionalOptions {
  /**
   * The envelope's `options` as POST /ojs/v1/jobs takes them (wire form):
   * `queue`, `priority`, `timeout_ms`, `scheduled_at`, `retry`, `unique`,
   * `tags`, `pending`, ...
   */
  options?: Record<string, unknown>;
  /** The envelope's `meta`. */
  meta?: Record<string, unknown>;
}

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** `$n::text::jsonb`: a text parameter on every driver (postgres.js would otherwise serialise a string as a JSON string). */
const json = (value: unknown): string | null =>
  value === undefined ? null : JSON.stringify(value);

async function run(db: TransactionalDb, text: string, params: (string | null)[]): Promise<SqlRow> {
  const result =
    'unsafe' in db && typeof db.unsafe === 'function'
      ? await db.unsafe(text, params)
      : await (db as SqlAdapter).query(text, params);
  const rows = Array.isArray(result) ? result : (result as { rows: SqlRow[] }).rows;
  const row = rows?.[0];
  if (row === undefined) {
    throw new TypeError(
      'The database adapter returned no row: query(text, params) must resolve to the rows or to {rows}.',
    );
  }
  return row;
}

/**
 * Enqueues one job in the application's transaction (`<schema>.enqueue`):
 * the job gets a fresh UUIDv7 id, returned at once, and exists once the
 * transaction commits (never if it rolls back).
 */
export async function enqueueInTransaction(
  db: TransactionalDb,
  type: string,
  args: unknown[] = [],
  options: TransactionalEnqueueOptions = {},
): Promise<string> {
  const schema = quoteIdentifier(options.schema ?? 'ojs');
  const row = await run(
    db,
    `SELECT ${schema}.enqueue($1::text, $2::text::jsonb, $3::text::jsonb, $4::text::jsonb)::text AS id`,
    [type, json(args), json(options.options), json(options.meta)],
  );
  return row.id as string;
}

/**
 * Enqueues a whole envelope, the body of POST /ojs/v1/jobs, in the
 * application's transaction (`<schema>.enqueue_envelope`). A client-chosen
 * `id` is kept (and, as over HTTP, refused by the server if taken); without
 * one the job gets a fresh UUIDv7. Returns the id (null when the envelope is
 * not an object: the server will keep it as invalid).
 */
export async function enqueueEnvelopeInTransaction(
  db: TransactionalDb,
  envelope: unknown,
  options: TransactionalOptions = {},
): Promise<string | null> {
  const schema = quoteIdentifier(options.schema ?? 'ojs');
  const row = await run(db, `SELECT ${schema}.enqueue_envelope($1::text::jsonb) AS id`, [
    json(envelope),
  ]);
  return (row.id as string | null) ?? null;
}
