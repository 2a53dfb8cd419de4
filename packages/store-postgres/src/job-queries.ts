/**
 * The SQL of finding jobs (admin listings, counts, bulk actions) and of the
 * retention pruner, built from a core JobFilter over the store's schema.
 * Values are always bound parameters ($n); only the shape of the WHERE
 * clause varies.
 *
 * A listing walks the index ranges core `indexRanges` names ((queue, state,
 * seq) / (state, seq): migrations 007 and 014, which leave active jobs to
 * jobs_lease), each in seq order up to the page
 * size, and merges them: the first page is a few index probes. There is no
 * index on seq alone (migration 016) and none on type (see 007): a listing
 * whose ranges do not all fix a state walks one range per state instead
 * (`walkedRanges`), checking the other conditions along each walk, which
 * is quick while they are common.
 */
import {
  countsByQueueState,
  DEFAULT_TENANT,
  type IndexRange,
  indexRanges,
  JOB_STATES,
  type JobFilter,
  type JobPageRequest,
  type PruneTarget,
} from '@ojs/core';
import { jobCounts } from './statements.ts';

export interface Query {
  text: string;
  values: unknown[];
}

class Params {
  readonly values: unknown[] = [];
  add(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }
}

/** The WHERE conditions of a filter; columns an index range fixes by equality are left out. */
function conditions(filter: JobFilter, p: Params, range?: IndexRange): string[] {
  const where: string[] = [];
  if (filter.states !== undefined && range?.state === undefined) {
    where.push(`state = ANY(${p.add(filter.states, '::text[]')})`);
  }
  if (filter.queues !== undefined && range?.queue === undefined) {
    where.push(`queue = ANY(${p.add(filter.queues, '::text[]')})`);
  }
  if (filter.types !== undefined && range?.type === undefined) {
    where.push(`type = ANY(${p.add(filter.types, '::text[]')})`);
  }
  if (filter.typePrefix !== undefined) {
    where.push(`starts_with(type, ${p.add(filter.typePrefix, '::text')})`);
  }
  if (filter.createdFrom !== undefined) {
    where.push(
      `(doc->>'created_at')::timestamptz >= to_timestamp(${p.add(filter.createdFrom, '::double precision')} / 1000.0)`,
    );
  }
  if (filter.createdTo !== undefined) {
    where.push(
      `(doc->>'created_at')::timestamptz < to_timestamp(${p.add(filter.createdTo, '::double precision')} / 1000.0)`,
    );
  }
  if (filter.errorType !== undefined) {
    where.push(`doc->'error'->>'type' = ${p.add(filter.errorType, '::text')}`);
  }
  if (filter.tag !== undefined) where.push(`doc->'tags' ? ${p.add(filter.tag, '::text')}`);
  if (filter.metaKey !== undefined) where.push(`doc->'meta' ? ${p.add(filter.metaKey, '::text')}`);
  if (filter.deadLetter === true) where.push('dead_letter');
  if (filter.finishedFrom !== undefined) {
    where.push(`finished_at >= ${p.add(filter.finishedFrom, '::double precision')}`);
  }
  if (filter.tenant !== undefined) {
    where.push(
      filter.tenant === DEFAULT_TENANT
        ? 'tenant_id IS NULL'
        : `tenant_id = ${p.add(filter.tenant, '::text')}`,
    );
  }
  return where;
}

function whereClause(where: string[]): string {
  return where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
}

/**
 * The ranges a listing walks: core's, when each fixes a state; else one per
 * state the filter allows (no index orders jobs by seq without a state,
 * migration 016), the queue and type conditions checked along each walk.
 */
function walkedRanges(filter: JobFilter): IndexRange[] {
  const ranges = indexRanges(filter);
  if (ranges?.every((range) => range.state !== undefined)) return ranges;
  return (filter.states ?? JOB_STATES).map((state) => ({ state }));
}

