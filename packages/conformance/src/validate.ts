/**
 * Parser tier (seed §3.1): validation of OJS job envelopes and enqueue requests, and of state
 * sequences against the lifecycle transition table.
 *
 * Every problem is reported - not just the first - with the JSON path of the field, a stable
 * rule name and the spec requirement it comes from:
 *
 * | rule                 | meaning                                                          |
 * |----------------------|------------------------------------------------------------------|
 * | required             | a required field is missing (or null, which counts as absent)    |
 * | type                 | wrong JSON type                                                  |
 * | enum                 | value outside the allowed set                                    |
 * | pattern              | string does not match the field's pattern (type, queue)          |
 * | max_bytes            | UTF-8 length above the limit (type, queue: 255; meta: 64 KiB)    |
 * | format.uuidv7        | not a lowercase UUIDv7                                           |
 * | format.datetime      | not an RFC 3339 timestamp with a time zone                       |
 * | format.duration      | not an ISO 8601 duration                                         |
 * | minimum / maximum    | number out of range (priority, max_attempts, coefficient, ...)   |
 * | min_items            | array too short                                                  |
 * | unique_items         | duplicate array items                                            |
 * | additional_property  | unknown key in a closed object (retry and unique policies)       |
 * | dependent_required   | a field required by another one is missing (meta_keys)          |
 * | reference            | a field names something that does not exist (args_keys)          |
 * | no_type_annotation   | language-specific type annotations inside args                   |
 * | transition           | a state change the lifecycle table does not allow                |
 *
 * Two document kinds exist: a job **envelope** (the stored/wire job; the five attributes
 * specversion, id, type, queue, args are required, L0-ENV-001) and an enqueue **request** (the
 * body of PUSH; only type and args are required, options may be nested under `options`).
 * `auto` picks envelope when the document has `specversion` or a system-managed field
 * (`state`, `attempt`, `created_at`, `enqueued_at`), request otherwise.
 */
import {
  allowedTransitions,
  isJobState,
  isTerminal,
  JOB_STATES,
  JOB_TYPE_PATTERN,
  type JobState,
  MAX_META_BYTES,
  MAX_NAME_BYTES,
  PRIORITY_MAX,
  PRIORITY_MIN,
  parseIsoDuration,
  parseTimestamp,
  QUEUE_PATTERN,
} from '@ojs/core';
import { preview } from './gofmt.ts';

export type DocumentKind = 'envelope' | 'request';

export interface ValidationIssue {
  /** JSONPath of the offending field, e.g. `$.options.retry.max_attempts` or `$[2].type`. */
  path: string;
  rule: string;
  message: string;
  /** Spec requirement, e.g. `L0-ENV-003`. */
  ref?: string;
}

export interface ValidateOptions {
  kind?: DocumentKind | 'auto';
  /** Path prefix for issues, `$` by default (`$[3]` for array elements). */
  basePath?: string;
}

type Obj = Record<string, unknown>;

const SUPPORTED_SPECVERSIONS = ['1.0'];
const UUID_ANY = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const DATETIME_NO_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?$/;
/** Retry intervals: the retry schema's regex (no weeks, fractions only on seconds). */
const RETRY_DURATION = /^P(?!$)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;
const NAMED_PRIORITY = ['critical', 'high', 'normal', 'low'];
const UNIQUE_DIMENSIONS = ['type', 'queue', 'args', 'meta', 'version'];
const ON_CONFLICT = [
  'reject',
  'replace',
  'replace_except_schedule',
  'ignore',
  'use_existing',
  'drop',
];
const ON_EXHAUSTION = ['discard', 'dead_letter'];
const BACKOFF = ['exponential', 'linear', 'polynomial', 'constant', 'none'];
const RETRY_KEYS = new Set([
  'max_attempts',
  'initial_interval',
  'initial_interval_ms',
  'backoff_coefficient',
  'max_interval',
  'max_interval_ms',
  'jitter',
  'non_retryable_errors',
  'on_exhaustion',
  'backoff_strategy',
  'backoff_type',
]);
const UNIQUE_KEYS = new Set([
  'keys',
  'key',
  'args_keys',
  'meta_keys',
  'period',
  'states',
  'on_conflict',
]);
/** Keys that mark language-specific serialisation inside args (L0-ENV-005). */
const TYPE_ANNOTATIONS = new Set([
  '__class__',
  '__module__',
  '__type__',
  'py/object',
  'py/reduce',
  'py/type',
  '@class',
  '$type',
  '$class',
]);
const SYSTEM_FIELDS = ['state', 'attempt', 'created_at', 'enqueued_at'];

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const present = (v: unknown) => v !== undefined && v !== null;
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Appends `key` to a JSONPath, bracket-quoting keys that are not identifiers. */
export function childPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)
    ? `${base}.${key}`
    : `${base}[${JSON.stringify(key)}]`;
}

