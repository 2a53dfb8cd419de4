/**
 * Cron expressions and their fire times (features digest §4.2-§4.5). Pure: no I/O, no clock.
 *
 * Syntax: 5 fields (minute hour day-of-month month day-of-week) or 6 with leading seconds,
 * told apart by counting whitespace-separated tokens; `*` `,` `-` `/` in every field; JAN-DEC
 * and SUN-SAT names (case-insensitive); day-of-week 0-7 (0 and 7 are Sunday); `?` as an alias
 * of `*` in the two day fields; `L`, `LW`, `<n>W` in day-of-month and `<d>L`, `<d>#<k>` in
 * day-of-week; the specials @yearly @annually @monthly @weekly @daily @midnight @hourly; and
 * `@every <Go duration>` (at least 1 s), anchored on the time it is computed from.
 *
 * Day-of-month and day-of-week: when both are restricted a day matches if EITHER matches
 * (Vixie/POSIX OR semantics); when only one is restricted only that one counts. A field is
 * "unrestricted" when it selects every value of its range (`*`, `?`, `1-31`, `*\/1`, `0-7`);
 * unlike Vixie cron, `*\/2` counts as restricted because it does not select every day.
 *
 * Time zones and DST (§4.3): the schedule is matched against the local wall clock of an IANA
 * zone. A wall time that does not exist (spring-forward gap) does not fire; a wall time that
 * occurs twice (fall-back) fires once, at the earlier instant. `dstSkipsBetween` lists the
 * occurrences lost to gaps so the engine can emit `cron.skipped` (`reason: dst_skip`).
 */

import { invalidRequest } from './errors.ts';

/** A validated, compiled schedule. Plain data, so it can be cached or cloned freely. */
export interface CronSchedule {
  /** The expression exactly as given. */
  readonly expression: string;
  /** IANA zone name (`UTC` by default). */
  readonly timezone: string;
  readonly kind: 'cron' | 'every';
  /** `@every` interval in ms (0 for a cron schedule). */
  readonly everyMs: number;
  readonly fields: CompiledFields | null;
  /** Non-fatal remarks (a day that exists only in some months, a schedule that never fires). */
  readonly warnings: readonly string[];
}

export interface CompiledFields {
  /** Allowed values, ascending. */
  readonly seconds: readonly number[];
  readonly minutes: readonly number[];
  readonly hours: readonly number[];
  readonly months: readonly number[];
  /** Day-of-month 1-31 plus the L/W forms. */
  readonly days: readonly number[];
  readonly lastDay: boolean;
  readonly lastWeekday: boolean;
  readonly nearestWeekday: readonly number[];
  /** Day-of-week 0-6 (Sunday 0) plus `<d>L` (last <d> of the month) and `<d>#<k>`. */
  readonly weekdays: readonly number[];
  readonly lastOfWeekday: readonly number[];
  readonly nthWeekday: readonly (readonly [weekday: number, nth: number])[];
  readonly dayOfMonthRestricted: boolean;
  readonly dayOfWeekRestricted: boolean;
}

/** Occurrences are searched at most this far ahead of the reference time. */
const SEARCH_YEARS = 5;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const SPECIALS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTH_NAMES = [
  'JAN',
  'FEB',
  'MAR',
  'APR',
  'MAY',
  'JUN',
  'JUL',
  'AUG',
  'SEP',
  'OCT',
  'NOV',
  'DEC',
] as const;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

interface FieldSpec {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Names mapped to values (month JAN=1, day-of-week SUN=0). */
  readonly names?: readonly string[];
  readonly nameBase?: number;
}

const SECONDS: FieldSpec = { name: 'second', min: 0, max: 59 };
const MINUTES: FieldSpec = { name: 'minute', min: 0, max: 59 };
const HOURS: FieldSpec = { name: 'hour', min: 0, max: 23 };
const DAYS: FieldSpec = { name: 'day-of-month', min: 1, max: 31 };
const MONTHS: FieldSpec = { name: 'month', min: 1, max: 12, names: MONTH_NAMES, nameBase: 1 };
const WEEKDAYS: FieldSpec = { name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES, nameBase: 0 };

// ---------------------------------------------------------------------------------------------
// Parsing

/**
 * Validates and compiles an expression and a time zone. Throws `invalid_request` (400) whose
 * message says what is wrong; details carry `field` (`expression` or `timezone`) and `value`.
 */
