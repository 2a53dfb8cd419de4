/**
 * Enqueue request -> JobRecord. Every validation rule of the envelope lives
 * here (JF, http-binding digest §4.3, §5.2, §17), so the HTTP binding, the
 * in-process SDK and batch enqueue all reject the same inputs the same way.
 * Each rule reports to a `Problems` sink (envelope-problems.ts): the server's
 * throws the first problem as its OjsError; `ojs validate`'s collects them all.
 */

import { withoutCodecMirror } from './codec-meta.ts';
import { parseIsoDuration } from './duration.ts';
import { OBJECT_ARGS_HINT } from './envelope-hints.ts';
import {
  type JsonKey,
  notUuidv7,
  type Problems,
  isPresent as present,
  shown,
  THROW_FIRST,
  typeMismatch,
} from './envelope-problems.ts';
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
import { readJobType, readQueueName } from './names.ts';
import { readRetryPolicy } from './retry-report.ts';
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
export const SYSTEM_FIELDS: ReadonlySet<string> = new Set([
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

interface Found {
  value: unknown;
  /** Where it was found: `['options', 'queue']` or `['queue']`. */
  keys: JsonKey[];
}

/** The first of `names` given in options, then at the top level (options win). */
function pick(options: Obj, top: Obj, ...names: string[]): Found | undefined {
  for (const [source, prefix] of [
    [options, ['options']],
    [top, []],
  ] as const) {
    for (const name of names) {
      if (present(source[name])) return { value: source[name], keys: [...prefix, name] };
    }
  }
  return undefined;
}

export function parsePriority(value: unknown, field = 'priority'): number {
  return readPriority(value, field, THROW_FIRST, [field]) as number;
}

function readPriority(
  value: unknown,
  field: string,
  problems: Problems,
  keys: JsonKey[],
): number | undefined {
  const ref = 'L4-PRI-002';
  // hasOwn: "constructor" is not a named priority.
  if (typeof value === 'string' && Object.hasOwn(NAMED_PRIORITIES, value.toLowerCase())) {
    return NAMED_PRIORITIES[value.toLowerCase()]!;
  }
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    const report =
      typeof value === 'string'
        ? {
            rule: 'enum',
            ref: 'L4-PRI-001',
            message: `named priority ${shown(value)} is not one of HIGH, NORMAL, LOW (or CRITICAL)`,
          }
        : typeMismatch(value, 'an integer', ref);
    problems.reject(keys, report, () =>
      invalidPayload(`${field} must be an integer between ${PRIORITY_MIN} and ${PRIORITY_MAX}.`, {
        field,
      }),
    );
    return undefined;
  }
  if (value < PRIORITY_MIN || value > PRIORITY_MAX) {
    problems.reject(keys, { rule: value < PRIORITY_MIN ? 'minimum' : 'maximum', ref }, () =>
      invalidPayload(
        `${field} must be between ${PRIORITY_MIN} and ${PRIORITY_MAX} (got ${value}).`,
        { field, min: PRIORITY_MIN, max: PRIORITY_MAX },
      ),
    );
    return undefined;
  }
  return value;
}

/** The rule a number broke: its type, or which end of (0, max] it is outside. */
function rangeRule(value: unknown, max: number, integer: boolean): string {
  if (typeof value !== 'number' || (integer && !Number.isInteger(value))) return 'type';
  return value > max ? 'maximum' : 'minimum';
}

/**
 * `timeout_ms` (HTTP), or `timeout` in seconds (JF envelope); 0 means the
 * default. At most `max` ms (see limits.ts): a lease of 9e15 ms is no lease.
 */
function parseMillis(
  options: Obj,
  top: Obj,
  names: [ms: string, seconds: string, ref: string],
  max: number,
  problems: Problems,
): number | undefined {
  const [msName, secName, ref] = names;
  const ms = pick(options, top, msName);
  if (ms !== undefined) {
    const value = ms.value;
    if (typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= max) {
      return value;
    }
    problems.reject(ms.keys, { rule: rangeRule(value, max, true), ref }, () =>
      invalidPayload(`options.${msName} must be a positive integer of at most ${max}.`, {
        field: `options.${msName}`,
        max,
      }),
    );
    return undefined;
  }
  const sec = pick(options, top, secName);
  if (sec === undefined || sec.value === 0) return undefined;
  let parsed: number | null;
  if (typeof sec.value === 'string') parsed = parseIsoDuration(sec.value);
  else if (typeof sec.value === 'number' && sec.value > 0) parsed = Math.round(sec.value * 1000);
  else parsed = null;
  if (parsed === null || !(parsed > 0) || parsed > max) {
    const rule =
      typeof sec.value === 'string'
        ? parsed === null
          ? 'format.duration'
          : rangeRule(parsed, max, false)
        : rangeRule(sec.value, max / 1000, false);
    problems.reject(sec.keys, { rule, ref }, () =>
      invalidPayload(
        `${secName} must be a positive ISO 8601 duration or number of seconds of at most ${max / 1000} s.`,
        { field: secName, max_ms: max },
      ),
    );
    return undefined;
  }
  return parsed;
}

function parseTime(found: Found, field: string, ref: string, nowMs: number, problems: Problems) {
  const value = found.value;
  if (typeof value !== 'string') {
    problems.reject(found.keys, typeMismatch(value, 'a string', ref), () =>
      invalidPayload(`${field} must be an RFC 3339 timestamp or a relative time like '+PT5S'.`, {
        field,
      }),
    );
    return undefined;
  }
  const resolved = resolveTime(value, nowMs);
  if (resolved === null) {
    const rule = value.startsWith('+') ? 'format.duration' : 'format.datetime';
    problems.reject(found.keys, { rule, ref }, () =>
      invalidPayload(
        `${field} '${value}' is not an RFC 3339 timestamp with a time zone or a relative time like '+PT5S'.`,
        { field },
      ),
    );
    return undefined;
  }
  return resolved;
}

function parseMeta(meta: unknown, metadata: unknown, problems: Problems): Obj {
  if (present(meta) && !isObject(meta)) {
    problems.reject(['meta'], typeMismatch(meta, 'an object', 'JF-3.3'), () =>
      invalidPayload('meta must be a JSON object.', { field: 'meta' }),
    );
  }
  if (present(metadata) && !isObject(metadata)) {
    problems.reject(['options', 'metadata'], typeMismatch(metadata, 'an object', 'JF-3.3'), () =>
      invalidPayload('options.metadata must be a JSON object.', { field: 'options.metadata' }),
    );
  }
  // options.metadata (OA) is merged into meta; a codec mirror read back
  // from our own output is not stored (the flat keys win, codec-meta.ts).
  const merged: Obj = withoutCodecMirror({
    ...(isObject(meta) ? meta : {}),
    ...(isObject(metadata) ? metadata : {}),
  });
  const size = byteLength(JSON.stringify(merged));
  if (size > MAX_META_BYTES) {
    problems.reject(
      ['meta'],
      { rule: 'max_bytes', ref: 'PL' },
      () =>
        new OjsError(
          'metadata_too_large',
          `meta is ${size} bytes; the limit is ${MAX_META_BYTES}.`,
          {
            field: 'meta',
            actual_bytes: size,
            max_bytes: MAX_META_BYTES,
          },
        ),
    );
  }
  return merged;
}

function parseTags(found: Found | undefined, problems: Problems): string[] | undefined {
  if (found === undefined) return undefined;
  const value = found.value;
  const error = () =>
    invalidPayload(
      `options.tags must be an array of at most ${MAX_TAGS} strings of at most ${MAX_NAME_BYTES} bytes.`,
      { field: 'options.tags', max: MAX_TAGS },
    );
  const ref = 'HB-9.1';
  if (!Array.isArray(value)) {
    problems.reject(found.keys, typeMismatch(value, 'an array of strings', ref), error);
    return undefined;
  }
  const before = problems.rejected;
  if (value.length > MAX_TAGS) problems.reject(found.keys, { rule: 'max_items', ref }, error);
  value.forEach((tag, i) => {
    if (typeof tag !== 'string') {
      problems.reject([...found.keys, i], typeMismatch(tag, 'a string', ref), error);
    } else if (byteLength(tag) > MAX_NAME_BYTES) {
      problems.reject([...found.keys, i], { rule: 'max_bytes', ref }, error);
    }
  });
  return problems.rejected === before ? (value as string[]) : undefined;
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

const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((k) => typeof k === 'string');

/** Unique policy (features §2, X-9); bad policies are 400 invalid_request. */
export function parseUniquePolicy(value: unknown): UniquePolicy | undefined {
  return readUniquePolicy(value, THROW_FIRST, ['options', 'unique']);
}

function readUniquePolicy(
  value: unknown,
  problems: Problems,
  at: JsonKey[],
): UniquePolicy | undefined {
  if (!present(value)) return undefined;
  const ref = 'L4-UNIQ-001';
  const fail = (field: string, rule: string, message: string, index?: number) => {
    const keys = field === '' ? at : [...at, field];
    problems.reject(
      index === undefined ? keys : [...keys, index],
      { rule, ref },
      () => new OjsError('invalid_request', message, { field: `options.unique.${field}` }),
    );
  };
  if (!isObject(value)) {
    fail('', 'type', 'options.unique must be an object.');
    return undefined;
  }
  const before = problems.rejected;
  for (const field of Object.keys(value)) {
    if (!UNIQUE_FIELDS.has(field)) {
      fail(
        field,
        'additional_property',
        `options.unique.${field} is not a unique policy field (allowed: ${[...UNIQUE_FIELDS].join(', ')}).`,
      );
    }
  }
  /** An array of strings with at least one item, or a problem. */
  const names = (field: string, message: string, empty: string): string[] | undefined => {
    const list = value[field];
    if (!isStringArray(list)) fail(field, 'type', message);
    else if (list.length === 0) fail(field, 'min_items', empty);
    else return list;
    return undefined;
  };
  let keys: string[] = ['type', 'queue', 'args', 'version'];
  let argsKeys: string[] | undefined;
  if (present(value.keys)) {
    const given = value.keys;
    if (!Array.isArray(given) || given.length === 0) {
      fail(
        'keys',
        Array.isArray(given) ? 'min_items' : 'type',
        'options.unique.keys must be a non-empty array.',
      );
    } else {
      given.forEach((key, i) => {
        if (typeof key !== 'string' || !UNIQUE_KEYS.has(key)) {
          const rule = typeof key === 'string' ? 'enum' : 'type';
          const message = `options.unique.keys contains '${String(key)}'; allowed keys are ${[...UNIQUE_KEYS].join(', ')}.`;
          fail('keys', rule, message, i);
        } else if (given.indexOf(key) < i) {
          // The schema's uniqueItems (features §2.2); the server takes a repeat as one.
          problems.advise([...at, 'keys', i], 'unique_items', `"${key}" is listed twice`, ref);
        }
      });
      keys = given as string[];
    }
  } else if (present(value.key)) {
    // JF form: `key` lists args fields.
    if (!isStringArray(value.key)) {
      fail('key', 'type', 'options.unique.key must be an array of strings.');
    } else {
      keys = ['type', 'args'];
      argsKeys = value.key.length > 0 ? value.key : undefined;
    }
  }
  // Otherwise versions are distinct by default (seed 004 §15): @1.0 and @2.0 are different jobs.
  if (present(value.args_keys)) {
    argsKeys = names(
      'args_keys',
      'options.unique.args_keys must be an array of strings.',
      'options.unique.args_keys must not be empty.',
    );
  }
  let metaKeys: string[] | undefined;
  if (present(value.meta_keys)) {
    metaKeys = names(
      'meta_keys',
      'options.unique.meta_keys must be an array of strings.',
      'options.unique.meta_keys must not be empty.',
    );
  } else if (keys.includes('meta')) {
    fail(
      'meta_keys',
      'dependent_required',
      "options.unique.keys includes 'meta', which needs meta_keys naming the meta fields.",
    );
  }
  let periodMs: number | undefined;
  let period: string | undefined;
  if (present(value.period)) {
    const parsed = typeof value.period === 'string' ? parseIsoDuration(value.period) : null;
    if (parsed === null || parsed <= 0) {
      const rule =
        typeof value.period !== 'string' ? 'type' : parsed === null ? 'format.duration' : 'minimum';
      fail(
        'period',
        rule,
        'options.unique.period must be a positive ISO 8601 duration such as "PT1H".',
      );
    } else {
      periodMs = parsed;
      period = value.period as string;
    }
  }
  let states = DEFAULT_UNIQUE_STATES;
  if (present(value.states)) {
    const given = value.states;
    const message = 'options.unique.states must be a non-empty array of job states.';
    if (!Array.isArray(given) || given.length === 0) {
      fail('states', Array.isArray(given) ? 'min_items' : 'type', message);
    } else {
      given.forEach((state, i) => {
        if (!isJobState(state))
          fail('states', typeof state === 'string' ? 'enum' : 'type', message, i);
      });
      states = given as JobState[];
    }
  }
  let onConflict: UniquePolicy['on_conflict'] = 'reject';
  if (present(value.on_conflict)) {
    const mapped =
      typeof value.on_conflict === 'string' && Object.hasOwn(ON_CONFLICT, value.on_conflict)
        ? ON_CONFLICT[value.on_conflict]
        : undefined;
    if (mapped === undefined) {
      problems.reject(
        [...at, 'on_conflict'],
        { rule: typeof value.on_conflict === 'string' ? 'enum' : 'type', ref: 'L4-UNIQ-002' },
        () =>
          new OjsError(
            'invalid_request',
            `options.unique.on_conflict must be one of reject, ignore, replace, replace_except_schedule.`,
            { field: 'options.unique.on_conflict' },
          ),
      );
    } else onConflict = mapped;
  }
  if (problems.rejected > before) return undefined;
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
function parseRateLimit(
  found: Found | undefined,
  queue: string,
  problems: Problems,
): RateLimitPolicy | undefined {
  if (found === undefined) return undefined;
  const value = found.value;
  const fail = (field: string, rule: string, message: string) =>
    problems.reject(
      field ? [...found.keys, ...field.split('.')] : found.keys,
      { rule, ref: 'L4-RATE-001' },
      () => invalidPayload(message, { field: `options.rate_limit${field ? `.${field}` : ''}` }),
    );
  if (!isObject(value)) {
    fail('', 'type', 'options.rate_limit must be an object.');
    return undefined;
  }
  const before = problems.rejected;
  const positiveInteger = (v: unknown, field: string, min = 1) => {
    if (typeof v === 'number' && Number.isInteger(v) && v >= min) return v;
    fail(
      field,
      rangeRule(v, Number.POSITIVE_INFINITY, true),
      `options.rate_limit.${field} must be an integer >= ${min}.`,
    );
    return min;
  };
  let key = `queue:${queue}`;
  if (present(value.key)) {
    if (typeof value.key !== 'string' || !RATE_KEY_PATTERN.test(value.key)) {
      const rule = typeof value.key === 'string' ? 'pattern' : 'type';
      fail('key', rule, `options.rate_limit.key must match ${RATE_KEY_PATTERN.source}.`);
    } else key = value.key;
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
      if (period === null || period <= 0) {
        fail(
          'rate.period',
          'format.duration',
          'options.rate_limit.rate.period must be an ISO 8601 duration.',
        );
      }
      policy.rate = {
        limit: positiveInteger(value.rate.limit, 'rate.limit'),
        period_ms: period ?? 0,
      };
    } else {
      const period =
        typeof value.period === 'string'
          ? (PERIOD_WORDS[value.period] ?? parseIsoDuration(value.period))
          : 1000;
      if (period === null || period <= 0) {
        fail(
          'period',
          'format.duration',
          'options.rate_limit.period must be second, minute, hour, day or an ISO 8601 duration.',
        );
      }
      policy.rate = { limit: positiveInteger(value.rate, 'rate'), period_ms: period ?? 0 };
    }
  }
  if (policy.rate === undefined && policy.concurrency === undefined) {
    fail('', 'required', 'options.rate_limit needs max_per_second, rate or concurrency.');
  }
  return problems.rejected > before ? undefined : policy;
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
  return readEnqueueRequest(body, nowMs, defaults, THROW_FIRST) as JobRecord;
}

/**
 * parseEnqueueRequest reporting to `problems`: in collecting mode every problem is recorded
 * and the job returned is built from what was valid (undefined when the body is no object).
 */
export function readEnqueueRequest(
  body: unknown,
  nowMs: number,
  defaults: EnqueueDefaults,
  problems: Problems,
): JobRecord | undefined {
  if (!isObject(body)) {
    problems.reject([], typeMismatch(body, 'a JSON object (a job envelope)', 'L0-ENV-001'), () =>
      invalidPayload('The job envelope must be a JSON object.'),
    );
    return undefined;
  }
  // VER-002: `type@version`; an explicit `version` field wins.
  const typed: { type: unknown; version?: string } =
    typeof body.type === 'string' ? splitTypeVersion(body.type) : { type: body.type };
  const type = readJobType(typed.type, 'type', problems, ['type']) ?? '';
  let args: unknown[] = [];
  if (!present(body.args)) {
    problems.reject(['args'], { rule: 'required', ref: 'L0-ENV-001' }, () =>
      invalidPayload('args is required and must be a JSON array.', { field: 'args' }),
    );
  } else if (!Array.isArray(body.args)) {
    const received = typeof body.args;
    problems.reject(
      ['args'],
      typeMismatch(body.args, 'a JSON array', 'L0-ENV-005'),
      () =>
        new OjsError(
          'invalid_payload',
          received === 'object'
            ? 'args must be a JSON array, not an object: wrap it in [ ].'
            : 'args must be a JSON array.',
          { field: 'args', expected: 'array', received },
          received === 'object' ? OBJECT_ARGS_HINT : undefined,
        ),
    );
  } else args = body.args;
  let id = '';
  if (!present(body.id)) id = uuidv7(nowMs);
  else if (isUuidv7(body.id)) id = body.id as string;
  else {
    const report =
      typeof body.id === 'string'
        ? { rule: 'format.uuidv7', ref: 'L0-ENV-002', message: notUuidv7(body.id) }
        : typeMismatch(body.id, 'a string', 'L0-ENV-002');
    problems.reject(['id'], report, () =>
      invalidPayload('id must be a lowercase UUIDv7.', { field: 'id' }),
    );
  }
  let options: Obj = {};
  if (isObject(body.options)) options = body.options;
  else if (present(body.options)) {
    problems.reject(['options'], typeMismatch(body.options, 'an object'), () =>
      invalidPayload('options must be a JSON object.', { field: 'options' }),
    );
  }
  const queueAt = pick(options, body, 'queue');
  const queue =
    queueAt === undefined
      ? 'default'
      : (readQueueName(queueAt.value, 'options.queue', problems, queueAt.keys) ?? 'default');
  const priorityAt = pick(options, body, 'priority');
  const priority =
    priorityAt === undefined
      ? 0
      : (readPriority(priorityAt.value, 'options.priority', problems, priorityAt.keys) ?? 0);
  const retryAt = pick(options, body, 'retry', 'retry_policy');
  const retry = readRetryPolicy(retryAt?.value, retryAt?.keys ?? ['retry'], problems);
  const meta = parseMeta(body.meta, options.metadata, problems);
  const timeoutMs = parseMillis(
    options,
    body,
    ['timeout_ms', 'timeout', 'HB-9.1'],
    MAX_EXECUTION_TIMEOUT_MS,
    problems,
  );
  const visibilityMs =
    parseMillis(
      options,
      body,
      ['visibility_timeout_ms', 'visibility_timeout', 'L1-VT-001'],
      MAX_VISIBILITY_TIMEOUT_MS,
      problems,
    ) ?? defaults.visibilityTimeoutMs;
  const tags = parseTags(pick(options, body, 'tags'), problems);
  if (present(body.schema) && typeof body.schema !== 'string') {
    problems.reject(['schema'], typeMismatch(body.schema, 'a string'), () =>
      invalidPayload('schema must be a string URI.', { field: 'schema' }),
    );
  }
  const pending = options.pending;
  if (present(pending) && typeof pending !== 'boolean') {
    problems.reject(['options', 'pending'], typeMismatch(pending, 'a boolean', 'HB-9.1'), () =>
      invalidPayload('options.pending must be a boolean.', { field: 'options.pending' }),
    );
  }

  const now = toIso(nowMs);
  const job: JobRecord = {
    id,
    type,
    queue,
    args,
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
  if (typeof body.schema === 'string') job.schema = body.schema;

  const scheduledAt = pick(options, body, 'scheduled_at', 'delay_until');
  if (scheduledAt !== undefined) {
    const at = parseTime(scheduledAt, 'options.scheduled_at', 'L2-DEL-001', nowMs, problems);
    if (at !== undefined) {
      job.scheduled_at = at.text;
      // A past time is immediate (L2-DEL-001); the job is available now.
      if (at.ms > nowMs) {
        job.state = 'scheduled';
        job.run_at = at.ms;
      }
    }
  }
  const expiresAt = pick(options, body, 'expires_at');
  if (expiresAt !== undefined) {
    const at = parseTime(expiresAt, 'options.expires_at', 'L2-TTL-001', nowMs, problems);
    if (at !== undefined) {
      job.expires_at = at.text;
      job.expires_at_ms = at.ms;
    }
  }
  if (pending === true) job.state = 'pending';
  const uniqueAt = pick(options, body, 'unique');
  const unique = readUniquePolicy(uniqueAt?.value, problems, uniqueAt?.keys ?? []);
  if (unique) job.unique = unique;
  const rateLimit = parseRateLimit(pick(options, body, 'rate_limit'), queue, problems);
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
    const versionKeys = present(body.version) ? ['version'] : ['type'];
    const parsed = problems.guard(versionKeys, { rule: 'format.version', ref: 'VER-002' }, () =>
      versionNumber(version),
    );
    if (parsed !== undefined) job.version_num = parsed;
    // Echoed exactly as given (X-21: the suite sends integers).
    if (!present(body.version)) job.extensions.version = version;
  }
  if (job.unique) {
    const argsKeys = job.unique.args_keys;
    if (argsKeys !== undefined) {
      // args_keys select fields of the object in args[0] (X-11); they must exist.
      const first = job.args[0];
      const missing = isObject(first) ? argsKeys.filter((k) => !(k in first)) : argsKeys;
      const error = () =>
        new OjsError(
          'invalid_request',
          `options.unique.args_keys names ${missing.join(', ')}, not found in an object at args[0].`,
          { field: 'options.unique.args_keys', missing },
        );
      const listed = present((uniqueAt!.value as Obj).args_keys) ? 'args_keys' : 'key';
      argsKeys.forEach((k, i) => {
        if (!missing.includes(k)) return;
        const message = `args has no key ${shown(k)} (args_keys are looked up in the object at args[0])`;
        problems.reject(
          [...uniqueAt!.keys, listed, i],
          { rule: 'reference', ref: 'L4-UNIQ-001', message },
          error,
        );
      });
    }
    if (problems.rejected === 0) job.unique_key = computeUniqueKey(job, job.unique);
  }
  return job;
}
