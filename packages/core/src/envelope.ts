/**
 * Enqueue request -> JobRecord. Every validation rule of the envelope lives
 * here (JF, http-binding digest §4.3, §5.2, §17), so the HTTP binding, the
 * in-process SDK and batch enqueue all reject the same inputs the same way.
 */

import { parseIsoDuration } from './duration.ts';
import { OBJECT_ARGS_HINT } from './envelope-hints.ts';
import { invalidPayload, OjsError } from './errors.ts';
import { isObject } from './is-object.ts';
import type { JobRecord, RateLimitPolicy, UniquePolicy } from './job-types.ts';
import {
  byteLength,
  MAX_EXECUTION_TIMEOUT_MS,
  MAX_NAME_BYTES,
  MAX_TAGS,
  MAX_VISIBILITY_TIMEOUT_MS,
} from './limits.ts';
import { validateJobType, validateQueueName } from './names.ts';
import { normalizeRetryPolicy } from './retry.ts';
import { isJobState, type JobState } from './states.ts';
import { resolveTime, toIso } from './time.ts';
import { computeUniqueKey } from './unique.ts';
import { isUuidv7, uuidv7 } from './uuid.ts';
import { splitTypeVersion, versionNumber } from './version.ts';

export const MAX_META_BYTES = 64 * 1024;
export const PRIORITY_MIN = -100;
export const PRIORITY_MAX = 100;
/** Core named priorities (X-1: higher runs first). */
export const NAMED_PRIORITIES: Readonly<Record<string, number>> = {
  critical: 100,
  high: 10,
  normal: 0,
  low: -10,
};

export interface EnqueueDefaults {
  visibilityTimeoutMs: number;
}

/** Top-level envelope fields the server understands; everything else is preserved. */
const KNOWN_TOP_LEVEL = new Set([
  'specversion',
  'id',
  'type',
  'queue',
  'args',
  'meta',
  'options',
  'priority',
  'timeout',
  'timeout_ms',
  'visibility_timeout',
  'scheduled_at',
  'expires_at',
  'retry',
  'unique',
  'tags',
  'schema',
  'rate_limit',
]);

/** System-managed fields a client may not set (core §5.3): silently ignored. */
const SYSTEM_FIELDS = new Set([
  'state',
  'attempt',
  'max_attempts',
  'created_at',
  'enqueued_at',
  'started_at',
  'completed_at',
  'cancelled_at',
  'discarded_at',
  'result',
  'error',
  'errors',
  'worker_id',
  'retry_delay_ms',
  'next_attempt_at',
  'parent_results',
  'parent_results_by_step',
  'workflow_id',
  'workflow_step_id',
  'unique_key',
]);

type Obj = Record<string, unknown>;

/** An explicit null on input is treated as absent (JF §14.2). */
const present = (v: unknown) => v !== undefined && v !== null;

function pick(options: Obj, top: Obj, ...names: string[]): unknown {
  for (const source of [options, top]) {
    for (const name of names) if (present(source[name])) return source[name];
  }
  return undefined;
}

export function parsePriority(value: unknown, field = 'priority'): number {
  if (typeof value === 'string' && value.toLowerCase() in NAMED_PRIORITIES) {
    return NAMED_PRIORITIES[value.toLowerCase()]!;
  }
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw invalidPayload(
      `${field} must be an integer between ${PRIORITY_MIN} and ${PRIORITY_MAX}.`,
      {
        field,
      },
    );
  }
  if (value < PRIORITY_MIN || value > PRIORITY_MAX) {
    throw invalidPayload(
      `${field} must be between ${PRIORITY_MIN} and ${PRIORITY_MAX} (got ${value}).`,
      { field, min: PRIORITY_MIN, max: PRIORITY_MAX },
    );
  }
  return value;
}

function positiveInt(value: unknown, field: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max) {
    throw invalidPayload(`${field} must be a positive integer of at most ${max}.`, {
      field,
      max,
    });
  }
  return value;
}