class Checker {
  readonly issues: ValidationIssue[] = [];

  add(path: string, rule: string, message: string, ref?: string): void {
    const issue: ValidationIssue = { path, rule, message };
    if (ref !== undefined) issue.ref = ref;
    this.issues.push(issue);
  }

  type(path: string, value: unknown, expected: string, ref?: string): void {
    this.add(
      path,
      'type',
      `must be ${expected}, got ${jsonType(value)} ${preview(value, 60)}`,
      ref,
    );
  }

  string(path: string, value: unknown, ref?: string): value is string {
    if (typeof value === 'string') return true;
    this.type(path, value, 'a string', ref);
    return false;
  }

  integer(path: string, value: unknown, min: number | undefined, ref?: string): void {
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      this.type(path, value, 'an integer', ref);
    } else if (min !== undefined && value < min) {
      this.add(path, 'minimum', `must be >= ${min}, got ${value}`, ref);
    }
  }

  datetime(path: string, value: unknown, allowRelative: boolean, ref = 'JF-5'): void {
    if (!this.string(path, value, ref)) return;
    if (allowRelative && value.startsWith('+')) {
      if (parseIsoDuration(value.slice(1)) === null) {
        this.add(
          path,
          'format.duration',
          `relative time ${preview(value)} is not "+" followed by an ISO 8601 duration`,
          ref,
        );
      }
      return;
    }
    if (parseTimestamp(value) !== null) return;
    const hint = DATETIME_NO_ZONE.test(value)
      ? 'has no time zone (add Z or an offset such as +02:00)'
      : `is not an RFC 3339 timestamp${allowRelative ? ' or a relative time such as "+PT5S"' : ''}`;
    this.add(path, 'format.datetime', `${preview(value)} ${hint}`, ref);
  }

  name(path: string, value: unknown, pattern: RegExp, what: string, ref: string): void {
    if (!this.string(path, value, ref)) return;
    if (value === '') {
      this.add(path, 'pattern', `${what} must not be empty`, ref);
      return;
    }
    if (bytes(value) > MAX_NAME_BYTES) {
      this.add(
        path,
        'max_bytes',
        `${what} is ${bytes(value)} bytes; the limit is ${MAX_NAME_BYTES}`,
        ref,
      );
    }
    if (!pattern.test(value)) {
      this.add(path, 'pattern', `${what} ${preview(value)} does not match ${pattern.source}`, ref);
    }
  }

  stringArray(path: string, value: unknown, ref: string, minItems = 0): value is string[] {
    if (!Array.isArray(value)) {
      this.type(path, value, 'an array of strings', ref);
      return false;
    }
    let ok = true;
    value.forEach((item, i) => {
      if (typeof item !== 'string') {
        this.type(childPath(path, i), item, 'a string', ref);
        ok = false;
      }
    });
    if (value.length < minItems) {
      this.add(
        path,
        'min_items',
        `must have at least ${minItems} item${minItems === 1 ? '' : 's'}`,
        ref,
      );
      ok = false;
    }
    return ok;
  }

  enumItems(path: string, items: string[], allowed: readonly string[], ref: string): void {
    items.forEach((item, i) => {
      if (!allowed.includes(item)) {
        this.add(
          childPath(path, i),
          'enum',
          `${preview(item)} is not one of ${allowed.join(', ')}`,
          ref,
        );
      }
    });
    const seen = new Set<string>();
    items.forEach((item, i) => {
      if (seen.has(item))
        this.add(childPath(path, i), 'unique_items', `${preview(item)} is listed twice`, ref);
      seen.add(item);
    });
  }
}

