import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type CronSchedule,
  dstSkipsBetween,
  dueOccurrence,
  nextFireTime,
  parseCronSchedule,
} from '../src/cron.ts';
import { OjsError } from '../src/errors.ts';

const at = (iso: string): number => {
  const ms = Date.parse(iso);
  assert.ok(Number.isFinite(ms), `bad test timestamp ${iso}`);
  return ms;
};
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The next `count` fire times after `fromIso`, as ISO strings (null ends the list). */
function upcoming(
  expression: string,
  timezone: string | undefined,
  fromIso: string,
  count: number,
): (string | null)[] {
  const schedule = parseCronSchedule(expression, timezone);
  const out: (string | null)[] = [];
  let t = at(fromIso);
  for (let i = 0; i < count; i += 1) {
    const next = nextFireTime(schedule, t);
    out.push(iso(next));
    if (next === null) break;
    t = next;
  }
  return out;
}

/** Every fire time in [fromIso, toIso), as ISO strings. */
function firesBetween(schedule: CronSchedule, fromIso: string, toIso: string): string[] {
  const out: string[] = [];
  const end = at(toIso);
  let t = at(fromIso) - 1;
  for (;;) {
    const next = nextFireTime(schedule, t);
    if (next === null || next >= end) return out;
    out.push(iso(next)!);
    t = next;
  }
}

/** Asserts parseCronSchedule rejects with a 400 invalid_request whose message matches. */
function rejects(
  expression: unknown,
  timezone: unknown,
  message: RegExp,
  field: 'expression' | 'timezone' = 'expression',
): void {
  assert.throws(
    () => parseCronSchedule(expression, timezone),
    (error: unknown) => {
      assert.ok(error instanceof OjsError, 'expected an OjsError');
      assert.equal(error.code, 'invalid_request');
      assert.equal(error.status, 400);
      assert.match(error.message, message);
      assert.equal(error.details?.field, field);
      return true;
    },
  );
}

