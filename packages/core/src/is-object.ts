/**
 * The one test for "a JSON object" (not null, not an array) every package
 * uses. The SDK gets a copy generated from this file (scripts/generate-sdk.ts),
 * so it imports nothing.
 */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
