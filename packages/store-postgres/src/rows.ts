/**
 * Rows of the job table, derived from the JobRecord (the `doc` column stays
 * the source of truth; the others exist for indexes and guards), and the
 * conversions of what the driver returns (bigint and count(*) as strings).
 */
import {
  type ClaimRequest,
  type CronRecord,
  type JobColumns,
  type JobRecord,
  jobColumns,
  type OjsEvent,
  type QueueInfo,
  type SettingRecord,
} from '@ojs/core';
import { EVENT_COLUMNS } from './statements.ts';

/** The core-derived index columns, the FIFO sequence and the document. */
export interface JobRow extends JobColumns {
  seq: number | null;
  doc: JobRecord;
}

/** The columns of one job (what the bulk INSERT/UPDATE statements read per row). */
export function jobRow(job: JobRecord): JobRow {
  return { ...jobColumns(job), seq: job.seq ?? null, doc: job };
}

/**
 * `after` as a patch of `before` (the document as stored): the top-level
 * keys whose value changed, and those removed. Core's decisions copy a
 * record shallowly, so an unchanged key keeps its value's identity and the
 * comparison is by reference; a settlement changes a handful of keys of a
 * document that carries args, meta and the retry policy, so the patch is a
 * fraction of the document on the wire and in the statement.
 */
export function docPatch(
  before: JobRecord,
  after: JobRecord,
): { doc_set: Record<string, unknown>; doc_unset: string[] } {
  const set: Record<string, unknown> = {};
  const unset: string[] = [];
  const old = before as unknown as Record<string, unknown>;
  const now = after as unknown as Record<string, unknown>;
  for (const key of Object.keys(now)) {
    const value = now[key];
    if (value === undefined) continue;
    if (value !== old[key]) set[key] = value;
  }
  for (const key of Object.keys(old)) {
    if (old[key] !== undefined && now[key] === undefined) unset.push(key);
  }
  return { doc_set: set, doc_unset: unset };
}

/** An element of a PostgreSQL array literal: NULL, or quoted with `"` and `\\` escaped. */
function arrayElement(value: string | number | boolean | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') return String(value); // shortest exact form (float8, integer)
  if (typeof value === 'boolean') return value ? 't' : 'f';
  // Ids, names and states seldom hold either character: no regex for them.
  if (value.indexOf('"') === -1 && value.indexOf('\\') === -1) return `"${value}"`;
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}

/**
 * A one-dimensional PostgreSQL array literal (`{"a",NULL,"b c"}`) of
 * `values`, for a parameter cast to an array type (`$1::text[]`) and read
 * with unnest: a column of a batch. PostgreSQL reads it with array_in,
 * which costs a fraction of taking the same values out of a jsonb array of
 * row objects (parse, key sorts, a lookup per column and a text round trip
 * per number; decision 0117). Built here rather than by node-postgres,
 * whose array conversion goes through prepareValue per element.
 */
export function arrayLiteral(values: (string | number | boolean | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    out += arrayElement(values[i]!);
  }
  return `${out}}`;
}

/** The array literal of column `name` over `rows` (absent: NULL). */
export function columnLiteral(rows: Record<string, unknown>[], name: string): string {
  return arrayLiteral(rows.map((row) => (row[name] ?? null) as string | number | boolean | null));
}

/** The array literal of each column `columns` names ([name, type]), over `rows`, in order. */
export function columnLiterals(
  rows: Record<string, unknown>[],
  columns: readonly (readonly [string, string])[],
): string[] {
  return columns.map(([name]) => columnLiteral(rows, name));
}

/** Plain keys (identifiers): written unquoted in an array literal. */
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A text array literal of document keys, unquoted when they are plain
 * (so that, as an element of an outer literal, it needs no escaping).
 */
export function keysLiteral(keys: string[]): string {
  return keys.every((key) => PLAIN_KEY.test(key) && key.toUpperCase() !== 'NULL')
    ? `{${keys.join(',')}}`
    : arrayLiteral(keys);
}

/**
 * The event types every job writes (enqueued, started, completed): a
 * write's consecutive run of them is one row of the log (migration 015,
 * decision 0113); every other type is a row of its own.
 */
export const RUN_EVENT_TYPES: ReadonlySet<string> = new Set([
  'job.enqueued',
  'job.started',
  'job.completed',
]);