function checkId(c: Checker, path: string, value: unknown): void {
  if (!c.string(path, value, 'L0-ENV-002')) return;
  if (UUID_V7.test(value)) return;
  let why = 'is not a UUID';
  if (value === '') why = 'is empty';
  else if (UUID_ANY.test(value)) {
    const version = value[14]!;
    if (UUID_V7.test(value.toLowerCase())) why = 'must be lowercase';
    else if (version !== '7') why = `is a version ${version} UUID, not version 7`;
    else why = 'has an invalid variant';
  }
  c.add(path, 'format.uuidv7', `id ${preview(value)} ${why}`, 'L0-ENV-002');
}

function checkArgsContent(c: Checker, path: string, value: unknown, depth = 0): void {
  if (depth > 64) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      checkArgsContent(c, childPath(path, i), item, depth + 1);
    });
  } else if (isObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (TYPE_ANNOTATIONS.has(key)) {
        c.add(
          childPath(path, key),
          'no_type_annotation',
          `${preview(key)} is a language-specific type annotation; args must be plain JSON data`,
          'L0-ENV-005',
        );
      }
      checkArgsContent(c, childPath(path, key), item, depth + 1);
    }
  }
}

function durationMs(
  c: Checker,
  path: string,
  value: unknown,
  pattern: RegExp | null,
  ref: string,
): number | undefined {
  if (!c.string(path, value, ref)) return undefined;
  const ms = pattern === null || pattern.test(value) ? parseIsoDuration(value) : null;
  if (ms === null) {
    c.add(
      path,
      'format.duration',
      `${preview(value)} is not an ISO 8601 duration such as "PT1S"`,
      ref,
    );
    return undefined;
  }
  return ms;
}

function checkRetry(c: Checker, path: string, value: unknown): void {
  const ref = 'L1-RET-002';
  if (!isObject(value)) {
    c.type(path, value, 'an object', 'L1-RET-001');
    return;
  }
  for (const key of Object.keys(value)) {
    if (!RETRY_KEYS.has(key)) {
      c.add(
        childPath(path, key),
        'additional_property',
        `${preview(key)} is not a retry policy field`,
        'L1-RET-001',
      );
    }
  }
  if (present(value.max_attempts))
    c.integer(childPath(path, 'max_attempts'), value.max_attempts, 0, ref);
  let initial: number | undefined;
  if (present(value.initial_interval)) {
    const p = childPath(path, 'initial_interval');
    initial = durationMs(c, p, value.initial_interval, RETRY_DURATION, ref);
    if (initial !== undefined && initial <= 0)
      c.add(p, 'minimum', 'must be greater than zero', ref);
  } else if (present(value.initial_interval_ms)) {
    const p = childPath(path, 'initial_interval_ms');
    c.integer(p, value.initial_interval_ms, 1, ref);
    if (typeof value.initial_interval_ms === 'number') initial = value.initial_interval_ms;
  }
  if (present(value.backoff_coefficient)) {
    const p = childPath(path, 'backoff_coefficient');
    const v = value.backoff_coefficient;
    if (typeof v !== 'number') c.type(p, v, 'a number', ref);
    else if (v < 1) c.add(p, 'minimum', `must be >= 1.0, got ${v}`, ref);
  }
  let max: number | undefined;
  let maxPath = '';
  if (present(value.max_interval)) {
    maxPath = childPath(path, 'max_interval');
    max = durationMs(c, maxPath, value.max_interval, RETRY_DURATION, ref);
  } else if (present(value.max_interval_ms)) {
    maxPath = childPath(path, 'max_interval_ms');
    c.integer(maxPath, value.max_interval_ms, 1, ref);
    if (typeof value.max_interval_ms === 'number') max = value.max_interval_ms;
  }
  if (max !== undefined && initial !== undefined && max < initial) {
    c.add(maxPath, 'minimum', `must be >= initial_interval (${max} ms < ${initial} ms)`, ref);
  }
  if (present(value.jitter) && typeof value.jitter !== 'boolean') {
    c.type(childPath(path, 'jitter'), value.jitter, 'a boolean', ref);
  }
  if (present(value.non_retryable_errors)) {
    const p = childPath(path, 'non_retryable_errors');
    if (c.stringArray(p, value.non_retryable_errors, 'L1-RET-003')) {
      value.non_retryable_errors.forEach((e, i) => {
        if (e === '')
          c.add(childPath(p, i), 'min_length', 'error types must not be empty', 'L1-RET-003');
      });
    }
  }
  for (const [key, allowed] of [
    ['on_exhaustion', ON_EXHAUSTION],
    ['backoff_strategy', BACKOFF],
    ['backoff_type', BACKOFF],
  ] as const) {
    if (!present(value[key])) continue;
    const p = childPath(path, key);
    if (
      c.string(p, value[key], ref) &&
      !(allowed as readonly string[]).includes(value[key] as string)
    ) {
      c.add(p, 'enum', `${preview(value[key])} is not one of ${allowed.join(', ')}`, ref);
    }
  }
}

