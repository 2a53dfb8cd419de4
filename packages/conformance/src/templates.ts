/**
 * `{{steps.<stepId>.response.body.<path>}}` substitution (digest §1.5), the only template syntax
 * the reference runner knows. Substitution is textual: request bodies are serialised first and
 * the value text is spliced in, exactly like the Go runner, so a string template inside quotes
 * yields a JSON string and an object value yields (possibly invalid) JSON text.
 *
 * Anything unresolvable - unknown step, a step whose body was not a JSON object, a missing or
 * null field, a path error - leaves the template text in place without raising an error.
 */
import { templateText } from './gofmt.ts';
import { resolvePath } from './jsonpath.ts';
import type { Json, JsonObject } from './types.ts';

/** Parsed response bodies by step id; only JSON-object bodies are recorded. */
export type StepBodies = ReadonlyMap<string, JsonObject>;

const TEMPLATE_PATTERN = /\{\{steps\.([^.{}]+)\.response\.body\.([^}]+)\}\}/g;

/** Looks up one template reference; undefined when it cannot be resolved. */
export function lookupTemplate(bodies: StepBodies, stepId: string, path: string): Json | undefined {
  const body = bodies.get(stepId);
  if (body === undefined) return undefined;
  const resolved = resolvePath(body, `$.${path}`);
  if (resolved.kind !== 'value' || resolved.value === null) return undefined;
  return resolved.value;
}

/** Replaces every resolvable template in `text`. */
export function resolveTemplates(text: string, bodies: StepBodies): string {
  if (!text.includes('{{')) return text;
  return text.replace(TEMPLATE_PATTERN, (whole, stepId: string, path: string) => {
    const value = lookupTemplate(bodies, stepId, path);
    return value === undefined ? whole : templateText(value);
  });
}

/** Applies template substitution to every string (values only) inside a matcher value. */
export function resolveDeep(value: Json, bodies: StepBodies): Json {
  if (typeof value === 'string') return resolveTemplates(value, bodies);
  if (Array.isArray(value)) return value.map((item) => resolveDeep(item, bodies));
  if (value !== null && typeof value === 'object') {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) out[key] = resolveDeep(item, bodies);
    return out;
  }
  return value;
}
