/**
 * Placeholders of the seed test format (seed §5.5, §6.3):
 *  - `{name}` inserts a value captured by an earlier step (`capture: {"job_id": "body.job.id"}`);
 *  - `{now}`, `{now+5s}`, `{now-1h}`, `{now+PT5S}` insert an RFC 3339 UTC timestamp computed
 *    when the step is sent (after its `wait`);
 *  - `{uuidv7}` (format extension) inserts a fresh UUIDv7, e.g. for a client-chosen job id.
 *
 * A string that is exactly one capture placeholder takes the captured value with its JSON type
 * (so `"priority": "{p}"` can send a number); placeholders inside longer strings are spliced in
 * as text. Unknown capture names are left in place and reported, so the runner can fail the step
 * with "capture job_id was never set" instead of sending a literal `{job_id}`.
 */
import { uuidv7 } from '@ojs/core';
import { parseDurationMs } from './durations.ts';
import type { Json, JsonObject } from './types.ts';

const PLACEHOLDER = /\{(now(?:\s*[+-]\s*[^{}\s]+)?|[A-Za-z_][A-Za-z0-9_]*)\}/g;
const WHOLE = /^\{(now(?:\s*[+-]\s*[^{}\s]+)?|[A-Za-z_][A-Za-z0-9_]*)\}$/;

export interface TemplateContext {
  captures: ReadonlyMap<string, Json>;
  /** Epoch milliseconds used for `{now...}`. */
  nowMs: number;
}

export interface Resolved<T> {
  value: T;
  /** Placeholders that could not be resolved (unknown captures, malformed time offsets). */
  unresolved: string[];
}

/** Resolves `now`, `now+5s`, `now-PT1H`; null when the offset is malformed. */
export function timeTemplate(expr: string, nowMs: number): string | null {
  const match = /^now(?:\s*([+-])\s*(\S+))?$/.exec(expr);
  if (match === null) return null;
  let offset = 0;
  if (match[1] !== undefined) {
    const ms = parseDurationMs(match[2]!);
    if (ms === null) return null;
    offset = match[1] === '-' ? -ms : ms;
  }
  return new Date(nowMs + offset).toISOString();
}

function lookup(name: string, ctx: TemplateContext): Json | undefined {
  if (name.startsWith('now')) return timeTemplate(name, ctx.nowMs) ?? undefined;
  if (name === 'uuidv7') return uuidv7();
  return ctx.captures.get(name);
}

function asText(value: Json): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Substitutes placeholders in one string. */
export function resolveString(text: string, ctx: TemplateContext): Resolved<Json> {
  const unresolved: string[] = [];
  if (!text.includes('{')) return { value: text, unresolved };
  const whole = WHOLE.exec(text);
  if (whole) {
    const value = lookup(whole[1]!, ctx);
    if (value === undefined) return { value: text, unresolved: [whole[1]!] };
    return { value, unresolved };
  }
  const value = text.replace(PLACEHOLDER, (all, name: string) => {
    const found = lookup(name, ctx);
    if (found === undefined) {
      unresolved.push(name);
      return all;
    }
    return asText(found);
  });
  return { value, unresolved };
}

/** Substitutes placeholders in every string of a JSON value; object keys included. */
export function resolveValue(value: Json, ctx: TemplateContext): Resolved<Json> {
  const unresolved: string[] = [];
  const walk = (v: Json): Json => {
    if (typeof v === 'string') {
      const r = resolveString(v, ctx);
      unresolved.push(...r.unresolved);
      return r.value;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: JsonObject = {};
      for (const [key, item] of Object.entries(v)) {
        const k = resolveString(key, ctx);
        unresolved.push(...k.unresolved);
        Object.defineProperty(out, asText(k.value), {
          value: walk(item),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    }
    return v;
  };
  return { value: walk(value), unresolved };
}

/**
 * Substitutes placeholders in a string that must stay a string (paths, header values);
 * `encode` is applied to each inserted value (e.g. encodeURIComponent for URL paths).
 */
export function resolveText(
  text: string,
  ctx: TemplateContext,
  encode: (s: string) => string = (s) => s,
): Resolved<string> {
  const unresolved: string[] = [];
  const value = text.replace(PLACEHOLDER, (all, name: string) => {
    const found = lookup(name, ctx);
    if (found === undefined) {
      unresolved.push(name);
      return all;
    }
    return encode(asText(found));
  });
  return { value, unresolved };
}
