/**
 * Retry policy: normalisation and validation at enqueue, backoff delays, and the decision
 * taken when an attempt fails (features digest §1, contradictions X-2..X-7, X-24).
 */

import { formatIsoDuration, parseIsoDuration } from './duration.ts';
import { validationError } from './errors.ts';
import { isObject } from './is-object.ts';
import { MAX_ATTEMPTS, MAX_DURATION_MS } from './limits.ts';

export type BackoffStrategy = 'exponential' | 'linear' | 'constant' | 'polynomial' | 'none';
export type OnExhaustion = 'discard' | 'dead_letter';

export interface RetryPolicy {
  /** Total runs including the first; 0 behaves like 1 (no retry, X-3). */
  max_attempts: number;
  /** ISO 8601 duration as given (or formatted from `initial_interval_ms`). */
  initial_interval: string;
  backoff_coefficient: number;
  max_interval: string;
  jitter: boolean;
  non_retryable_errors: string[];
  on_exhaustion: OnExhaustion;
  backoff_strategy: BackoffStrategy;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  max_attempts: 3,
  initial_interval: 'PT1S',
  backoff_coefficient: 2.0,
  max_interval: 'PT5M',
  jitter: true,
  non_retryable_errors: [],
  on_exhaustion: 'discard',
  backoff_strategy: 'exponential',
});
Object.freeze(DEFAULT_RETRY_POLICY.non_retryable_errors);

const BACKOFF_STRATEGIES: readonly BackoffStrategy[] = [
  'exponential',
  'linear',
  'constant',
  'polynomial',
  'none',
];
const ON_EXHAUSTION_VALUES: readonly OnExhaustion[] = ['discard', 'dead_letter'];

/** The spec's error type for every policy rule; the HTTP code stays validation_error (X-24). */
const POLICY_ERROR_TYPE = 'validation.retry_policy_invalid';

// ---------------------------------------------------------------------------------------------
// Normalisation and validation
// ---------------------------------------------------------------------------------------------

/**
 * Validate a client policy and merge it field-by-field over the defaults (RET-09, RET-10).
 * `field` is the path used in error messages, e.g. "retry" or "options.retry".
 * A key that is absent or null takes the default; unknown keys are ignored.
 */
export function normalizeRetryPolicy(input: unknown, field = 'retry'): RetryPolicy {
  if (input === undefined || input === null) return copyPolicy(DEFAULT_RETRY_POLICY);
  if (!isObject(input)) {
    throw policyError(field, `${field} must be an object (got ${describe(input)})`);
  }
  const reader = new PolicyReader(input, field);
  const initial = reader.duration('initial_interval', DEFAULT_RETRY_POLICY.initial_interval);
  if (initial.ms <= 0) {
    throw reader.error(initial.key, `must be a duration greater than zero (got ${initial.shown})`);
  }
  const max = reader.duration('max_interval', DEFAULT_RETRY_POLICY.max_interval);
  if (max.ms < initial.ms) {
    throw reader.error(
      max.key,
      `must be >= ${field}.initial_interval (got ${max.shown} < ${initial.shown})`,
    );
  }
  return {
    max_attempts: reader.maxAttempts(),
    initial_interval: initial.text,
    backoff_coefficient: reader.coefficient(),
    max_interval: max.text,
    jitter: reader.jitter(),
    non_retryable_errors: reader.nonRetryableErrors(),
    on_exhaustion: reader.oneOf('on_exhaustion', ON_EXHAUSTION_VALUES),
    backoff_strategy: reader.oneOf('backoff_strategy', BACKOFF_STRATEGIES, 'backoff_type'),
  };
}

interface DurationField {
  key: string;
  text: string;
  ms: number;
  /** How the value appears in messages, as the client wrote it (or "(default)"). */
  shown: string;
}

/** Reads one field at a time from the raw policy, falling back to the defaults. */
class PolicyReader {
  private readonly raw: Record<string, unknown>;
  private readonly field: string;

  constructor(raw: Record<string, unknown>, field: string) {
    this.raw = raw;
    this.field = field;
  }

  error(key: string, problem: string) {
    return policyError(`${this.field}.${key}`, `${this.field}.${key} ${problem}`);
  }

