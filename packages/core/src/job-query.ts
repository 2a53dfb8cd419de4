/**
 * Finding jobs (admin API, ADM-003): the filter every store understands,
 * its parsing from query parameters, and the opaque cursor of keyset
 * pagination. Pages are ordered by `seq` (the store's FIFO sequence, unique
 * and never changed after insert), so a cursor names one position in that
 * order: concurrent inserts and state changes never repeat or skip a job
 * that still matches the filter (an offset would shift under them).
 */
import { invalidRequest } from './errors.ts';
import type { JobRecord } from './job-types.ts';
import { isJobState, JOB_STATES, type JobState } from './states.ts';
import { jobColumns } from './store-columns.ts';
import { jobTenant } from './tenancy.ts';
import { parseTimestamp } from './time.ts';

export interface JobFilter {
  states?: JobState[];
  queues?: string[];
  /** Exact job types. */
  types?: string[];
  /** Job types starting with this text (`type=email.*` in the query). */
  typePrefix?: string;
  /** created_at >= this (epoch ms). */
  createdFrom?: number;
  /** created_at < this (epoch ms). */
  createdTo?: number;
  /** The type of the job's latest error (`error.type`). */
  errorType?: string;
  /** Jobs carrying this tag. */
  tag?: string;
  /** Jobs whose meta has this key. */
  metaKey?: string;
  /** Only jobs in the dead letter queue. */
  deadLetter?: boolean;
  /** Jobs that reached their final state at or after this (epoch ms): throughput. */
  finishedFrom?: number;
  /**
   * Jobs of this tenant only (ext-multi-tenancy): set from the request's
   * tenant, never from a query parameter. `_default` is the jobs naming no
   * tenant (tenant_id column null).
   */
  tenant?: string;
}

export type PageOrder = 'asc' | 'desc';

export interface JobPageRequest {
  filter: JobFilter;
  limit: number;
  order: PageOrder;
  /** Continue after this seq (exclusive), from a cursor. */
  afterSeq?: number;
  /**
   * Skip this many jobs first (page/per_page listings). Unlike a cursor an
   * offset shifts when jobs are inserted or change state between pages.
   */
  offset?: number;
}

/**
 * True when a filter names nothing but states and queues (or nothing), so a
 * store can answer its count from the per-(queue, state) counters it keeps
 * instead of counting jobs.
 */
export function countsByQueueState(filter: JobFilter): boolean {
  for (const [key, value] of Object.entries(filter)) {
    if (value !== undefined && key !== 'states' && key !== 'queues') return false;
  }
  return true;
}

/** Largest number of (queue, state) combinations a store walks as separate index ranges. */
export const MAX_INDEXED_COMBINATIONS = 32;

const FILTER_KEYS = new Set([
  'state',
  'queue',
  'type',
  'since',
  'until',
  'error_type',
  'tag',
  'meta_key',
]);

const TEXT_PATTERN = /^[\w.:*@/-]{1,255}$/;

function list(value: unknown, field: string): string[] | undefined {
  if (value === undefined || value === '') return undefined;
  const raw = Array.isArray(value) ? value.join(',') : value;
  if (typeof raw !== 'string') throw invalidRequest(`${field} must be a string.`, { field });
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const item of items) {
    if (!TEXT_PATTERN.test(item)) {
      throw invalidRequest(`${field} has an invalid value '${item.slice(0, 64)}'.`, { field });
    }
  }
  return items.length === 0 ? undefined : items;
}

function single(value: unknown, field: string): string | undefined {
  const items = list(value, field);
  if (items === undefined) return undefined;
  if (items.length > 1) throw invalidRequest(`${field} takes one value.`, { field });
  return items[0];
}

function instant(value: unknown, field: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = typeof value === 'string' ? parseTimestamp(value) : null;
  if (ms === null) {
    throw invalidRequest(`${field} must be an RFC 3339 timestamp.`, { field });
  }
  return ms;
}

/**
 * The filter of a job listing or bulk action, from query parameters or a
 * JSON `filter` object: `state`, `queue`, `type` (comma lists; a type ending
 * in `*` is a prefix), `since`/`until` (created_at range), `error_type`,
 * `tag`, `meta_key`. An unknown key is refused when `strict` (JSON filters),
 * so a typo never widens a bulk action to every job.
 */