describe('parseCronSchedule: accepted syntax', () => {
  test('defaults the timezone to UTC and keeps the expression verbatim', () => {
    const schedule = parseCronSchedule('*/5 * * * *');
    assert.equal(schedule.expression, '*/5 * * * *');
    assert.equal(schedule.timezone, 'UTC');
    assert.equal(parseCronSchedule('* * * * *', null).timezone, 'UTC');
  });

  test('accepts the expressions the conformance suite sends', () => {
    for (const expression of ['* * * * *', '*/5 * * * *', '@daily', '@hourly', '@weekly']) {
      for (const timezone of ['UTC', 'Asia/Tokyo', 'America/New_York']) {
        const schedule = parseCronSchedule(expression, timezone);
        assert.equal(schedule.timezone, timezone);
        assert.notEqual(nextFireTime(schedule, at('2026-05-01T00:00:00Z')), null);
      }
    }
  });

  test('tolerates surrounding and repeated whitespace', () => {
    assert.deepEqual(upcoming('  0   12 * *\t* ', 'UTC', '2026-01-01T00:00:00Z', 1), [
      '2026-01-01T12:00:00.000Z',
    ]);
  });

  test('every special expression equals its 5-field form', () => {
    const specials: Record<string, string> = {
      '@yearly': '0 0 1 1 *',
      '@annually': '0 0 1 1 *',
      '@monthly': '0 0 1 * *',
      '@weekly': '0 0 * * 0',
      '@daily': '0 0 * * *',
      '@midnight': '0 0 * * *',
      '@hourly': '0 * * * *',
    };
    for (const [special, fields] of Object.entries(specials)) {
      for (const timezone of ['UTC', 'America/New_York']) {
        assert.deepEqual(
          upcoming(special, timezone, '2026-02-14T10:20:30Z', 4),
          upcoming(fields, timezone, '2026-02-14T10:20:30Z', 4),
          special,
        );
      }
    }
    assert.deepEqual(upcoming('@yearly', 'UTC', '2026-02-14T00:00:00Z', 2), [
      '2027-01-01T00:00:00.000Z',
      '2028-01-01T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('@monthly', 'UTC', '2026-02-14T00:00:00Z', 2), [
      '2026-03-01T00:00:00.000Z',
      '2026-04-01T00:00:00.000Z',
    ]);
    // 2026-02-14 is a Saturday.
    assert.deepEqual(upcoming('@weekly', 'UTC', '2026-02-14T00:00:00Z', 2), [
      '2026-02-15T00:00:00.000Z',
      '2026-02-22T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('@daily', 'UTC', '2026-02-14T00:00:00Z', 2), [
      '2026-02-15T00:00:00.000Z',
      '2026-02-16T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('@midnight', 'Asia/Tokyo', '2026-02-14T00:00:00Z', 1), [
      '2026-02-14T15:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('@hourly', 'UTC', '2026-02-14T10:20:30Z', 2), [
      '2026-02-14T11:00:00.000Z',
      '2026-02-14T12:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('@DAILY', 'UTC', '2026-02-14T00:00:00Z', 1), [
      '2026-02-15T00:00:00.000Z',
    ]);
  });

  test('month and weekday names are case-insensitive', () => {
    // 2026-01-01 is a Thursday.
    const byName = upcoming('0 9 * JAN,jul Mon-fri', 'UTC', '2026-01-01T00:00:00Z', 3);
    assert.deepEqual(byName, [
      '2026-01-01T09:00:00.000Z',
      '2026-01-02T09:00:00.000Z',
      '2026-01-05T09:00:00.000Z',
    ]);
    assert.deepEqual(byName, upcoming('0 9 * 1,7 1-5', 'UTC', '2026-01-01T00:00:00Z', 3));
    assert.deepEqual(upcoming('0 0 1 jul-AUG *', 'UTC', '2026-01-01T00:00:00Z', 3), [
      '2026-07-01T00:00:00.000Z',
      '2026-08-01T00:00:00.000Z',
      '2027-07-01T00:00:00.000Z',
    ]);
    assert.deepEqual(
      upcoming('0 0 * * sun', 'UTC', '2026-01-01T00:00:00Z', 2),
      upcoming('0 0 * * SUN', 'UTC', '2026-01-01T00:00:00Z', 2),
    );
  });

  test('day-of-week 0 and 7 both mean Sunday', () => {
    const sundays = ['2026-01-04T00:00:00.000Z', '2026-01-11T00:00:00.000Z'];
    assert.deepEqual(upcoming('0 0 * * 0', 'UTC', '2026-01-01T00:00:00Z', 2), sundays);
    assert.deepEqual(upcoming('0 0 * * 7', 'UTC', '2026-01-01T00:00:00Z', 2), sundays);
    assert.deepEqual(upcoming('0 0 * * 6-7', 'UTC', '2026-01-01T00:00:00Z', 3), [
      '2026-01-03T00:00:00.000Z',
      '2026-01-04T00:00:00.000Z',
      '2026-01-10T00:00:00.000Z',
    ]);
  });

  test('ranges, lists and steps', () => {
    assert.deepEqual(upcoming('1-5 0 * * *', 'UTC', '2026-01-01T00:00:00Z', 6), [
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
      '2026-01-01T00:03:00.000Z',
      '2026-01-01T00:04:00.000Z',
      '2026-01-01T00:05:00.000Z',
      '2026-01-02T00:01:00.000Z',
    ]);
    assert.deepEqual(upcoming('0 0 1,15 * *', 'UTC', '2026-01-01T00:00:00Z', 3), [
      '2026-01-15T00:00:00.000Z',
      '2026-02-01T00:00:00.000Z',
      '2026-02-15T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('*/5 * * * *', 'UTC', '2026-01-01T00:58:00Z', 3), [
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T01:05:00.000Z',
      '2026-01-01T01:10:00.000Z',
    ]);
    assert.deepEqual(upcoming('10-30/10 * * * *', 'UTC', '2026-01-01T00:00:00Z', 4), [
      '2026-01-01T00:10:00.000Z',
      '2026-01-01T00:20:00.000Z',
      '2026-01-01T00:30:00.000Z',
      '2026-01-01T01:10:00.000Z',
    ]);
    // `a/step` runs from a to the end of the range.
    assert.deepEqual(upcoming('0 5/8 * * *', 'UTC', '2026-01-01T00:00:00Z', 4), [
      '2026-01-01T05:00:00.000Z',
      '2026-01-01T13:00:00.000Z',
      '2026-01-01T21:00:00.000Z',
      '2026-01-02T05:00:00.000Z',
    ]);
    // Mixed list of a value, a range and a stepped range.
    assert.deepEqual(upcoming('0 1,3-4,10-20/5 * * *', 'UTC', '2026-01-01T00:00:00Z', 7), [
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T03:00:00.000Z',
      '2026-01-01T04:00:00.000Z',
      '2026-01-01T10:00:00.000Z',
      '2026-01-01T15:00:00.000Z',
      '2026-01-01T20:00:00.000Z',
      '2026-01-02T01:00:00.000Z',
    ]);
    // Steps on months: January, April, July, October.
    assert.deepEqual(upcoming('0 0 1 */3 *', 'UTC', '2026-01-02T00:00:00Z', 3), [
      '2026-04-01T00:00:00.000Z',
      '2026-07-01T00:00:00.000Z',
      '2026-10-01T00:00:00.000Z',
    ]);
  });

  test('six fields: leading seconds; five fields fire at second 0', () => {
    assert.deepEqual(upcoming('*/20 * * * * *', 'UTC', '2026-01-01T00:00:00Z', 4), [
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:01:20.000Z',
    ]);
    assert.deepEqual(upcoming('30 15 10 * * *', 'UTC', '2026-01-01T12:00:00Z', 2), [
      '2026-01-02T10:15:30.000Z',
      '2026-01-03T10:15:30.000Z',
    ]);
    assert.deepEqual(upcoming('* * * * *', 'UTC', '2026-01-01T00:00:10Z', 2), [
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
    ]);
  });

  test('day-of-month and day-of-week both restricted: either matches (OR)', () => {
    // The 13th, or any Friday. 2026-02-13 is itself a Friday.
    assert.deepEqual(upcoming('0 0 13 * 5', 'UTC', '2026-02-01T00:00:00Z', 4), [
      '2026-02-06T00:00:00.000Z',
      '2026-02-13T00:00:00.000Z',
      '2026-02-20T00:00:00.000Z',
      '2026-02-27T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('0 0 13 * 5', 'UTC', '2026-02-28T00:00:00Z', 2), [
      '2026-03-06T00:00:00.000Z',
      '2026-03-13T00:00:00.000Z',
    ]);
    // A stepped day-of-month is restricted too (unlike Vixie's leading-`*` rule).
    assert.deepEqual(upcoming('0 0 */10 * MON', 'UTC', '2026-06-01T00:00:00Z', 4), [
      '2026-06-08T00:00:00.000Z',
      '2026-06-11T00:00:00.000Z',
      '2026-06-15T00:00:00.000Z',
      '2026-06-21T00:00:00.000Z',
    ]);
    // Only one restricted: that one alone decides (a full range counts as unrestricted).
    assert.deepEqual(
      upcoming('0 0 1-31 * MON', 'UTC', '2026-06-01T00:00:00Z', 2),
      upcoming('0 0 * * MON', 'UTC', '2026-06-01T00:00:00Z', 2),
    );
    assert.deepEqual(upcoming('0 0 10 * ?', 'UTC', '2026-06-01T00:00:00Z', 1), [
      '2026-06-10T00:00:00.000Z',
    ]);
  });

  test('L, W and # forms', () => {
    assert.deepEqual(upcoming('0 0 L * *', 'UTC', '2026-01-15T00:00:00Z', 3), [
      '2026-01-31T00:00:00.000Z',
      '2026-02-28T00:00:00.000Z',
      '2026-03-31T00:00:00.000Z',
    ]);
    // Last weekday: 2026-01-31 is a Saturday, 2026-05-31 a Sunday.
    assert.deepEqual(upcoming('0 0 LW 1,5 *', 'UTC', '2026-01-01T00:00:00Z', 2), [
      '2026-01-30T00:00:00.000Z',
      '2026-05-29T00:00:00.000Z',
    ]);
    // Nearest weekday to the 15th: 2026-02-15 is a Sunday -> Monday 16th; 1W on Saturday
    // 2026-08-01 -> Monday the 3rd (never the previous month).
    assert.deepEqual(upcoming('0 0 15W 2 *', 'UTC', '2026-01-01T00:00:00Z', 1), [
      '2026-02-16T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('0 0 1W 8 *', 'UTC', '2026-01-01T00:00:00Z', 1), [
      '2026-08-03T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('0 0 * * 5L', 'UTC', '2026-01-01T00:00:00Z', 2), [
      '2026-01-30T00:00:00.000Z',
      '2026-02-27T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('0 0 * * friL', 'UTC', '2026-01-01T00:00:00Z', 1), [
      '2026-01-30T00:00:00.000Z',
    ]);
    // Second Tuesday: 2026-01-13, 2026-02-10.
    assert.deepEqual(upcoming('0 0 * * TUE#2', 'UTC', '2026-01-01T00:00:00Z', 2), [
      '2026-01-13T00:00:00.000Z',
      '2026-02-10T00:00:00.000Z',
    ]);
  });

  test('@every fires at a fixed interval from the anchor', () => {
    const schedule = parseCronSchedule('@every 1h30m');
    assert.equal(schedule.kind, 'every');
    assert.equal(schedule.everyMs, 90 * 60_000);
    assert.equal(nextFireTime(schedule, at('2026-01-01T00:00:07Z')), at('2026-01-01T01:30:07Z'));
    assert.equal(parseCronSchedule('@every 1.5s').everyMs, 1500);
    assert.equal(parseCronSchedule('@every 2h45m30s500ms').everyMs, 9_930_500);
  });
});