function checkUnique(c: Checker, path: string, value: unknown, args: unknown): void {
  const ref = 'L4-UNIQ-001';
  if (!isObject(value)) {
    c.type(path, value, 'an object', ref);
    return;
  }
  for (const key of Object.keys(value)) {
    if (!UNIQUE_KEYS.has(key))
      c.add(
        childPath(path, key),
        'additional_property',
        `${preview(key)} is not a unique policy field`,
        ref,
      );
  }
  let keys: string[] = [];
  if (present(value.keys)) {
    const p = childPath(path, 'keys');
    if (c.stringArray(p, value.keys, ref, 1)) {
      keys = value.keys;
      c.enumItems(p, keys, UNIQUE_DIMENSIONS, ref);
    }
  }
  if (present(value.key)) c.stringArray(childPath(path, 'key'), value.key, ref);
  if (present(value.args_keys)) {
    const p = childPath(path, 'args_keys');
    if (c.stringArray(p, value.args_keys, ref, 1)) {
      const source = isObject(args)
        ? args
        : Array.isArray(args) && isObject(args[0])
          ? args[0]
          : undefined;
      value.args_keys.forEach((k, i) => {
        if (source === undefined || !Object.hasOwn(source, k)) {
          c.add(
            childPath(p, i),
            'reference',
            `args has no key ${preview(k)} (args_keys are looked up in the object at args[0])`,
            ref,
          );
        }
      });
    }
  }
  if (present(value.meta_keys))
    c.stringArray(childPath(path, 'meta_keys'), value.meta_keys, ref, 1);
  if (keys.includes('meta') && !present(value.meta_keys)) {
    c.add(
      childPath(path, 'meta_keys'),
      'dependent_required',
      'meta_keys is required when keys includes "meta"',
      ref,
    );
  }
  if (present(value.period)) {
    const p = childPath(path, 'period');
    const ms = durationMs(c, p, value.period, null, ref);
    if (ms !== undefined && ms <= 0) c.add(p, 'minimum', 'must be a positive duration', ref);
  }
  if (present(value.states)) {
    const p = childPath(path, 'states');
    if (c.stringArray(p, value.states, ref, 1)) c.enumItems(p, value.states, JOB_STATES, ref);
  }
  if (present(value.on_conflict)) {
    const p = childPath(path, 'on_conflict');
    if (c.string(p, value.on_conflict, ref) && !ON_CONFLICT.includes(value.on_conflict as string)) {
      c.add(
        p,
        'enum',
        `${preview(value.on_conflict)} is not one of reject, replace, replace_except_schedule, ignore`,
        'L4-UNIQ-002',
      );
    }
  }
}