/** An event row (filter columns + the event document). */
export interface EventRow {
  id: string;
  type: string;
  queue: string | null;
  job_type: string | null;
  doc: OjsEvent;
  /** settleJobs / extendLeases: the job whose write the event belongs to. */
  job_id?: string;
  /** eventValues: the row of the log it goes into, and that row's shared columns. */
  g?: number;
  gtype?: string | null;
  gqueue?: string | null;
  gjob_type?: string | null;
}

export function eventRow(event: OjsEvent): EventRow {
  return {
    id: event.id,
    type: event.type,
    queue: typeof event.data.queue === 'string' ? event.data.queue : null,
    job_type: typeof event.data.job_type === 'string' ? event.data.job_type : null,
    doc: event,
  };
}

/**
 * The event rows of one write as the statements' values (statements.ts
 * eventRowCtes): a jsonb array of the documents, then one array literal
 * per EVENT_COLUMNS column. Each row is marked with the log row it goes
 * into (`g`): a run of consecutive
 * RUN_EVENT_TYPES events shares one, any other event has its own. With it
 * the values a row of several would share (`gtype`, `gqueue`,
 * `gjob_type`: NULL where its events differ). The statement groups by `g`
 * (statements.ts insertEventRuns); a group the statement filters down
 * (events of jobs not written) keeps columns that still hold.
 */
export function eventValues(rows: EventRow[]): string[] {
  let g = 0;
  let start = 0;
  const close = (end: number) => {
    const first = rows[start]!;
    let [type, queue, jobType] = [first.type as string | null, first.queue, first.job_type];
    for (let i = start + 1; i < end; i++) {
      const row = rows[i]!;
      if (row.type !== type) type = null;
      if (row.queue !== queue) queue = null;
      if (row.job_type !== jobType) jobType = null;
    }
    for (let i = start; i < end; i++) {
      const row = rows[i]!;
      row.g = g;
      row.gtype = type;
      row.gqueue = queue;
      row.gjob_type = jobType;
    }
    g++;
    start = end;
  };
  for (let i = 1; i <= rows.length; i++) {
    if (
      i === rows.length ||
      !RUN_EVENT_TYPES.has(rows[i]!.type) ||
      !RUN_EVENT_TYPES.has(rows[i - 1]!.type)
    ) {
      close(i);
    }
  }
  return [
    JSON.stringify(rows.map((row) => row.doc)),
    ...columnLiterals(rows as unknown as Record<string, unknown>[], EVENT_COLUMNS),
  ];
}

export interface CronRow {
  name: string;
  rev: number;
  enabled: boolean;
  next_run_ms: number | null;
  doc: CronRecord;
}

export function cronRow(cron: CronRecord): CronRow {
  return {
    name: cron.name,
    rev: cron.rev,
    enabled: cron.enabled,
    next_run_ms: cron.enabled ? (cron.next_run_ms ?? null) : null,
    doc: cron,
  };
}

export interface QueueRow {
  name: string;
  paused: boolean;
  created_at: string;
  concurrency: number | null;
  rate_limit: number | null;
  rate_period_ms: number | null;
}

export function queueInfo(row: QueueRow): QueueInfo {
  const info: QueueInfo = { name: row.name, paused: row.paused, created_at: row.created_at };
  if (row.concurrency !== null) info.concurrency = row.concurrency;
  if (row.rate_limit !== null && row.rate_period_ms !== null) {
    info.rate_limit = { limit: row.rate_limit, period_ms: row.rate_period_ms };
  }
  return info;
}

/** count(*) and bigint come back as strings. */
export const toNumber = (value: unknown): number => Number(value);

/**
 * Version routing of a claim as a jsonb parameter: one row per (type,
 * admitted interval); null when the fetch declared no handlers.
 */
export function handlerRows(request: ClaimRequest): string | null {
  if (request.handlers === undefined) return null;
  return JSON.stringify(
    request.handlers.flatMap((h) =>
      h.range.any
        ? [{ type: h.type, any: true, lo: null, hi: null }]
        : h.range.intervals.map(([lo, hi]) => ({ type: h.type, any: false, lo, hi })),
    ),
  );
}

export interface SettingRow {
  namespace: string;
  key: string;
  rev: number;
  updated_at: string;
  value: Record<string, unknown>;
}

export function settingRecord(row: SettingRow): SettingRecord {
  return {
    namespace: row.namespace,
    key: row.key,
    value: row.value,
    rev: row.rev,
    updated_at: row.updated_at,
  };
}
