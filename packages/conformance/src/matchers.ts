/**
 * Body matchers of the official conformance format (digest §1.9). Every function returns null
 * when the value matches and a human-readable reason when it does not, so callers can explain
 * failures without re-deriving what was expected.
 *
 * `actual` is `undefined` when the path resolved to no value (missing key). Null and missing are
 * deliberately treated alike by `exists`, `absent`, `null` and `$exists`, as in the Go runner.
 */
import { goValue, preview } from './gofmt.ts';
import type { Resolution } from './jsonpath.ts';
import { compileRegex } from './regex.ts';
import type { Json, JsonObject } from './types.ts';
import { isJsonObject } from './types.ts';

export type Mismatch = string | null;

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const NUMBER = '(-?\\d+(?:\\.\\d+)?)';
const RANGE = new RegExp(`^number:range\\(\\s*${NUMBER}\\s*,\\s*${NUMBER}\\s*\\)$`);
const APPROX = new RegExp(`^~${NUMBER}$`);
const ARRAY_LENGTH = /^array:length(?::(\d+)|\((\d+)\))$/;
const ARRAY_MIN = /^array:min(?:_length)?:(\d+)$/;

function got(actual: Json | undefined): string {
  return `got ${preview(actual, 80)}`;
}

function expectString(
  actual: Json | undefined,
  test: (s: string) => boolean,
  what: string,
): Mismatch {
  return typeof actual === 'string' && test(actual) ? null : `expected ${what}, ${got(actual)}`;
}

function expectNumber(
  actual: Json | undefined,
  test: (n: number) => boolean,
  what: string,
): Mismatch {
  return typeof actual === 'number' && test(actual) ? null : `expected ${what}, ${got(actual)}`;
}

function expectArray(
  actual: Json | undefined,
  test: (a: Json[]) => boolean,
  what: string,
): Mismatch {
  return Array.isArray(actual) && test(actual) ? null : `expected ${what}, ${got(actual)}`;
}

function regexMatch(actual: Json | undefined, pattern: string): Mismatch {
  const re = compileRegex(pattern);
  if (re instanceof Error) return `invalid pattern /${pattern}/: ${re.message}`;
  return expectString(actual, (s) => re.test(s), `a string matching /${pattern}/`);
}

/** String matchers: keywords like `exists`, `string:uuid`, `~2000`, else exact equality. */
function matchString(matcher: string, actual: Json | undefined): Mismatch {
  switch (matcher) {
    case 'any':
      return null;
    case 'exists':
      return actual === undefined || actual === null ? `expected a value, ${got(actual)}` : null;
    case 'absent':
      return actual === undefined || actual === null ? null : `expected no value, ${got(actual)}`;
    case 'string:nonempty':
    case 'string:non_empty':
      return expectString(actual, (s) => s.length > 0, 'a non-empty string');
    case 'string:uuid':
      return expectString(actual, (s) => UUID.test(s), 'a UUID string');
    case 'string:uuidv7':
      return expectString(actual, (s) => UUID_V7.test(s), 'a lowercase UUIDv7 string');
    case 'string:datetime':
      return expectString(actual, (s) => DATETIME.test(s), 'an RFC 3339 date-time string');
    case 'number:positive':
      return expectNumber(actual, (n) => n > 0, 'a positive number');
    case 'number:non_negative':
      return expectNumber(actual, (n) => n >= 0, 'a non-negative number');
    case 'array:empty':
      return expectArray(actual, (a) => a.length === 0, 'an empty array');
    case 'array:nonempty':
      return expectArray(actual, (a) => a.length > 0, 'a non-empty array');
  }
  if (matcher.startsWith('string:contains:')) {
    const needle = matcher.slice('string:contains:'.length);
    return expectString(actual, (s) => s.includes(needle), `a string containing "${needle}"`);
  }
  if (matcher.startsWith('string:pattern(') && matcher.endsWith(')')) {
    return regexMatch(actual, matcher.slice('string:pattern('.length, -1));
  }
  const range = RANGE.exec(matcher);
  if (range) {
    const [min, max] = [Number(range[1]), Number(range[2])];
    return expectNumber(actual, (n) => n >= min && n <= max, `a number in [${min}, ${max}]`);
  }
  const approx = APPROX.exec(matcher);
  if (approx) {
    // Fixed 50 % tolerance with no minimum; the runner's -tolerance flag does not apply here.
    const target = Number(approx[1]);
    const slack = Math.abs(target) * 0.5;
    return expectNumber(
      actual,
      (n) => Math.abs(n - target) <= slack,
      `a number within ±${slack} of ${target}`,
    );
  }
  const length = ARRAY_LENGTH.exec(matcher);
  if (length) {
    const n = Number(length[1] ?? length[2]);
    return expectArray(actual, (a) => a.length === n, `an array of length ${n}`);
  }
  const min = ARRAY_MIN.exec(matcher);
  if (min) {
    const n = Number(min[1]);
    return expectArray(actual, (a) => a.length >= n, `an array of at least ${n} elements`);
  }
  if (matcher.startsWith('contains:')) {
    const needle = matcher.slice('contains:'.length);
    return expectArray(
      actual,
      (a) => a.some((el) => goValue(el) === needle),
      `an array containing "${needle}"`,
    );
  }
  if (matcher.startsWith('not_contains:')) {
    const needle = matcher.slice('not_contains:'.length);
    return expectArray(
      actual,
      (a) => !a.some((el) => goValue(el) === needle),
      `an array without "${needle}"`,
    );
  }
  return expectString(actual, (s) => s === matcher, JSON.stringify(matcher));
}

