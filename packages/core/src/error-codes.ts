/**
 * The numeric OJS-xxxx error catalogue (ojs-error-catalog.md, http-binding
 * digest §6.3). Each entry carries the canonical SCREAMING name, the
 * lowercase wire code the HTTP binding uses (when it has one), the default
 * HTTP status and whether the error is retryable by default. Numeric codes
 * are never reassigned.
 *
 * Clients read it (the SDK's errors carry the entry of their code); the
 * server's own codes and statuses are errors.ts. Self-contained: the SDK
 * gets a copy generated from this file (scripts/generate-sdk.ts).
 */

export interface ErrorCodeInfo {
  /** `OJS-1000` style numeric code. */
  readonly code: string;
  /** Canonical name from spec/ojs-errors.md, e.g. `DUPLICATE_JOB`. */
  readonly canonical: string;
  /** Lowercase wire code of the HTTP binding, e.g. `duplicate`. */
  readonly wire: string;
  /** Default HTTP status; 0 for client-side or NACK-only codes. */
  readonly status: number;
  readonly retryable: boolean;
  readonly message: string;
}

const entry = (
  code: string,
  canonical: string,
  wire: string,
  status: number,
  retryable: boolean,
  message: string,
): ErrorCodeInfo => ({ code, canonical, wire, status, retryable, message });

