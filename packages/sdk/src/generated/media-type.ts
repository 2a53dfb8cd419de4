// Generated from @ojs/core (packages/core/src/media-type.ts) by scripts/generate-sdk.ts; do not edit.
// Change the core module and run `node scripts/generate-sdk.ts`.

/**
 * The OJS media type (http-binding digest §3): requests and replies carry it as
 * their content type. The SDK gets a copy generated from this file
 * (scripts/generate-sdk.ts), so it imports nothing.
 */
export const OJS_MEDIA_TYPE = 'application/openjobspec+json';
