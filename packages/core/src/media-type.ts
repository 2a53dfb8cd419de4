/**
 * The OJS media type (http-binding digest §3): requests and replies carry it as
 * their content type. The SDK gets a copy generated from this file
 * (scripts/generate-sdk.ts), so it imports nothing.
 */
export const OJS_MEDIA_TYPE = 'application/openjobspec+json';