/** Every catalogue entry, keyed by canonical name. */
export const ErrorCodes = {
  INVALID_PAYLOAD: entry(
    'OJS-1000',
    'INVALID_PAYLOAD',
    'invalid_payload',
    400,
    false,
    'Malformed JSON or envelope.',
  ),
  INVALID_JOB_TYPE: entry(
    'OJS-1001',
    'INVALID_JOB_TYPE',
    'invalid_job_type',
    400,
    false,
    'Invalid job type.',
  ),
  INVALID_QUEUE: entry('OJS-1002', 'INVALID_QUEUE', 'invalid_queue', 400, false, 'Invalid queue.'),
  INVALID_ARGS: entry('OJS-1003', 'INVALID_ARGS', 'invalid_args', 400, false, 'Invalid args.'),
  INVALID_METADATA: entry(
    'OJS-1004',
    'INVALID_METADATA',
    'invalid_metadata',
    400,
    false,
    'Invalid metadata.',
  ),
  INVALID_STATE_TRANSITION: entry(
    'OJS-1005',
    'INVALID_STATE_TRANSITION',
    'conflict',
    409,
    false,
    'The job is not in a state that allows this operation.',
  ),
  INVALID_RETRY_POLICY: entry(
    'OJS-1006',
    'INVALID_RETRY_POLICY',
    'invalid_retry_policy',
    400,
    false,
    'Invalid retry policy.',
  ),
  INVALID_CRON_EXPRESSION: entry(
    'OJS-1007',
    'INVALID_CRON_EXPRESSION',
    'invalid_cron_expression',
    400,
    false,
    'Invalid cron expression.',
  ),
  SCHEMA_VALIDATION_FAILED: entry(
    'OJS-1008',
    'SCHEMA_VALIDATION_FAILED',
    'schema_validation',
    422,
    false,
    'Args failed schema validation.',
  ),
  PAYLOAD_TOO_LARGE: entry(
    'OJS-1009',
    'PAYLOAD_TOO_LARGE',
    'payload_too_large',
    413,
    false,
    'The payload is too large.',
  ),
  METADATA_TOO_LARGE: entry(
    'OJS-1010',
    'METADATA_TOO_LARGE',
    'metadata_too_large',
    413,
    false,
    'The metadata is too large.',
  ),
  CONNECTION_ERROR: entry(
    'OJS-1011',
    'CONNECTION_ERROR',
    'connection_error',
    0,
    true,
    'Could not connect to the server.',
  ),
  REQUEST_TIMEOUT: entry(
    'OJS-1012',
    'REQUEST_TIMEOUT',
    'request_timeout',
    0,
    true,
    'The request timed out.',
  ),
  SERIALIZATION_ERROR: entry(
    'OJS-1013',
    'SERIALIZATION_ERROR',
    'serialization_error',
    0,
    false,
    'The value cannot be serialised as JSON.',
  ),
  QUEUE_NAME_TOO_LONG: entry(
    'OJS-1014',
    'QUEUE_NAME_TOO_LONG',
    'queue_name_too_long',
    400,
    false,
    'The queue name is too long.',
  ),
  JOB_TYPE_TOO_LONG: entry(
    'OJS-1015',
    'JOB_TYPE_TOO_LONG',
    'job_type_too_long',
    400,
    false,
    'The job type is too long.',
  ),
  CHECKSUM_MISMATCH: entry(
    'OJS-1016',
    'CHECKSUM_MISMATCH',
    'checksum_mismatch',
    400,
    false,
    'Checksum mismatch.',
  ),
  UNSUPPORTED_COMPRESSION: entry(
    'OJS-1017',
    'UNSUPPORTED_COMPRESSION',
    'unsupported_compression',
    400,
    false,
    'Unsupported compression.',
  ),
  BACKEND_ERROR: entry(
    'OJS-2000',
    'BACKEND_ERROR',
    'backend_error',
    500,
    true,
    'The backend failed.',
  ),
  BACKEND_UNAVAILABLE: entry(
    'OJS-2001',
    'BACKEND_UNAVAILABLE',
    'backend_unavailable',
    503,
    true,
    'The backend is unavailable.',
  ),
  BACKEND_TIMEOUT: entry(
    'OJS-2002',
    'BACKEND_TIMEOUT',
    'backend_timeout',
    504,
    true,
    'The backend timed out.',
  ),
  REPLICATION_LAG: entry(
    'OJS-2003',
    'REPLICATION_LAG',
    'replication_lag',
    500,
    true,
    'Replication lag.',
  ),
  INTERNAL_ERROR: entry(
    'OJS-2004',
    'INTERNAL_ERROR',
    'internal_error',
    500,
    true,
    'Unexpected server error.',
  ),
  NOT_FOUND: entry('OJS-3000', 'NOT_FOUND', 'not_found', 404, false, 'Not found.'),
  DUPLICATE_JOB: entry(
    'OJS-3001',
    'DUPLICATE_JOB',
    'duplicate',
    409,
    false,
    'A job with the same id or unique key exists.',
  ),
  JOB_ALREADY_COMPLETED: entry(
    'OJS-3002',
    'JOB_ALREADY_COMPLETED',
    'job_already_completed',
    409,
    false,
    'The job is already completed.',
  ),
  JOB_ALREADY_CANCELLED: entry(
    'OJS-3003',
    'JOB_ALREADY_CANCELLED',
    'job_already_cancelled',
    409,
    false,
    'The job is already cancelled.',
  ),
  QUEUE_PAUSED: entry(
    'OJS-3004',
    'QUEUE_PAUSED',
    'queue_paused',
    422,
    true,
    'The queue is paused.',
  ),
  HANDLER_ERROR: entry(
    'OJS-3005',
    'HANDLER_ERROR',
    'handler_error',
    0,
    true,
    'The handler failed.',
  ),
  HANDLER_TIMEOUT: entry(
    'OJS-3006',
    'HANDLER_TIMEOUT',
    'timeout',
    0,
    true,
    'The handler exceeded its timeout.',
  ),
  HANDLER_PANIC: entry(
    'OJS-3007',
    'HANDLER_PANIC',
    'handler_panic',
    0,
    true,
    'The handler crashed.',
  ),
  NON_RETRYABLE_ERROR: entry(
    'OJS-3008',
    'NON_RETRYABLE_ERROR',
    'non_retryable_error',
    0,
    false,
    'Non-retryable error.',
  ),
  JOB_CANCELLED: entry(
    'OJS-3009',
    'JOB_CANCELLED',
    'cancelled',
    0,
    false,
    'The job was cancelled.',
  ),
  NO_HANDLER_REGISTERED: entry(
    'OJS-3010',
    'NO_HANDLER_REGISTERED',
    'no_handler_registered',
    0,
    false,
    'No handler is registered for this job type.',
  ),
  WORKFLOW_NOT_FOUND: entry(
    'OJS-4000',
    'WORKFLOW_NOT_FOUND',
    'workflow_not_found',
    404,
    false,
    'Workflow not found.',
  ),
  CHAIN_STEP_FAILED: entry(
    'OJS-4001',
    'CHAIN_STEP_FAILED',
    'chain_step_failed',
    422,
    false,
    'A chain step failed.',
  ),
  GROUP_TIMEOUT: entry(
    'OJS-4002',
    'GROUP_TIMEOUT',
    'group_timeout',
    504,
    true,
    'The group timed out.',
  ),
  DEPENDENCY_FAILED: entry(
    'OJS-4003',
    'DEPENDENCY_FAILED',
    'dependency_failed',
    422,
    false,
    'A dependency failed.',
  ),
  CYCLIC_DEPENDENCY: entry(
    'OJS-4004',
    'CYCLIC_DEPENDENCY',
    'cyclic_dependency',
    400,
    false,
    'The workflow has a cycle.',
  ),
  BATCH_CALLBACK_FAILED: entry(
    'OJS-4005',
    'BATCH_CALLBACK_FAILED',
    'batch_callback_failed',
    422,
    false,
    'A batch callback failed.',
  ),
  WORKFLOW_CANCELLED: entry(
    'OJS-4006',
    'WORKFLOW_CANCELLED',
    'workflow_cancelled',
    409,
    false,
    'The workflow was cancelled.',
  ),
  UNAUTHENTICATED: entry(
    'OJS-5000',
    'UNAUTHENTICATED',
    'unauthenticated',
    401,
    false,
    'Authentication required.',
  ),
  PERMISSION_DENIED: entry(
    'OJS-5001',
    'PERMISSION_DENIED',
    'permission_denied',
    403,
    false,
    'Permission denied.',
  ),
  TOKEN_EXPIRED: entry(
    'OJS-5002',
    'TOKEN_EXPIRED',
    'token_expired',
    401,
    false,
    'The token has expired.',
  ),
  TENANT_ACCESS_DENIED: entry(
    'OJS-5003',
    'TENANT_ACCESS_DENIED',
    'tenant_access_denied',
    403,
    false,
    'Tenant access denied.',
  ),
  RATE_LIMITED: entry('OJS-6000', 'RATE_LIMITED', 'rate_limited', 429, true, 'Rate limited.'),
  QUEUE_FULL: entry('OJS-6001', 'QUEUE_FULL', 'queue_full', 429, true, 'The queue is full.'),
  CONCURRENCY_LIMITED: entry(
    'OJS-6002',
    'CONCURRENCY_LIMITED',
    'concurrency_limited',
    429,
    true,
    'Concurrency limited.',
  ),
  BACKPRESSURE_APPLIED: entry(
    'OJS-6003',
    'BACKPRESSURE_APPLIED',
    'backpressure_applied',
    429,
    true,
    'Backpressure applied.',
  ),
  UNSUPPORTED_FEATURE: entry(
    'OJS-7000',
    'UNSUPPORTED_FEATURE',
    'unsupported',
    422,
    false,
    'The server does not support this feature.',
  ),
  CRON_SCHEDULE_CONFLICT: entry(
    'OJS-7001',
    'CRON_SCHEDULE_CONFLICT',
    'cron_schedule_conflict',
    409,
    false,
    'A cron job with this name exists.',
  ),
  UNIQUE_KEY_INVALID: entry(
    'OJS-7002',
    'UNIQUE_KEY_INVALID',
    'unique_key_invalid',
    400,
    false,
    'Invalid unique key.',
  ),
  MIDDLEWARE_ERROR: entry(
    'OJS-7003',
    'MIDDLEWARE_ERROR',
    'middleware_error',
    500,
    true,
    'A middleware failed.',
  ),
  MIDDLEWARE_TIMEOUT: entry(
    'OJS-7004',
    'MIDDLEWARE_TIMEOUT',
    'middleware_timeout',
    504,
    true,
    'A middleware timed out.',
  ),
} as const satisfies Record<string, ErrorCodeInfo>;

