/**
 * Request limits: the one place that bounds every string, array, depth and
 * number a client can send, so no request can stall the event loop, overflow
 * a store's stack or be answered differently by two stores. The HTTP binding
 * applies `checkRequestJson` to every body and `checkRequestText` to every
 * path and query parameter before anything else runs; the field parsers in
 * core (envelope, handlers, retry) and the engine use the named bounds. The
 * gRPC binding applies the same functions to a request message and to the
 * body it turns it into, so both bindings give one verdict and one code.
 * The README's limits table and the manifest's `limits` are generated from
 * `LIMITS`.
 */
import { type Problems, THROW_FIRST } from './envelope-problems.ts';
import { invalidPayload, invalidRequest, OjsError } from './errors.ts';

/**
 * A request's size by default (HTTP: the body; gRPC: the message), the
 * server's `bodyLimit`. Configurable, so not in LIMITS: the manifest reads
 * it as `limits.max_body_bytes`.
 */
export const DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024;

/** Nesting of arrays and objects in a request body (the body itself is level 1). */
export const MAX_JSON_DEPTH = 64;
/** Job types, queue names, cron names, handler types, worker ids, rate-limit keys. */
export const MAX_NAME_BYTES = 255;
/**
 * A path parameter: names above, ids and versions. The router's own bound;
 * larger than any valid name, so every stored name can be addressed.
 */
export const MAX_PATH_PARAM_BYTES = 1024;
/** Queues one fetch may list. */
export const MAX_FETCH_QUEUES = 256;
/** Handler declarations of one worker (fetch, heartbeat, registration). */
export const MAX_HANDLERS = 256;
/** A version range such as `>=1.0 <3.0`. */
export const MAX_VERSION_RANGE_BYTES = 255;
/** Job ids in one heartbeat. */
export const MAX_HEARTBEAT_JOBS = 1000;
/** Tags of one job, each at most MAX_NAME_BYTES. */
export const MAX_TAGS = 100;
/** The JSON of a worker's registration (everything but its handlers). */
export const MAX_WORKER_INFO_BYTES = 16 * 1024;
/** A lease (visibility timeout) from fetch, heartbeat or the job's options. */
export const MAX_VISIBILITY_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** A job's execution timeout. */
export const MAX_EXECUTION_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * Any duration (retry intervals, unique periods, relative times): 100 years,
 * so that now + duration is always a representable date.
 */
export const MAX_DURATION_MS = 100 * 365 * 24 * 60 * 60 * 1000;
/** max_attempts of a retry policy and the attempt a worker reports. */
export const MAX_ATTEMPTS = 1_000_000;
/** `offset` of a listing. */
export const MAX_OFFSET = 2_147_483_647;
/**
 * Canary routing of one job type: its rules, their weights, and the
 * outcomes an auto-rollback keeps per version (min_samples at most this):
 * every enqueue of the type walks the rules, every ACK/NACK the outcomes.
 */
export const MAX_ROUTING_RULES = 100;
export const MAX_ROUTING_WEIGHT = 1_000_000;
export const MAX_ROLLBACK_SAMPLES = 10_000;
/** A registered JSON Schema: its JSON size, and how many schema nodes it may hold. */
export const MAX_SCHEMA_BYTES = 64 * 1024;
export const MAX_SCHEMA_NODES = 1000;

/** Every bound above, by the name the manifest's `limits` uses. */
export const LIMITS = {
  max_json_depth: MAX_JSON_DEPTH,
  max_name_bytes: MAX_NAME_BYTES,
  max_path_param_bytes: MAX_PATH_PARAM_BYTES,
  max_fetch_queues: MAX_FETCH_QUEUES,
  max_handlers: MAX_HANDLERS,
  max_version_range_bytes: MAX_VERSION_RANGE_BYTES,
  max_heartbeat_jobs: MAX_HEARTBEAT_JOBS,
  max_tags: MAX_TAGS,
  max_worker_info_bytes: MAX_WORKER_INFO_BYTES,
  max_visibility_timeout_ms: MAX_VISIBILITY_TIMEOUT_MS,
  max_execution_timeout_ms: MAX_EXECUTION_TIMEOUT_MS,
  max_duration_ms: MAX_DURATION_MS,
  max_attempts: MAX_ATTEMPTS,
  max_offset: MAX_OFFSET,
  max_routing_rules: MAX_ROUTING_RULES,
  max_routing_weight: MAX_ROUTING_WEIGHT,
  max_rollback_samples: MAX_ROLLBACK_SAMPLES,
  max_schema_bytes: MAX_SCHEMA_BYTES,
  max_schema_nodes: MAX_SCHEMA_NODES,
} as const;