export function parseCronSchedule(expression: unknown, timezone?: unknown): CronSchedule {
  const zone = parseTimezone(timezone);
  if (typeof expression !== 'string') {
    throw invalidRequest('Cron expression must be a string.', {
      field: 'expression',
      value: expression ?? null,
    });
  }
  const text = expression.trim();
  if (text === '') {
    throw invalidRequest(
      'Cron expression is empty; expected 5 fields (minute hour day-of-month month day-of-week), 6 fields with leading seconds, or a special such as @daily.',
      { field: 'expression', value: expression },
    );
  }
  const fail = (problem: string, extra: Record<string, unknown> = {}): never => {
    throw invalidRequest(`Invalid cron expression '${expression}': ${problem}`, {
      field: 'expression',
      value: expression,
      ...extra,
    });
  };

  if (text.startsWith('@')) {
    const [keyword = '', ...rest] = text.split(/\s+/);
    const lower = keyword.toLowerCase();
    if (lower === '@every') {
      if (rest.length !== 1) {
        fail('@every takes exactly one duration, e.g. "@every 1h30m".');
      }
      const everyMs = parseGoDuration(rest[0]!);
      if (everyMs === null) {
        fail(`'${rest[0]}' is not a duration; use Go syntax such as 90s, 15m or 1h30m.`);
      }
      if ((everyMs as number) < SECOND) {
        fail(`@every interval ${rest[0]} is shorter than the minimum of 1s.`);
      }
      return {
        expression,
        timezone: zone,
        kind: 'every',
        everyMs: everyMs as number,
        fields: null,
        warnings: [],
      };
    }
    const expanded = SPECIALS[lower];
    if (expanded === undefined) {
      fail(
        `unknown special expression '${keyword}'; expected one of ${Object.keys(SPECIALS).join(', ')} or @every <duration>.`,
      );
    }
    if (rest.length > 0) fail(`special expression ${keyword} takes no further fields.`);
    const fields = compileFields((expanded as string).split(' '), fail);
    return { expression, timezone: zone, kind: 'cron', everyMs: 0, fields, warnings: [] };
  }

  const tokens = text.split(/\s+/);
  if (tokens.length !== 5 && tokens.length !== 6) {
    fail(
      `found ${tokens.length} field${tokens.length === 1 ? '' : 's'}, expected 5 (minute hour day-of-month month day-of-week) or 6 (second minute hour day-of-month month day-of-week).`,
      { fields_found: tokens.length },
    );
  }
  const fields = compileFields(tokens, fail);
  return {
    expression,
    timezone: zone,
    kind: 'cron',
    everyMs: 0,
    fields,
    warnings: warningsFor(fields),
  };
}

function parseTimezone(timezone: unknown): string {
  if (timezone === undefined || timezone === null) return 'UTC';
  const fail = (problem: string): never => {
    throw invalidRequest(problem, { field: 'timezone', value: timezone });
  };
  if (typeof timezone !== 'string') return fail('Timezone must be a string IANA zone name.');
  if (timezone.toUpperCase() === 'UTC') return 'UTC';
  if (/^(?:UTC|GMT)?\s*[+-]\d/i.test(timezone) || /^(?:UTC|GMT)[+-]/i.test(timezone)) {
    return fail(
      `Timezone '${timezone}' is a fixed UTC offset; use an IANA zone name such as 'America/New_York' or 'UTC'.`,
    );
  }
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)+$/.test(timezone)) {
    return fail(
      /^[A-Za-z][A-Za-z0-9]*$/.test(timezone)
        ? `Timezone '${timezone}' is an abbreviation or legacy name, not an IANA Area/Location zone; use a name such as 'America/New_York' or 'UTC'.`
        : `Timezone '${timezone}' is not an IANA zone name; use a name such as 'America/New_York' or 'UTC'.`,
    );
  }
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    return fail(
      `Timezone '${timezone}' is not a known IANA zone name; use a name such as 'America/New_York' or 'UTC'.`,
    );
  }
  // Keep the caller's spelling (links such as Europe/Kyiv stay as given) but fix letter case.
  return resolved.toLowerCase() === timezone.toLowerCase() ? resolved : timezone;
}

type Fail = (problem: string, extra?: Record<string, unknown>) => never;