/**
 * `timeout_ms` (HTTP), or `timeout` in seconds (JF envelope); 0 means the
 * default. At most `max` ms (see limits.ts): a lease of 9e15 ms is no lease.
 */
function parseMillis(
  options: Obj,
  top: Obj,
  msName: string,
  secName: string,
  max: number,
): number | undefined {
  const ms = pick(options, top, msName);
  if (ms !== undefined) return positiveInt(ms, `options.${msName}`, max);
  const sec = pick(options, top, secName);
  if (sec === undefined || sec === 0) return undefined;
  let parsed: number | null;
  if (typeof sec === 'string') parsed = parseIsoDuration(sec);
  else if (typeof sec === 'number' && sec > 0) parsed = Math.round(sec * 1000);
  else parsed = null;
  if (parsed === null || !(parsed > 0) || parsed > max) {
    throw invalidPayload(
      `${secName} must be a positive ISO 8601 duration or number of seconds of at most ${max / 1000} s.`,
      { field: secName, max_ms: max },
    );
  }
  return parsed;
}

function parseTime(value: unknown, field: string, nowMs: number) {
  if (typeof value !== 'string') {
    throw invalidPayload(
      `${field} must be an RFC 3339 timestamp or a relative time like '+PT5S'.`,
      {
        field,
      },
    );
  }
  const resolved = resolveTime(value, nowMs);
  if (resolved === null) {
    throw invalidPayload(
      `${field} '${value}' is not an RFC 3339 timestamp with a time zone or a relative time like '+PT5S'.`,
      { field },
    );
  }
  return resolved;
}

function parseMeta(meta: unknown, metadata: unknown): Obj {
  if (present(meta) && !isObject(meta)) {
    throw invalidPayload('meta must be a JSON object.', { field: 'meta' });
  }
  if (present(metadata) && !isObject(metadata)) {
    throw invalidPayload('options.metadata must be a JSON object.', { field: 'options.metadata' });
  }
  // options.metadata (OA) is merged into meta.
  const merged: Obj = {
    ...(present(meta) ? (meta as Obj) : {}),
    ...(present(metadata) ? (metadata as Obj) : {}),
  };
  const size = byteLength(JSON.stringify(merged));
  if (size > MAX_META_BYTES) {
    throw new OjsError(
      'metadata_too_large',
      `meta is ${size} bytes; the limit is ${MAX_META_BYTES}.`,
      {
        field: 'meta',
        actual_bytes: size,
        max_bytes: MAX_META_BYTES,
      },
    );
  }
  return merged;
}

function parseTags(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  if (
    !Array.isArray(value) ||
    value.length > MAX_TAGS ||
    !value.every((t) => typeof t === 'string' && byteLength(t) <= MAX_NAME_BYTES)
  ) {
    throw invalidPayload(
      `options.tags must be an array of at most ${MAX_TAGS} strings of at most ${MAX_NAME_BYTES} bytes.`,
      { field: 'options.tags', max: MAX_TAGS },
    );
  }
  return value as string[];
}

const UNIQUE_KEYS = new Set(['type', 'queue', 'args', 'meta', 'version']);
const ON_CONFLICT: Record<string, UniquePolicy['on_conflict']> = {
  reject: 'reject',
  ignore: 'ignore',
  use_existing: 'ignore',
  drop: 'ignore',
  replace: 'replace',
  replace_except_schedule: 'replace_except_schedule',
};
const UNIQUE_FIELDS = new Set([
  'keys',
  'key',
  'args_keys',
  'meta_keys',
  'period',
  'states',
  'on_conflict',
]);
const DEFAULT_UNIQUE_STATES: JobState[] = [
  'scheduled',
  'available',
  'pending',
  'active',
  'retryable',
];