export const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8');

/** A request larger than the server's body limit: 413 payload_too_large in every binding. */
export function requestTooLarge(maxBytes: number): OjsError {
  return new OjsError('payload_too_large', `The request is larger than ${maxBytes} bytes.`, {
    max_bytes: maxBytes,
  });
}

/** Decodes strictly: bytes that are not UTF-8 are refused, never patched with U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Request bytes as text, or 400 invalid_payload when they are not UTF-8
 * (`what` names them: the HTTP body, a string field of a gRPC message).
 */
export function decodeRequestText(bytes: Uint8Array, what = 'The request body'): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw invalidPayload(`${what} is not valid UTF-8.`);
  }
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one (code units: no `u` flag). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const pathOf = (keys: (string | number)[]): string =>
  keys.reduce<string>(
    (path, key) => (typeof key === 'number' ? `${path}[${key}]` : `${path}.${key}`),
    '$',
  );

/**
 * Walks a parsed request body: nesting at most MAX_JSON_DEPTH, every string
 * and key storable (see unstorableText), every number finite. Throws 400
 * invalid_payload naming the first offending path (`problems` in collecting
 * mode: every one). The walk stops at the depth bound, so its own recursion
 * is bounded too.
 */
export function checkRequestJson(value: unknown, problems: Problems = THROW_FIRST): void {
  const keys: (string | number)[] = [];
  const fail = (rule: string, problem: string, extra: Record<string, unknown> = {}): void => {
    const path = pathOf(keys);
    problems.reject([...keys], { rule, ref: 'PL' }, () =>
      invalidPayload(`The request body at ${path} ${problem}.`, { field: path, ...extra }),
    );
  };
  const walk = (v: unknown, depth: number): void => {
    if (typeof v === 'string') {
      const problem = unstorableText(v);
      if (problem !== undefined) fail('format.text', problem);
      return;
    }
    if (typeof v === 'number') {
      // JSON.parse reads 1e999 as Infinity, which no store can keep.
      if (!Number.isFinite(v)) fail('maximum', 'is a number out of range');
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    if (depth > MAX_JSON_DEPTH) {
      fail('max_depth', `nests deeper than ${MAX_JSON_DEPTH} levels`, {
        max_depth: MAX_JSON_DEPTH,
      });
      return;
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        keys.push(i);
        walk(v[i], depth + 1);
        keys.pop();
      }
      return;
    }
    for (const key of Object.keys(v)) {
      keys.push(key);
      const problem = unstorableText(key);
      if (problem !== undefined) fail('format.text', `has a key that ${problem}`);
      walk((v as Record<string, unknown>)[key], depth + 1);
      keys.pop();
    }
  };
  walk(value, 1);
}

/** A path or query parameter: storable text of bounded size. */
export function checkRequestText(name: string, text: string, maxBytes: number): void {
  const problem = unstorableText(text);
  if (problem !== undefined) {
    throw invalidRequest(`${name} ${problem}.`, { field: name });
  }
  if (byteLength(text) > maxBytes) {
    throw invalidRequest(`${name} must be at most ${maxBytes} bytes.`, {
      field: name,
      max_bytes: maxBytes,
    });
  }
}

/**
 * An optional integer field in [min, max]. Out-of-range values (1e308,
 * 99999999999999999999) are the client's error, never a store's overflow.
 */
export function boundedInt(
  value: unknown,
  field: string,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidRequest(`${field} must be an integer between ${min} and ${max}.`, {
      field,
      min,
      max,
    });
  }
  return value;
}

/** An array field holding at most `max` items. */
export function boundedArray(value: unknown[], field: string, max: number): unknown[] {
  if (value.length > max) {
    throw invalidRequest(`${field} holds at most ${max} items (got ${value.length}).`, {
      field,
      max,
      actual: value.length,
    });
  }
  return value;
}

/** A worker id: a non-empty storable string of at most MAX_NAME_BYTES. */
export function validateWorkerId(value: unknown, field = 'worker_id'): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') {
    throw invalidRequest(`${field} must be a non-empty string.`, { field });
  }
  checkRequestText(field, value, MAX_NAME_BYTES);
  return value;
}

/**
 * Why a string cannot be stored the same way by every store, or undefined.
 * PostgreSQL's jsonb and text refuse U+0000 and unpaired surrogates (they have
 * no UTF-8 form); SQLite would store them. Refusing them here, before any
 * store, gives one answer everywhere.
 */
export function unstorableText(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains the NUL character (U+0000)';
  if (LONE_SURROGATE.test(text)) return 'contains an unpaired UTF-16 surrogate';
  return undefined;
}
