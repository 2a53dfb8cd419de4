/**
 * The JSONPath subset of the reference runner (digest §1.8): `$.a.b`, `$.a[0].b`, chained
 * `[i][j]`, wildcard `[*]` and the filter `[?(@.key=='value')]` (first match, `==` only,
 * compared as Go `%v` text). Bracket-quoted keys are not supported and dots always split keys.
 *
 * The distinction between "missing" and "error" matters: a missing object key is simply "no
 * value" (so `absent`/`null`/`any` pass), while indexing into a missing or non-array value, an
 * out-of-range index or descending into null is a resolution error, which fails every matcher
 * except exactly `"absent"`.
 */
import { goValue } from './gofmt.ts';
import type { Json } from './types.ts';
import { isJsonObject } from './types.ts';

export type Resolution =
  | { kind: 'value'; value: Json }
  | { kind: 'missing' }
  | { kind: 'error'; message: string };

type Selector =
  | { kind: 'index'; index: number }
  | { kind: 'wildcard' }
  | { kind: 'filter'; key: string; value: string };

interface Segment {
  key: string | null;
  selectors: Selector[];
}

const FILTER_PATTERN = /^\?\(\s*@\.([^=\s]+)\s*==\s*(?:'([^']*)'|"([^"]*)"|([^'")\s]*))\s*\)$/;

/** Splits on dots outside brackets, so filter expressions like `@.id` stay in one segment. */
function splitSegments(path: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of path) {
    if (ch === '[') depth++;
    else if (ch === ']') depth = Math.max(0, depth - 1);
    if (ch === '.' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts;
}

function parseSelector(inner: string): Selector {
  if (inner === '*') return { kind: 'wildcard' };
  if (/^\d+$/.test(inner)) return { kind: 'index', index: Number(inner) };
  const filter = FILTER_PATTERN.exec(inner);
  if (filter)
    return { kind: 'filter', key: filter[1]!, value: filter[2] ?? filter[3] ?? filter[4]! };
  throw new Error(`unsupported selector [${inner}]`);
}

function parseSegment(text: string): Segment {
  const open = text.indexOf('[');
  const key = open === -1 ? text : text.slice(0, open);
  const selectors: Selector[] = [];
  let rest = open === -1 ? '' : text.slice(open);
  while (rest.length > 0) {
    if (!rest.startsWith('[')) throw new Error(`unexpected "${rest}" in path segment "${text}"`);
    // Find the bracket that closes this selector; filters may contain nested brackets or dots.
    let depth = 0;
    let end = -1;
    for (let i = 0; i < rest.length; i++) {
      if (rest[i] === '[') depth++;
      else if (rest[i] === ']' && --depth === 0) {
        end = i;
        break;
      }
    }
    if (end === -1) throw new Error(`unclosed bracket in path segment "${text}"`);
    selectors.push(parseSelector(rest.slice(1, end)));
    rest = rest.slice(end + 1);
  }
  return { key: open === 0 ? null : key, selectors };
}

/** Parses a path into segments; throws on syntax the subset does not support. */
export function parsePath(path: string): Segment[] {
  let body = path;
  if (body.startsWith('$.')) body = body.slice(2);
  else if (body === '$') body = '';
  else if (body.startsWith('$[')) body = body.slice(1);
  if (body === '') return [];
  return splitSegments(body).map(parseSegment);
}

function describe(value: Json): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/** Internal result: `many` marks wildcard output so nested wildcards flatten into one list. */
type Partial =
  | { kind: 'value'; value: Json; many?: boolean }
  | { kind: 'missing' }
  | { kind: 'error'; message: string };

function walk(current: Json, segments: Segment[], seg: number, sel: number): Partial {
  if (seg >= segments.length) return { kind: 'value', value: current };
  const segment = segments[seg]!;
  if (sel === 0 && segment.key !== null) {
    if (!isJsonObject(current)) {
      return { kind: 'error', message: `cannot read key "${segment.key}" of ${describe(current)}` };
    }
    if (!Object.hasOwn(current, segment.key)) {
      // A missing key is "no value" unless a selector needs something to index into.
      if (segment.selectors.length === 0) return { kind: 'missing' };
      return { kind: 'error', message: `key "${segment.key}" not found` };
    }
    current = current[segment.key]!;
  }
  if (sel >= segment.selectors.length) return walk(current, segments, seg + 1, 0);
  const selector = segment.selectors[sel]!;
  if (!Array.isArray(current)) {
    return { kind: 'error', message: `cannot apply a [] selector to ${describe(current)}` };
  }
  if (selector.kind === 'index') {
    if (selector.index >= current.length) {
      return {
        kind: 'error',
        message: `index ${selector.index} out of range (length ${current.length})`,
      };
    }
    return walk(current[selector.index]!, segments, seg, sel + 1);
  }
  if (selector.kind === 'filter') {
    const match = current.find(
      (el) => isJsonObject(el) && goValue(el[selector.key]) === selector.value,
    );
    if (match === undefined) return { kind: 'missing' };
    return walk(match, segments, seg, sel + 1);
  }
  const collected: Json[] = [];
  for (const element of current) {
    const result = walk(element, segments, seg, sel + 1);
    if (result.kind === 'error') return result;
    if (result.kind === 'missing') continue;
    if (result.many && Array.isArray(result.value)) collected.push(...result.value);
    else collected.push(result.value);
  }
  return { kind: 'value', value: collected, many: true };
}

/** Resolves `path` against a parsed response body. */
export function resolvePath(root: Json, path: string): Resolution {
  let segments: Segment[];
  try {
    segments = parsePath(path);
  } catch (err) {
    return { kind: 'error', message: `invalid path: ${(err as Error).message}` };
  }
  const result = walk(root, segments, 0, 0);
  if (result.kind === 'value') return { kind: 'value', value: result.value };
  return result;
}