describe('nextFireTime', () => {
  test('is strictly after the reference time', () => {
    const schedule = parseCronSchedule('0 12 * * *');
    assert.equal(
      iso(nextFireTime(schedule, at('2026-01-01T12:00:00Z'))),
      '2026-01-02T12:00:00.000Z',
    );
    assert.equal(
      iso(nextFireTime(schedule, at('2026-01-01T11:59:59.999Z'))),
      '2026-01-01T12:00:00.000Z',
    );
    assert.equal(
      iso(nextFireTime(schedule, at('2026-01-01T12:00:00.001Z'))),
      '2026-01-02T12:00:00.000Z',
    );
  });

  test('UTC and Asia/Tokyo (no DST, +09:00)', () => {
    assert.deepEqual(upcoming('0 9 * * *', 'Asia/Tokyo', '2026-03-07T00:00:00Z', 3), [
      '2026-03-08T00:00:00.000Z',
      '2026-03-09T00:00:00.000Z',
      '2026-03-10T00:00:00.000Z',
    ]);
    const tokyo = parseCronSchedule('0 * * * *', 'Asia/Tokyo');
    const utc = parseCronSchedule('0 * * * *', 'UTC');
    // A whole year of hourly fires: 8760, one per UTC hour, identical in both zones.
    const tokyoYear = firesBetween(tokyo, '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z');
    assert.equal(tokyoYear.length, 8760);
    assert.deepEqual(tokyoYear, firesBetween(utc, '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z'));
    assert.deepEqual(upcoming('0 0 1 1 *', 'Asia/Tokyo', '2026-06-01T00:00:00Z', 1), [
      '2026-12-31T15:00:00.000Z',
    ]);
  });

  test('a day missing from some months is skipped in those months', () => {
    const schedule = parseCronSchedule('0 0 31 * *');
    assert.equal(schedule.warnings.length, 1);
    assert.match(schedule.warnings[0]!, /31/);
    assert.deepEqual(upcoming('0 0 31 * *', 'UTC', '2026-01-31T00:00:00Z', 3), [
      '2026-03-31T00:00:00.000Z',
      '2026-05-31T00:00:00.000Z',
      '2026-07-31T00:00:00.000Z',
    ]);
    assert.deepEqual(upcoming('0 0 29 2 *', 'UTC', '2026-01-01T00:00:00Z', 2), [
      '2028-02-29T00:00:00.000Z',
      '2032-02-29T00:00:00.000Z',
    ]);
  });

  test('returns null when nothing fires within about five years', () => {
    const never = parseCronSchedule('0 0 30 2 *');
    assert.ok(never.warnings.some((w) => /never fires/.test(w)));
    assert.equal(nextFireTime(never, at('2026-01-01T00:00:00Z')), null);
    assert.equal(nextFireTime(parseCronSchedule('* * * * *'), Number.NaN), null);
  });
});