function checkPriority(c: Checker, path: string, value: unknown): void {
  const ref = 'L4-PRI-002';
  if (typeof value === 'string') {
    if (!NAMED_PRIORITY.includes(value.toLowerCase())) {
      c.add(
        path,
        'enum',
        `named priority ${preview(value)} is not one of HIGH, NORMAL, LOW (or CRITICAL)`,
        'L4-PRI-001',
      );
    }
    return;
  }
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    c.type(path, value, 'an integer', ref);
    return;
  }
  if (value < PRIORITY_MIN) c.add(path, 'minimum', `must be >= ${PRIORITY_MIN}, got ${value}`, ref);
  if (value > PRIORITY_MAX) c.add(path, 'maximum', `must be <= ${PRIORITY_MAX}, got ${value}`, ref);
}

function positiveNumber(
  c: Checker,
  path: string,
  value: unknown,
  integer: boolean,
  ref: string,
): void {
  if (typeof value !== 'number' || (integer && !Number.isInteger(value))) {
    c.type(path, value, integer ? 'an integer' : 'a number', ref);
  } else if (value <= 0) {
    c.add(path, 'minimum', `must be greater than zero, got ${value}`, ref);
  }
}

/** Picks the kind `auto` resolves to for a document. */
export function detectKind(doc: unknown): DocumentKind {
  if (!isObject(doc)) return 'request';
  if (present(doc.specversion)) return 'envelope';
  return SYSTEM_FIELDS.some((f) => present(doc[f])) ? 'envelope' : 'request';
}