/** Unique policy (features §2, X-9); bad policies are 400 invalid_request. */
export function parseUniquePolicy(value: unknown): UniquePolicy | undefined {
  if (!present(value)) return undefined;
  const bad = (message: string, field: string) =>
    new OjsError('invalid_request', message, { field: `options.unique.${field}` });
  if (!isObject(value)) throw bad('options.unique must be an object.', '');
  for (const field of Object.keys(value)) {
    if (!UNIQUE_FIELDS.has(field)) {
      throw bad(
        `options.unique.${field} is not a unique policy field (allowed: ${[...UNIQUE_FIELDS].join(', ')}).`,
        field,
      );
    }
  }
  let keys: string[];
  let argsKeys: string[] | undefined;
  if (present(value.keys)) {
    if (!Array.isArray(value.keys) || value.keys.length === 0) {
      throw bad('options.unique.keys must be a non-empty array.', 'keys');
    }
    for (const key of value.keys) {
      if (typeof key !== 'string' || !UNIQUE_KEYS.has(key)) {
        throw bad(
          `options.unique.keys contains '${String(key)}'; allowed keys are ${[...UNIQUE_KEYS].join(', ')}.`,
          'keys',
        );
      }
    }
    keys = value.keys as string[];
  } else if (present(value.key)) {
    // JF form: `key` lists args fields.
    if (!Array.isArray(value.key) || !value.key.every((k) => typeof k === 'string')) {
      throw bad('options.unique.key must be an array of strings.', 'key');
    }
    keys = ['type', 'args'];
    argsKeys = value.key.length > 0 ? (value.key as string[]) : undefined;
  } else {
    // Versions are distinct by default (seed 004 §15): @1.0 and @2.0 are different jobs.
    keys = ['type', 'queue', 'args', 'version'];
  }
  if (present(value.args_keys)) {
    if (!Array.isArray(value.args_keys) || !value.args_keys.every((k) => typeof k === 'string')) {
      throw bad('options.unique.args_keys must be an array of strings.', 'args_keys');
    }
    if (value.args_keys.length === 0)
      throw bad('options.unique.args_keys must not be empty.', 'args_keys');
    argsKeys = value.args_keys as string[];
  }
  let metaKeys: string[] | undefined;
  if (present(value.meta_keys)) {
    if (!Array.isArray(value.meta_keys) || !value.meta_keys.every((k) => typeof k === 'string')) {
      throw bad('options.unique.meta_keys must be an array of strings.', 'meta_keys');
    }
    if (value.meta_keys.length === 0)
      throw bad('options.unique.meta_keys must not be empty.', 'meta_keys');
    metaKeys = value.meta_keys as string[];
  }
  if (keys.includes('meta') && metaKeys === undefined) {
    throw bad(
      "options.unique.keys includes 'meta', which needs meta_keys naming the meta fields.",
      'meta_keys',
    );
  }
  let periodMs: number | undefined;
  let period: string | undefined;
  if (present(value.period)) {
    const parsed = typeof value.period === 'string' ? parseIsoDuration(value.period) : null;
    if (parsed === null || parsed <= 0) {
      throw bad(
        'options.unique.period must be a positive ISO 8601 duration such as "PT1H".',
        'period',
      );
    }
    periodMs = parsed;
    period = value.period as string;
  }
  let states = DEFAULT_UNIQUE_STATES;
  if (present(value.states)) {
    if (
      !Array.isArray(value.states) ||
      value.states.length === 0 ||
      !value.states.every(isJobState)
    ) {
      throw bad('options.unique.states must be a non-empty array of job states.', 'states');
    }
    states = value.states as JobState[];
  }
  let onConflict: UniquePolicy['on_conflict'] = 'reject';
  if (present(value.on_conflict)) {
    const mapped =
      typeof value.on_conflict === 'string' ? ON_CONFLICT[value.on_conflict] : undefined;
    if (mapped === undefined) {
      throw bad(
        `options.unique.on_conflict must be one of reject, ignore, replace, replace_except_schedule.`,
        'on_conflict',
      );
    }
    onConflict = mapped;
  }
  const policy: UniquePolicy = { keys, states, on_conflict: onConflict };
  if (argsKeys) policy.args_keys = argsKeys;
  if (metaKeys) policy.meta_keys = metaKeys;
  if (periodMs !== undefined) {
    policy.period_ms = periodMs;
    policy.period = period!;
  }
  return policy;
}

