/**
 * Wire conventions of the HTTP binding: the exact media type, the version
 * header, request ids, and body parsing that turns every malformed input
 * into a spec-shaped error instead of a framework default.
 */
import {
  boundedInt,
  checkRequestJson,
  checkRequestText,
  invalidPayload,
  invalidRequest,
  MAX_NAME_BYTES,
  MAX_OFFSET,
  OJS_MEDIA_TYPE,
  OjsError,
  uuidv7,
} from '@ojs/core';

export { OJS_MEDIA_TYPE };
export const OJS_VERSION = '1.0';

const REQUEST_ID_PATTERN = /^[\w.:-]{1,128}$/;
/** Any character that String.prototype.trim would keep (the same whitespace set as \s). */
const NOT_BLANK = /\S/;

/** Honour a client X-Request-Id (HB §19.3 SHOULD) when it is sane; else `req_<uuidv7>`. */
export function requestIdFrom(header: string | string[] | undefined): string {
  if (typeof header === 'string' && REQUEST_ID_PATTERN.test(header)) return header;
  return `req_${uuidv7()}`;
}

/** JSON request media types: the OJS type and its application/json alias, with any parameters. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  // The exact types, as clients send them: no split, no lower-casing.
  if (contentType === OJS_MEDIA_TYPE || contentType === 'application/json') return true;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === OJS_MEDIA_TYPE || type === 'application/json';
}

/**
 * Parses a JSON body and checks it against the request limits (depth,
 * storable strings, finite numbers; core limits.ts); an empty body is
 * `undefined` (the route decides if that is allowed).
 */
export function parseJsonBody(text: string): unknown {
  // (A test, not trim(): no copy of the body.)
  if (!NOT_BLANK.test(text)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalidPayload(`The request body is not valid JSON: ${(error as Error).message}`);
  }
  checkRequestJson(value);
  return value;
}

type Obj = Record<string, unknown>;

/** A POST body that must be a JSON object (empty means `{}` for body-less commands). */
export function objectBody(body: unknown, options: { allowEmpty?: boolean } = {}): Obj {
  if (body === undefined && options.allowEmpty) return {};
  if (body === undefined) throw invalidPayload('The request body is empty; send a JSON object.');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidPayload('The request body must be a JSON object.');
  }
  return body as Obj;
}

export function requiredString(body: Obj, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '') {
    throw invalidRequest(`${field} is required and must be a non-empty string.`, { field });
  }
  return value;
}

/** An optional string field: storable text of at most MAX_NAME_BYTES (core limits.ts). */
export function optionalString(body: Obj, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    throw invalidRequest(`${field} must be a string.`, { field });
  }
  checkRequestText(field, value, MAX_NAME_BYTES);
  return value;
}

/** An optional integer field in [min, max] (the bounds are in core limits.ts). */
export function optionalInt(
  body: Obj,
  field: string,
  min: number,
  max: number,
): number | undefined {
  return boundedInt(body[field], field, min, max);
}

/** Query parameters `limit`/`offset` with the binding's defaults and caps (HB §17). */
export function pageParams(
  query: Obj,
  defaultLimit = 50,
  maxLimit = 200,
): { limit: number; offset: number } {
  const parse = (name: string, fallback: number, min: number, max: number) => {
    const raw = query[name];
    if (raw === undefined) return fallback;
    const value = typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isInteger(value) || value < min || value > max) {
      throw invalidRequest(`${name} must be an integer between ${min} and ${max}.`, {
        field: name,
        min,
        max,
      });
    }
    return value;
  };
  return {
    // A limit above the cap is served as the cap (HB §17); only nonsense is refused.
    limit: Math.min(parse('limit', defaultLimit, 1, Number.MAX_SAFE_INTEGER), maxLimit),
    offset: parse('offset', 0, 0, MAX_OFFSET),
  };
}

export function csv(value: unknown): string[] | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export { OjsError };
