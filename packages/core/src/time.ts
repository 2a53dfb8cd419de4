/**
 * RFC 3339 timestamps and relative times (http-binding digest §5.3, §17 row 14).
 *
 * A time zone is required: a timestamp without one names no instant, and the spec says such
 * timestamps MUST be rejected. Absolute timestamps given by a client are echoed exactly as
 * sent (the suite compares `expires_at` byte-for-byte), so `resolveTime` keeps the text.
 */

import { parseIsoDuration } from './duration.ts';

/** Uppercase `T` and `Z` only; leap seconds (`:60`) are not accepted. */
const TIMESTAMP_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/** The range `Date` can represent, ±100,000,000 days around the epoch. */
const MAX_DATE_MS = 8.64e15;

/** Epoch milliseconds of an RFC 3339 timestamp, or null when it is malformed or out of range. */
export function parseTimestamp(text: string): number | null {
  if (typeof text !== 'string') return null;
  const match = TIMESTAMP_PATTERN.exec(text);
  if (match === null) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12) return null;
  if (day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const offsetMs = parseOffset(match[8], match[9], match[10]);
  if (offsetMs === null) return null;
  const local = utcMs(year, month, day, hour, minute, second, fractionMs(match[7]));
  return local - offsetMs;
}

export function isTimestamp(text: unknown): boolean {
  return typeof text === 'string' && parseTimestamp(text) !== null;
}

/** UTC with millisecond precision and a `Z`, the form the server generates. */
let lastIsoMs = Number.NaN;
let lastIso = '';

/** RFC 3339 UTC text of epoch ms (remembers the last one: many stamps share a millisecond). */
export function toIso(ms: number): string {
  if (ms === lastIsoMs) return lastIso;
  const text = new Date(ms).toISOString();
  lastIsoMs = ms;
  lastIso = text;
  return text;
}

/**
 * An absolute RFC 3339 timestamp (text kept verbatim) or a relative "+<ISO duration>"
 * counted from `nowMs` (text generated). Null when the value is neither.
 */
export function resolveTime(value: string, nowMs: number): { ms: number; text: string } | null {
  if (typeof value !== 'string') return null;
  if (value.startsWith('+')) {
    const durationMs = parseIsoDuration(value.slice(1));
    if (durationMs === null) return null;
    const ms = nowMs + durationMs;
    if (!Number.isFinite(ms) || Math.abs(ms) > MAX_DATE_MS) return null;
    return { ms, text: toIso(ms) };
  }
  const ms = parseTimestamp(value);
  return ms === null ? null : { ms, text: value };
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Offset east of UTC in ms; 0 for `Z` (no sign captured). Null when out of range. */
function parseOffset(
  sign: string | undefined,
  hours: string | undefined,
  minutes: string | undefined,
): number | null {
  if (sign === undefined) return 0;
  const h = Number(hours);
  const m = Number(minutes);
  if (h > 23 || m > 59) return null;
  const magnitude = (h * 60 + m) * 60_000;
  return sign === '-' ? -magnitude : magnitude;
}

/** Sub-second digits truncated to milliseconds (the precision the server keeps). */
function fractionMs(digits: string | undefined): number {
  if (digits === undefined) return 0;
  return Number(digits.slice(0, 3).padEnd(3, '0'));
}

/** Like `Date.UTC` but without its mapping of years 0-99 to 1900-1999. */
function utcMs(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  ms: number,
): number {
  const date = new Date(Date.UTC(2000, 0, 1, hour, minute, second, ms));
  date.setUTCFullYear(year, month - 1, day);
  return date.getTime();
}
