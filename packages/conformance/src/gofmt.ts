/**
 * Text conversions copied from the Go reference runner. Several runner rules compare values "as
 * %v strings" (filters, `contains:X`) or insert them into templates, so the exact Go formatting
 * decides whether a comparison succeeds; these helpers reproduce it for decoded JSON values.
 */
import type { Json } from './types.ts';

/** Go's `%v` for a float64: `%g` with the shortest digits, exponent form below 1e-4 or from 1e6. */
export function goFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf';
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  // toExponential() without digits gives the shortest round-trip mantissa, like strconv -1.
  const [mantissa, expText] = value.toExponential().split('e');
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? '-' : '+';
    const digits = String(Math.abs(exp)).padStart(2, '0');
    return `${mantissa}e${sign}${digits}`;
  }
  // Plain notation; JS uses it for this exponent range too and prints the same shortest digits.
  return String(value);
}

/** Go's `%v` for a value decoded by encoding/json (maps print with sorted keys). */
export function goValue(value: Json | undefined): string {
  if (value === undefined || value === null) return '<nil>';
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return goFloat(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(goValue).join(' ')}]`;
  const keys = Object.keys(value).sort();
  return `map[${keys.map((k) => `${k}:${goValue(value[k])}`).join(' ')}]`;
}

/**
 * Template value conversion (digest §1.5): strings raw, integral numbers without decimals,
 * other numbers `%v`, objects and arrays as compact JSON.
 */
export function templateText(value: Json): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') {
    if (Number.isInteger(value) && Math.abs(value) < 2 ** 63) return BigInt(value).toString();
    return goFloat(value);
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return JSON.stringify(value);
}

/** Short, single-line rendering of a value for failure explanations. */
export function preview(value: unknown, max = 120): string {
  let text: string;
  if (value === undefined) text = '<missing>';
  else if (typeof value === 'string') text = JSON.stringify(value);
  else text = JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** The text inside a `preview` of a string (its JSON quotes removed); other previews as is. */
export function unquoted(previewText: string): string {
  if (previewText.length >= 2 && previewText.startsWith('"') && previewText.endsWith('"')) {
    try {
      return JSON.parse(previewText) as string;
    } catch {
      return previewText.slice(1, -1);
    }
  }
  return previewText;
}