function compileFields(tokens: readonly string[], fail: Fail): CompiledFields {
  const withSeconds = tokens.length === 6 ? tokens : ['0', ...tokens];
  const [sec, min, hour, dom, month, dow] = withSeconds as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const errors: string[] = [];
  const seconds = parseSimpleField(sec, SECONDS, errors);
  const minutes = parseSimpleField(min, MINUTES, errors);
  const hours = parseSimpleField(hour, HOURS, errors);
  const dayField = parseDayOfMonth(dom, errors);
  const months = parseSimpleField(month, MONTHS, errors);
  const weekField = parseDayOfWeek(dow, errors);
  if (errors.length > 0) fail(`${errors.join('; ')}.`, { errors });
  return {
    seconds: toSorted(seconds),
    minutes: toSorted(minutes),
    hours: toSorted(hours),
    months: toSorted(months),
    days: toSorted(dayField.days),
    lastDay: dayField.lastDay,
    lastWeekday: dayField.lastWeekday,
    nearestWeekday: toSorted(dayField.nearestWeekday),
    weekdays: toSorted(weekField.weekdays),
    lastOfWeekday: toSorted(weekField.lastOf),
    nthWeekday: weekField.nth,
    dayOfMonthRestricted: !(
      dayField.days.size === 31 &&
      !dayField.lastDay &&
      !dayField.lastWeekday &&
      dayField.nearestWeekday.size === 0
    ),
    dayOfWeekRestricted: !(
      weekField.weekdays.size === 7 &&
      weekField.lastOf.size === 0 &&
      weekField.nth.length === 0
    ),
  };
}

function toSorted(values: ReadonlySet<number>): number[] {
  return [...values].sort((a, b) => a - b);
}

/** Splits a field on commas, reporting empty items; returns null when the field is broken. */
function listItems(text: string, spec: FieldSpec, errors: string[]): string[] | null {
  const items = text.split(',');
  if (items.some((item) => item === '')) {
    errors.push(`${spec.name} field '${text}' has an empty list item`);
    return null;
  }
  return items;
}

function parseSimpleField(text: string, spec: FieldSpec, errors: string[]): Set<number> {
  const out = new Set<number>();
  const items = listItems(text, spec, errors);
  if (items === null) return out;
  for (const item of items) addRange(item, spec, out, errors);
  return out;
}

/** `*`, `?` (day fields only), `a`, `a-b`, each optionally followed by `/step`. */
function addRange(
  item: string,
  spec: FieldSpec,
  out: Set<number>,
  errors: string[],
  allowQuestion = false,
): void {
  const slash = item.indexOf('/');
  const base = slash === -1 ? item : item.slice(0, slash);
  let step = 1;
  if (slash !== -1) {
    const stepText = item.slice(slash + 1);
    if (!/^\d+$/.test(stepText)) {
      errors.push(`${spec.name} step '${stepText}' in '${item}' is not a positive integer`);
      return;
    }
    step = Number(stepText);
    if (step === 0) {
      errors.push(`${spec.name} step 0 in '${item}' is invalid; a step must be at least 1`);
      return;
    }
  }
  let start: number;
  let end: number;
  if (base === '*' || (allowQuestion && base === '?')) {
    start = spec.min;
    end = spec.max;
  } else if (base === '' || base === '?') {
    errors.push(`${spec.name} item '${item}' is malformed`);
    return;
  } else {
    const dash = base.indexOf('-', 1);
    if (dash === -1) {
      const value = parseValue(base, spec, errors);
      if (value === null) return;
      start = value;
      // `a/step` means every step from a to the end of the range.
      end = slash === -1 ? value : spec.max;
    } else {
      const from = parseValue(base.slice(0, dash), spec, errors);
      const to = parseValue(base.slice(dash + 1), spec, errors);
      if (from === null || to === null) return;
      if (from > to) {
        errors.push(
          `${spec.name} range '${base}' is reversed; the start must not be greater than the end`,
        );
        return;
      }
      start = from;
      end = to;
    }
  }
  for (let v = start; v <= end; v += step) out.add(spec === WEEKDAYS && v === 7 ? 0 : v);
}

