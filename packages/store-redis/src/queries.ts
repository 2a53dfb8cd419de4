/**
 * Finding jobs on Redis (admin listings, counts): a listing walks the
 * sorted sets core `indexRanges` names (per queue and state, per state, per
 * type, or every job), each in seq order from the cursor, reads the
 * documents a page at a time and keeps those core `jobMatchesFilter`
 * admits, then merges the ranges. A count that names only queues and
 * states adds up the sizes of the (queue, state) sets; any other count
 * walks its ranges.
 */
import {
  countsByQueueState,
  type IndexRange,
  indexRanges,
  JOB_STATES,
  type JobFilter,
  type JobPageRequest,
  type JobRecord,
  jobMatchesFilter,
} from '@ojs/core';

export interface QueryIo {
  /** The jobs of sorted set `key` with scores in [min, max] (Redis syntax), at most `limit`. */
  range(
    key: string,
    min: string,
    max: string,
    limit: number,
    dir: 'asc' | 'desc',
  ): Promise<JobRecord[]>;
  /** Sizes of sorted sets. */
  sizes(keys: string[]): Promise<number[]>;
  queues(): Promise<string[]>;
  key(...parts: string[]): string;
}

const MIN_PAGE = 100;
const MAX_PAGE = 1000;

function rangeKey(io: QueryIo, range: IndexRange | undefined): string {
  if (range?.queue !== undefined && range.state !== undefined) {
    return io.key('qs', range.queue, range.state);
  }
  if (range?.state !== undefined) return io.key('st', range.state);
  if (range?.type !== undefined) return io.key('ty', range.type);
  return io.key('all');
}

/** Up to `need` matching jobs of one range after `afterSeq`, in `dir` order. */
async function walk(
  io: QueryIo,
  key: string,
  filter: JobFilter,
  dir: 'asc' | 'desc',
  afterSeq: number | undefined,
  need: number,
): Promise<JobRecord[]> {
  const out: JobRecord[] = [];
  const page = Math.min(Math.max(need, MIN_PAGE), MAX_PAGE);
  let cursor = afterSeq;
  for (;;) {
    const after = cursor === undefined ? undefined : `(${cursor}`;
    const jobs =
      dir === 'asc'
        ? await io.range(key, after ?? '-inf', '+inf', page, dir)
        : await io.range(key, '-inf', after ?? '+inf', page, dir);
    for (const job of jobs) {
      if (jobMatchesFilter(filter, job)) out.push(job);
      if (out.length >= need) return out;
    }
    if (jobs.length < page) return out;
    cursor = jobs[jobs.length - 1]!.seq;
  }
}

export async function listJobs(io: QueryIo, request: JobPageRequest): Promise<JobRecord[]> {
  const offset = request.offset ?? 0;
  const need = request.limit + offset;
  if (need === 0) return [];
  const ranges: (IndexRange | undefined)[] = indexRanges(request.filter) ?? [undefined];
  const pages = await Promise.all(
    ranges.map((range) =>
      walk(io, rangeKey(io, range), request.filter, request.order, request.afterSeq, need),
    ),
  );
  const merged = pages.flat();
  const sign = request.order === 'desc' ? -1 : 1;
  merged.sort((a, b) => sign * (a.seq! - b.seq!));
  return merged.slice(offset, offset + request.limit);
}

export async function countJobs(io: QueryIo, filter: JobFilter): Promise<number> {
  if (countsByQueueState(filter)) {
    const queues = filter.queues ?? (await io.queues());
    const states = filter.states ?? JOB_STATES;
    const keys = queues.flatMap((q) => states.map((s) => io.key('qs', q, s)));
    const sizes = await io.sizes(keys);
    return sizes.reduce((sum, n) => sum + n, 0);
  }
  const ranges: (IndexRange | undefined)[] = indexRanges(filter) ?? [undefined];
  const pages = await Promise.all(
    ranges.map((range) =>
      walk(io, rangeKey(io, range), filter, 'asc', undefined, Number.POSITIVE_INFINITY),
    ),
  );
  return pages.reduce((sum, jobs) => sum + jobs.length, 0);
}