const TYPE_CHECKS: Record<string, (v: Json) => boolean> = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number',
  integer: (v) => typeof v === 'number' && Number.isInteger(v),
  boolean: (v) => typeof v === 'boolean',
  bool: (v) => typeof v === 'boolean',
  array: (v) => Array.isArray(v),
  object: (v) => isJsonObject(v),
  null: (v) => v === null,
};

function matchExists(matcher: JsonObject, actual: Json | undefined): Mismatch {
  const present = actual !== undefined && actual !== null;
  const wanted = matcher.$exists !== false && matcher.$exists !== null;
  if (!wanted) return present ? `expected no value, ${got(actual)}` : null;
  if (!present) return `expected a value, ${got(actual)}`;
  const type = matcher.$type;
  if (type === undefined) return null;
  const check = typeof type === 'string' ? TYPE_CHECKS[type] : undefined;
  if (check === undefined) return `unknown $type ${preview(type)}`;
  return check(actual) ? null : `expected a value of type ${type}, ${got(actual)}`;
}

function matchSize(spec: Json, actual: Json | undefined): Mismatch {
  if (!Array.isArray(actual)) return `expected an array, ${got(actual)}`;
  const n = actual.length;
  if (typeof spec === 'number') return n === spec ? null : `expected ${spec} elements, got ${n}`;
  if (isJsonObject(spec)) {
    const ops: Record<string, (a: number, b: number) => boolean> = {
      $eq: (a, b) => a === b,
      $gt: (a, b) => a > b,
      $gte: (a, b) => a >= b,
      $lt: (a, b) => a < b,
      $lte: (a, b) => a <= b,
    };
    const entries = Object.entries(spec);
    if (entries.length === 0) return `unsupported $size ${preview(spec)}`;
    for (const [op, bound] of entries) {
      const compare = ops[op];
      if (compare === undefined || typeof bound !== 'number')
        return `unsupported $size ${preview(spec)}`;
      if (!compare(n, bound)) return `expected size ${op} ${bound}, got ${n}`;
    }
    return null;
  }
  return `unsupported $size ${preview(spec)}`;
}

function firstPassing(alternatives: Json, actual: Json | undefined, label: string): Mismatch {
  if (!Array.isArray(alternatives)) return `${label} needs an array, got ${preview(alternatives)}`;
  if (alternatives.some((alt) => matchValue(alt, actual) === null)) return null;
  return `expected ${label} ${preview(alternatives, 100)}, ${got(actual)}`;
}

/** Object matchers: operator objects first, anything else is a subset match of keys. */
function matchObject(matcher: JsonObject, actual: Json | undefined): Mismatch {
  if ('$exists' in matcher) return matchExists(matcher, actual);
  if ('$match' in matcher) {
    const pattern = matcher.$match;
    if (typeof pattern !== 'string') return `$match needs a string, got ${preview(pattern)}`;
    return regexMatch(actual, pattern);
  }
  if ('$in' in matcher) return firstPassing(matcher.$in!, actual, 'one of');
  if ('$size' in matcher) return matchSize(matcher.$size!, actual);
  if ('$or' in matcher) return firstPassing(matcher.$or!, actual, 'any of');
  if (isJsonObject(matcher.range)) {
    const { min, max } = matcher.range;
    const lo = typeof min === 'number' ? min : Number.NEGATIVE_INFINITY;
    const hi = typeof max === 'number' ? max : Number.POSITIVE_INFINITY;
    return expectNumber(actual, (n) => n >= lo && n <= hi, `a number in [${lo}, ${hi}]`);
  }
  if ('$empty' in matcher) return null;
  if (!isJsonObject(actual)) return `expected an object, ${got(actual)}`;
  for (const [key, sub] of Object.entries(matcher)) {
    const reason = matchValue(sub, Object.hasOwn(actual, key) ? actual[key] : undefined);
    if (reason !== null) return `.${key}: ${reason}`;
  }
  return null;
}

/** Matches one value (undefined = missing) against a matcher. */
export function matchValue(matcher: Json, actual: Json | undefined): Mismatch {
  if (matcher === null)
    return actual === undefined || actual === null ? null : `expected null, ${got(actual)}`;
  if (typeof matcher === 'string') return matchString(matcher, actual);
  if (typeof matcher === 'number') {
    return typeof actual === 'number' && actual === matcher
      ? null
      : `expected ${matcher}, ${got(actual)}`;
  }
  if (typeof matcher === 'boolean') {
    return actual === matcher ? null : `expected ${matcher}, ${got(actual)}`;
  }
  if (Array.isArray(matcher)) {
    if (!Array.isArray(actual))
      return `expected an array of ${matcher.length} elements, ${got(actual)}`;
    if (actual.length !== matcher.length) {
      return `expected ${matcher.length} elements, got ${actual.length}: ${preview(actual, 80)}`;
    }
    for (let i = 0; i < matcher.length; i++) {
      const reason = matchValue(matcher[i]!, actual[i]);
      if (reason !== null) return `[${i}]: ${reason}`;
    }
    return null;
  }
  return matchObject(matcher, actual);
}

/**
 * Matches a resolved JSONPath. A resolution error fails every matcher except exactly "absent"
 * (digest §1.8), which is how the reference runner lets `absent` cover e.g. `$.job.error.x`
 * when `error` is null.
 */
export function matchResolution(matcher: Json, actual: Resolution): Mismatch {
  if (actual.kind === 'error') return matcher === 'absent' ? null : `path error: ${actual.message}`;
  return matchValue(matcher, actual.kind === 'value' ? actual.value : undefined);
}