describe('nextFireTime across DST changes', () => {
  const NY = 'America/New_York';
  const LONDON = 'Europe/London';

  test('New York spring forward: 02:30 does not exist on 2026-03-08 and is skipped', () => {
    assert.deepEqual(upcoming('30 2 * * *', NY, '2026-03-06T12:00:00Z', 4), [
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-09T06:30:00.000Z', // 02:30 EDT; 2026-03-08 skipped
      '2026-03-10T06:30:00.000Z',
      '2026-03-11T06:30:00.000Z',
    ]);
    // Asked from inside the gap itself.
    const schedule = parseCronSchedule('30 2 * * *', NY);
    assert.equal(
      iso(nextFireTime(schedule, at('2026-03-08T07:00:00Z'))),
      '2026-03-09T06:30:00.000Z',
    );
    // Times either side of the gap are unaffected.
    assert.deepEqual(upcoming('30 1,3 8 3 *', NY, '2026-03-01T00:00:00Z', 2), [
      '2026-03-08T06:30:00.000Z', // 01:30 EST
      '2026-03-08T07:30:00.000Z', // 03:30 EDT
    ]);
  });

  test('New York fall back: 01:30 on 2026-11-01 fires once, at the EDT occurrence', () => {
    assert.deepEqual(upcoming('30 1 * * *', NY, '2026-10-31T00:00:00Z', 3), [
      '2026-10-31T05:30:00.000Z',
      '2026-11-01T05:30:00.000Z', // 01:30 EDT; the 01:30 EST at 06:30Z does not fire
      '2026-11-02T06:30:00.000Z', // 01:30 EST
    ]);
    const schedule = parseCronSchedule('30 1 * * *', NY);
    // From between the two 01:30s (and from inside the second pass) the next is the next day.
    assert.equal(
      iso(nextFireTime(schedule, at('2026-11-01T05:30:00Z'))),
      '2026-11-02T06:30:00.000Z',
    );
    assert.equal(
      iso(nextFireTime(schedule, at('2026-11-01T06:10:00Z'))),
      '2026-11-02T06:30:00.000Z',
    );
  });

  test('New York hourly on 2026-03-08: 23 fires, 02:00 skipped', () => {
    const fires = firesBetween(
      parseCronSchedule('0 * * * *', NY),
      '2026-03-08T05:00:00Z', // local midnight EST
      '2026-03-09T04:00:00Z', // next local midnight EDT
    );
    assert.equal(fires.length, 23);
    assert.deepEqual(fires.slice(0, 4), [
      '2026-03-08T05:00:00.000Z', // 00:00 EST
      '2026-03-08T06:00:00.000Z', // 01:00 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT
      '2026-03-08T08:00:00.000Z', // 04:00 EDT
    ]);
    assert.equal(fires.at(-1), '2026-03-09T03:00:00.000Z');
  });

  test('New York hourly on 2026-11-01: 24 fires over 25 hours, 01:00 once', () => {
    const fires = firesBetween(
      parseCronSchedule('0 * * * *', NY),
      '2026-11-01T04:00:00Z', // local midnight EDT
      '2026-11-02T05:00:00Z', // next local midnight EST
    );
    assert.equal(fires.length, 24);
    assert.deepEqual(fires.slice(0, 4), [
      '2026-11-01T04:00:00.000Z', // 00:00 EDT
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T07:00:00.000Z', // 02:00 EST (01:00 EST at 06:00Z does not fire)
      '2026-11-01T08:00:00.000Z',
    ]);
    assert.ok(!fires.includes('2026-11-01T06:00:00.000Z'));
    assert.equal(fires.at(-1), '2026-11-02T04:00:00.000Z');
  });

  test('Europe/London */15 around the spring forward (2026-03-29 01:00 -> 02:00)', () => {
    const fires = firesBetween(
      parseCronSchedule('*/15 * * * *', LONDON),
      '2026-03-29T00:30:00Z',
      '2026-03-29T01:31:00Z',
    );
    assert.deepEqual(fires, [
      '2026-03-29T00:30:00.000Z', // 00:30 GMT
      '2026-03-29T00:45:00.000Z', // 00:45 GMT
      '2026-03-29T01:00:00.000Z', // 02:00 BST: 01:00-01:45 local never existed
      '2026-03-29T01:15:00.000Z',
      '2026-03-29T01:30:00.000Z',
    ]);
    // The whole local day has 23 hours -> 92 quarter-hour fires.
    const day = firesBetween(
      parseCronSchedule('*/15 * * * *', LONDON),
      '2026-03-29T00:00:00Z',
      '2026-03-29T23:00:00Z',
    );
    assert.equal(day.length, 92);
  });

  test('Europe/London */15 around the fall back (2026-10-25 02:00 -> 01:00)', () => {
    const fires = firesBetween(
      parseCronSchedule('*/15 * * * *', LONDON),
      '2026-10-24T23:45:00Z',
      '2026-10-25T02:16:00Z',
    );
    assert.deepEqual(fires, [
      '2026-10-24T23:45:00.000Z', // 00:45 BST
      '2026-10-25T00:00:00.000Z', // 01:00 BST
      '2026-10-25T00:15:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T00:45:00.000Z', // 01:45 BST; the repeated 01:xx GMT does not fire
      '2026-10-25T02:00:00.000Z', // 02:00 GMT
      '2026-10-25T02:15:00.000Z',
    ]);
    // 25-hour local day, 96 distinct wall quarter-hours, each fires once.
    const day = firesBetween(
      parseCronSchedule('*/15 * * * *', LONDON),
      '2026-10-24T23:00:00Z',
      '2026-10-26T00:00:00Z',
    );
    assert.equal(day.length, 96);
  });

  test('Europe/London hourly around both transitions', () => {
    const hourly = parseCronSchedule('0 * * * *', LONDON);
    assert.deepEqual(firesBetween(hourly, '2026-03-28T23:00:00Z', '2026-03-29T03:00:00Z'), [
      '2026-03-28T23:00:00.000Z', // 23:00 GMT
      '2026-03-29T00:00:00.000Z', // 00:00 GMT
      '2026-03-29T01:00:00.000Z', // 02:00 BST (01:00 skipped)
      '2026-03-29T02:00:00.000Z',
    ]);
    assert.deepEqual(firesBetween(hourly, '2026-10-24T22:00:00Z', '2026-10-25T03:00:00Z'), [
      '2026-10-24T22:00:00.000Z', // 23:00 BST
      '2026-10-24T23:00:00.000Z', // 00:00 BST
      '2026-10-25T00:00:00.000Z', // 01:00 BST (not again at 01:00 GMT)
      '2026-10-25T02:00:00.000Z', // 02:00 GMT
    ]);
  });

  test('per-second schedules cross a repeated hour and a gap without stalling', () => {
    const everySecond = parseCronSchedule('* * * * * *', NY);
    // Inside the second 01:xx (EST) pass nothing fires until 02:00:00 EST.
    assert.equal(
      iso(nextFireTime(everySecond, at('2026-11-01T06:00:00Z'))),
      '2026-11-01T07:00:00.000Z',
    );
    assert.equal(
      iso(nextFireTime(everySecond, at('2026-11-01T05:59:59Z'))),
      '2026-11-01T07:00:00.000Z',
    );
    assert.equal(
      iso(nextFireTime(everySecond, at('2026-03-08T06:59:59Z'))),
      '2026-03-08T07:00:00.000Z',
    );
    const atTwoThirty = parseCronSchedule('0 30 2 * * *', NY);
    assert.equal(
      iso(nextFireTime(atTwoThirty, at('2026-03-08T06:00:00Z'))),
      '2026-03-09T06:30:00.000Z',
    );
  });

  test('dstSkipsBetween lists occurrences lost to a spring-forward gap', () => {
    const schedule = parseCronSchedule('30 2 * * *', NY);
    const skips = dstSkipsBetween(schedule, at('2026-03-07T07:30:00Z'), at('2026-03-09T06:30:00Z'));
    assert.deepEqual(skips, [
      { localTime: '2026-03-08T02:30:00', atMs: at('2026-03-08T07:00:00Z') },
    ]);
    assert.deepEqual(
      dstSkipsBetween(schedule, at('2026-10-31T00:00:00Z'), at('2026-11-03T00:00:00Z')),
      [],
    );
    assert.equal(
      dstSkipsBetween(
        parseCronSchedule('*/20 * * * *', LONDON),
        at('2026-01-01T00:00:00Z'),
        at('2027-01-01T00:00:00Z'),
      ).length,
      3,
    );
    assert.deepEqual(
      dstSkipsBetween(
        parseCronSchedule('30 2 * * *'),
        at('2026-03-01T00:00:00Z'),
        at('2026-04-01T00:00:00Z'),
      ),
      [],
    );
  });
});

