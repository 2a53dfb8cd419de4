/**
 * OJS error codes -> gRPC status codes (features.md §11), each error with a
 * `google.rpc.Status` in the `grpc-status-details-bin` trailer carrying
 * `google.rpc.ErrorInfo` {reason: the OJS code, domain: "openjobspec.org",
 * metadata: retryable, request_id and the error's scalar details}, plus
 * `BadRequest` for validation errors and `RetryInfo` (and `retry-after`) for
 * rate limits.
 */
import * as grpc from '@grpc/grpc-js';
import { type ErrorCode, OjsError } from '@ojs/core';
import { rpcTypes } from './proto.ts';

export const ERROR_DOMAIN = 'openjobspec.org';

const STATUS: Record<ErrorCode, grpc.status> = {
  invalid_payload: grpc.status.INVALID_ARGUMENT,
  invalid_request: grpc.status.INVALID_ARGUMENT,
  validation_error: grpc.status.INVALID_ARGUMENT,
  schema_validation: grpc.status.INVALID_ARGUMENT,
  payload_too_large: grpc.status.INVALID_ARGUMENT,
  metadata_too_large: grpc.status.INVALID_ARGUMENT,
  uri_too_long: grpc.status.INVALID_ARGUMENT,
  headers_too_large: grpc.status.INVALID_ARGUMENT,
  not_found: grpc.status.NOT_FOUND,
  duplicate: grpc.status.ALREADY_EXISTS,
  // The job or workflow is not in a state that allows the call (invalid_state).
  conflict: grpc.status.FAILED_PRECONDITION,
  queue_paused: grpc.status.FAILED_PRECONDITION,
  unsupported: grpc.status.FAILED_PRECONDITION,
  rate_limited: grpc.status.RESOURCE_EXHAUSTED,
  QUEUE_FULL: grpc.status.RESOURCE_EXHAUSTED,
  TENANT_LIMIT_EXCEEDED: grpc.status.RESOURCE_EXHAUSTED,
  tenant_access_denied: grpc.status.PERMISSION_DENIED,
  request_timeout: grpc.status.DEADLINE_EXCEEDED,
  unauthenticated: grpc.status.UNAUTHENTICATED,
  permission_denied: grpc.status.PERMISSION_DENIED,
  backend_error: grpc.status.INTERNAL,
  internal_error: grpc.status.INTERNAL,
  backend_unavailable: grpc.status.UNAVAILABLE,
};

/** The status of a code outside the catalogue (an enqueue hook's own): from its HTTP status. */
function statusOfHttp(status: number): grpc.status {
  if (status === 400 || status === 413 || status === 422) return grpc.status.INVALID_ARGUMENT;
  if (status === 401) return grpc.status.UNAUTHENTICATED;
  if (status === 403) return grpc.status.PERMISSION_DENIED;
  if (status === 404) return grpc.status.NOT_FOUND;
  if (status === 409) return grpc.status.FAILED_PRECONDITION;
  if (status === 429) return grpc.status.RESOURCE_EXHAUSTED;
  if (status === 408 || status === 504) return grpc.status.DEADLINE_EXCEEDED;
  if (status === 503) return grpc.status.UNAVAILABLE;
  if (status >= 400 && status < 500) return grpc.status.FAILED_PRECONDITION;
  return grpc.status.INTERNAL;
}

export function grpcStatusOf(code: ErrorCode): grpc.status {
  return STATUS[code];
}

/** An error's gRPC status: by its catalogued code, else by its HTTP status. */
export function grpcStatusOfError(error: OjsError): grpc.status {
  return Object.hasOwn(STATUS, error.code)
    ? STATUS[error.code as ErrorCode]
    : statusOfHttp(error.status);
}

const VALIDATION = new Set<ErrorCode>([
  'invalid_payload',
  'invalid_request',
  'validation_error',
  'schema_validation',
]);

function any(
  type: { fullName: string; encode(m: object): { finish(): Uint8Array } },
  message: object,
) {
  return {
    type_url: `type.googleapis.com/${type.fullName.replace(/^\./, '')}`,
    value: type.encode(message).finish(),
  };
}

/**
 * ErrorInfo's metadata of an OJS error: retryable, the request id and the
 * error's scalar details. Also what EnqueueMany says of a refused item.
 */
export function errorInfoMetadata(ojs: OjsError, requestId: string): Record<string, string> {
  const metadata: Record<string, string> = {
    retryable: String(ojs.retryable),
    request_id: requestId,
  };
  for (const [key, value] of Object.entries(ojs.details ?? {})) {
    if (['string', 'number', 'boolean'].includes(typeof value)) metadata[key] = String(value);
  }
  return metadata;
}

/** Any error a handler throws -> the status object grpc-js sends. */
export function toServiceError(error: unknown, requestId: string): Partial<grpc.StatusObject> {
  const ojs =
    error instanceof OjsError ? error : new OjsError('internal_error', 'Internal server error.');
  const code = grpcStatusOfError(ojs);
  const types = rpcTypes();
  const metadata = errorInfoMetadata(ojs, requestId);
  const details = [any(types.ErrorInfo, { reason: ojs.code, domain: ERROR_DOMAIN, metadata })];
  if (VALIDATION.has(ojs.code as ErrorCode)) {
    const field = typeof ojs.details?.field === 'string' ? ojs.details.field : '';
    details.push(
      any(types.BadRequest, {
        field_violations: [{ field, description: ojs.message }],
      }),
    );
  }
  const trailer = new grpc.Metadata();
  if (code === grpc.status.RESOURCE_EXHAUSTED) {
    const seconds = ojs.retryAfterSeconds || Number(ojs.details?.retry_after ?? 1) || 1;
    details.push(any(types.RetryInfo, { retry_delay: { seconds, nanos: 0 } }));
    trailer.set('retry-after', String(seconds));
  }
  const status = types.Status.encode({ code, message: ojs.message, details }).finish();
  trailer.set('grpc-status-details-bin', Buffer.from(status));
  trailer.set('x-ojs-request-id', requestId);
  return { code, details: ojs.message, metadata: trailer };
}

/** Decodes the ErrorInfo (and BadRequest) of a status trailer: for clients and tests. */
export function errorDetails(metadata: grpc.Metadata | undefined): {
  errorInfo?: { reason: string; domain: string; metadata: Record<string, string> };
  badRequest?: { field_violations: { field: string; description: string }[] };
  retryInfo?: { retry_delay?: { seconds?: number } };
} {
  const raw = metadata?.get('grpc-status-details-bin')[0];
  if (!(raw instanceof Buffer)) return {};
  const types = rpcTypes();
  const status = types.Status.toObject(types.Status.decode(raw), { longs: Number }) as {
    details?: { type_url: string; value: Uint8Array }[];
  };
  const out: ReturnType<typeof errorDetails> = {};
  for (const detail of status.details ?? []) {
    const name = detail.type_url.split('/').pop();
    const decode = (type: typeof types.Status) =>
      type.toObject(type.decode(detail.value), { longs: Number, defaults: true, objects: true });
    if (name === 'google.rpc.ErrorInfo') out.errorInfo = decode(types.ErrorInfo) as never;
    if (name === 'google.rpc.BadRequest') out.badRequest = decode(types.BadRequest) as never;
    if (name === 'google.rpc.RetryInfo') out.retryInfo = decode(types.RetryInfo) as never;
  }
  return out;
}
