/**
 * Where the envelope parser sends what is wrong with its input. One parser serves two callers:
 *
 * - the server (throwing mode, `THROW_FIRST`): the first problem becomes the OjsError the
 *   request is refused with, exactly as a `throw` at that point would;
 * - `ojs validate` (collecting mode, `new Problems(true)`): every problem is kept, with its
 *   JSON path, a stable rule name and the spec requirement, and parsing goes on.
 *
 * `advise` records a rule the spec states but the server tolerates (it accepts the input, as
 * with unknown keys in a retry policy); the server never sees those.
 */
import { OjsError } from './errors.ts';

export interface EnvelopeProblem {
  /** JSONPath of the offending field, e.g. `$.options.retry.max_attempts` or `$[2].type`. */
  path: string;
  /** Stable rule name: required, type, enum, pattern, max_bytes, minimum, ... */
  rule: string;
  message: string;
  /** Spec requirement, e.g. `L0-ENV-003`. */
  ref?: string;
}

export type JsonKey = string | number;

/** An explicit null on input is treated as absent (JF §14.2). */
export const isPresent = (v: unknown): boolean => v !== undefined && v !== null;

export interface ProblemReport {
  rule: string;
  ref?: string;
  /** The validator's wording; the OjsError's message when absent. */
  message?: string;
}

/** Appends `key` to a JSONPath, bracket-quoting keys that are not identifiers. */
export function childPath(base: string, key: JsonKey): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)
    ? `${base}.${key}`
    : `${base}[${JSON.stringify(key)}]`;
}

export class Problems {
  readonly found: EnvelopeProblem[] = [];
  /** How many of `found` break a rule the server enforces (not advised ones). */
  rejected = 0;
  readonly collecting: boolean;
  /** Path of the document itself: `$`, or `$[3]` for an element of an array. */
  readonly base: string;

  constructor(collecting: boolean, base = '$') {
    this.collecting = collecting;
    this.base = base;
  }

  /** The JSONPath of `keys` below the document. */
  at(keys: readonly JsonKey[]): string {
    return keys.reduce<string>(childPath, this.base);
  }

  /** A rule the server enforces: throws `error()` in throwing mode, records it otherwise. */
  reject(keys: readonly JsonKey[], report: ProblemReport, error: () => OjsError): void {
    if (!this.collecting) throw error();
    this.rejected++;
    this.push(keys, report.rule, report.message ?? error().message, report.ref);
  }

  /** A rule the server does not enforce: recorded in collecting mode only. */
  advise(keys: readonly JsonKey[], rule: string, message: string, ref?: string): void {
    if (this.collecting) this.push(keys, rule, message, ref);
  }

  /**
   * Runs a core check that throws (retry policy, version): in throwing mode as is, in
   * collecting mode its OjsError becomes the problem at `keys`.
   */
  guard<T>(keys: readonly JsonKey[], report: ProblemReport, check: () => T): T | undefined {
    if (!this.collecting) return check();
    try {
      return check();
    } catch (error) {
      if (!(error instanceof OjsError)) throw error;
      this.rejected++;
      this.push(keys, report.rule, report.message ?? error.message, report.ref);
      return undefined;
    }
  }

  private push(keys: readonly JsonKey[], rule: string, message: string, ref?: string): void {
    const problem: EnvelopeProblem = { path: this.at(keys), rule, message };
    if (ref !== undefined) problem.ref = ref;
    this.found.push(problem);
  }
}

/** The server's mode: the first problem is thrown. Stateless, so one instance serves all. */
export const THROW_FIRST = new Problems(false);

/** The JSON type of a value as the validator names it (integer apart from number). */
export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** A short JSON rendering of a value for messages. */
export function shown(value: unknown, max = 40): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = typeof value;
  }
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** A `type` problem: the value has the wrong JSON type. */
export function typeMismatch(value: unknown, expected: string, ref?: string): ProblemReport {
  const report: ProblemReport = {
    rule: 'type',
    message: `must be ${expected}, got ${jsonType(value)} ${shown(value)}`,
  };
  if (ref !== undefined) report.ref = ref;
  return report;
}

const UUID_ANY = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Why `value`, which isUuidv7 refused, is not a lowercase UUIDv7. */
export function notUuidv7(value: string): string {
  let why = 'is not a UUID';
  if (value === '') why = 'is empty';
  else if (UUID_ANY.test(value)) {
    const version = value[14]!;
    if (version !== '7') why = `is a version ${version} UUID, not version 7`;
    else if (value !== value.toLowerCase()) why = 'must be lowercase';
    else why = 'has an invalid variant';
  }
  return `id ${shown(value)} ${why}`;
}