export type CanonicalErrorCode = keyof typeof ErrorCodes;

/**
 * Wire codes used by the HTTP binding and the OpenAPI document that have no
 * catalogue entry of their own, mapped to the entry that describes them.
 */
const WIRE_ALIASES: Record<string, CanonicalErrorCode> = {
  invalid_request: 'INVALID_PAYLOAD',
  validation_error: 'INVALID_PAYLOAD',
  unsupported_media_type: 'INVALID_PAYLOAD',
  invalid_state_transition: 'INVALID_STATE_TRANSITION',
  conflict: 'INVALID_STATE_TRANSITION',
  duplicate_job: 'DUPLICATE_JOB',
  schema_validation_failed: 'SCHEMA_VALIDATION_FAILED',
  envelope_too_large: 'PAYLOAD_TOO_LARGE',
  handler_timeout: 'HANDLER_TIMEOUT',
  job_cancelled: 'JOB_CANCELLED',
  unsupported_feature: 'UNSUPPORTED_FEATURE',
};

/**
 * Normalises any code spelling seen on the wire to lowercase snake_case:
 * `DUPLICATE_JOB` -> `duplicate` (the binding's name for it),
 * `PayloadTooLarge` -> `payload_too_large`, `not_found` stays.
 */
export function normalizeErrorCode(raw: string): string {
  const snake = raw
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[\s-]+/g, '_')
    .toLowerCase();
  const canonical = snake.toUpperCase();
  if (canonical in ErrorCodes) return ErrorCodes[canonical as CanonicalErrorCode].wire;
  return snake;
}

/** The catalogue entry for a (normalised or raw) code, if there is one. */
export function lookupErrorCode(code: string): ErrorCodeInfo | undefined {
  const wire = normalizeErrorCode(code);
  const alias = WIRE_ALIASES[wire];
  if (alias !== undefined) return ErrorCodes[alias];
  for (const info of Object.values(ErrorCodes)) if (info.wire === wire) return info;
  return undefined;
}
