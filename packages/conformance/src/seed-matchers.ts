/**
 * Value matchers of the seed test format (seed §5.7). They share the official runner's
 * vocabulary (`string:uuidv7`, `number:range(a,b)`, `array:length(n)`, ...) and implementation
 * with three differences the seed defines:
 *  - `"any"`: the field must exist (any value, null included); the official runner passes even
 *    a missing field;
 *  - literal arrays and objects are exact: same length, same keys (a key whose matcher is
 *    `"absent"` may be missing), each element or value matched recursively, so matchers may be
 *    nested inside literals;
 *  - `"absent"` passes when the field is missing or null (an explicit null is the same as an
 *    absent field in OJS JSON, JF §14.2).
 * Operator objects (`{"$in": [...]}`, `{"$or": [...]}`, `{"$match": re}`, `{"$size": n}`,
 * `{"$exists": b}`) are accepted as an extension; `$in`/`$or` alternatives use seed semantics.
 */
import { preview } from './gofmt.ts';
import { type Mismatch, matchValue } from './matchers.ts';
import type { Json, JsonObject } from './types.ts';
import { isJsonObject } from './types.ts';

function got(actual: Json | undefined): string {
  return `got ${preview(actual, 80)}`;
}

function isOperatorObject(matcher: JsonObject): boolean {
  const keys = Object.keys(matcher);
  return keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

/** Matches `actual` (undefined = missing) against a seed-format matcher. */
export function matchSeed(matcher: Json, actual: Json | undefined): Mismatch {
  if (matcher === 'any') return actual === undefined ? `expected a value, ${got(actual)}` : null;
  if (matcher === 'absent') {
    return actual === undefined || actual === null ? null : `expected no value, ${got(actual)}`;
  }
  if (Array.isArray(matcher)) {
    if (!Array.isArray(actual)) {
      return `expected an array of ${matcher.length} elements, ${got(actual)}`;
    }
    if (actual.length !== matcher.length) {
      return `expected ${matcher.length} elements, got ${actual.length}: ${preview(actual, 80)}`;
    }
    for (let i = 0; i < matcher.length; i++) {
      const reason = matchSeed(matcher[i]!, actual[i]);
      if (reason !== null) return `[${i}]: ${reason}`;
    }
    return null;
  }
  if (isJsonObject(matcher)) {
    if (isOperatorObject(matcher)) {
      for (const op of ['$in', '$or'] as const) {
        if (!(op in matcher)) continue;
        const alternatives = matcher[op];
        if (!Array.isArray(alternatives)) return `${op} needs an array`;
        if (alternatives.some((alt) => matchSeed(alt, actual) === null)) return null;
        return `expected one of ${preview(alternatives, 100)}, ${got(actual)}`;
      }
      return matchValue(matcher, actual);
    }
    if (!isJsonObject(actual)) return `expected an object, ${got(actual)}`;
    for (const [key, sub] of Object.entries(matcher)) {
      const reason = matchSeed(sub, Object.hasOwn(actual, key) ? actual[key] : undefined);
      if (reason !== null) return `.${key}: ${reason}`;
    }
    const extra = Object.keys(actual).filter((k) => !Object.hasOwn(matcher, k));
    if (extra.length > 0) return `unexpected key(s) ${extra.join(', ')} in ${preview(actual, 80)}`;
    return null;
  }
  return matchValue(matcher, actual);
}
