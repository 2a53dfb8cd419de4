/**
 * The assertion engine of both suite formats. Official `assertions` (digest §1.9, §1.10):
 * status forms, case-insensitive header checks and JSONPath body matchers, including the
 * top-level `$or`; keys the reference runner ignores (`status_one_of`, `equality`,
 * `timing_ms`, ...) are ignored here too, so results stay comparable with the official runner.
 * Seed `expect` (seed §5.6): status, headers and body paths, with the seed matchers.
 */
import { preview } from './gofmt.ts';
import { type Resolution, resolvePath } from './jsonpath.ts';
import { matchResolution, matchValue } from './matchers.ts';
import { compileRegex } from './regex.ts';
import { matchSeed } from './seed-matchers.ts';
import { resolveDeep, resolveTemplates, type StepBodies } from './templates.ts';
import type {
  AssertionFailure,
  Json,
  JsonObject,
  SeedExpect,
  StepAssertions,
  StepResponse,
} from './types.ts';

export function failure(
  path: string,
  expected: unknown,
  actual: unknown,
  message: string,
): AssertionFailure {
  return { path, expected: preview(expected), actual: preview(actual), message };
}

/** `status` (int, "one_of:a,b", or any body matcher such as "number:range(a,b)" / {$in}) and `status_in`. */
export function checkStatus(assertions: StepAssertions, status: number): AssertionFailure[] {
  const failures: AssertionFailure[] = [];
  const expected = assertions.status;
  if (expected !== undefined && expected !== null) {
    let reason: string | null;
    if (typeof expected === 'string' && expected.startsWith('one_of:')) {
      const allowed = expected
        .slice('one_of:'.length)
        .split(',')
        .map((s) => Number(s.trim()));
      reason = allowed.includes(status) ? null : `expected one of ${allowed.join(', ')}`;
    } else {
      reason = matchValue(expected, status);
    }
    if (reason !== null) failures.push(failure('status', expected, status, reason));
  }
  const statusIn = assertions.status_in;
  if (Array.isArray(statusIn) && !statusIn.includes(status)) {
    failures.push(failure('status_in', statusIn, status, `expected one of ${statusIn.join(', ')}`));
  }
  return failures;
}

function differs(expected: string, actual: string | undefined): string {
  return `expected ${preview(expected)}, got ${preview(actual)}`;
}

/** First value of a header, case-insensitively, like Go's Header.Get. */
export function headerValue(headers: Record<string, string>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers))
    if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/**
 * Plain string = exact equality, `{$match}` = regex, `{$eq}` = exact. Other forms (notably
 * `{$exists: true}`) cannot be parsed by the reference runner and are skipped silently.
 */
export function checkHeaders(
  expected: JsonObject | undefined,
  headers: Record<string, string>,
): AssertionFailure[] {
  const failures: AssertionFailure[] = [];
  for (const [name, matcher] of Object.entries(expected ?? {})) {
    const raw = headerValue(headers, name);
    // A missing header reads as "" in Go, which is what equality and patterns see.
    const actual = raw ?? '';
    const path = `header ${name}`;
    if (typeof matcher === 'string') {
      if (actual !== matcher) failures.push(failure(path, matcher, raw, differs(matcher, raw)));
    } else if (matcher !== null && typeof matcher === 'object' && !Array.isArray(matcher)) {
      if (typeof matcher.$match === 'string') {
        const re = compileRegex(matcher.$match);
        if (re instanceof Error)
          failures.push(failure(path, matcher, raw, `invalid pattern: ${re.message}`));
        else if (!re.test(actual))
          failures.push(failure(path, matcher, raw, 'header does not match'));
      } else if (typeof matcher.$eq === 'string') {
        if (actual !== matcher.$eq)
          failures.push(failure(path, matcher, raw, 'header value differs'));
      }
    }
  }
  return failures;
}

function actualOf(resolution: Resolution): unknown {
  if (resolution.kind === 'value') return resolution.value;
  if (resolution.kind === 'missing') return undefined;
  return `<error: ${resolution.message}>`;
}