  /** The canonical key when given, else the alias, else undefined. */
  private pick(key: string, alias?: string): { key: string; value: unknown } | undefined {
    if (isGiven(this.raw[key])) return { key, value: this.raw[key] };
    if (alias !== undefined && isGiven(this.raw[alias]))
      return { key: alias, value: this.raw[alias] };
    return undefined;
  }

  /** ISO string under `key`, or integer milliseconds under `<key>_ms` (X-2). */
  duration(key: 'initial_interval' | 'max_interval', fallback: string): DurationField {
    const given = this.pick(key, `${key}_ms`);
    if (given === undefined) {
      return {
        key,
        text: fallback,
        ms: parseIsoDuration(fallback)!,
        shown: `${fallback} (default)`,
      };
    }
    if (given.key !== key) {
      if (!isNonNegativeInteger(given.value) || given.value > MAX_DURATION_MS) {
        throw this.error(
          given.key,
          `must be an integer of milliseconds from 0 to ${MAX_DURATION_MS} (got ${describe(given.value)})`,
        );
      }
      return {
        key: given.key,
        text: formatIsoDuration(given.value),
        ms: given.value,
        shown: String(given.value),
      };
    }
    const ms = typeof given.value === 'string' ? parseIsoDuration(given.value) : null;
    if (ms === null) {
      throw this.error(
        key,
        `must be an ISO 8601 duration such as "PT1S" (got ${describe(given.value)})`,
      );
    }
    return { key, text: given.value as string, ms, shown: describe(given.value) };
  }

  maxAttempts(): number {
    const given = this.pick('max_attempts');
    if (given === undefined) return DEFAULT_RETRY_POLICY.max_attempts;
    if (!isNonNegativeInteger(given.value)) {
      throw this.error(
        'max_attempts',
        `must be a non-negative integer (got ${describe(given.value)})`,
      );
    }
    if (given.value > MAX_ATTEMPTS) {
      throw this.error('max_attempts', `must be at most ${MAX_ATTEMPTS} (got ${given.value})`);
    }
    return given.value;
  }

  coefficient(): number {
    const given = this.pick('backoff_coefficient');
    if (given === undefined) return DEFAULT_RETRY_POLICY.backoff_coefficient;
    const value = given.value;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 1) {
      throw this.error('backoff_coefficient', `must be >= 1.0 (got ${describe(value)})`);
    }
    return value;
  }

  jitter(): boolean {
    const given = this.pick('jitter');
    if (given === undefined) return DEFAULT_RETRY_POLICY.jitter;
    if (typeof given.value !== 'boolean') {
      throw this.error('jitter', `must be a boolean (got ${describe(given.value)})`);
    }
    return given.value;
  }

  nonRetryableErrors(): string[] {
    const given = this.pick('non_retryable_errors');
    if (given === undefined) return [];
    const value = given.value;
    const valid =
      Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== '');
    if (!valid) {
      throw this.error(
        'non_retryable_errors',
        `must be an array of non-empty strings (got ${describe(value)})`,
      );
    }
    return [...(value as string[])];
  }

  oneOf<T extends string>(key: keyof RetryPolicy, allowed: readonly T[], alias?: string): T {
    const given = this.pick(key, alias);
    if (given === undefined) return DEFAULT_RETRY_POLICY[key] as T;
    if (!allowed.includes(given.value as T)) {
      throw this.error(
        given.key,
        `must be one of ${allowed.map((v) => `"${v}"`).join(', ')} (got ${describe(given.value)})`,
      );
    }
    return given.value as T;
  }
}

function policyError(fieldPath: string, message: string) {
  return validationError(message, { field: fieldPath, error_type: POLICY_ERROR_TYPE });
}

function copyPolicy(policy: Readonly<RetryPolicy>): RetryPolicy {
  return { ...policy, non_retryable_errors: [...policy.non_retryable_errors] };
}

/** JSON null means "not set" so clients can send sparse objects built from nullable fields. */
function isGiven(value: unknown): boolean {
  return value !== undefined && value !== null;
}

