import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AuthenticationError,
  BackendError,
  ConflictError,
  DuplicateJobError,
  ErrorCodes,
  JobNotFoundError,
  lookupErrorCode,
  NotFoundError,
  normalizeErrorCode,
  OjsError,
  PayloadTooLargeError,
  PermissionDeniedError,
  parseErrorResponse,
  QueuePausedError,
  RateLimitedError,
  ValidationError,
  WorkflowNotFoundError,
} from '@ojs/sdk';

describe('error code catalogue', () => {
  it('has unique numeric codes with canonical names as keys', () => {
    const numeric = Object.values(ErrorCodes).map((e) => e.code);
    assert.equal(new Set(numeric).size, numeric.length);
    for (const [key, info] of Object.entries(ErrorCodes)) {
      assert.equal(info.canonical, key);
      assert.match(info.code, /^OJS-\d{4}$/);
    }
    assert.equal(ErrorCodes.DUPLICATE_JOB.code, 'OJS-3001');
    assert.equal(ErrorCodes.BACKEND_UNAVAILABLE.status, 503);
  });

  it('normalises every spelling to the lowercase wire code', () => {
    assert.equal(normalizeErrorCode('DUPLICATE_JOB'), 'duplicate');
    assert.equal(normalizeErrorCode('duplicate'), 'duplicate');
    assert.equal(normalizeErrorCode('PayloadTooLarge'), 'payload_too_large');
    assert.equal(normalizeErrorCode('INVALID_STATE_TRANSITION'), 'conflict');
    assert.equal(normalizeErrorCode('QUEUE_FULL'), 'queue_full');
    assert.equal(normalizeErrorCode('x_custom_thing'), 'x_custom_thing');
    assert.equal(lookupErrorCode('conflict')?.code, 'OJS-1005');
    assert.equal(lookupErrorCode('NOT_FOUND')?.code, 'OJS-3000');
    assert.equal(lookupErrorCode('x_custom_thing'), undefined);
  });
});

describe('parseErrorResponse', () => {
  it('parses the HB wrapped body', () => {
    const error = parseErrorResponse(404, {
      error: {
        code: 'not_found',
        type: 'not_found',
        message: "Job 'x' not found.",
        retryable: false,
        details: { resource_type: 'job', resource_id: 'x' },
        request_id: 'req_1',
      },
    });
    assert.ok(error instanceof JobNotFoundError);
    assert.ok(error instanceof NotFoundError);
    assert.ok(error instanceof OjsError);
    assert.equal(error.code, 'not_found');
    assert.equal(error.numericCode, 'OJS-3000');
    assert.equal(error.status, 404);
    assert.equal(error.requestId, 'req_1');
    assert.equal(error.retryable, false);
    assert.equal(error.details.resource_id, 'x');
    assert.equal(error.message, "Job 'x' not found.");
    assert.equal(error.name, 'JobNotFoundError');
    assert.equal(error.hint, undefined);
  });

  it('keeps the server hint (how to fix this request)', () => {
    const error = parseErrorResponse(400, {
      error: {
        code: 'invalid_payload',
        message: 'args must be a JSON array, not an object: wrap it in [ ].',
        hint: 'wrap an object in [ ]',
      },
    });
    assert.equal(error.hint, 'wrap an object in [ ]');
    assert.equal(error.details.hint, undefined, 'not repeated as a detail');
  });

  it('parses the flat ER body with SCREAMING codes', () => {
    const error = parseErrorResponse(409, {
      code: 'DUPLICATE_JOB',
      message: 'dup',
      details: { existing_job_id: 'abc' },
      retryable: false,
      doc_url: 'https://x',
    });
    assert.ok(error instanceof DuplicateJobError);
    assert.equal(error.existingJobId, 'abc');
    assert.equal(error.code, 'duplicate');
  });

  it('parses the PL body where error is a string', () => {
    const error = parseErrorResponse(413, {
      error: 'PayloadTooLarge',
      message: 'too big',
      details: { actual_bytes: 10, max_bytes: 5, field: 'args' },
    });
    assert.ok(error instanceof PayloadTooLargeError);
    assert.ok(error instanceof ValidationError);
    assert.equal(error.code, 'payload_too_large');
    assert.equal(error.details.max_bytes, 5);
  });

  it('keeps BP extra fields as details and marks 429 retryable', () => {
    const error = parseErrorResponse(429, {
      error: { code: 'QUEUE_FULL', message: 'full', queue: 'q', depth: 10, bound: 10 },
    });
    assert.ok(error instanceof RateLimitedError);
    assert.equal(error.retryable, true);
    assert.equal(error.details.depth, 10);
    assert.equal(error.details.queue, 'q');
  });

  it('accepts SEC `detail` (singular)', () => {
    const error = parseErrorResponse(403, {
      error: { code: 'permission_denied', message: 'no', detail: { required_role: 'admin' } },
    });
    assert.ok(error instanceof PermissionDeniedError);
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.details.required_role, 'admin');
  });

  it('falls back to the status for non-JSON bodies', () => {
    const gateway = parseErrorResponse(502, '<html>bad gateway</html>');
    assert.ok(gateway instanceof BackendError);
    assert.equal(gateway.retryable, true);
    const conflict = parseErrorResponse(409, undefined);
    assert.ok(conflict instanceof ConflictError);
    assert.equal(conflict.code, 'conflict');
  });

  it('treats unknown codes as non-retryable unless the server says otherwise', () => {
    assert.equal(
      parseErrorResponse(400, { error: { code: 'x_custom', message: 'm' } }).retryable,
      false,
    );
    assert.equal(
      parseErrorResponse(400, { error: { code: 'x_custom', message: 'm', retryable: true } })
        .retryable,
      true,
    );
  });

  it('maps queue_paused, workflow not found and validation codes', () => {
    assert.ok(
      parseErrorResponse(422, { error: { code: 'queue_paused', message: '' } }) instanceof
        QueuePausedError,
    );
    assert.ok(
      parseErrorResponse(404, {
        error: { code: 'not_found', message: '', details: { resource_type: 'workflow' } },
      }) instanceof WorkflowNotFoundError,
    );
    assert.ok(
      parseErrorResponse(422, { error: { code: 'validation_error', message: '' } }) instanceof
        ValidationError,
    );
    assert.ok(
      parseErrorResponse(400, { error: { code: 'invalid_payload', message: '' } }) instanceof
        ValidationError,
    );
  });
});
