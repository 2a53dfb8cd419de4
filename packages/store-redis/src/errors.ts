/**
 * What a Redis failure means for the caller: a connection that is down,
 * refused or timed out is 503 backend_unavailable (retryable), never a
 * hang and never a silent success; a write whose reply was lost says its
 * outcome is unknown. Anything else propagates unchanged.
 */
import { OjsError } from '@ojs/core';

const CONNECTION_CODES = new Set([
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
  'Connection is closed',
  "Stream isn't writeable",
  'Command timed out',
  'Reached the max retries per request limit',
  'connect ETIMEDOUT',
  'LOADING',
  'MASTERDOWN',
  'READONLY',
];

export function isConnectionError(error: unknown): boolean {
  if (error instanceof OjsError) return error.code === 'backend_unavailable';
  const e = error as { code?: string; message?: string; name?: string } | null;
  if (e === null || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) return true;
  if (e.name === 'MaxRetriesPerRequestError') return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return CONNECTION_MESSAGES.some((fragment) => message.includes(fragment));
}

/**
 * The error a store call reports: connection failures become
 * backend_unavailable, with the outcome unknown for a write that may have
 * reached Redis. The driver's error stays as `cause` for logs.
 */
export function toStoreError(error: unknown, write: boolean): unknown {
  if (error instanceof OjsError || !isConnectionError(error)) return error;
  const message = (error as Error).message ?? String(error);
  const unsent = message.includes("Stream isn't writeable") || message.includes('ECONNREFUSED');
  const unknown = write && !unsent;
  const mapped = new OjsError(
    'backend_unavailable',
    unknown
      ? `Redis connection lost during a write; the outcome is unknown: ${message}`
      : `Redis is unreachable: ${message}`,
    { backend: 'redis', ...(unknown ? { outcome: 'unknown' } : {}) },
  );
  Object.defineProperty(mapped, 'cause', { value: error, enumerable: false, writable: true });
  return mapped;
}
