/**
 * Transactional enqueue (decision 0109): an application writes a job
 * envelope into the store's outbox inside its own database transaction, and
 * the server relays each committed row into a job through the normal
 * enqueue path. These are the outbox's records, the seam a store that
 * offers it implements (`Store.outbox`), and the one rule of what becomes
 * of a row once the enqueue path has answered for it.
 */
import { OjsError } from './errors.ts';

export type OutboxState = 'pending' | 'invalid';

/** The error a row is kept with: the spec's error shape, as POST /ojs/v1/jobs would answer it. */
export interface OutboxError {
  code: string;
  message: string;
  retryable: boolean;
  details?: Record<string, unknown>;
}

export interface OutboxEntry {
  /** The row's id (a bigint, as a decimal string). */
  id: string;
  /** What the application wrote: the body of POST /ojs/v1/jobs. */
  envelope: unknown;
  state: OutboxState;
  /** Relay attempts so far (a claim counts one). */
  attempts: number;
  /** Why the row is invalid, or why its last attempt was put off (pending). */
  error: OutboxError | null;
  created_at: string;
  updated_at: string;
}

export interface OutboxListRequest {
  state?: OutboxState;
  /** Oldest first; the page after this row id. */
  after?: string;
  limit: number;
}

/** What a relayed row came to, for `OutboxStore.finish`. */
export interface OutboxSettlement {
  id: string;
  /** done: relayed (its job stored, or no job by the rules: deduplicated, dropped). */
  outcome: 'done' | 'invalid' | 'retry';
  error?: OutboxError;
}

/**
 * The rows a job insert consumes: deleted in the insert's own transaction,
 * guarded on the relay's lease, so a row becomes exactly one job.
 */
export interface OutboxConsume {
  owner: string;
  ids: string[];
}

/**
 * The outbox of a store that offers transactional enqueue (PostgreSQL).
 * Rows are leased to one relaying process at a time; a lease left by a
 * process that died expires and the row is claimed again.
 */
export interface OutboxStore {
  /** Leases up to `limit` pending rows (oldest first) to `owner` for `leaseMs`; skips rows leased to others. */
  claim(owner: string, limit: number, leaseMs: number): Promise<OutboxEntry[]>;
  /**
   * Settles rows `owner` still leases and that no insert consumed: `done`
   * deleted, `invalid` kept with the error, `retry` left pending with the
   * error and released to be claimed again after `retryMs`.
   */
  finish(owner: string, settlements: OutboxSettlement[], retryMs: number): Promise<void>;
  list(request: OutboxListRequest): Promise<OutboxEntry[]>;
  get(id: string): Promise<OutboxEntry | null>;
  /** An operator's retry: an invalid row back to pending (null: no such row). */
  retry(id: string): Promise<OutboxEntry | null>;
  /** An operator's removal of a row (null: no such row). */
  remove(id: string): Promise<OutboxEntry | null>;
  /** Counts per state. */
  counts(): Promise<Record<OutboxState, number>>;
  /** Called when rows may have been committed (NOTIFY); returns the unsubscribe. */
  onRows(listener: () => void): () => void;
}

/**
 * What becomes of a row the enqueue path refused: an error that may pass
 * (a full queue, a tenant at its limit, a store outage: `retryable`) leaves
 * it pending, to be relayed again; any other (an invalid envelope, a taken
 * id or unique key) makes it invalid, kept with its error and never retried
 * until an operator says so.
 */
export function outboxSettlementFor(id: string, error: OjsError): OutboxSettlement {
  return {
    id,
    outcome: error.retryable ? 'retry' : 'invalid',
    error: outboxError(error),
  };
}

export function outboxError(error: OjsError): OutboxError {
  const wire: OutboxError = {
    code: error.code,
    message: error.message,
    retryable: error.retryable,
  };
  if (error.details !== undefined && Object.keys(error.details).length > 0) {
    wire.details = error.details;
  }
  return wire;
}

/** An outbox row id as the API takes it: a positive integer in decimal. */
export function parseOutboxId(id: string): string {
  if (!/^[1-9][0-9]{0,18}$/.test(id)) {
    throw new OjsError('invalid_request', `'${id}' is not an outbox row id (a positive integer).`, {
      field: 'id',
    });
  }
  return id;
}

/** Largest page of an outbox listing. */
export const MAX_OUTBOX_PAGE = 500;

/**
 * An outbox listing from query parameters: `state` (pending | invalid),
 * `after` (a row id: the page after it), `limit` (1..500, default 50).
 * Unknown parameters are refused, so a typo is pointed out.
 */
export function parseOutboxListQuery(query: Record<string, unknown>): OutboxListRequest {
  for (const name of Object.keys(query)) {
    if (name !== 'state' && name !== 'after' && name !== 'limit') {
      throw new OjsError(
        'invalid_request',
        `Unknown query parameter '${name}': the outbox listing takes state, after and limit.`,
        { field: name },
      );
    }
  }
  const request: OutboxListRequest = { limit: 50 };
  const { state, after, limit } = query;
  if (state !== undefined) {
    if (state !== 'pending' && state !== 'invalid') {
      throw new OjsError('invalid_request', "state must be 'pending' or 'invalid'.", {
        field: 'state',
      });
    }
    request.state = state;
  }
  if (after !== undefined) request.after = parseOutboxId(String(after));
  if (limit !== undefined) {
    const n = Number(limit);
    if (!Number.isInteger(n) || n < 1 || n > MAX_OUTBOX_PAGE) {
      throw new OjsError(
        'invalid_request',
        `limit must be an integer from 1 to ${MAX_OUTBOX_PAGE}.`,
        {
          field: 'limit',
        },
      );
    }
    request.limit = n;
  }
  return request;
}
