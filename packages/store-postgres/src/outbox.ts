/**
 * The outbox of transactional enqueue (decision 0109, migration 013): rows
 * an application wrote inside its own transaction, leased to one relaying
 * server process at a time. A relayed row is deleted in the transaction
 * that inserts its job (`consumeOutboxTx`, guarded on the lease), so it
 * becomes exactly one job; what the rows come to is decided by the engine
 * with core (outbox.ts there), never here.
 */
import type {
  OutboxConsume,
  OutboxEntry,
  OutboxListRequest,
  OutboxSettlement,
  OutboxState,
  OutboxStore,
} from '@ojs/core';
import type { Database } from './database.ts';
import type { JobsAvailableListener } from './listener.ts';
import { quoteSchema } from './names.ts';
import type { Tx } from './tx.ts';

/** The outbox's NOTIFY channel (the trigger of migration 013 sends `<schema>_outbox`). */
export function outboxChannel(schema: string): string {
  return `${schema}_outbox`;
}

interface OutboxRow {
  id: string;
  envelope: unknown;
  state: OutboxState;
  attempts: number;
  error: OutboxEntry['error'];
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id::text AS id, envelope, state, attempts, error, created_at, updated_at';

function entry(row: OutboxRow): OutboxEntry {
  return {
    id: row.id,
    envelope: row.envelope,
    state: row.state,
    attempts: row.attempts,
    error: row.error ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Row ids are bigints: ordered by length, then text. */
function byId(a: OutboxEntry, b: OutboxEntry): number {
  return a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Thrown inside an insert's transaction when a consumed row is no longer this relay's: it rolls back. */
export class OutboxLeaseLost extends Error {
  constructor(expected: number, deleted: number) {
    super(
      `Outbox rows changed hands while being relayed (${deleted} of ${expected} still leased); the insert was rolled back.`,
    );
    this.name = 'OutboxLeaseLost';
  }
}

/** Deletes the relayed rows in the insert's transaction; throws (rolling it back) unless all were still this relay's. */
export async function consumeOutboxTx(tx: Tx, consume: OutboxConsume): Promise<void> {
  if (consume.ids.length === 0) return;
  const result = await tx.client.query(
    `DELETE FROM ${quoteSchema(tx.schema)}.outbox
      WHERE id = ANY($1::bigint[]) AND state = 'pending' AND lease_owner = $2`,
    [consume.ids, consume.owner],
  );
  if (result.rowCount !== consume.ids.length) {
    throw new OutboxLeaseLost(consume.ids.length, result.rowCount ?? 0);
  }
}

export class PostgresOutbox implements OutboxStore {
  readonly #db: Database;
  readonly #table: string;
  readonly #listener: JobsAvailableListener;

  constructor(db: Database, schema: string, listener: JobsAvailableListener) {
    this.#db = db;
    this.#table = `${quoteSchema(schema)}.outbox`;
    this.#listener = listener;
  }

  async claim(owner: string, limit: number, leaseMs: number): Promise<OutboxEntry[]> {
    const { rows } = await this.#db.query<OutboxRow>(
      `UPDATE ${this.#table} o
          SET lease_owner = $1, lease_until = now() + make_interval(secs => $3::float8 / 1000),
              attempts = o.attempts + 1, updated_at = now()
        WHERE o.id IN (
          SELECT id FROM ${this.#table}
           WHERE state = 'pending' AND (lease_until IS NULL OR lease_until < now())
           ORDER BY id LIMIT $2
             FOR UPDATE SKIP LOCKED)
      RETURNING ${COLUMNS}`,
      [owner, limit, leaseMs],
      // Not retried on a lost connection: a claim that did commit would lease
      // rows twice to this process (harmless, but it would also count twice).
      false,
    );
    return rows.map(entry).sort(byId);
  }

  async finish(owner: string, settlements: OutboxSettlement[], retryMs: number): Promise<void> {
    if (settlements.length === 0) return;
    const rows = settlements.map((s) => ({ id: s.id, outcome: s.outcome, error: s.error ?? null }));
    await this.#db.query(
      `WITH s AS (
         SELECT * FROM jsonb_to_recordset($2::jsonb) AS x(id bigint, outcome text, error jsonb)
       ), done AS (
         DELETE FROM ${this.#table} o USING s
          WHERE o.id = s.id AND s.outcome = 'done' AND o.lease_owner = $1
       )
       UPDATE ${this.#table} o
          SET state = CASE WHEN s.outcome = 'invalid' THEN 'invalid' ELSE 'pending' END,
              error = s.error,
              lease_owner = NULL,
              lease_until = CASE WHEN s.outcome = 'retry'
                                 THEN now() + make_interval(secs => $3::float8 / 1000) END,
              updated_at = now()
         FROM s
        WHERE o.id = s.id AND s.outcome <> 'done' AND o.lease_owner = $1`,
      [owner, JSON.stringify(rows), retryMs],
    );
  }

  async list(request: OutboxListRequest): Promise<OutboxEntry[]> {
    const { rows } = await this.#db.query<OutboxRow>(
      `SELECT ${COLUMNS} FROM ${this.#table}
        WHERE ($1::text IS NULL OR state = $1) AND ($2::bigint IS NULL OR id > $2)
        ORDER BY id LIMIT $3`,
      [request.state ?? null, request.after ?? null, request.limit],
    );
    return rows.map(entry);
  }

  async get(id: string): Promise<OutboxEntry | null> {
    const { rows } = await this.#db.query<OutboxRow>(
      `SELECT ${COLUMNS} FROM ${this.#table} WHERE id = $1`,
      [id],
    );
    return rows[0] === undefined ? null : entry(rows[0]);
  }

  async retry(id: string): Promise<OutboxEntry | null> {
    const { rows } = await this.#db.query<OutboxRow>(
      `UPDATE ${this.#table}
          SET state = 'pending', error = NULL, lease_owner = NULL, lease_until = NULL,
              updated_at = now()
        WHERE id = $1
      RETURNING ${COLUMNS}`,
      [id],
    );
    if (rows[0] === undefined) return null;
    // Relays wake as for a new row (the trigger fires on INSERT only).
    await this.#db.query('SELECT pg_notify($1, $2)', [this.#listener.channel, '']);
    return entry(rows[0]);
  }

  async remove(id: string): Promise<OutboxEntry | null> {
    const { rows } = await this.#db.query<OutboxRow>(
      `DELETE FROM ${this.#table} WHERE id = $1 RETURNING ${COLUMNS}`,
      [id],
    );
    return rows[0] === undefined ? null : entry(rows[0]);
  }

  async counts(): Promise<Record<OutboxState, number>> {
    const { rows } = await this.#db.query<{ state: OutboxState; n: string }>(
      `SELECT state, count(*)::text AS n FROM ${this.#table} GROUP BY state`,
      [],
    );
    const counts: Record<OutboxState, number> = { pending: 0, invalid: 0 };
    for (const row of rows) counts[row.state] = Number(row.n);
    return counts;
  }

  onRows(listener: () => void): () => void {
    return this.#listener.subscribe(listener);
  }
}
