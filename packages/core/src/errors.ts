/**
 * The coded error catalogue: every error the server returns is an OjsError
 * whose `code` maps to one HTTP status and one retryability default, so the
 * binding never invents a status on its own (http-binding digest §6).
 */

export type ErrorCode =
  | 'invalid_payload'
  | 'invalid_request'
  | 'validation_error'
  | 'schema_validation'
  | 'not_found'
  | 'conflict'
  | 'duplicate'
  | 'payload_too_large'
  | 'metadata_too_large'
  | 'uri_too_long'
  | 'headers_too_large'
  | 'request_timeout'
  | 'queue_paused'
  | 'rate_limited'
  | 'QUEUE_FULL'
  | 'TENANT_LIMIT_EXCEEDED'
  | 'tenant_access_denied'
  | 'unsupported'
  | 'unauthenticated'
  | 'permission_denied'
  | 'backend_error'
  | 'backend_unavailable'
  | 'internal_error';

interface CatalogueEntry {
  readonly status: number;
  readonly retryable: boolean;
  readonly hint: string;
}

export const ERROR_CATALOGUE: Readonly<Record<ErrorCode, CatalogueEntry>> = {
  invalid_payload: {
    status: 400,
    retryable: false,
    hint: 'Send a JSON object body that follows the OJS job envelope.',
  },
  invalid_request: {
    status: 400,
    retryable: false,
    hint: 'Check the request fields against the OJS HTTP binding.',
  },
  validation_error: {
    status: 422,
    retryable: false,
    hint: 'Correct the field named in the message and resend.',
  },
  schema_validation: {
    status: 422,
    retryable: false,
    hint: 'The job args do not match the schema registered for this job type.',
  },
  not_found: {
    status: 404,
    retryable: false,
    hint: 'Check the identifier; the resource may have been deleted or never existed.',
  },
  conflict: {
    status: 409,
    retryable: false,
    hint: 'The resource is not in a state that allows this operation; read it and retry if appropriate.',
  },
  duplicate: {
    status: 409,
    retryable: false,
    hint: 'A job with the same id or unique key already exists.',
  },
  payload_too_large: {
    status: 413,
    retryable: false,
    hint: 'Reduce the request size or store large data externally and pass a reference.',
  },
  metadata_too_large: {
    status: 413,
    retryable: false,
    hint: 'Keep meta under 64 KiB.',
  },
  uri_too_long: {
    status: 414,
    retryable: false,
    hint: 'A path parameter is longer than any name or id the server stores.',
  },
  headers_too_large: {
    status: 431,
    retryable: false,
    hint: 'Send smaller request headers (the URL counts too).',
  },
  request_timeout: {
    status: 408,
    retryable: true,
    hint: 'The request was not received in time; send it again.',
  },
  queue_paused: { status: 422, retryable: true, hint: 'Resume the queue or retry later.' },
  rate_limited: { status: 429, retryable: true, hint: 'Wait for Retry-After seconds.' },
  // The spec's own code (error catalogue OJS-6001); HB has no lowercase name for it.
  QUEUE_FULL: {
    status: 429,
    retryable: true,
    hint: 'The queue is at its depth bound (backpressure); wait for Retry-After seconds.',
  },
  // ext-multi-tenancy's own code (C14), kept as the spec writes it.
  TENANT_LIMIT_EXCEEDED: {
    status: 429,
    retryable: true,
    hint: 'The tenant is at one of its limits; wait for Retry-After seconds.',
  },
  tenant_access_denied: {
    status: 403,
    retryable: false,
    hint: 'The credential is bound to another tenant than the one the request names.',
  },
  unsupported: {
    status: 422,
    retryable: false,
    hint: 'This server does not support the requested feature or version.',
  },
  unauthenticated: { status: 401, retryable: false, hint: 'Send Authorization: Bearer <key>.' },
  permission_denied: {
    status: 403,
    retryable: false,
    hint: 'The credential does not grant this operation.',
  },
  backend_error: {
    status: 500,
    retryable: true,
    hint: 'The store failed; the operation was not applied. Retry with backoff.',
  },
  backend_unavailable: {
    status: 503,
    retryable: true,
    hint: 'The store is unreachable; retry with backoff.',
  },
  internal_error: { status: 500, retryable: true, hint: 'Unexpected server error; retry later.' },
};

function catalogued(code: string): CatalogueEntry | undefined {
  return Object.hasOwn(ERROR_CATALOGUE, code) ? ERROR_CATALOGUE[code as ErrorCode] : undefined;
}

export const DOCS_BASE_URL = 'https://openjobspec.org/spec/errors#';

/**
 * A code of the catalogue, or one of the caller's own (an enqueue hook's,
 * say: lowercase or `x_`-prefixed by the binding's convention), which then
 * carries its own status and retryability.
 */
export type OjsErrorCode = ErrorCode | (string & {});

/** Overrides of the catalogue for one error (an enqueue hook's answer). */
export interface OjsErrorOverrides {
  /** The HTTP status (a code outside the catalogue without one is a 500). */
  status?: number;
  retryable?: boolean;
}

export class OjsError extends Error {
  readonly code: OjsErrorCode;
  /**
   * `retry_after_seconds` here becomes Retry-After on HTTP and RetryInfo
   * (plus `retry-after`) on gRPC for a 429 or 503.
   */
  readonly details: Record<string, unknown> | undefined;
  readonly retryable: boolean;
  /** A hint for this occurrence (how to fix this very mistake), over the catalogue's. */
  readonly hint: string | undefined;
  readonly #status: number | undefined;

  constructor(
    code: OjsErrorCode,
    message: string,
    details?: Record<string, unknown>,
    hint?: string,
    overrides: OjsErrorOverrides = {},
  ) {
    super(message);
    this.name = 'OjsError';
    this.code = code;
    this.details = details;
    const entry = catalogued(code);
    this.retryable = overrides.retryable ?? entry?.retryable ?? false;
    this.hint = hint;
    this.#status = overrides.status;
  }

  get status(): number {
    return this.#status ?? catalogued(this.code)?.status ?? 500;
  }

  /** Seconds a client should wait before sending again (`details.retry_after_seconds`), if said. */
  get retryAfterSeconds(): number | undefined {
    const seconds = this.details?.retry_after_seconds;
    return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0
      ? Math.ceil(seconds)
      : undefined;
  }

  /** The wire body of HB §16.1 plus `type`, `hint` and `docs_url`. */
  toBody(requestId: string): { error: Record<string, unknown> } {
    const entry = catalogued(this.code);
    const error: Record<string, unknown> = {
      code: this.code,
      type: this.code,
      message: this.message,
      retryable: this.retryable,
      hint: this.hint ?? entry?.hint ?? 'See the error message and details.',
      docs_url: DOCS_BASE_URL + this.code,
      request_id: requestId,
    };
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

export const invalidPayload = (message: string, details?: Record<string, unknown>) =>
  new OjsError('invalid_payload', message, details);
export const invalidRequest = (message: string, details?: Record<string, unknown>) =>
  new OjsError('invalid_request', message, details);
export const validationError = (message: string, details?: Record<string, unknown>) =>
  new OjsError('validation_error', message, details);
export const notFound = (resourceType: string, id: string) =>
  new OjsError(
    'not_found',
    `${resourceType[0]!.toUpperCase()}${resourceType.slice(1).replaceAll('_', ' ')} '${id}' not found.`,
    { resource_type: resourceType, resource_id: id },
  );
export const conflict = (message: string, details?: Record<string, unknown>) =>
  new OjsError('conflict', message, details);