function checkPath(
  rawPath: string,
  rawMatcher: Json,
  body: JsonObject,
  bodies: StepBodies,
): AssertionFailure | null {
  const path = resolveTemplates(rawPath, bodies);
  const matcher = resolveDeep(rawMatcher, bodies);
  const resolution = resolvePath(body, path);
  const reason = matchResolution(matcher, resolution);
  return reason === null ? null : failure(path, matcher, actualOf(resolution), reason);
}

/** Top-level `$or`: passes when every path of at least one alternative matches. */
function checkOr(
  alternatives: Json,
  body: JsonObject | undefined,
  bodies: StepBodies,
): AssertionFailure | null {
  if (body === undefined) {
    return failure('$or', alternatives, undefined, 'response body is not a JSON object');
  }
  if (!Array.isArray(alternatives)) return failure('$or', alternatives, body, '$or needs an array');
  const reasons: string[] = [];
  for (const [index, alternative] of alternatives.entries()) {
    if (alternative === null || typeof alternative !== 'object' || Array.isArray(alternative)) {
      reasons.push(`#${index + 1}: not an object of path matchers`);
      continue;
    }
    const first = Object.entries(alternative)
      .map(([path, matcher]) => checkPath(path, matcher, body, bodies))
      .find((f) => f !== null);
    if (first === undefined) return null;
    reasons.push(`#${index + 1} ${first.path}: ${first.message}`);
  }
  return failure('$or', alternatives, body, `no alternative matched (${reasons.join('; ')})`);
}

/**
 * Body path assertions. When the body is not a JSON object every path assertion is skipped
 * silently (reference behaviour); only a top-level `$or` is still evaluated, and fails.
 */
export function checkBody(
  expected: JsonObject | undefined,
  body: JsonObject | undefined,
  bodies: StepBodies,
): AssertionFailure[] {
  const failures: AssertionFailure[] = [];
  for (const [path, matcher] of Object.entries(expected ?? {})) {
    let result: AssertionFailure | null = null;
    if (path === '$or') result = checkOr(matcher, body, bodies);
    else if (body !== undefined) result = checkPath(path, matcher, body, bodies);
    if (result !== null) failures.push(result);
  }
  return failures;
}

/** Resolves an `expect.body` key: `job.id` or `$.job.id`. */
function bodyPath(key: string): string {
  return key.startsWith('$') ? key : `$.${key}`;
}

/** A seed step's `expect` (step `index` names the step in messages). */
export function checkExpect(
  index: number,
  expect: SeedExpect,
  response: StepResponse,
): AssertionFailure[] {
  const failures: AssertionFailure[] = [];
  if (expect.status !== undefined) {
    const reason = matchSeed(expect.status, response.status);
    if (reason !== null) failures.push(failure('status', expect.status, response.status, reason));
  }
  for (const [name, matcher] of Object.entries(expect.headers ?? {})) {
    const actual = headerValue(response.headers, name);
    const reason = matchSeed(matcher, actual);
    if (reason !== null) failures.push(failure(`header ${name}`, matcher, actual, reason));
  }
  const body = expect.body;
  if (body !== undefined && Object.keys(body).length > 0) {
    const parsed = response.body;
    if (parsed === undefined || typeof parsed === 'string') {
      const message = `response body is not JSON (step ${index} expects fields)`;
      failures.push(failure('body', body, parsed, message));
      return failures;
    }
    for (const [key, matcher] of Object.entries(body)) {
      const resolved = resolvePath(parsed, bodyPath(key));
      let reason: string | null;
      let actual: unknown;
      if (resolved.kind === 'error') {
        actual = `<${resolved.message}>`;
        reason = matcher === 'absent' ? null : `path error: ${resolved.message}`;
      } else {
        actual = resolved.kind === 'value' ? resolved.value : undefined;
        reason = matchSeed(matcher, resolved.kind === 'value' ? resolved.value : undefined);
      }
      if (reason !== null) failures.push(failure(`body ${key}`, matcher, actual, reason));
    }
  }
  return failures;
}