function parseValue(text: string, spec: FieldSpec, errors: string[]): number | null {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < spec.min || value > spec.max) {
      errors.push(`${spec.name} value ${text} is out of range ${spec.min}-${spec.max}`);
      return null;
    }
    return value;
  }
  if (spec.names !== undefined) {
    const index = spec.names.indexOf(text.toUpperCase());
    if (index !== -1) return index + (spec.nameBase ?? 0);
    errors.push(
      `${spec.name} value '${text}' is neither a number ${spec.min}-${spec.max} nor a name ${spec.names[0]}-${spec.names.at(-1)}`,
    );
    return null;
  }
  errors.push(`${spec.name} value '${text}' is not a number ${spec.min}-${spec.max}`);
  return null;
}

function parseDayOfMonth(
  text: string,
  errors: string[],
): { days: Set<number>; lastDay: boolean; lastWeekday: boolean; nearestWeekday: Set<number> } {
  const result = {
    days: new Set<number>(),
    lastDay: false,
    lastWeekday: false,
    nearestWeekday: new Set<number>(),
  };
  const items = listItems(text, DAYS, errors);
  if (items === null) return result;
  for (const item of items) {
    const upper = item.toUpperCase();
    if (upper === 'L') result.lastDay = true;
    else if (upper === 'LW' || upper === 'WL') result.lastWeekday = true;
    else if (/^\d+W$/.test(upper)) {
      const value = parseValue(item.slice(0, -1), DAYS, errors);
      if (value !== null) result.nearestWeekday.add(value);
    } else if (/[LW]/.test(upper)) {
      errors.push(`day-of-month item '${item}' is malformed; use L, LW or <day>W such as 15W`);
    } else addRange(item, DAYS, result.days, errors, true);
  }
  return result;
}

function parseDayOfWeek(
  text: string,
  errors: string[],
): { weekdays: Set<number>; lastOf: Set<number>; nth: (readonly [number, number])[] } {
  const result = {
    weekdays: new Set<number>(),
    lastOf: new Set<number>(),
    nth: [] as (readonly [number, number])[],
  };
  const items = listItems(text, WEEKDAYS, errors);
  if (items === null) return result;
  for (const item of items) {
    const hash = /^([A-Za-z0-9]+)#(.*)$/.exec(item);
    if (hash !== null) {
      const weekday = parseValue(hash[1]!, WEEKDAYS, errors);
      const nthText = hash[2]!;
      if (!/^[1-5]$/.test(nthText)) {
        errors.push(`day-of-week '${item}': the occurrence after # must be 1-5`);
        continue;
      }
      if (weekday !== null) result.nth.push([weekday % 7, Number(nthText)] as const);
    } else if (item.length > 1 && /^[A-Za-z0-9]+L$/i.test(item)) {
      const weekday = parseValue(item.slice(0, -1), WEEKDAYS, errors);
      if (weekday !== null) result.lastOf.add(weekday % 7);
    } else if (item.toUpperCase() === 'L') {
      errors.push(
        `day-of-week item 'L' needs a weekday, e.g. 5L or FRIL for the last Friday of the month`,
      );
    } else addRange(item, WEEKDAYS, result.weekdays, errors, true);
  }
  return result;
}

/** Go `time.Duration` syntax (`1h30m`, `90s`, `1.5h`, `500ms`), in milliseconds. */
function parseGoDuration(text: string): number | null {
  const units: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    μs: 1e-3,
    ms: 1,
    s: SECOND,
    m: MINUTE,
    h: HOUR,
  };
  const pattern = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;
  let total = 0;
  let index = 0;
  while (index < text.length) {
    pattern.lastIndex = index;
    const match = pattern.exec(text);
    if (match === null) return null;
    total += Number(match[1]) * units[match[2]!]!;
    index = pattern.lastIndex;
  }
  if (index === 0 || !Number.isFinite(total)) return null;
  return Math.round(total);
}

const DAYS_IN_MONTH_MAX = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function warningsFor(fields: CompiledFields): string[] {
  const warnings: string[] = [];
  if (!fields.dayOfMonthRestricted) return warnings;
  const explicit = [...fields.days, ...fields.nearestWeekday];
  const longest = Math.max(...fields.months.map((m) => DAYS_IN_MONTH_MAX[m]!));
  const short = explicit.filter((d) =>
    fields.months.some((m) => d > (m === 2 ? 28 : DAYS_IN_MONTH_MAX[m]!)),
  );
  if (short.length > 0) {
    warnings.push(
      `day-of-month ${[...new Set(short)].join(',')} does not occur in every selected month; those months have no run on that day`,
    );
  }
  const anyFits = fields.lastDay || fields.lastWeekday || explicit.some((d) => d <= longest);
  if (!anyFits && !fields.dayOfWeekRestricted) {
    warnings.push(
      'no selected day-of-month exists in any selected month; the schedule never fires',
    );
  }
  return warnings;
}

