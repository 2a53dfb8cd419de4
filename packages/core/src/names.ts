/**
 * Job type and queue names (JF, http-binding digest §4.3): the patterns and
 * their validation, shared by the envelope (envelope.ts) and the version
 * declarations (version.ts). The read* forms report to a Problems sink (the
 * server throws the first; `ojs validate` collects them all).
 */
import {
  isPresent,
  type JsonKey,
  type Problems,
  shown,
  THROW_FIRST,
  typeMismatch,
} from './envelope-problems.ts';
import { invalidPayload, type OjsError } from './errors.ts';
import { byteLength, MAX_NAME_BYTES } from './limits.ts';

/** OA/suite pattern: lowercase, dot-separated segments, hyphens and underscores allowed. */
export const JOB_TYPE_PATTERN = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
export const QUEUE_PATTERN = /^[a-z0-9][a-z0-9.-]*$/;

export function validateJobType(type: unknown, field = 'type'): string {
  return readJobType(type, field, THROW_FIRST, [field]) as string;
}

export function readJobType(
  type: unknown,
  field: string,
  problems: Problems,
  keys: JsonKey[],
): string | undefined {
  if (!isPresent(type)) {
    problems.reject(keys, { rule: 'required', ref: 'L0-ENV-001' }, () =>
      invalidPayload(`${field} is required.`, { field }),
    );
    return undefined;
  }
  if (typeof type !== 'string') {
    problems.reject(keys, typeMismatch(type, 'a string', 'L0-ENV-003'), () =>
      invalidPayload(`${field} must be a string.`, { field }),
    );
    return undefined;
  }
  const ok = checkName(type, field, JOB_TYPE_PATTERN, problems, keys, 'L0-ENV-003', () =>
    invalidPayload(
      `${field} '${type}' is invalid: use lowercase dot-separated segments such as 'email.send' (pattern ${JOB_TYPE_PATTERN.source}).`,
      { field, pattern: JOB_TYPE_PATTERN.source },
    ),
  );
  return ok ? type : undefined;
}

/** The byte limit and the pattern of a type or queue name; false when either fails. */
function checkName(
  value: string,
  field: string,
  pattern: RegExp,
  problems: Problems,
  keys: JsonKey[],
  ref: string,
  patternError: () => OjsError,
): boolean {
  let ok = true;
  const size = byteLength(value);
  if (size > MAX_NAME_BYTES) {
    ok = false;
    problems.reject(
      keys,
      {
        rule: 'max_bytes',
        ref,
        message: `${keys.at(-1)} is ${size} bytes; the limit is ${MAX_NAME_BYTES}`,
      },
      () => invalidPayload(`${field} must be at most ${MAX_NAME_BYTES} bytes.`, { field }),
    );
  }
  if (!pattern.test(value)) {
    ok = false;
    const message = `${keys.at(-1)} ${shown(value)} does not match ${pattern.source}`;
    problems.reject(keys, { rule: 'pattern', ref, message }, patternError);
  }
  return ok;
}

export function validateQueueName(queue: unknown, field = 'queue'): string {
  return readQueueName(queue, field, THROW_FIRST, [field]) as string;
}

export function readQueueName(
  queue: unknown,
  field: string,
  problems: Problems,
  keys: JsonKey[],
): string | undefined {
  if (typeof queue !== 'string') {
    problems.reject(keys, typeMismatch(queue, 'a string', 'L0-ENV-004'), () =>
      invalidPayload(`${field} must be a string.`, { field }),
    );
    return undefined;
  }
  const ok = checkName(queue, field, QUEUE_PATTERN, problems, keys, 'L0-ENV-004', () =>
    invalidPayload(
      `${field} '${queue}' is invalid: use lowercase letters, digits, '.' and '-', starting with a letter or digit.`,
      { field, pattern: QUEUE_PATTERN.source },
    ),
  );
  return ok ? queue : undefined;
}