/** SELECT seq, doc of one page (see the module comment). */
export function listJobsQuery(schema: string, request: JobPageRequest): Query {
  const p = new Params();
  const direction = request.order === 'desc' ? 'DESC' : 'ASC';
  const offset = request.offset ?? 0;
  const page = (range: IndexRange, inner: boolean) => {
    const where: string[] = [];
    for (const column of ['queue', 'state', 'type'] as const) {
      const value = range[column];
      if (value === undefined) continue;
      if (column === 'state' && value === 'active') {
        // Active jobs are only in jobs_lease (migration 014): they are few
        // (the leases held), ordered here.
        where.push("state = 'active'");
        continue;
      }
      where.push(`${column} = ${p.add(value, '::text')}`);
      // The condition of the partial state indexes (migration 014), so that
      // the planner uses them whatever it is told of the bound state.
      if (column === 'state') where.push("state <> 'active'");
    }
    if (request.afterSeq !== undefined) {
      const after = p.add(request.afterSeq, '::bigint');
      where.push(request.order === 'desc' ? `seq < ${after}` : `seq > ${after}`);
    }
    where.push(...conditions(request.filter, p, range));
    // A merged range must yield the offset's rows too; the outer query skips them.
    const limit = p.add(inner ? request.limit + offset : request.limit, '::integer');
    return `SELECT seq, doc FROM ${schema}.jobs ${whereClause(where)}
      ORDER BY seq ${direction} LIMIT ${limit} OFFSET ${p.add(inner ? 0 : offset, '::integer')}`;
  };
  const ranges = walkedRanges(request.filter);
  if (ranges.length === 1) return { text: page(ranges[0]!, false), values: p.values };
  const parts = ranges.map((range) => `(${page(range, true)})`);
  return {
    text: `SELECT seq, doc FROM (${parts.join(' UNION ALL ')}) AS pages
      ORDER BY seq ${direction} LIMIT ${p.add(request.limit, '::integer')}
      OFFSET ${p.add(offset, '::integer')}`,
    values: p.values,
  };
}

/** A count: from the counters (migration 008) when the filter allows, else over the jobs. */
export function countJobsQuery(schema: string, filter: JobFilter): Query {
  const p = new Params();
  const where = conditions(filter, p);
  if (countsByQueueState(filter)) {
    return {
      text: `SELECT coalesce(sum(n), 0)::bigint AS n FROM ${jobCounts(schema)} c ${whereClause(where)}`,
      values: p.values,
    };
  }
  return {
    text: `SELECT count(*) AS n FROM ${schema}.jobs ${whereClause(where)}`,
    values: p.values,
  };
}

/**
 * One retention pass in one statement: lock up to $limit candidates with
 * SKIP LOCKED (so several processes pruning at once take different rows,
 * and a row re-checked after a concurrent change is skipped if it no longer
 * matches), delete them and release their unique keys.
 */
export function pruneQuery(schema: string, target: PruneTarget, limit: number): Query {
  const p = new Params();
  const state = target.retention === 'dead_letter' ? 'discarded' : target.retention;
  const where = [
    `state = ${p.add(state, '::text')}`,
    `finished_at < ${p.add(target.before, '::double precision')}`,
    'workflow_id IS NULL',
  ];
  if (target.retention === 'discarded') where.push('NOT dead_letter');
  if (target.retention === 'dead_letter') where.push('dead_letter');
  if (target.queues !== undefined) where.push(`queue = ANY(${p.add(target.queues, '::text[]')})`);
  if (target.exceptQueues !== undefined) {
    where.push(`NOT (queue = ANY(${p.add(target.exceptQueues, '::text[]')}))`);
  }
  return {
    text: `WITH doomed AS (
        SELECT id FROM ${schema}.jobs WHERE ${where.join(' AND ')}
         ORDER BY finished_at LIMIT ${p.add(limit, '::integer')} FOR UPDATE SKIP LOCKED
      ), gone AS (
        DELETE FROM ${schema}.jobs AS j USING doomed WHERE j.id = doomed.id RETURNING j.id
      ), released AS (
        DELETE FROM ${schema}.unique_locks AS u USING gone WHERE u.job_id = gone.id
      )
      SELECT count(*) AS n FROM gone`,
    values: p.values,
  };
}