// ---------------------------------------------------------------------------------------------
// Wall clock <-> instants

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    formatters.set(timezone, formatter);
  }
  return formatter;
}

function isUtc(timezone: string): boolean {
  return timezone === 'UTC' || timezone === 'Etc/UTC';
}

/** Offset (local minus UTC, ms) of `timezone` at the whole-second instant `ms`. */
function offsetAt(timezone: string, ms: number): number {
  if (isUtc(timezone)) return 0;
  const parts = formatterFor(timezone).formatToParts(ms);
  let year = 0;
  let month = 1;
  let day = 1;
  let hour = 0;
  let minute = 0;
  let second = 0;
  let bc = false;
  for (const part of parts) {
    switch (part.type) {
      case 'year':
        year = Number(part.value);
        break;
      case 'month':
        month = Number(part.value);
        break;
      case 'day':
        day = Number(part.value);
        break;
      case 'hour':
        hour = Number(part.value);
        break;
      case 'minute':
        minute = Number(part.value);
        break;
      case 'second':
        second = Number(part.value);
        break;
      case 'era':
        bc = part.value.startsWith('B');
        break;
    }
  }
  return wallMs(bc ? 1 - year : year, month, day, hour, minute, second) - ms;
}

/** Epoch-style ms of a wall-clock time read as if it were UTC (works for any year). */
function wallMs(year: number, month: number, day: number, h = 0, m = 0, s = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(h, m, s, 0);
  return date.getTime();
}

/** Local wall time (as-if-UTC ms, whole seconds) of an instant. */
function wallOf(timezone: string, ms: number): number {
  const whole = Math.floor(ms / SECOND) * SECOND;
  return whole + offsetAt(timezone, whole);
}

/**
 * The instants whose local wall time is `wall`, ascending: none in a spring-forward gap, two in
 * a fall-back overlap, otherwise one.
 */
function instantsOf(timezone: string, wall: number): number[] {
  if (isUtc(timezone)) return [wall];
  const offsets = new Set([
    offsetAt(timezone, wall - DAY),
    offsetAt(timezone, wall),
    offsetAt(timezone, wall + DAY),
  ]);
  const found: number[] = [];
  for (const offset of offsets) {
    const instant = wall - offset;
    if (offsetAt(timezone, instant) === offset && !found.includes(instant)) found.push(instant);
  }
  return found.sort((a, b) => a - b);
}