function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** A short JSON rendering of a bad value for error messages. */
function describe(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    // BigInt and cyclic values cannot be serialised; their type is still informative.
    text = typeof value;
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

// ---------------------------------------------------------------------------------------------
// Backoff
// ---------------------------------------------------------------------------------------------

/**
 * Delay in ms after attempt `n` (1-based) fails. Cap, then jitter by a factor in
 * [0.5, 1.5), then cap again (RET-04..06). `random` must return values in [0, 1).
 */
export function retryDelayMs(
  policy: RetryPolicy,
  n: number,
  random: () => number = Math.random,
): number {
  const initialMs = durationMs(policy.initial_interval);
  const maxMs = durationMs(policy.max_interval);
  const retry = Math.max(1, Math.floor(n));
  const effective = Math.min(rawDelayMs(policy, initialMs, retry), maxMs);
  if (!policy.jitter) return Math.round(effective);
  const jittered = Math.max(0, effective * (0.5 + random()));
  return Math.round(Math.min(jittered, maxMs));
}

function rawDelayMs(policy: RetryPolicy, initialMs: number, n: number): number {
  // A zero interval stays zero; without this, 0 * Infinity would give NaN for huge n.
  if (initialMs === 0) return 0;
  const c = policy.backoff_coefficient;
  switch (policy.backoff_strategy) {
    case 'exponential':
      return initialMs * c ** (n - 1);
    case 'linear':
      return initialMs * n;
    case 'polynomial':
      return initialMs * n ** c;
    case 'constant':
    case 'none':
      return initialMs;
  }
}

function durationMs(text: string): number {
  const ms = parseIsoDuration(text);
  if (ms === null) throw new RangeError(`Retry policy holds an invalid duration: "${text}"`);
  return ms;
}

// ---------------------------------------------------------------------------------------------
// Failure handling
// ---------------------------------------------------------------------------------------------

/** The error a worker reports with a nack (HB `{code, message, retryable?, details?}`). */
export interface FailureReport {
  code?: string;
  type?: string;
  message?: string;
  retryable?: boolean;
  details?: Record<string, unknown>;
}

/**
 * The error type used for non-retryable matching. Workers put it in different places
 * (X-7): the retry spec's `type`, the suite's `details.error_class`, or just a `code`.
 */
export function errorTypeOf(error: FailureReport): string {
  if (nonEmptyString(error.type)) return error.type;
  const errorClass = error.details?.error_class;
  if (nonEmptyString(errorClass)) return errorClass;
  if (nonEmptyString(error.code)) return error.code;
  return 'handler_error';
}

/**
 * Exact match, or an entry ending in ".*" matching by prefix with the dot kept, so "auth.*"
 * matches "auth.expired" but not "auth" or "external.auth.x". Case-sensitive.
 */
export function matchesNonRetryable(patterns: readonly string[], errorType: string): boolean {
  return patterns.some((pattern) =>
    pattern.endsWith('.*') ? errorType.startsWith(pattern.slice(0, -1)) : pattern === errorType,
  );
}

export type FailureDecision =
  | { next: 'available' }
  | { next: 'retryable'; delayMs: number }
  | {
      next: 'discarded';
      deadLetter: boolean;
      reason: 'exhausted' | 'non_retryable' | 'discard_directive' | 'dead_letter_directive';
    };

/**
 * What happens to a job whose attempt `attempt` (1-based) just failed. Order: requeue,
 * handler directive (RET-08), non-retryable (RET-07), exhaustion (RET-01), else back off.
 */
export function decideFailure(
  input: { attempt: number; policy: RetryPolicy; error: FailureReport; requeue?: boolean },
  random?: () => number,
): FailureDecision {
  const { attempt, policy, error } = input;
  // requeue hands the job back without burning a retry (e.g. worker shutdown).
  if (input.requeue === true) return { next: 'available' };

  const directive = typeof error.code === 'string' ? error.code.toUpperCase() : '';
  if (directive === 'DISCARD' || directive === 'FAIL') {
    return { next: 'discarded', deadLetter: false, reason: 'discard_directive' };
  }
  if (directive === 'DEAD_LETTER') {
    return { next: 'discarded', deadLetter: true, reason: 'dead_letter_directive' };
  }

  const deadLetter = policy.on_exhaustion === 'dead_letter';
  const nonRetryable =
    error.retryable === false ||
    matchesNonRetryable(policy.non_retryable_errors, errorTypeOf(error));
  if (nonRetryable) return { next: 'discarded', deadLetter, reason: 'non_retryable' };

  if (attempt >= Math.max(1, policy.max_attempts)) {
    return { next: 'discarded', deadLetter, reason: 'exhausted' };
  }
  return { next: 'retryable', delayMs: retryDelayMs(policy, attempt, random) };
}

function nonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}
