/**
 * The retry policy of an enqueue request under a `Problems` sink. Throwing mode is
 * `normalizeRetryPolicy` itself. Collecting mode asks the same function about one field at a
 * time, so every bad field is reported (not only the first) by the rules of retry.ts, and the
 * interval pair once both intervals are valid on their own.
 */

import { parseIsoDuration } from './duration.ts';
import type { JsonKey, Problems } from './envelope-problems.ts';
import { isObject } from './is-object.ts';
import { MAX_DURATION_MS } from './limits.ts';
import { normalizeRetryPolicy, type RetryPolicy } from './retry.ts';

const REF = 'L1-RET-002';
const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/**
 * The rule name of a field retry.ts refused: `type` when the JSON type is wrong, else what is
 * wrong with the value. Which values are refused is retry.ts's decision, not this table's.
 */
function ruleOf(key: string, value: unknown): string {
  switch (key) {
    case 'initial_interval':
    case 'max_interval':
      if (typeof value !== 'string') return 'type';
      return parseIsoDuration(value) === null ? 'format.duration' : 'minimum';
    case 'initial_interval_ms':
    case 'max_interval_ms':
    case 'max_attempts':
      if (!isInteger(value)) return 'type';
      return value > (key === 'max_attempts' ? 0 : MAX_DURATION_MS) && value >= 0
        ? 'maximum'
        : 'minimum';
    case 'backoff_coefficient':
      return typeof value === 'number' ? 'minimum' : 'type';
    case 'jitter':
    case 'non_retryable_errors':
      return 'type';
    default:
      return typeof value === 'string' ? 'enum' : 'type';
  }
}

/** Each interval alone is checked beside the widest partner, so only the pair check relates them. */
const PARTNER: Record<string, Record<string, number>> = {
  initial_interval: { max_interval_ms: MAX_DURATION_MS },
  initial_interval_ms: { max_interval_ms: MAX_DURATION_MS },
  max_interval: { initial_interval_ms: 1 },
  max_interval_ms: { initial_interval_ms: 1 },
};

/** `non_retryable_errors` items are checked one by one, so the path names the bad item. */
function itemProblems(value: unknown[], keys: JsonKey[], problems: Problems): boolean {
  let found = false;
  value.forEach((item, i) => {
    if (typeof item === 'string' && item !== '') return;
    found = true;
    problems.advise(
      [...keys, i],
      typeof item === 'string' ? 'min_length' : 'type',
      typeof item === 'string' ? 'error types must not be empty' : 'must be a string',
      'L1-RET-003',
    );
  });
  return found;
}

/** Reads the policy found at `keys` (`retry` or `options.retry_policy`, ...). */
export function readRetryPolicy(value: unknown, keys: JsonKey[], problems: Problems): RetryPolicy {
  if (!problems.collecting) return normalizeRetryPolicy(value, 'retry');
  return collectRetryProblems(value, keys, problems) ?? normalizeRetryPolicy(undefined);
}

function collectRetryProblems(
  value: unknown,
  keys: JsonKey[],
  problems: Problems,
): RetryPolicy | undefined {
  if (!isObject(value)) {
    return problems.guard(keys, { rule: 'type', ref: 'L1-RET-001' }, () =>
      normalizeRetryPolicy(value, 'retry'),
    );
  }
  let fieldsValid = true;
  for (const [key, item] of Object.entries(value)) {
    if (item === null || item === undefined) continue;
    const at = [...keys, key];
    // retry.ts ignores a key it does not read: one whose every value passes.
    if (isUnknownKey(key)) {
      problems.advise(
        at,
        'additional_property',
        `"${key}" is not a retry policy field`,
        'L1-RET-001',
      );
      continue;
    }
    if (key === 'non_retryable_errors' && Array.isArray(item)) {
      if (itemProblems(item, at, problems)) fieldsValid = false;
      continue;
    }
    const ok = problems.guard(at, { rule: ruleOf(key, item), ref: REF }, () =>
      normalizeRetryPolicy({ ...PARTNER[key], [key]: item }, 'retry'),
    );
    if (ok === undefined) fieldsValid = false;
  }
  if (!fieldsValid) return undefined;
  // Each field is valid alone; what is left is how they relate (max_interval >= initial).
  const maxKey =
    value.max_interval !== undefined && value.max_interval !== null
      ? 'max_interval'
      : 'max_interval_ms';
  return problems.guard([...keys, maxKey], { rule: 'minimum', ref: REF }, () =>
    normalizeRetryPolicy(value, 'retry'),
  );
}

function isUnknownKey(key: string): boolean {
  try {
    normalizeRetryPolicy({ [key]: {} }, 'retry');
    return true;
  } catch {
    return false;
  }
}