/** The first whole second in (a, b] whose offset differs from the offset at a; b must differ. */
function transitionBetween(timezone: string, a: number, b: number): number {
  const offset = offsetAt(timezone, a);
  let lo = a;
  let hi = b;
  while (hi - lo > SECOND) {
    const mid = lo + Math.floor((hi - lo) / 2 / SECOND) * SECOND;
    if (offsetAt(timezone, mid) === offset) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The offset transition within a day of the wall time `wall`, if there is one. */
function transitionNear(
  timezone: string,
  wall: number,
): { atMs: number; before: number; after: number } | null {
  if (isUtc(timezone)) return null;
  const before = offsetAt(timezone, wall - DAY);
  const after = offsetAt(timezone, wall + DAY);
  if (before === after) return null;
  return { atMs: transitionBetween(timezone, wall - DAY, wall + DAY), before, after };
}

// ---------------------------------------------------------------------------------------------
// Matching

function daysIn(year: number, month: number): number {
  return new Date(wallMs(year, month + 1, 0)).getUTCDate();
}

function weekdayOf(year: number, month: number, day: number): number {
  return new Date(wallMs(year, month, day)).getUTCDay();
}

function dayMatches(f: CompiledFields, year: number, month: number, day: number): boolean {
  if (!f.dayOfMonthRestricted && !f.dayOfWeekRestricted) return true;
  const dim = daysIn(year, month);
  const weekday = weekdayOf(year, month, day);
  const domMatch = (): boolean => {
    if (f.days.includes(day)) return true;
    if (f.lastDay && day === dim) return true;
    if (f.lastWeekday && day === lastWeekdayOfMonth(year, month, dim)) return true;
    return f.nearestWeekday.some((n) => nearestWeekday(year, month, dim, n) === day);
  };
  const dowMatch = (): boolean =>
    f.weekdays.includes(weekday) ||
    (f.lastOfWeekday.includes(weekday) && day + 7 > dim) ||
    f.nthWeekday.some(([w, n]) => w === weekday && Math.ceil(day / 7) === n);
  if (f.dayOfMonthRestricted && f.dayOfWeekRestricted) return domMatch() || dowMatch();
  return f.dayOfMonthRestricted ? domMatch() : dowMatch();
}

function lastWeekdayOfMonth(year: number, month: number, dim: number): number {
  const weekday = weekdayOf(year, month, dim);
  return weekday === 6 ? dim - 1 : weekday === 0 ? dim - 2 : dim;
}

/** Quartz `nW`: the weekday nearest day n, never crossing into another month. */
function nearestWeekday(year: number, month: number, dim: number, n: number): number | null {
  if (n > dim) return null;
  const weekday = weekdayOf(year, month, n);
  if (weekday === 6) return n === 1 ? 3 : n - 1;
  if (weekday === 0) return n === dim ? n - 2 : n + 1;
  return n;
}

/** Smallest allowed value >= v, or -1. */
function nextAllowed(allowed: readonly number[], v: number): number {
  for (const a of allowed) if (a >= v) return a;
  return -1;
}

/** The first wall time >= `start` matching the fields, or null past `limitYear`. */
function nextWallMatch(f: CompiledFields, start: number, limitYear: number): number | null {
  const d = new Date(start);
  let year = d.getUTCFullYear();
  let month = d.getUTCMonth() + 1;
  let day = d.getUTCDate();
  let hour = d.getUTCHours();
  let minute = d.getUTCMinutes();
  let second = d.getUTCSeconds();
  const nextDay = (): void => {
    day += 1;
    hour = 0;
    minute = 0;
    second = 0;
  };
  for (;;) {
    if (year > limitYear) return null;
    const m = nextAllowed(f.months, month);
    if (m === -1) {
      year += 1;
      month = f.months[0]!;
      day = 1;
      hour = minute = second = 0;
      continue;
    }
    if (m !== month) {
      month = m;
      day = 1;
      hour = minute = second = 0;
    }
    if (day > daysIn(year, month)) {
      month += 1;
      if (month > 12) {
        year += 1;
        month = 1;
      }
      day = 1;
      hour = minute = second = 0;
      continue;
    }
    if (!dayMatches(f, year, month, day)) {
      nextDay();
      continue;
    }
    const h = nextAllowed(f.hours, hour);
    if (h === -1) {
      nextDay();
      continue;
    }
    if (h !== hour) {
      hour = h;
      minute = second = 0;
    }
    const mi = nextAllowed(f.minutes, minute);
    if (mi === -1) {
      hour += 1;
      minute = second = 0;
      if (hour > 23) nextDay();
      continue;
    }
    if (mi !== minute) {
      minute = mi;
      second = 0;
    }
    const s = nextAllowed(f.seconds, second);
    if (s === -1) {
      minute += 1;
      second = 0;
      if (minute > 59) {
        minute = 0;
        hour += 1;
        if (hour > 23) nextDay();
      }
      continue;
    }
    return wallMs(year, month, day, hour, minute, s);
  }
}

// ---------------------------------------------------------------------------------------------
// Public computations

/**
 * The first fire time strictly after `afterMs` (epoch ms), or null when none falls within
 * about five years. For `@every` the interval is counted from `afterMs` (the anchor).
 */
export function nextFireTime(schedule: CronSchedule, afterMs: number): number | null {
  if (!Number.isFinite(afterMs)) return null;
  if (schedule.kind === 'every') return afterMs + schedule.everyMs;
  const fields = schedule.fields!;
  const zone = schedule.timezone;
  let wall = wallOf(zone, afterMs) + SECOND;
  const limitYear = new Date(wall).getUTCFullYear() + SEARCH_YEARS;
  for (;;) {
    const match = nextWallMatch(fields, wall, limitYear);
    if (match === null) return null;
    // Gap: no instant, the occurrence is skipped. Overlap: the earlier instant only; in the
    // second pass of a repeated hour it is already in the past and the search moves on.
    const first = instantsOf(zone, match)[0];
    if (first !== undefined && first > afterMs) return first;
    // Every later wall time up to the end of this gap or repeated hour fails the same way, so
    // jump past it instead of stepping through (a per-second schedule would step 3600 times).
    wall = match + SECOND;
    const shift = transitionNear(zone, match);
    if (shift !== null) {
      const end = shift.atMs + (first === undefined ? shift.after : shift.before);
      if (end > wall) wall = end;
    }
  }
}

/**
 * Missed runs (§4.5): null while `nextRunMs` is still in the future. Otherwise the single
 * occurrence to fire now — the latest occurrence in [nextRunMs, nowMs], or `nextRunMs` itself
 * when no occurrence lies there (e.g. the expression changed) — and the first fire time after
 * `nowMs`. Every other missed occurrence is dropped.
 */
export function dueOccurrence(
  schedule: CronSchedule,
  nextRunMs: number,
  nowMs: number,
): { fireAt: number; next: number | null } | null {
  if (nextRunMs > nowMs) return null;
  if (schedule.kind === 'every') {
    const interval = schedule.everyMs;
    const fireAt = nextRunMs + Math.floor((nowMs - nextRunMs) / interval) * interval;
    return { fireAt, next: fireAt + interval };
  }
  let fireAt = nextRunMs;
  // Binary search for the largest x in [nextRunMs - 1, nowMs) whose next occurrence is <= now;
  // that occurrence is the latest one due. nextFireTime is monotonic in its argument.
  let lo = nextRunMs - 1;
  const first = nextFireTime(schedule, lo);
  if (first !== null && first <= nowMs) {
    let hi = Math.floor(nowMs);
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2);
      const candidate = nextFireTime(schedule, mid);
      if (candidate !== null && candidate <= nowMs) lo = mid;
      else hi = mid;
    }
    fireAt = nextFireTime(schedule, lo)!;
  }
  return { fireAt, next: nextFireTime(schedule, nowMs) };
}

