/**
 * Job type and queue names (JF, http-binding digest §4.3): the patterns and
 * their validation, shared by the envelope (envelope.ts) and the version
 * declarations (version.ts).
 */
import { invalidPayload } from './errors.ts';
import { byteLength, MAX_NAME_BYTES } from './limits.ts';

/** OA/suite pattern: lowercase, dot-separated segments, hyphens and underscores allowed. */
export const JOB_TYPE_PATTERN = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
export const QUEUE_PATTERN = /^[a-z0-9][a-z0-9.-]*$/;

export function validateJobType(type: unknown, field = 'type'): string {
  if (type === undefined || type === null) throw invalidPayload(`${field} is required.`, { field });
  if (typeof type !== 'string') throw invalidPayload(`${field} must be a string.`, { field });
  if (byteLength(type) > MAX_NAME_BYTES) {
    throw invalidPayload(`${field} must be at most ${MAX_NAME_BYTES} bytes.`, { field });
  }
  if (!JOB_TYPE_PATTERN.test(type)) {
    throw invalidPayload(
      `${field} '${type}' is invalid: use lowercase dot-separated segments such as 'email.send' (pattern ${JOB_TYPE_PATTERN.source}).`,
      { field, pattern: JOB_TYPE_PATTERN.source },
    );
  }
  return type;
}

export function validateQueueName(queue: unknown, field = 'queue'): string {
  if (typeof queue !== 'string') throw invalidPayload(`${field} must be a string.`, { field });
  if (byteLength(queue) > MAX_NAME_BYTES) {
    throw invalidPayload(`${field} must be at most ${MAX_NAME_BYTES} bytes.`, { field });
  }
  if (!QUEUE_PATTERN.test(queue)) {
    throw invalidPayload(
      `${field} '${queue}' is invalid: use lowercase letters, digits, '.' and '-', starting with a letter or digit.`,
      { field, pattern: QUEUE_PATTERN.source },
    );
  }
  return queue;
}