describe('dueOccurrence (missed runs)', () => {
  test('null while the stored next run is in the future', () => {
    const schedule = parseCronSchedule('*/5 * * * *');
    assert.equal(
      dueOccurrence(schedule, at('2026-01-01T10:05:00Z'), at('2026-01-01T10:04:59Z')),
      null,
    );
  });

  test('exactly due: fires the stored occurrence and advances by one', () => {
    const schedule = parseCronSchedule('*/5 * * * *');
    const due = dueOccurrence(schedule, at('2026-01-01T10:05:00Z'), at('2026-01-01T10:05:00.300Z'));
    assert.deepEqual(due, { fireAt: at('2026-01-01T10:05:00Z'), next: at('2026-01-01T10:10:00Z') });
  });

  test('several missed runs: one catch-up (the latest) and the next future time', () => {
    const schedule = parseCronSchedule('*/5 * * * *');
    // Stored 10:00; the loop was paused until 10:23:10 -> 10:00..10:20 missed (5 occurrences).
    const due = dueOccurrence(schedule, at('2026-01-01T10:00:00Z'), at('2026-01-01T10:23:10Z'));
    assert.deepEqual(due, { fireAt: at('2026-01-01T10:20:00Z'), next: at('2026-01-01T10:25:00Z') });
    // Three missed days of a daily job.
    const daily = parseCronSchedule('0 3 * * *', 'America/New_York');
    const days = dueOccurrence(daily, at('2026-06-01T07:00:00Z'), at('2026-06-04T12:00:00Z'));
    assert.deepEqual(days, {
      fireAt: at('2026-06-04T07:00:00Z'),
      next: at('2026-06-05T07:00:00Z'),
    });
    // A long outage with a dense per-second schedule: the due occurrence is
    // found from the end of the outage, not by walking 13 million seconds.
    const dense = parseCronSchedule('* * * * * *');
    const long = dueOccurrence(dense, at('2026-01-01T00:00:00Z'), at('2026-06-01T00:00:00.500Z'));
    assert.deepEqual(long, {
      fireAt: at('2026-06-01T00:00:00Z'),
      next: at('2026-06-01T00:00:01Z'),
    });
  });

  test('the catch-up never lands on a DST-skipped occurrence', () => {
    const schedule = parseCronSchedule('30 2 * * *', 'America/New_York');
    const due = dueOccurrence(schedule, at('2026-03-07T07:30:00Z'), at('2026-03-08T12:00:00Z'));
    assert.deepEqual(due, { fireAt: at('2026-03-07T07:30:00Z'), next: at('2026-03-09T06:30:00Z') });
  });

  test('a stored time that is not an occurrence is fired as is', () => {
    const schedule = parseCronSchedule('0 0 1 1 *');
    const due = dueOccurrence(schedule, at('2026-03-03T03:03:03Z'), at('2026-03-04T00:00:00Z'));
    assert.deepEqual(due, { fireAt: at('2026-03-03T03:03:03Z'), next: at('2027-01-01T00:00:00Z') });
  });

  test('@every keeps its anchor grid', () => {
    const schedule = parseCronSchedule('@every 10m');
    const due = dueOccurrence(schedule, at('2026-01-01T00:00:07Z'), at('2026-01-01T00:35:00Z'));
    assert.deepEqual(due, { fireAt: at('2026-01-01T00:30:07Z'), next: at('2026-01-01T00:40:07Z') });
  });
});