const RATE_KEY_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9._:-]*$/;
const PERIOD_WORDS: Record<string, number> = {
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
};

/** Accepts the spec shape, `{max_per_second}` (suite L4) and `{rate: N, period: "second"}` (suite ext). */
function parseRateLimit(value: unknown, queue: string): RateLimitPolicy | undefined {
  if (!present(value)) return undefined;
  const bad = (message: string, field: string) =>
    invalidPayload(message, { field: `options.rate_limit${field ? `.${field}` : ''}` });
  if (!isObject(value)) throw bad('options.rate_limit must be an object.', '');
  const positiveInteger = (v: unknown, field: string, min = 1) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
      throw bad(`options.rate_limit.${field} must be an integer >= ${min}.`, field);
    }
    return v;
  };
  let key = `queue:${queue}`;
  if (present(value.key)) {
    if (typeof value.key !== 'string' || !RATE_KEY_PATTERN.test(value.key)) {
      throw bad(`options.rate_limit.key must match ${RATE_KEY_PATTERN.source}.`, 'key');
    }
    key = value.key;
  }
  const policy: RateLimitPolicy = { key };
  if (present(value.concurrency))
    policy.concurrency = positiveInteger(value.concurrency, 'concurrency', 0);
  if (present(value.max_per_second)) {
    policy.max_per_second = positiveInteger(value.max_per_second, 'max_per_second');
    policy.rate = { limit: policy.max_per_second, period_ms: 1000 };
  }
  if (present(value.rate)) {
    if (isObject(value.rate)) {
      const period =
        typeof value.rate.period === 'string' ? parseIsoDuration(value.rate.period) : null;
      if (period === null || period <= 0)
        throw bad('options.rate_limit.rate.period must be an ISO 8601 duration.', 'rate.period');
      policy.rate = { limit: positiveInteger(value.rate.limit, 'rate.limit'), period_ms: period };
    } else {
      const period =
        typeof value.period === 'string'
          ? (PERIOD_WORDS[value.period] ?? parseIsoDuration(value.period))
          : 1000;
      if (period === null || period <= 0)
        throw bad(
          'options.rate_limit.period must be second, minute, hour, day or an ISO 8601 duration.',
          'period',
        );
      policy.rate = { limit: positiveInteger(value.rate, 'rate'), period_ms: period };
    }
  }
  if (policy.rate === undefined && policy.concurrency === undefined) {
    throw bad('options.rate_limit needs max_per_second, rate or concurrency.', '');
  }
  return policy;
}

/**
 * Validates one enqueue request and builds the job it describes.
 * Throws OjsError (400 invalid_payload / 422 validation_error / 413) on bad input.
 */
