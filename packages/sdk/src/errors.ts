/**
 * Typed errors (SDK guidelines §19.3, http-binding digest §6). Every error the
 * SDK rejects a promise with is an OjsError; the subclass is chosen from the
 * error code (compared case-insensitively, any spelling) and, failing that,
 * from the HTTP status. `parseErrorResponse` accepts every error body shape
 * the specifications show:
 *
 *   {"error":{"code","type","message","retryable","details","request_id"}}   HB / OA
 *   {"code":"DUPLICATE_JOB","message","details","retryable","doc_url"}       ER (flat)
 *   {"error":"PayloadTooLarge","message","details":{...}}                    PL
 *   {"error":{"code":"QUEUE_FULL","message","queue","depth","bound"}}        BP (extra fields)
 *   {"error":{"code":"permission_denied","message","detail":{...}}}          SEC (`detail`)
 *
 * plus non-JSON bodies, which fall back to the status code.
 */
import {
  type ErrorCodeInfo,
  lookupErrorCode,
  normalizeErrorCode,
} from './generated/error-codes.ts';
import { isObject } from './generated/is-object.ts';

export interface OjsErrorOptions {
  code?: string;
  status?: number;
  retryable?: boolean;
  details?: Record<string, unknown>;
  requestId?: string;
  jobId?: string;
  queue?: string;
  operation?: string;
  attempt?: number;
  retryAfterMs?: number;
  /** The server's advice on how to fix this request (`error.hint`), if it sent one. */
  hint?: string;
  cause?: unknown;
}

/** Base class of every SDK error. */
export class OjsError extends Error {
  /** Normalised lowercase code (`duplicate`, `not_found`, `rate_limited`, ...). */
  readonly code: string;
  /** Numeric catalogue code (`OJS-3001`), when the code is in the catalogue. */
  readonly numericCode: string | undefined;
  /** HTTP status, 0 for errors raised before or without a response. */
  readonly status: number;
  /** Whether the operation may succeed if repeated (server flag, else catalogue default). */
  readonly retryable: boolean;
  readonly details: Record<string, unknown>;
  readonly requestId: string | undefined;
  /** Context (SDK guidelines §19.3): the job, queue, operation and transport attempt. */
  jobId: string | undefined;
  queue: string | undefined;
  operation: string | undefined;
  attempt: number | undefined;
  /** Server-requested wait before retrying (Retry-After), if any. */
  readonly retryAfterMs: number | undefined;
  /** The server's advice on how to fix the request (`error.hint`), if it sent one. */
  readonly hint: string | undefined;

