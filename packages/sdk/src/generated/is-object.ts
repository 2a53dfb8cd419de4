// Generated from @ojs/core (packages/core/src/is-object.ts) by scripts/generate-sdk.ts; do not edit.
// Change the core module and run `node scripts/generate-sdk.ts`.

/**
 * The one test for "a JSON object" (not null, not an array) every package
 * uses. The SDK gets a copy generated from this file (scripts/generate-sdk.ts),
 * so it imports nothing.
 */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