describe('parseCronSchedule: rejected expressions', () => {
  test('the conformance suite invalid expressions', () => {
    rejects('not a valid cron', undefined, /found 4 fields, expected 5 .* or 6/);
    rejects('0 0 0 0 0 0 0', undefined, /found 7 fields, expected 5 .* or 6/);
    rejects('99 25 32 13 8', undefined, /minute value 99 is out of range 0-59/);
    rejects('99 25 32 13 8', undefined, /hour value 25 is out of range 0-23/);
    rejects('99 25 32 13 8', undefined, /day-of-month value 32 is out of range 1-31/);
    rejects('99 25 32 13 8', undefined, /month value 13 is out of range 1-12/);
    rejects('99 25 32 13 8', undefined, /day-of-week value 8 is out of range 0-7/);
  });

  test('wrong field counts say how many were found', () => {
    rejects('* * * *', undefined, /found 4 fields/);
    rejects('* * * * * * *', undefined, /found 7 fields/);
    rejects('*', undefined, /found 1 field, expected 5/);
    const error = (() => {
      try {
        parseCronSchedule('0 0 0 0 0 0 0');
      } catch (e) {
        return e as OjsError;
      }
      return null;
    })();
    assert.deepEqual(error?.details, {
      field: 'expression',
      value: '0 0 0 0 0 0 0',
      fields_found: 7,
    });
  });

  test('each field out of range, alone', () => {
    rejects('60 * * * *', undefined, /minute value 60 is out of range 0-59/);
    rejects('0 24 * * *', undefined, /hour value 24 is out of range 0-23/);
    rejects('0 0 0 * *', undefined, /day-of-month value 0 is out of range 1-31/);
    rejects('0 0 32 * *', undefined, /day-of-month value 32 is out of range 1-31/);
    rejects('0 0 * 0 *', undefined, /month value 0 is out of range 1-12/);
    rejects('0 0 * 13 *', undefined, /month value 13 is out of range 1-12/);
    rejects('0 0 * * 8', undefined, /day-of-week value 8 is out of range 0-7/);
    rejects('60 0 0 * * *', undefined, /second value 60 is out of range 0-59/);
    rejects('0 1-60 * * *', undefined, /hour value 60 is out of range 0-23/);
    rejects('0 0 * * 1-9', undefined, /day-of-week value 9 is out of range 0-7/);
  });

  test('steps: zero, missing or non-numeric', () => {
    rejects('*/0 * * * *', undefined, /minute step 0 .* must be at least 1/);
    rejects('0 */0 * * *', undefined, /hour step 0/);
    rejects('*/ * * * *', undefined, /minute step '' .* not a positive integer/);
    rejects('*/x * * * *', undefined, /minute step 'x'/);
    rejects('*/-1 * * * *', undefined, /minute step '-1'/);
  });

  test('empty, blank and non-string expressions', () => {
    rejects('', undefined, /empty/);
    rejects('   ', undefined, /empty/);
    rejects(undefined, undefined, /must be a string/);
    rejects(42, undefined, /must be a string/);
    rejects(null, undefined, /must be a string/);
  });

  test('malformed tokens', () => {
    rejects('a b c d e', undefined, /minute value 'a' is not a number 0-59/);
    rejects('1,,2 * * * *', undefined, /minute field '1,,2' has an empty list item/);
    rejects('30-10 * * * *', undefined, /minute range '30-10' is reversed/);
    rejects(
      '0 0 * FOO *',
      undefined,
      /month value 'FOO' is neither a number 1-12 nor a name JAN-DEC/,
    );
    rejects('0 0 * * FUNDAY', undefined, /day-of-week value 'FUNDAY'.*SUN-SAT/);
    rejects('0 0 * MON *', undefined, /month value 'MON'/);
    rejects('JAN 0 * * *', undefined, /minute value 'JAN' is not a number/);
    rejects('1.5 * * * *', undefined, /minute value '1.5'/);
    rejects('-5 * * * *', undefined, /minute item '-5' is malformed|minute value/);
    rejects('0 ? * * *', undefined, /hour item '\?' is malformed/);
    rejects('? * * * *', undefined, /minute item '\?' is malformed/);
    rejects('0 0 L-2 * *', undefined, /day-of-month item 'L-2' is malformed/);
    rejects('0 0 * * L', undefined, /day-of-week item 'L' needs a weekday/);
    rejects('0 0 * * 1#6', undefined, /occurrence after # must be 1-5/);
    rejects('0 0 32W * *', undefined, /day-of-month value 32 is out of range/);
  });

  test('specials: unknown names and extra fields', () => {
    rejects('@fortnightly', undefined, /unknown special expression '@fortnightly'.*@daily/);
    rejects('@daily 5', undefined, /takes no further fields/);
    rejects('@every', undefined, /@every takes exactly one duration/);
    rejects('@every soon', undefined, /'soon' is not a duration/);
    rejects('@every 10', undefined, /'10' is not a duration/);
    rejects('@every 500ms', undefined, /shorter than the minimum of 1s/);
  });

  test('errors list every problem and carry the field in details', () => {
    try {
      parseCronSchedule('99 25 32 13 8');
      assert.fail('should have thrown');
    } catch (error) {
      assert.ok(error instanceof OjsError);
      assert.equal(error.details?.field, 'expression');
      assert.equal(error.details?.value, '99 25 32 13 8');
      assert.equal((error.details!.errors as string[]).length, 5);
    }
  });
});

describe('parseCronSchedule: time zones', () => {
  test('IANA names are accepted (letter case is normalised)', () => {
    for (const zone of [
      'UTC',
      'Asia/Tokyo',
      'America/New_York',
      'Europe/London',
      'America/Argentina/Buenos_Aires',
      'Etc/UTC',
    ]) {
      assert.equal(parseCronSchedule('* * * * *', zone).timezone, zone);
    }
    assert.equal(parseCronSchedule('* * * * *', 'utc').timezone, 'UTC');
    assert.equal(parseCronSchedule('* * * * *', 'america/new_york').timezone, 'America/New_York');
  });

  test('fixed offsets, abbreviations and unknown names are rejected with the zone named', () => {
    rejects('* * * * *', '+05:00', /Timezone '\+05:00' is a fixed UTC offset/, 'timezone');
    rejects('* * * * *', '-0800', /Timezone '-0800' is a fixed UTC offset/, 'timezone');
    rejects('* * * * *', 'UTC+5', /Timezone 'UTC\+5' is a fixed UTC offset/, 'timezone');
    rejects('* * * * *', 'GMT-03:00', /Timezone 'GMT-03:00' is a fixed UTC offset/, 'timezone');
    rejects('* * * * *', 'EST', /Timezone 'EST' is an abbreviation/, 'timezone');
    rejects('* * * * *', 'PST', /Timezone 'PST' is an abbreviation/, 'timezone');
    rejects(
      '* * * * *',
      'Mars/Olympus',
      /Timezone 'Mars\/Olympus' is not a known IANA zone/,
      'timezone',
    );
    rejects('* * * * *', 'New York', /Timezone 'New York' is not an IANA zone name/, 'timezone');
    rejects('* * * * *', '', /not an IANA zone name/, 'timezone');
    rejects('* * * * *', 5, /Timezone must be a string/, 'timezone');
  });

  test('a bad timezone is reported even when the expression is valid', () => {
    rejects('@daily', 'Invalid/Zone', /Invalid\/Zone/, 'timezone');
  });
});
