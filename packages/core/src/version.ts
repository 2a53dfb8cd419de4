/**
 * Job versioning (seed 004, features §8): job versions, worker version
 * ranges and the routing predicate. A version is compared as
 * (major, minor, patch) with missing parts 0 (X-21: "2.0", 2 and "2.0.0"
 * are equal); it is echoed on the wire exactly as the producer sent it.
 */
import { invalidPayload, invalidRequest, OjsError } from './errors.ts';
import { boundedArray, byteLength, MAX_HANDLERS, MAX_VERSION_RANGE_BYTES } from './limits.ts';
import { validateJobType } from './names.ts';

const VERSION_PATTERN = /^(0|[1-9]\d{0,6})(?:\.(0|[1-9]\d{0,4}))?(?:\.(0|[1-9]\d{0,4}))?$/;
/**
 * Packing: minor and patch take 16 bits each, the major 21, so every
 * version is an exact integer below 2^53 (a double, a SQLite INTEGER and a
 * PostgreSQL bigint all hold it exactly) and numeric order is version order.
 */
const PART = 65_536;
const MAX_MAJOR = 2_097_151;

interface ParsedVersion {
  value: number;
  /** How many parts were written: "2" -> 1, "2.0" -> 2, "2.0.1" -> 3. */
  parts: number;
}

function parseParts(value: unknown): ParsedVersion | null {
  const text =
    typeof value === 'number' && Number.isInteger(value) && value >= 0 ? String(value) : value;
  if (typeof text !== 'string') return null;
  const match = VERSION_PATTERN.exec(text);
  if (match === null) return null;
  const major = Number(match[1]);
  const minor = Number(match[2] ?? '0');
  const patch = Number(match[3] ?? '0');
  if (major > MAX_MAJOR || minor >= PART || patch >= PART) return null;
  const parts = match[3] !== undefined ? 3 : match[2] !== undefined ? 2 : 1;
  return { value: (major * PART + minor) * PART + patch, parts };
}

/** Parses "2", "2.0", "2.0.1" or a non-negative integer; null when malformed or out of range. */
export function parseVersion(value: unknown): number | null {
  return parseParts(value)?.value ?? null;
}

/** A comparable number for a version (major, minor, patch packed); also stored for SQL filtering. */
export function versionNumber(value: unknown, field = 'version'): number {
  const parsed = parseVersion(value);
  if (parsed === null) {
    throw invalidPayload(`${field} '${String(value)}' is not a version like "2.0" or 2.`, {
      field,
    });
  }
  return parsed;
}

export function majorOf(versionNum: number): number {
  return Math.floor(versionNum / (PART * PART));
}

/**
 * A version range as half-open intervals [lo, hi) over version numbers.
 * `null` bounds are open; `any` admits every version and unversioned jobs.
 */
export interface VersionRange {
  text: string;
  any: boolean;
  intervals: [number | null, number | null][];
}

/**
 * Parses a worker's `versions`: "*", an exact "2.0", or comparators joined
 * by spaces or commas (">=1.0 <3.0", ">=1.0, <2.0", ">=2.0"). Only `>=`,
 * `<`, `>`, `<=` and `=` are allowed (no ^ or ~, seed 004 §15.1).
 */
