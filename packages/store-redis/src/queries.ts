/**
 * Finding jobs on Redis (admin listings, counts): a listing walks the
 * sorted sets core `indexRanges` names, each in seq order from the cursor,
 * reads the documents a page at a time and keeps those core
 * `jobMatchesFilter` admits, then merges the ranges:
 *
 * - (queue, state): the set `qs:<queue>:<state>` (score = seq); for
 *   `available`, the claim index `av:<queue>`, whose score is
 *   (100 - priority) * 2^44 + seq, walked one priority band at a time
 *   (each band is in seq order);
 * - a state alone: that state's set of every queue;
 * - anything else (types, nothing): `all`, every job by seq, filtered.
 *
 * A count that names only queues and states adds up the sizes of the
 * (queue, state) sets, a count of jobs finished since a time counts the
 * finished-time sets (`fin:<queue>:<state>`); any other count walks its
 * ranges.
 */
import {
  countsByQueueState,
  type IndexRange,
  indexRanges,
  JOB_STATES,
  type JobFilter,
  type JobPageRequest,
  type JobRecord,
  type JobState,
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
  /** The lowest score of `key` at or above `min`, or null. */
  firstScore(key: string, min: string): Promise<number | null>;
  /** Sizes of sorted sets. */
  sizes(keys: string[]): Promise<number[]>;
  /** How many members of each set have a score at or above `min`. */
  countFrom(keys: string[], min: number): Promise<number[]>;
  queues(): Promise<string[]>;
  key(...parts: string[]): string;
}

const MIN_PAGE = 100;
const MAX_PAGE = 1000;
/** The width of one priority band of av:<queue> (apply.lua PRIORITY_SPAN). */
export const PRIORITY_SPAN = 2 ** 44;

/** One seq-ordered run of a sorted set: scores base + seq, below base + span. */
interface Source {
  key: string;
  base: number;
  /** Upper bound of the run (exclusive), or undefined for the whole set. */
  span?: number;
}

/** The set holding a queue's jobs in a state. */
export function stateKey(io: QueryIo, queue: string, state: JobState): string {
  return state === 'available' ? io.key('av', queue) : io.key('qs', queue, state);
}

/** The priority bands of av:<queue> that hold jobs (at most 201, one read each). */
async function bands(io: QueryIo, queue: string): Promise<Source[]> {
  const key = io.key('av', queue);
  const found: Source[] = [];
  let min = 0;
  for (;;) {
    const score = await io.firstScore(key, String(min));
    if (score === null) return found;
    const base = Math.floor(score / PRIORITY_SPAN) * PRIORITY_SPAN;
    found.push({ key, base, span: PRIORITY_SPAN });
    min = base + PRIORITY_SPAN;
  }
}

async function sourcesOf(io: QueryIo, range: IndexRange | undefined): Promise<Source[]> {
  if (range?.state !== undefined) {
    const state = range.state;
    const queues = range.queue !== undefined ? [range.queue] : await io.queues();
    if (state === 'available') return (await Promise.all(queues.map((q) => bands(io, q)))).flat();
    return queues.map((q) => ({ key: io.key('qs', q, state), base: 0 }));
  }
  return [{ key: io.key('all'), base: 0 }];
}

/** The distinct runs a filter's ranges walk. */
async function filterSources(io: QueryIo, filter: JobFilter): Promise<Source[]> {
  const ranges: (IndexRange | undefined)[] = indexRanges(filter) ?? [undefined];
  const sources = (await Promise.all(ranges.map((range) => sourcesOf(io, range)))).flat();
  const seen = new Set<string>();
  return sources.filter((s) => {
    const id = `${s.key}@${s.base}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/**
 * Up to `need` matching jobs of one run after `afterSeq`, in `dir` order;
 * with `keep` false only their number (a count keeps no job in memory).
 */
async function walk(
  io: QueryIo,
  source: Source,
  filter: JobFilter,
  dir: 'asc' | 'desc',
  afterSeq: number | undefined,
  need: number,
  keep: boolean,
): Promise<{ jobs: JobRecord[]; matched: number }> {
  const jobs: JobRecord[] = [];
  let matched = 0;
  const page = Math.min(Math.max(need, MIN_PAGE), MAX_PAGE);
  const { key, base, span } = source;
  const low = span === undefined ? '-inf' : String(base);
  const high = span === undefined ? '+inf' : String(base + span - 1);
  let cursor = afterSeq;
  for (;;) {
    const after = cursor === undefined ? undefined : `(${base + cursor}`;
    const read =
      dir === 'asc'
        ? await io.range(key, after ?? low, high, page, dir)
        : await io.range(key, low, after ?? high, page, dir);
    for (const job of read) {
      if (jobMatchesFilter(filter, job)) {
        matched++;
        if (keep) jobs.push(job);
      }
      if (matched >= need) return { jobs, matched };
    }
    if (read.length < page) return { jobs, matched };
    cursor = read[read.length - 1]!.seq;
  }
}

export async function listJobs(io: QueryIo, request: JobPageRequest): Promise<JobRecord[]> {
  const offset = request.offset ?? 0;
  const need = request.limit + offset;
  if (need === 0) return [];
  const sources = await filterSources(io, request.filter);
  const pages = await Promise.all(
    sources.map((source) =>
      walk(io, source, request.filter, request.order, request.afterSeq, need, true),
    ),
  );
  const merged = pages.flatMap((page) => page.jobs);
  const sign = request.order === 'desc' ? -1 : 1;
  merged.sort((a, b) => sign * (a.seq! - b.seq!));
  return merged.slice(offset, offset + request.limit);
}

const FINISHED = new Set<JobState>(['completed', 'cancelled', 'discarded']);

/**
 * True for a throughput count (the dashboard's and the admin stats'):
 * finished states and a finished-since time, perhaps queues, nothing else.
 * The finished-time sets answer it with ZCOUNT.
 */
function finishedSince(
  filter: JobFilter,
): filter is JobFilter & { states: JobState[]; finishedFrom: number } {
  if (filter.finishedFrom === undefined || filter.states === undefined) return false;
  if (!filter.states.every((state) => FINISHED.has(state))) return false;
  return countsByQueueState({ ...filter, finishedFrom: undefined });
}

export async function countJobs(io: QueryIo, filter: JobFilter): Promise<number> {
  if (finishedSince(filter)) {
    const queues = filter.queues ?? (await io.queues());
    const keys = queues.flatMap((q) => filter.states.map((s) => io.key('fin', q, s)));
    const counts = await io.countFrom(keys, filter.finishedFrom);
    return counts.reduce((sum, n) => sum + n, 0);
  }
  if (countsByQueueState(filter)) {
    const queues = filter.queues ?? (await io.queues());
    const states = filter.states ?? JOB_STATES;
    const keys = queues.flatMap((q) => states.map((s) => stateKey(io, q, s)));
    const sizes = await io.sizes(keys);
    return sizes.reduce((sum, n) => sum + n, 0);
  }
  const sources = await filterSources(io, filter);
  const counts = await Promise.all(
    sources.map((source) =>
      walk(io, source, filter, 'asc', undefined, Number.POSITIVE_INFINITY, false),
    ),
  );
  return counts.reduce((sum, c) => sum + c.matched, 0);
}
