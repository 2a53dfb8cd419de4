/**
 * What a PostgreSQL failure means for the caller: a lost or refused
 * connection (retry on a fresh connection when nothing can have been
 * committed; otherwise report the store unavailable), a transient conflict
 * between transactions (retry the whole transaction), or data PostgreSQL
 * cannot hold (the client's fault). Anything else propagates unchanged.
 */
import { OjsError } from '@ojs/core';

interface PgLikeError {
  code?: string;
  message?: string;
  constraint?: string;
}

/** SQLSTATEs and socket errors that mean "this connection is gone or refused". */
const CONNECTION_CODES = new Set([
  '08000', // connection_exception
  '08001', // sqlclient_unable_to_establish_sqlconnection
  '08003', // connection_does_not_exist
  '08004', // sqlserver_rejected_establishment_of_sqlconnection
  '08006', // connection_failure
  '57P01', // admin_shutdown (pg_terminate_backend, server stop)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up / shutting down)
  '53300', // too_many_connections
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

const CONNECTION_MESSAGES = [
  'Connection terminated',
  'connection error',
  'not queryable',
  'timeout exceeded when trying to connect',
  'Connection ended unexpectedly',
  'terminating connection',
];

export function isConnectionError(error: unknown): boolean {
  if (error instanceof OjsError) return error.code === 'backend_unavailable';
  const e = error as PgLikeError | null;
  if (e === null || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return CONNECTION_MESSAGES.some((fragment) => message.includes(fragment));
}

/**
 * A connection failure that happened before the statement reached the
 * server (the connection could not be opened, or the client already knew it
 * was broken): retrying cannot apply anything twice.
 */
export function isUnsent(error: unknown): boolean {
  const e = error as PgLikeError | null;
  if (e === null || typeof e !== 'object') return false;
  if (typeof e.message === 'string' && e.message.includes('not queryable')) return true;
  return [
    'ECONNREFUSED',
    'ENOTFOUND',
    'EAI_AGAIN',
    'EHOSTUNREACH',
    'ENETUNREACH',
    '57P03',
    '53300',
  ].includes(e.code ?? '');
}

/** Deadlock or serialization failure: the transaction was rolled back and may be retried. */
export function isTransientConflict(error: unknown): boolean {
  const code = (error as PgLikeError | null)?.code;
  return code === '40P01' || code === '40001';
}

/** A primary-key / unique violation on the given constraint. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as PgLikeError | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/**
 * Maps a driver error to what callers act on: connection loss becomes 503
 * backend_unavailable (retryable), a NUL character in JSON (jsonb cannot
 * store \u0000) becomes 400 invalid_payload. The original error is the cause.
 */
export function toStoreError(error: unknown, unknownOutcome = false): unknown {
  if (error instanceof OjsError) return error;
  if (isConnectionError(error)) {
    const message = (error as Error).message ?? String(error);
    return new OjsError(
      'backend_unavailable',
      unknownOutcome
        ? `PostgreSQL connection lost while committing; the outcome is unknown: ${message}`
        : `PostgreSQL is unreachable: ${message}`,
      { backend: 'postgres', ...(unknownOutcome ? { outcome: 'unknown' } : {}) },
    );
  }
  const code = (error as PgLikeError | null)?.code;
  if (code === '22P05' || code === '22021') {
    return new OjsError(
      'invalid_payload',
      'The job contains text PostgreSQL cannot store (the NUL character \\u0000 or invalid UTF-8).',
      { backend: 'postgres' },
    );
  }
  return error;
}

/** toStoreError, keeping the driver error as `cause` for logs. */
export function wrapError(error: unknown, unknownOutcome = false): unknown {
  const mapped = toStoreError(error, unknownOutcome);
  if (mapped !== error && mapped instanceof Error && mapped.cause === undefined) {
    Object.defineProperty(mapped, 'cause', { value: error, enumerable: false, writable: true });
  }
  return mapped;
}
