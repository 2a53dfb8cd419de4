/**
 * The SQL of finding jobs (admin listings, counts, bulk actions) and of the
 * retention pruner, built from a core JobFilter. Values are always bound
 * parameters (`?`); only the shape of the WHERE clause varies, so each
 * shape is prepared once and cached by its text like the fixed statements.
 *
 * A listing walks the index ranges core `indexRanges` names (queue, state,
 * seq / state, seq / type, seq: migration 006), each in seq order up to the
 * page size, and merges them: the first page is a few index probes.
 */
import {
  countsByQueueState,
  DEFAULT_TENANT,
  type IndexRange,
  indexRanges,
  type JobFilter,
  type JobPageRequest,
  type PruneTarget,
  type RateLimitState,
} from '@ojs/core';

export interface Query {
  sql: string;
  params: (string | number | null)[];
}

function inList(column: string, values: readonly string[], params: Query['params']): string {
  params.push(...values);
  return `${column} IN (${values.map(() => '?').join(', ')})`;
}

/** The WHERE conditions of a filter; columns an index range fixes by equality are left out. */
function conditions(filter: JobFilter, params: Query['params'], range?: IndexRange): string[] {
  const where: string[] = [];
  if (filter.states !== undefined && range?.state === undefined) {
    where.push(inList('state', filter.states, params));
  }
  if (filter.queues !== undefined && range?.queue === undefined) {
    where.push(inList('queue', filter.queues, params));
  }
  if (filter.types !== undefined && range?.type === undefined) {
    where.push(inList('type', filter.types, params));
  }
  if (filter.typePrefix !== undefined) {
    params.push(filter.typePrefix.length, filter.typePrefix);
    where.push('substr(type, 1, ?) = ?');
  }
  if (filter.createdFrom !== undefined) {
    params.push(filter.createdFrom);
    where.push("unixepoch(doc ->> '$.created_at', 'subsec') * 1000 >= ?");
  }
  if (filter.createdTo !== undefined) {
    params.push(filter.createdTo);
    where.push("unixepoch(doc ->> '$.created_at', 'subsec') * 1000 < ?");
  }
  if (filter.errorType !== undefined) {
    params.push(filter.errorType);
    where.push("doc ->> '$.error.type' = ?");
  }
  if (filter.tag !== undefined) {
    params.push(filter.tag);
    where.push("EXISTS (SELECT 1 FROM json_each(doc, '$.tags') WHERE value = ?)");
  }
  if (filter.metaKey !== undefined) {
    params.push(filter.metaKey);
    where.push("EXISTS (SELECT 1 FROM json_each(doc, '$.meta') WHERE key = ?)");
  }
  if (filter.deadLetter === true) where.push('dead_letter = 1');
  if (filter.finishedFrom !== undefined) {
    params.push(filter.finishedFrom);
    where.push('finished_at >= ?');
  }
  if (filter.tenant !== undefined) {
    params.push(filter.tenant === DEFAULT_TENANT ? null : filter.tenant);
    where.push('tenant_id IS ?');
  }
  return where;
}

function whereClause(where: string[]): string {
  return where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
}