export function parseVersionRange(value: unknown, field = 'versions'): VersionRange {
  if (value === undefined || value === null || value === '*') {
    return { text: '*', any: true, intervals: [[null, null]] };
  }
  if (typeof value === 'number') value = String(value);
  if (
    typeof value !== 'string' ||
    value.trim() === '' ||
    byteLength(value) > MAX_VERSION_RANGE_BYTES
  ) {
    throw invalidRequest(
      `${field} must be a version range such as "*", "2.0" or ">=1.0 <3.0" of at most ${MAX_VERSION_RANGE_BYTES} bytes.`,
      { field },
    );
  }
  const tokens = value.split(/[\s,]+/).filter((t) => t !== '');
  let lo: number | null = null;
  let hi: number | null = null;
  for (const token of tokens) {
    const match = /^(>=|<=|>|<|=)?(.+)$/.exec(token)!;
    const op = match[1] ?? '=';
    const parsed = parseParts(match[2]);
    if (parsed === null) {
      throw invalidRequest(
        `${field} '${value}': '${token}' is not a comparator like >=1.0 or <3.0.`,
        {
          field,
        },
      );
    }
    // A comparator covers the precision it is written in: "2.0" means every
    // 2.0.x (a patch never changes the args schema), "2" every 2.x.y. So
    // "2.0" and "<=2.0" admit 2.0.1, and ">2.0" starts at 2.1.0.
    const start = parsed.value;
    const end = start + (parsed.parts === 1 ? PART * PART : parsed.parts === 2 ? PART : 1);
    const raise = (bound: number) => {
      lo = lo === null ? bound : Math.max(lo, bound);
    };
    const lower = (bound: number) => {
      hi = hi === null ? bound : Math.min(hi, bound);
    };
    switch (op) {
      case '>=':
        raise(start);
        break;
      case '>':
        raise(end);
        break;
      case '<':
        lower(start);
        break;
      case '<=':
        lower(end);
        break;
      default:
        raise(start);
        lower(end);
    }
  }
  if (lo !== null && hi !== null && lo >= hi) {
    throw invalidRequest(`${field} '${value}' admits no version.`, { field });
  }
  return { text: value, any: false, intervals: [[lo, hi]] };
}

/** Does the range admit a job of this version (undefined = unversioned)? */
export function rangeAdmits(range: VersionRange, versionNum: number | undefined): boolean {
  // Unversioned jobs go to any worker of the type (VER-006).
  if (range.any || versionNum === undefined) return true;
  return range.intervals.some(
    ([lo, hi]) => (lo === null || versionNum >= lo) && (hi === null || versionNum < hi),
  );
}

/** What a worker can run: job types and, per type, the versions it admits. */
export interface HandlerDeclaration {
  type: string;
  range: VersionRange;
}

/** Parses `handlers: [{type, versions}]` (or plain type strings) from fetch, heartbeat or registration. */
export function parseHandlers(
  value: unknown,
  field = 'handlers',
): HandlerDeclaration[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) {
    throw invalidRequest(`${field} must be an array of {type, versions}.`, { field });
  }
  // Handler types are job types: bounded and patterned like them, since a
  // fetch compares them against every candidate job.
  return boundedArray(value, field, MAX_HANDLERS).map((entry, index) => {
    if (typeof entry === 'string') {
      return { type: handlerType(entry, `${field}[${index}]`), range: parseVersionRange('*') };
    }
    if (
      typeof entry !== 'object' ||
      entry === null ||
      typeof (entry as { type?: unknown }).type !== 'string'
    ) {
      throw invalidRequest(`${field}[${index}] must be an object with a string type.`, {
        field: `${field}[${index}]`,
      });
    }
    const { type, versions } = entry as { type: string; versions?: unknown };
    return {
      type: handlerType(type, `${field}[${index}].type`),
      range: parseVersionRange(versions, `${field}[${index}].versions`),
    };
  });
}

function handlerType(type: string, field: string): string {
  try {
    return validateJobType(type, field);
  } catch (error) {
    if (error instanceof OjsError) throw invalidRequest(error.message, error.details);
    throw error;
  }
}

/** The routing predicate (VER-004/005/006): may a worker with these handlers run this job? */
export function handlersAdmit(
  handlers: readonly HandlerDeclaration[] | undefined,
  job: { type: string; version_num?: number },
): boolean {
  if (handlers === undefined) return true;
  return handlers.some((h) => h.type === job.type && rangeAdmits(h.range, job.version_num));
}

/** Splits `type@version` (VER-002); the explicit `version` field wins when both are given. */
export function splitTypeVersion(type: string): { type: string; version?: string } {
  const at = type.lastIndexOf('@');
  // Only a version-shaped suffix splits; anything else stays part of the type (and fails its pattern).
  if (at <= 0 || parseVersion(type.slice(at + 1)) === null) return { type };
  return { type: type.slice(0, at), version: type.slice(at + 1) };
}