export function parseJobFilter(source: Record<string, unknown>, strict = false): JobFilter {
  if (strict) {
    for (const key of Object.keys(source)) {
      if (!FILTER_KEYS.has(key)) {
        throw invalidRequest(
          `filter.${key} is not a known filter; use ${[...FILTER_KEYS].join(', ')}.`,
          { field: `filter.${key}` },
        );
      }
    }
  }
  const filter: JobFilter = {};
  const states = list(source.state, 'state');
  if (states !== undefined) {
    for (const state of states) {
      if (!isJobState(state)) {
        throw invalidRequest(`state must be one of ${JOB_STATES.join(', ')} (got '${state}').`, {
          field: 'state',
        });
      }
    }
    filter.states = [...new Set(states)] as JobState[];
  }
  const queues = list(source.queue, 'queue');
  if (queues !== undefined) filter.queues = [...new Set(queues)];
  const types = list(source.type, 'type');
  if (types !== undefined) {
    const prefixes = types.filter((t) => t.endsWith('*'));
    if (prefixes.length > 0) {
      if (types.length > 1) {
        throw invalidRequest('type takes either one prefix (email.*) or exact types.', {
          field: 'type',
        });
      }
      filter.typePrefix = prefixes[0]!.slice(0, -1);
    } else filter.types = [...new Set(types)];
  }
  const from = instant(source.since, 'since');
  const to = instant(source.until, 'until');
  if (from !== undefined) filter.createdFrom = from;
  if (to !== undefined) filter.createdTo = to;
  const errorType = single(source.error_type, 'error_type');
  if (errorType !== undefined) filter.errorType = errorType;
  const tag = single(source.tag, 'tag');
  if (tag !== undefined) filter.tag = tag;
  const metaKey = single(source.meta_key, 'meta_key');
  if (metaKey !== undefined) filter.metaKey = metaKey;
  return filter;
}

/** True when the filter selects every job (a bulk action must not run on it by accident). */
export function isEmptyFilter(filter: JobFilter): boolean {
  return Object.values(filter).every((v) => v === undefined);
}

/** The opaque cursor of the page after `seq` in `order`. */
export function encodeCursor(seq: number, order: PageOrder): string {
  return Buffer.from(JSON.stringify({ s: seq, o: order })).toString('base64url');
}

/** A cursor back into its position; a forged or foreign cursor is a 400. */
export function decodeCursor(cursor: string, order: PageOrder): number {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      s?: unknown;
      o?: unknown;
    };
    if (typeof parsed.s === 'number' && Number.isSafeInteger(parsed.s) && parsed.o === order) {
      return parsed.s;
    }
  } catch {
    // Falls through to the error below.
  }
  throw invalidRequest('cursor is not a cursor this listing returned (or the order changed).', {
    field: 'cursor',
  });
}

/** One index range of a listing: the jobs with these column values, in seq order. */
export interface IndexRange {
  queue?: string;
  state?: JobState;
  type?: string;
}

/**
 * The index ranges a store walks for a filter, each read in seq order up to
 * the page size and merged, so the first page costs a few index probes
 * whatever the table size: one range per (queue, state) pair (a queue
 * without states means every state), else one per state, else one per exact
 * type. `undefined` means one walk of the whole seq order with the filter
 * applied row by row (too many pairs, or nothing indexed to narrow by).
 */
export function indexRanges(filter: JobFilter): IndexRange[] | undefined {
  const queues = filter.queues;
  const states = filter.states;
  if (queues !== undefined) {
    const all = states ?? JOB_STATES;
    if (queues.length * all.length > MAX_INDEXED_COMBINATIONS) {
      return states !== undefined && states.length <= MAX_INDEXED_COMBINATIONS
        ? states.map((state) => ({ state }))
        : undefined;
    }
    return queues.flatMap((queue) => all.map((state) => ({ queue, state })));
  }
  if (states !== undefined) return states.map((state) => ({ state }));
  if (filter.types !== undefined && filter.types.length <= MAX_INDEXED_COMBINATIONS) {
    return filter.types.map((type) => ({ type }));
  }
  return undefined;
}

/**
 * Whether `job` matches `filter`: the meaning of every filter field for a
 * store that filters jobs it read from an index (Redis) rather than in SQL.
 * The SQL stores' WHERE clauses (job-queries.ts) say the same thing.
 */
export function jobMatchesFilter(filter: JobFilter, job: JobRecord): boolean {
  if (filter.states !== undefined && !filter.states.includes(job.state)) return false;
  if (filter.queues !== undefined && !filter.queues.includes(job.queue)) return false;
  if (filter.types !== undefined && !filter.types.includes(job.type)) return false;
  if (filter.typePrefix !== undefined && !job.type.startsWith(filter.typePrefix)) return false;
  if (filter.createdFrom !== undefined || filter.createdTo !== undefined) {
    const created = Date.parse(job.created_at);
    if (filter.createdFrom !== undefined && !(created >= filter.createdFrom)) return false;
    if (filter.createdTo !== undefined && !(created < filter.createdTo)) return false;
  }
  if (filter.errorType !== undefined && job.error?.type !== filter.errorType) return false;
  if (filter.tag !== undefined && !(job.tags ?? []).includes(filter.tag)) return false;
  if (filter.metaKey !== undefined && !Object.hasOwn(job.meta ?? {}, filter.metaKey)) return false;
  if (filter.deadLetter === true && !jobColumns(job).dead_letter) return false;
  if (filter.tenant !== undefined && jobTenant(job) !== filter.tenant) return false;
  if (filter.finishedFrom !== undefined) {
    const finished = jobColumns(job).finished_at;
    if (finished === null || finished < filter.finishedFrom) return false;
  }
  return true;
}