  constructor(message: string, options: OjsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    const info = options.code === undefined ? undefined : lookupErrorCode(options.code);
    this.code = options.code === undefined ? 'unknown' : normalizeErrorCode(options.code);
    this.numericCode = info?.code;
    this.status = options.status ?? 0;
    // Unknown codes are not retryable unless the server says so (ER §7, HB §16.4).
    this.retryable = options.retryable ?? info?.retryable ?? false;
    this.details = options.details ?? {};
    this.requestId = options.requestId;
    this.hint = options.hint;
    this.jobId = options.jobId;
    this.queue = options.queue;
    this.operation = options.operation;
    this.attempt = options.attempt;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The server could not be reached (DNS, refused, reset). OJS-1011. */
export class ConnectionError extends OjsError {}
/** The request did not complete within the operation timeout. OJS-1012. */
export class TimeoutError extends OjsError {}
/** The request was rejected as invalid (400/413/422 validation family). */
export class ValidationError extends OjsError {}
/** The payload or meta exceeds a size limit (413). */
export class PayloadTooLargeError extends ValidationError {}
/** Missing or invalid credentials (401). */
export class AuthenticationError extends OjsError {}
/** Valid credentials without the right to do this (403). */
export class PermissionDeniedError extends AuthenticationError {}
/** A resource does not exist (404). */
export class NotFoundError extends OjsError {}
/** The job does not exist (404 with resource_type job). */
export class JobNotFoundError extends NotFoundError {}
/** The workflow does not exist. */
export class WorkflowNotFoundError extends NotFoundError {}
/** The resource is not in a state that allows the operation (409 conflict). */
export class ConflictError extends OjsError {}
/** A job with the same id or unique key exists (409 duplicate). */
export class DuplicateJobError extends ConflictError {
  /** The job that already holds the id or unique key, when the server names it. */
  get existingJobId(): string | undefined {
    const id = this.details.existing_job_id;
    return typeof id === 'string' ? id : undefined;
  }
}
/** The queue is paused and the server refuses the operation. */
export class QueuePausedError extends OjsError {}
/** Rate limited or backpressure (429); `retryAfterMs` says how long to wait. */
export class RateLimitedError extends OjsError {}
/** Server-side failure (5xx); retryable. */
export class BackendError extends OjsError {}
/** The server does not support the feature or version (422 unsupported, or a missing route). */
export class UnsupportedFeatureError extends OjsError {}

// ---------------------------------------------------------------- handler-side signals

/** Throw from a handler to discard the job without retrying (sent as retryable: false). */
export class DiscardError extends Error {
  constructor(message = 'Job discarded by the handler.') {
    super(message);
    this.name = 'DiscardError';
  }
}

/**
 * Throw from a handler to hand the job back to the server for a later
 * attempt. Sent as a retryable failure of type `snooze` with
 * `details.snooze_ms`; the HTTP binding has no snooze operation, so the
 * delay the server applies is its retry backoff.
 */
export class SnoozeError extends Error {
  readonly delayMs: number;
  constructor(delayMs: number, message = `Job snoozed for ${delayMs} ms.`) {
    super(message);
    this.name = 'SnoozeError';
    this.delayMs = delayMs;
  }
}

/** AbortSignal reason when the server reports the job cancelled (heartbeat `jobs_cancelled`). */
export class JobCancelledError extends Error {
  constructor(message = 'The job was cancelled.') {
    super(message);
    this.name = 'JobCancelledError';
  }
}

/** AbortSignal reason (and NACK type `timeout`) when a job exceeds its execution timeout. */
export class JobTimeoutError extends Error {
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`Job exceeded its execution timeout of ${timeoutMs} ms.`);
    this.name = 'JobTimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/** AbortSignal reason when the worker shuts down before the job finished. */
export class ShutdownError extends Error {
  constructor(message = 'The worker shut down before the job finished.') {
    super(message);
    this.name = 'ShutdownError';
  }
}

/** AbortSignal reason when a heartbeat shows the worker no longer holds the job's lease. */
export class LeaseLostError extends Error {
  constructor(message = 'The worker lost the lease on the job.') {
    super(message);
    this.name = 'LeaseLostError';
  }
}

// ---------------------------------------------------------------- parsing

type Obj = Record<string, unknown>;

const VALIDATION_CODES = new Set([
  'invalid_payload',
  'invalid_request',
  'validation_error',
  'schema_validation',
  'unsupported_media_type',
  'invalid_job_type',
  'invalid_queue',
  'invalid_args',
  'invalid_metadata',
  'invalid_retry_policy',
  'invalid_cron_expression',
  'invalid_workflow',
  'queue_name_too_long',
  'job_type_too_long',
  'checksum_mismatch',
  'unsupported_compression',
  'unique_key_invalid',
  'cyclic_dependency',
]);
const CONFLICT_CODES = new Set([
  'conflict',
  'job_already_completed',
  'job_already_cancelled',
  'workflow_cancelled',
  'cron_schedule_conflict',
]);
const RATE_CODES = new Set([
  'rate_limited',
  'queue_full',
  'tenant_limit_exceeded',
  'concurrency_limited',
  'backpressure_applied',
]);
const BACKEND_CODES = new Set([
  'backend_error',
  'backend_unavailable',
  'backend_timeout',
  'replication_lag',
  'internal_error',
]);

type ErrorClass = new (message: string, options?: OjsErrorOptions) => OjsError;

/** The subclass for a normalised code, else for the status. */
export function errorClassFor(code: string, status: number, details: Obj = {}): ErrorClass {
  if (code === 'not_found' || code === 'workflow_not_found') {
    const resource = details.resource_type;
    if (code === 'workflow_not_found' || resource === 'workflow') return WorkflowNotFoundError;
    if (resource === undefined || resource === 'job') return JobNotFoundError;
    return NotFoundError;
  }
  if (code === 'duplicate') return DuplicateJobError;
  if (code === 'payload_too_large' || code === 'metadata_too_large') return PayloadTooLargeError;
  if (VALIDATION_CODES.has(code)) return ValidationError;
  if (CONFLICT_CODES.has(code)) return ConflictError;
  if (code === 'queue_paused') return QueuePausedError;
  if (RATE_CODES.has(code)) return RateLimitedError;
  if (code === 'unauthenticated' || code === 'token_expired') return AuthenticationError;
  if (code === 'permission_denied' || code === 'tenant_access_denied') return PermissionDeniedError;
  if (code === 'unsupported') return UnsupportedFeatureError;
  if (BACKEND_CODES.has(code)) return BackendError;
  if (code === 'request_timeout') return TimeoutError;
  if (code === 'connection_error') return ConnectionError;
  switch (status) {
    case 400:
    case 422:
      return ValidationError;
    case 401:
      return AuthenticationError;
    case 403:
      return PermissionDeniedError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 413:
      return PayloadTooLargeError;
    case 429:
      return RateLimitedError;
  }
  return status >= 500 ? BackendError : OjsError;
}

const DEFAULT_CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthenticated',
  403: 'permission_denied',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'validation_error',
  429: 'rate_limited',
  500: 'internal_error',
  502: 'backend_unavailable',
  503: 'backend_unavailable',
  504: 'backend_timeout',
};

const KNOWN_ERROR_FIELDS = new Set([
  'code',
  'type',
  'message',
  'retryable',
  'details',
  'detail',
  'request_id',
  'doc_url',
  'docs_url',
  'hint',
]);

/** Pulls `{code, message, retryable, details, requestId}` out of any known body shape. */
export function extractErrorFields(
  body: unknown,
  status: number,
): {
  code: string;
  message: string;
  retryable: boolean | undefined;
  details: Obj;
  requestId: string | undefined;
  hint: string | undefined;
} {
  let source: Obj = {};
  let code: string | undefined;
  if (isObject(body)) {
    if (isObject(body.error)) {
      source = body.error;
    } else {
      source = body;
      // PL: {"error":"PayloadTooLarge","message",...}
      if (typeof body.error === 'string') code = body.error;
    }
  }
  if (typeof source.code === 'string' && source.code !== '') code = source.code;
  else if (code === undefined && typeof source.type === 'string' && source.type !== '')
    code = source.type;
  const details: Obj = {
    ...(isObject(source.detail) ? source.detail : {}),
    ...(isObject(source.details) ? source.details : {}),
  };
  // BP puts queue/depth/bound beside code: keep them as details.
  for (const [key, value] of Object.entries(source)) {
    if (!KNOWN_ERROR_FIELDS.has(key) && key !== 'error' && !(key in details)) details[key] = value;
  }
  const normalized = normalizeErrorCode(code ?? DEFAULT_CODE_BY_STATUS[status] ?? 'unknown');
  let message = typeof source.message === 'string' ? source.message : '';
  if (message === '') message = lookupErrorCode(normalized)?.message ?? `HTTP ${status}`;
  const requestId =
    typeof source.request_id === 'string'
      ? source.request_id
      : isObject(body) && typeof body.request_id === 'string'
        ? body.request_id
        : undefined;
  return {
    code: normalized,
    message,
    retryable: typeof source.retryable === 'boolean' ? source.retryable : undefined,
    details,
    requestId,
    hint: typeof source.hint === 'string' && source.hint !== '' ? source.hint : undefined,
  };
}

/** Builds the typed error for an error response (parsed JSON body or raw text). */
export function parseErrorResponse(
  status: number,
  body: unknown,
  context: Omit<OjsErrorOptions, 'code' | 'status' | 'retryable' | 'details'> = {},
): OjsError {
  const fields = extractErrorFields(body, status);
  const Class = errorClassFor(fields.code, status, fields.details);
  const info: ErrorCodeInfo | undefined = lookupErrorCode(fields.code);
  const fallbackRetryable =
    info?.retryable ?? (status === 429 || status === 502 || status === 503 || status === 504);
  return new Class(fields.message, {
    ...context,
    code: fields.code,
    status,
    retryable: fields.retryable ?? fallbackRetryable,
    details: fields.details,
    requestId: fields.requestId ?? context.requestId,
    ...(fields.hint === undefined ? {} : { hint: fields.hint }),
  });
}

/** Validation, conflict and auth errors are never retried automatically, whatever `retryable` says (ER §7). */
export function isNeverAutoRetried(error: OjsError): boolean {
  return (
    error instanceof ValidationError ||
    error instanceof ConflictError ||
    error instanceof AuthenticationError ||
    error instanceof NotFoundError
  );
}