export function parseEnqueueRequest(
  body: unknown,
  nowMs: number,
  defaults: EnqueueDefaults,
): JobRecord {
  if (!isObject(body)) throw invalidPayload('The job envelope must be a JSON object.');
  // VER-002: `type@version`; an explicit `version` field wins.
  const typed: { type: unknown; version?: string } =
    typeof body.type === 'string' ? splitTypeVersion(body.type) : { type: body.type };
  const type = validateJobType(typed.type);
  if (!present(body.args))
    throw invalidPayload('args is required and must be a JSON array.', { field: 'args' });
  if (!Array.isArray(body.args)) {
    const received = typeof body.args;
    throw new OjsError(
      'invalid_payload',
      received === 'object'
        ? 'args must be a JSON array, not an object: wrap it in [ ].'
        : 'args must be a JSON array.',
      { field: 'args', expected: 'array', received },
      received === 'object' ? OBJECT_ARGS_HINT : undefined,
    );
  }
  let id: string;
  if (present(body.id)) {
    if (!isUuidv7(body.id)) {
      throw invalidPayload('id must be a lowercase UUIDv7.', { field: 'id' });
    }
    id = body.id as string;
  } else {
    id = uuidv7(nowMs);
  }
  if (present(body.options) && !isObject(body.options)) {
    throw invalidPayload('options must be a JSON object.', { field: 'options' });
  }
  const options: Obj = present(body.options) ? (body.options as Obj) : {};
  const queueValue = pick(options, body, 'queue');
  const queue =
    queueValue === undefined ? 'default' : validateQueueName(queueValue, 'options.queue');
  const priorityValue = pick(options, body, 'priority');
  const priority =
    priorityValue === undefined ? 0 : parsePriority(priorityValue, 'options.priority');
  const retryValue = pick(options, body, 'retry', 'retry_policy');
  const retry = normalizeRetryPolicy(retryValue, 'retry');
  const meta = parseMeta(body.meta, options.metadata);
  const timeoutMs = parseMillis(options, body, 'timeout_ms', 'timeout', MAX_EXECUTION_TIMEOUT_MS);
  const visibilityMs =
    parseMillis(
      options,
      body,
      'visibility_timeout_ms',
      'visibility_timeout',
      MAX_VISIBILITY_TIMEOUT_MS,
    ) ?? defaults.visibilityTimeoutMs;
  const tags = parseTags(pick(options, body, 'tags'));
  if (present(body.schema) && typeof body.schema !== 'string') {
    throw invalidPayload('schema must be a string URI.', { field: 'schema' });
  }
  const pending = options.pending;
  if (present(pending) && typeof pending !== 'boolean') {
    throw invalidPayload('options.pending must be a boolean.', { field: 'options.pending' });
  }

  const now = toIso(nowMs);
  const job: JobRecord = {
    id,
    type,
    queue,
    args: body.args,
    meta,
    state: 'available',
    priority,
    attempt: 0,
    retry,
    visibility_timeout_ms: visibilityMs,
    created_at: now,
    enqueued_at: now,
    errors: [],
    extensions: {},
    rev: 0,
  };
  if (timeoutMs !== undefined) job.timeout_ms = timeoutMs;
  if (tags !== undefined) job.tags = tags;
  if (present(body.schema)) job.schema = body.schema as string;

  const scheduledValue = pick(options, body, 'scheduled_at', 'delay_until');
  if (scheduledValue !== undefined) {
    const at = parseTime(scheduledValue, 'options.scheduled_at', nowMs);
    job.scheduled_at = at.text;
    // A past time is immediate (L2-DEL-001); the job is available now.
    if (at.ms > nowMs) {
      job.state = 'scheduled';
      job.run_at = at.ms;
    }
  }
  const expiresValue = pick(options, body, 'expires_at');
  if (expiresValue !== undefined) {
    const at = parseTime(expiresValue, 'options.expires_at', nowMs);
    job.expires_at = at.text;
    job.expires_at_ms = at.ms;
  }
  if (pending === true) job.state = 'pending';
  const unique = parseUniquePolicy(pick(options, body, 'unique'));
  if (unique) job.unique = unique;
  const rateLimit = parseRateLimit(pick(options, body, 'rate_limit'), queue);
  if (rateLimit) job.rate_limit = rateLimit;

  for (const [key, value] of Object.entries(body)) {
    if (KNOWN_TOP_LEVEL.has(key) || SYSTEM_FIELDS.has(key)) continue;
    // defineProperty: a field named __proto__ is data to preserve, not a prototype.
    Object.defineProperty(job.extensions, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  const version = present(body.version) ? body.version : typed.version;
  if (version !== undefined) {
    job.version_num = versionNumber(version);
    // Echoed exactly as given (X-21: the suite sends integers).
    if (!present(body.version)) job.extensions.version = version;
  }
  if (job.unique) {
    const argsKeys = job.unique.args_keys;
    if (argsKeys !== undefined) {
      // args_keys select fields of the object in args[0] (X-11); they must exist.
      const first = job.args[0];
      const missing = isObject(first) ? argsKeys.filter((k) => !(k in first)) : argsKeys;
      if (missing.length > 0) {
        throw new OjsError(
          'invalid_request',
          `options.unique.args_keys names ${missing.join(', ')}, not found in an object at args[0].`,
          { field: 'options.unique.args_keys', missing },
        );
      }
    }
    job.unique_key = computeUniqueKey(job, job.unique);
  }
  return job;
}
