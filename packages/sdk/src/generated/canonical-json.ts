// Generated from @ojs/core (packages/core/src/canonical-json.ts) by scripts/generate-sdk.ts; do not edit.
// Change the core module and run `node scripts/generate-sdk.ts`.

/**
 * Canonical JSON: the one serialisation two equal values always share, the
 * input of unique-key hashes. The SDK gets a copy (scripts/generate-sdk.ts)
 * to hash plaintext args before a codec encodes them (encryption §3.1).
 */

/** JSON with object keys sorted, so equal values always hash equally. */
export function canonicalJson(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.normalize('NFC'));
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as Record<string, unknown>)
      .sort()
      .map(
        (k) =>
          `${JSON.stringify(k.normalize('NFC'))}:${canonicalJson((value as Record<string, unknown>)[k])}`,
      );
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
