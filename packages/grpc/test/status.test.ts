/**
 * The status mapping of features.md §11 for every OJS error code, with the
 * google.rpc details each error carries.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { ERROR_CATALOGUE, type ErrorCode, OjsError } from '@ojs/core';
import { errorDetails, grpcStatusOf, toServiceError } from '../src/status.ts';

const EXPECTED: Partial<Record<ErrorCode, grpc.status>> = {
  invalid_payload: grpc.status.INVALID_ARGUMENT,
  invalid_request: grpc.status.INVALID_ARGUMENT,
  schema_validation: grpc.status.INVALID_ARGUMENT,
  not_found: grpc.status.NOT_FOUND,
  duplicate: grpc.status.ALREADY_EXISTS,
  queue_paused: grpc.status.FAILED_PRECONDITION,
  conflict: grpc.status.FAILED_PRECONDITION,
  unsupported: grpc.status.FAILED_PRECONDITION,
  rate_limited: grpc.status.RESOURCE_EXHAUSTED,
  backend_error: grpc.status.INTERNAL,
  backend_unavailable: grpc.status.UNAVAILABLE,
  unauthenticated: grpc.status.UNAUTHENTICATED,
  permission_denied: grpc.status.PERMISSION_DENIED,
};

test('every OJS error code maps to the status features §11 names', () => {
  for (const [code, status] of Object.entries(EXPECTED)) {
    assert.equal(grpcStatusOf(code as ErrorCode), status, code);
  }
  // Every code of the catalogue has a mapping, and none is OK or UNKNOWN.
  for (const code of Object.keys(ERROR_CATALOGUE) as ErrorCode[]) {
    const status = grpcStatusOf(code);
    assert.ok(
      status !== undefined && status !== grpc.status.OK && status !== grpc.status.UNKNOWN,
      code,
    );
  }
});

test('ErrorInfo on every error; BadRequest on validation; RetryInfo and retry-after on rate limits', () => {
  const invalid = toServiceError(
    new OjsError('invalid_request', 'queue is bad', { field: 'queue' }),
    'req-1',
  );
  const a = errorDetails(invalid.metadata);
  assert.deepEqual(a.errorInfo, {
    reason: 'invalid_request',
    domain: 'openjobspec.org',
    metadata: { retryable: 'false', request_id: 'req-1', field: 'queue' },
  });
  assert.deepEqual(a.badRequest?.field_violations, [
    { field: 'queue', description: 'queue is bad' },
  ]);

  const limited = toServiceError(
    new OjsError('rate_limited', 'slow down', { retry_after_seconds: 7 }),
    'req-2',
  );
  assert.equal(limited.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.deepEqual(limited.metadata?.get('retry-after'), ['7']);
  const b = errorDetails(limited.metadata);
  assert.equal(b.errorInfo?.metadata.retryable, 'true');
  assert.equal(Number(b.retryInfo?.retry_delay?.seconds), 7);
  assert.equal(b.badRequest, undefined);

  // Anything that is not an OjsError is INTERNAL without its message.
  const internal = toServiceError(new Error('secret detail'), 'req-3');
  assert.equal(internal.code, grpc.status.INTERNAL);
  assert.equal(internal.details, 'Internal server error.');
  assert.equal(errorDetails(internal.metadata).errorInfo?.reason, 'internal_error');
});
