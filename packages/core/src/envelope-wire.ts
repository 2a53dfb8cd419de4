/**
 * The job envelope as stored and sent on the wire (JF §3, L0-ENV-001): what `ojs validate`
 * checks beyond the enqueue request. The request rules are the server's own
 * (readEnqueueRequest); the rules here are ones the server does not enforce on input, because
 * it sets these fields itself or ignores them (core §5.3), so they are `advise`d: reported in
 * collecting mode, never thrown.
 */

import { type EnqueueDefaults, readEnqueueRequest, SYSTEM_FIELDS } from './envelope.ts';
import {
  type JsonKey,
  type Problems,
  isPresent as present,
  shown,
  typeMismatch,
} from './envelope-problems.ts';
import { isObject } from './is-object.ts';
import { checkRequestJson } from './limits.ts';
import { isJobState, JOB_STATES } from './states.ts';
import { parseTimestamp } from './time.ts';

export type EnvelopeKind = 'envelope' | 'request';

export const SUPPORTED_SPECVERSIONS: readonly string[] = ['1.0'];

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

/** The system-managed timestamps (created_at, ..., next_attempt_at). */
const TIMESTAMPS = [...SYSTEM_FIELDS].filter((field) => field.endsWith('_at'));

/** Relative times (`+PT5S`) are for requests; a stored job has resolved them. */
const ENVELOPE_TIMES = ['scheduled_at', 'delay_until', 'expires_at'];

const VALIDATION_DEFAULTS: EnqueueDefaults = { visibilityTimeoutMs: 30_000 };

/**
 * Every problem of one document: the enqueue request rules, plus the envelope's required
 * attributes and system-managed fields when `kind` is envelope. Problems go to `problems`.
 */
export function checkJobDocument(doc: unknown, kind: EnvelopeKind, problems: Problems): void {
  const envelope = kind === 'envelope';
  // What the server checks of every request body first (limits.ts).
  checkRequestJson(doc, problems);
  if (!isObject(doc)) {
    readEnqueueRequest(doc, Date.now(), VALIDATION_DEFAULTS, problems);
    return;
  }
  const required = (key: string) => {
    if (!present(doc[key])) {
      problems.advise([key], 'required', `${key} is required in a job envelope`, 'L0-ENV-001');
    }
  };
  if (envelope) required('specversion');
  checkSpecversion(doc.specversion, problems);
  if (envelope) required('id');
  readEnqueueRequest(doc, Date.now(), VALIDATION_DEFAULTS, problems);
  // The request's queue defaults to "default"; the envelope's is required.
  if (envelope && !present(doc.queue)) required('queue');
  if (Array.isArray(doc.args)) checkArgsContent(doc.args, ['args'], problems);
  if (envelope) {
    for (const key of ENVELOPE_TIMES) {
      const value = doc[key];
      if (typeof value === 'string' && value.startsWith('+')) {
        problems.advise(
          [key],
          'format.datetime',
          `${shown(value)} is a relative time; a job envelope has an RFC 3339 timestamp`,
          'JF-5',
        );
      }
    }
  }
  checkSystemFields(doc, problems);
}

function checkSpecversion(value: unknown, problems: Problems): void {
  if (!present(value)) return;
  if (typeof value !== 'string') {
    const report = typeMismatch(value, 'a string', 'L0-ENV-001');
    problems.advise(['specversion'], report.rule, report.message!, report.ref);
  } else if (!SUPPORTED_SPECVERSIONS.includes(value)) {
    problems.advise(
      ['specversion'],
      'enum',
      `specversion ${shown(value)} is not a supported version (${SUPPORTED_SPECVERSIONS.join(', ')})`,
      'L0-ENV-001',
    );
  }
}

/** Args are plain JSON: no language-specific type annotations (L0-ENV-005). */
function checkArgsContent(value: unknown, keys: JsonKey[], problems: Problems, depth = 0): void {
  if (depth > 64) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      checkArgsContent(item, [...keys, i], problems, depth + 1);
    });
  } else if (isObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (TYPE_ANNOTATIONS.has(key)) {
        problems.advise(
          [...keys, key],
          'no_type_annotation',
          `${shown(key)} is a language-specific type annotation; args must be plain JSON data`,
          'L0-ENV-005',
        );
      }
      checkArgsContent(item, [...keys, key], problems, depth + 1);
    }
  }
}

/** System-managed fields, when present (stored jobs, server responses). */
function checkSystemFields(doc: Record<string, unknown>, problems: Problems): void {
  const mismatch = (keys: JsonKey[], value: unknown, expected: string, ref?: string) => {
    const report = typeMismatch(value, expected, ref);
    problems.advise(keys, report.rule, report.message!, report.ref);
  };
  if (present(doc.state)) {
    if (typeof doc.state !== 'string') mismatch(['state'], doc.state, 'a string', 'L0-LC-001');
    else if (!isJobState(doc.state)) {
      problems.advise(
        ['state'],
        'enum',
        `${shown(doc.state)} is not one of the 8 states: ${JOB_STATES.join(', ')}`,
        'L0-LC-001',
      );
    }
  }
  for (const key of ['attempt', 'max_attempts']) {
    const value = doc[key];
    if (!present(value)) continue;
    if (typeof value !== 'number' || !Number.isInteger(value))
      mismatch([key], value, 'an integer', 'JF-3');
    else if (value < 0) problems.advise([key], 'minimum', `must be >= 0, got ${value}`, 'JF-3');
  }
  for (const key of TIMESTAMPS) {
    const value = doc[key];
    if (!present(value)) continue;
    if (typeof value !== 'string') mismatch([key], value, 'a string', 'JF-5');
    else if (parseTimestamp(value) === null) {
      problems.advise(
        [key],
        'format.datetime',
        `${shown(value)} is not an RFC 3339 timestamp with a time zone`,
        'JF-5',
      );
    }
  }
  if (present(doc.errors)) {
    if (!Array.isArray(doc.errors))
      mismatch(['errors'], doc.errors, 'an array of error objects', 'JF-3');
    else {
      doc.errors.forEach((e, i) => {
        if (!isObject(e)) mismatch(['errors', i], e, 'an error object', 'JF-3');
      });
    }
  }
  if (present(doc.error) && !isObject(doc.error))
    mismatch(['error'], doc.error, 'an error object', 'JF-3');
}