/** An occurrence that never fired because its wall time fell in a spring-forward gap. */
export interface DstSkip {
  /** The nonexistent local wall time, `YYYY-MM-DDTHH:MM:SS`. */
  readonly localTime: string;
  /** The instant the clock jumped over it (the DST transition). */
  readonly atMs: number;
}

/**
 * Occurrences lost to spring-forward gaps whose transition lies in (fromMs, toMs] — typically
 * the previous and the new `next_run_at` — so the engine can emit `cron.skipped` with
 * `reason: dst_skip`. Scans at most ~five years.
 */
export function dstSkipsBetween(schedule: CronSchedule, fromMs: number, toMs: number): DstSkip[] {
  const zone = schedule.timezone;
  if (schedule.kind !== 'cron' || isUtc(zone) || !(toMs > fromMs)) return [];
  const fields = schedule.fields!;
  const end = Math.min(toMs, fromMs + SEARCH_YEARS * 366 * DAY);
  const skips: DstSkip[] = [];
  let t = Math.floor(fromMs / SECOND) * SECOND;
  let offset = offsetAt(zone, t);
  while (t < end) {
    const probe = Math.min(t + DAY, Math.floor(end / SECOND) * SECOND);
    if (probe <= t) break;
    const probeOffset = offsetAt(zone, probe);
    if (probeOffset !== offset) {
      const hi = transitionBetween(zone, t, probe);
      const after = offsetAt(zone, hi);
      if (after > offset && hi > fromMs && hi <= toMs) {
        const gapStart = hi + offset;
        const gapEnd = hi + after;
        const limitYear = new Date(gapEnd).getUTCFullYear();
        let wall = gapStart;
        for (;;) {
          const match = nextWallMatch(fields, wall, limitYear);
          if (match === null || match >= gapEnd) break;
          if (instantsOf(zone, match).length === 0) {
            skips.push({ localTime: new Date(match).toISOString().slice(0, 19), atMs: hi });
          }
          wall = match + SECOND;
        }
      }
      t = hi;
      offset = after;
      continue;
    }
    t = probe;
  }
  return skips;
}