/** Validates one envelope or enqueue request; returns the kind used and every issue found. */
export function validateDocument(
  doc: unknown,
  settings: ValidateOptions = {},
): { kind: DocumentKind; issues: ValidationIssue[] } {
  const base = settings.basePath ?? '$';
  const kind = !settings.kind || settings.kind === 'auto' ? detectKind(doc) : settings.kind;
  const c = new Checker();
  if (!isObject(doc)) {
    c.type(base, doc, 'a JSON object (a job envelope)', 'L0-ENV-001');
    return { kind, issues: c.issues };
  }
  const envelope = kind === 'envelope';
  const at = (key: string) => childPath(base, key);
  const required = (key: string, ref: string) => {
    if (present(doc[key])) return true;
    c.add(at(key), 'required', `${key} is required${envelope ? ' in a job envelope' : ''}`, ref);
    return false;
  };

  if (envelope) required('specversion', 'L0-ENV-001');
  if (present(doc.specversion) && c.string(at('specversion'), doc.specversion, 'L0-ENV-001')) {
    if (!SUPPORTED_SPECVERSIONS.includes(doc.specversion as string)) {
      c.add(
        at('specversion'),
        'enum',
        `specversion ${preview(doc.specversion)} is not a supported version (${SUPPORTED_SPECVERSIONS.join(', ')})`,
        'L0-ENV-001',
      );
    }
  }
  if (envelope) required('id', 'L0-ENV-001');
  if (present(doc.id)) checkId(c, at('id'), doc.id);
  if (required('type', 'L0-ENV-001')) {
    c.name(at('type'), doc.type, JOB_TYPE_PATTERN, 'type', 'L0-ENV-003');
  }
  if (present(doc.options) && !isObject(doc.options))
    c.type(at('options'), doc.options, 'an object');
  const options: Obj = !envelope && isObject(doc.options) ? doc.options : {};
  const opt = (key: string) => childPath(at('options'), key);
  /** A field that may sit at the top level or (in requests) under options. */
  const placed = (key: string): [string, unknown][] => {
    const found: [string, unknown][] = [];
    if (present(doc[key])) found.push([at(key), doc[key]]);
    if (present(options[key])) found.push([opt(key), options[key]]);
    return found;
  };

  const queues = placed('queue');
  if (envelope && queues.length === 0) required('queue', 'L0-ENV-001');
  for (const [p, v] of queues) c.name(p, v, QUEUE_PATTERN, 'queue', 'L0-ENV-004');

  if (required('args', 'L0-ENV-001')) {
    if (!Array.isArray(doc.args)) c.type(at('args'), doc.args, 'a JSON array', 'L0-ENV-005');
    else checkArgsContent(c, at('args'), doc.args);
  }
  for (const [p, v] of [
    [at('meta'), doc.meta],
    [opt('metadata'), options.metadata],
  ] as const) {
    if (!present(v)) continue;
    if (!isObject(v)) c.type(p, v, 'an object', 'JF-3.3');
    else {
      const size = bytes(JSON.stringify(v));
      if (size > MAX_META_BYTES)
        c.add(p, 'max_bytes', `is ${size} bytes; the limit is ${MAX_META_BYTES}`, 'PL');
    }
  }
  if (present(doc.schema)) c.string(at('schema'), doc.schema);
  for (const [p, v] of placed('priority')) checkPriority(c, p, v);
  for (const [p, v] of placed('tags')) c.stringArray(p, v, 'HB-9.1');
  for (const [p, v] of placed('timeout_ms')) positiveNumber(c, p, v, true, 'HB-9.1');
  for (const [p, v] of placed('visibility_timeout_ms')) positiveNumber(c, p, v, true, 'L1-VT-001');
  for (const [p, v] of placed('timeout')) {
    if (typeof v === 'number' && v === 0) continue; // 0 = the implementation default
    positiveNumber(c, p, v, false, 'ojs-timeouts');
  }
  for (const [p, v] of placed('visibility_timeout')) {
    if (typeof v === 'string') {
      const ms = durationMs(c, p, v, null, 'L1-VT-001');
      if (ms !== undefined && ms <= 0)
        c.add(p, 'minimum', 'must be a positive duration', 'L1-VT-001');
    } else positiveNumber(c, p, v, false, 'L1-VT-001');
  }
  for (const key of ['scheduled_at', 'delay_until']) {
    for (const [p, v] of placed(key)) c.datetime(p, v, !envelope, 'L2-DEL-001');
  }
  for (const [p, v] of placed('expires_at')) c.datetime(p, v, !envelope, 'L2-TTL-001');
  for (const key of ['retry', 'retry_policy'])
    for (const [p, v] of placed(key)) checkRetry(c, p, v);
  for (const [p, v] of placed('unique')) checkUnique(c, p, v, doc.args);
  for (const [p, v] of placed('rate_limit'))
    if (!isObject(v)) c.type(p, v, 'an object', 'L4-RATE-001');
  if (present(options.pending) && typeof options.pending !== 'boolean') {
    c.type(opt('pending'), options.pending, 'a boolean', 'HB-9.1');
  }

  // System-managed fields, when present (stored jobs, server responses).
  if (
    present(doc.state) &&
    c.string(at('state'), doc.state, 'L0-LC-001') &&
    !isJobState(doc.state)
  ) {
    c.add(
      at('state'),
      'enum',
      `${preview(doc.state)} is not one of the 8 states: ${JOB_STATES.join(', ')}`,
      'L0-LC-001',
    );
  }
  for (const key of ['attempt', 'max_attempts']) {
    if (present(doc[key])) c.integer(at(key), doc[key], 0, 'JF-3');
  }
  for (const key of [
    'created_at',
    'enqueued_at',
    'started_at',
    'completed_at',
    'cancelled_at',
    'discarded_at',
  ]) {
    if (present(doc[key])) c.datetime(at(key), doc[key], false);
  }
  if (present(doc.errors)) {
    if (!Array.isArray(doc.errors))
      c.type(at('errors'), doc.errors, 'an array of error objects', 'JF-3');
    else
      doc.errors.forEach((e, i) => {
        if (!isObject(e)) c.type(childPath(at('errors'), i), e, 'an error object', 'JF-3');
      });
  }
  if (present(doc.error) && !isObject(doc.error))
    c.type(at('error'), doc.error, 'an error object', 'JF-3');
  return { kind, issues: c.issues };
}