/** SELECT seq, doc of one page (see the module comment). */
export function listJobsQuery(request: JobPageRequest): Query {
  const params: Query['params'] = [];
  const direction = request.order === 'desc' ? 'DESC' : 'ASC';
  const offset = request.offset ?? 0;
  const page = (range: IndexRange | undefined, inner: boolean): string => {
    const where: string[] = [];
    for (const column of ['queue', 'state', 'type'] as const) {
      const value = range?.[column];
      if (value === undefined) continue;
      if (column === 'state' && value === 'active') {
        // Active jobs are only in ojs_jobs_lease (migration 009): the literal
        // makes it usable; they are few (the leases held), sorted here.
        where.push("state = 'active'");
        continue;
      }
      params.push(value);
      where.push(`${column} = ?`);
      // Repeats the partial condition of the state indexes (migration 009),
      // which SQLite requires to use them; the bound state is never 'active' here.
      if (column === 'state') where.push("state <> 'active'");
    }
    if (request.afterSeq !== undefined) {
      params.push(request.afterSeq);
      where.push(request.order === 'desc' ? 'seq < ?' : 'seq > ?');
    }
    where.push(...conditions(request.filter, params, range));
    // A merged range must yield the offset's rows too; the outer query skips them.
    params.push(inner ? request.limit + offset : request.limit, inner ? 0 : offset);
    return `SELECT seq, doc FROM ojs_jobs ${whereClause(where)} ORDER BY seq ${direction} LIMIT ? OFFSET ?`;
  };
  const ranges = indexRanges(request.filter);
  if (ranges === undefined || ranges.length === 1) {
    return { sql: page(ranges?.[0], false), params };
  }
  const parts = ranges.map((range) => `SELECT * FROM (${page(range, true)})`);
  params.push(request.limit, offset);
  return {
    // The ranges' pages (each at most limit + offset rows) are merged and sorted here.
    sql: `SELECT seq, doc FROM (${parts.join(' UNION ALL ')})
      ORDER BY seq ${direction} LIMIT ? OFFSET ?`,
    params,
  };
}

/** A count: from the counters (migration 007) when the filter allows, else over the jobs. */
export function countJobsQuery(filter: JobFilter): Query {
  const params: Query['params'] = [];
  const where = conditions(filter, params);
  if (countsByQueueState(filter)) {
    return {
      sql: `SELECT coalesce(sum(n), 0) AS n FROM ojs_job_counts ${whereClause(where)}`,
      params,
    };
  }
  return { sql: `SELECT count(*) AS n FROM ojs_jobs ${whereClause(where)}`, params };
}

export const COUNT_BY_QUEUE =
  'SELECT queue, state, n FROM ojs_job_counts WHERE n <> 0 ORDER BY queue, state';

/**
 * The ids (and unique keys) of up to `limit` jobs a retention pass deletes:
 * finished before the cut-off, of the pass's class, outside workflows.
 */
export function pruneCandidatesQuery(target: PruneTarget, limit: number): Query {
  const params: Query['params'] = [];
  const state = target.retention === 'dead_letter' ? 'discarded' : target.retention;
  params.push(state, target.before);
  const where = ['state = ?', 'finished_at < ?', 'workflow_id IS NULL'];
  if (target.retention === 'discarded') where.push('dead_letter = 0');
  if (target.retention === 'dead_letter') where.push('dead_letter = 1');
  if (target.queues !== undefined) where.push(inList('queue', target.queues, params));
  if (target.exceptQueues !== undefined) {
    where.push(`NOT ${inList('queue', target.exceptQueues, params)}`);
  }
  params.push(limit);
  return {
    sql: `SELECT id, queue, state FROM ojs_jobs WHERE ${where.join(' AND ')} ORDER BY finished_at LIMIT ?`,
    params,
  };
}

/** ? = id. Deletes one pruned job (its unique keys go with RELEASE_UNIQUE_KEYS). */
export const DELETE_PRUNED = 'DELETE FROM ojs_jobs WHERE id = ?';

/** ? = rate key, twice. Active and waiting jobs with the key. */
export const RATE_KEY_COUNTS = `SELECT
    (SELECT count(*) FROM ojs_jobs WHERE rate_key = ? AND state = 'active') AS active,
    (SELECT count(*) FROM ojs_jobs WHERE rate_key = ? AND state = 'available') AS waiting`;

/** ? = rate key. The newest job with the key, for its policy. */
export const RATE_KEY_POLICY = `SELECT doc ->> '$.rate_limit' AS policy FROM ojs_jobs
  WHERE rate_key = ? AND state IN ('available', 'active') ORDER BY seq DESC LIMIT 1`;

export type { RateLimitState };
