/**
 * ISO 8601 durations (`PnYnMnWnDTnHnMnS`), the one parser used for every duration in the
 * system: retry intervals, unique periods, relative times (features digest §1.3).
 *
 * The spec does not define calendar lengths, so date parts use fixed lengths:
 * a month is 30 days and a year is 365 days. A week is 7 days. Durations are therefore
 * absolute amounts of time, independent of the date they are applied to.
 */

import { MAX_DURATION_MS } from './limits.ts';

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
const WEEK_MS = 7 * DAY_MS;
const MONTH_MS = 30 * DAY_MS;
const YEAR_MS = 365 * DAY_MS;

/**
 * `(?!$)` rejects a bare "P"; `T(?=\d)` rejects a bare or trailing "T". Fractions are only
 * allowed on seconds, as in the retry schema, so "PT1.5M" is malformed rather than guessed at.
 */
const DURATION_PATTERN =
  /^P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?)?$/;

const PART_UNITS_MS = [YEAR_MS, MONTH_MS, WEEK_MS, DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS] as const;

/** Milliseconds in an ISO 8601 duration, or null when the text is not a valid duration. */
export function parseIsoDuration(text: string): number | null {
  if (typeof text !== 'string') return null;
  const match = DURATION_PATTERN.exec(text);
  if (match === null) return null;
  let total = 0;
  PART_UNITS_MS.forEach((unit, index) => {
    const digits = match[index + 1];
    if (digits !== undefined) total += Number(digits) * unit;
  });
  total += fractionToMs(match[8]);
  // Huge inputs lose integer precision or leave the range of dates; refuse them.
  return Number.isSafeInteger(total) && total <= MAX_DURATION_MS ? total : null;
}

/** Decimal digits after the seconds' point, rounded to whole milliseconds. */
function fractionToMs(digits: string | undefined): number {
  if (digits === undefined) return 0;
  return Math.round(Number(`0.${digits}`) * SECOND_MS);
}

/**
 * Canonical ISO 8601 text for a number of milliseconds. Uses days as the largest unit
 * because months and years are only conventions (see the module comment).
 */
export function formatIsoDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) {
    throw new RangeError(`Duration must be a finite non-negative number of ms (got ${ms})`);
  }
  let rest = Math.round(ms);
  const days = Math.floor(rest / DAY_MS);
  rest -= days * DAY_MS;
  const hours = Math.floor(rest / HOUR_MS);
  rest -= hours * HOUR_MS;
  const minutes = Math.floor(rest / MINUTE_MS);
  rest -= minutes * MINUTE_MS;

  const datePart = days > 0 ? `${days}D` : '';
  let timePart = '';
  if (hours > 0) timePart += `${hours}H`;
  if (minutes > 0) timePart += `${minutes}M`;
  if (rest > 0) timePart += `${formatSeconds(rest)}S`;
  if (datePart === '' && timePart === '') return 'PT0S';
  return `P${datePart}${timePart === '' ? '' : `T${timePart}`}`;
}

/** 1500 -> "1.5", 1000 -> "1", 5 -> "0.005". */
function formatSeconds(ms: number): string {
  const whole = Math.floor(ms / SECOND_MS);
  const millis = ms % SECOND_MS;
  if (millis === 0) return String(whole);
  const fraction = String(millis).padStart(3, '0').replace(/0+$/, '');
  return `${whole}.${fraction}`;
}