// ---------------------------------------------------------------------------------------------
// State sequences

/** The L0-LC-002 table, verbatim. */
const STRICT_TABLE: Readonly<Record<JobState, readonly JobState[]>> = {
  scheduled: ['available', 'cancelled'],
  available: ['active', 'cancelled'],
  pending: ['available', 'cancelled'],
  active: ['completed', 'retryable', 'cancelled', 'discarded'],
  retryable: ['available', 'cancelled', 'discarded'],
  completed: [],
  cancelled: [],
  discarded: [],
};

export interface TransitionOptions {
  /**
   * `core` (default): L0-LC-002 plus the transitions Levels 1-2 require - active -> available
   * (visibility timeout, L1-VT), scheduled/available/pending -> discarded (expiry, L2-TTL) and
   * discarded -> available (dead letter retry, L1-DLQ). `strict`: L0-LC-002 only.
   */
  table?: 'core' | 'strict';
  basePath?: string;
}

export function allowedNext(
  from: JobState,
  table: 'core' | 'strict' = 'core',
): readonly JobState[] {
  return table === 'strict' ? STRICT_TABLE[from] : allowedTransitions(from);
}

/** Extracts the state list from `["a", ...]`, `[{state}, ...]` or `{"states": [...]}`. */
function stateItems(
  input: unknown,
  base: string,
  c: Checker,
): { path: string; value: unknown }[] | null {
  let list: unknown = input;
  let listPath = base;
  if (isObject(input) && Array.isArray(input.states)) {
    list = input.states;
    listPath = childPath(base, 'states');
  }
  if (!Array.isArray(list)) {
    c.type(base, input, 'an array of states (or {"states": [...]})');
    return null;
  }
  return list.map((item, i) => {
    const p = childPath(listPath, i);
    if (isObject(item) && 'state' in item)
      return { path: childPath(p, 'state'), value: item.state };
    return { path: p, value: item };
  });
}

/**
 * Validates a sequence of job states. Unknown states are `enum` issues; each disallowed step is
 * a `transition` issue naming the allowed targets. A state repeated back to back is not a
 * transition (e.g. two snapshots of the same active job) and is skipped.
 */
export function validateTransitions(
  input: unknown,
  options: TransitionOptions = {},
): ValidationIssue[] {
  const c = new Checker();
  const table = options.table ?? 'core';
  const items = stateItems(input, options.basePath ?? '$', c);
  if (items === null) return c.issues;
  if (items.length === 0)
    c.add(options.basePath ?? '$', 'min_items', 'the sequence has no states', 'L0-LC-002');
  let previous: { path: string; state: JobState } | undefined;
  for (const item of items) {
    if (!isJobState(item.value)) {
      c.add(
        item.path,
        'enum',
        `${preview(item.value)} is not one of the 8 states: ${JOB_STATES.join(', ')}`,
        'L0-LC-001',
      );
      previous = undefined;
      continue;
    }
    const state = item.value;
    if (previous !== undefined && previous.state !== state) {
      const allowed = allowedNext(previous.state, table);
      if (!allowed.includes(state)) {
        const why =
          isTerminal(previous.state) && allowed.length === 0
            ? `${previous.state} is terminal`
            : `from ${previous.state} only ${allowed.join(', ')} ${allowed.length === 1 ? 'is' : 'are'} allowed`;
        c.add(
          item.path,
          'transition',
          `${previous.state} -> ${state} is not allowed: ${why}`,
          'L0-LC-002',
        );
      }
    }
    previous = { path: item.path, state };
  }
  return c.issues;
}
