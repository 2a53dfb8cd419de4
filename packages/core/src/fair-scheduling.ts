/**
 * Fair scheduling (`urn:ojs:ext:fair-scheduling`): which queue a multi-queue
 * FETCH serves, decided here as pure functions; the engine keeps the
 * per-pool dispatch counts between fetches and the stores apply the answer
 * (ClaimRequest.takes) inside their claim.
 *
 * - A plain fetch (no pool, no strategy) follows C17: its first job comes
 *   from the first non-empty queue (Level 0's strict order), the rest of a
 *   `count > 1` fetch is interleaved across the queues, keeping no state.
 * - A pool (or a fetch's explicit `strategy` / `weights`) is served by
 *   deficit: each slot goes to the queue furthest below its share of the
 *   dispatches counted so far, which is round-robin for equal weights and
 *   proportional for weighted ones. A queue that ran dry forgets its deficit
 *   (deficit round-robin), so an idle queue builds no burst.
 * - The starvation guard raises every queue's share to at least
 *   `min_dispatch_ratio`.
 */
import { invalidRequest } from './errors.ts';
import { isObject } from './is-object.ts';
import { validateQueueName } from './names.ts';

export const SCHEDULING_STRATEGIES = ['strict', 'round-robin', 'weighted', 'least-loaded'] as const;
export type SchedulingStrategy = (typeof SCHEDULING_STRATEGIES)[number];

export interface StarvationGuard {
  enabled: boolean;
  /** ISO 8601 duration of the window the ratio is counted over. */
  rotation_interval: string;
  min_dispatch_ratio: number;
}

export const DEFAULT_STARVATION_GUARD: StarvationGuard = {
  enabled: false,
  rotation_interval: 'PT30S',
  min_dispatch_ratio: 0.05,
};

/** A pool as stored (the spec's form, C15): queues in order, weights by queue. */
export interface PoolConfig {
  name: string;
  queues: string[];
  /** Per-worker concurrency: a least-loaded pool serves a worker only below it. */
  concurrency?: number;
  strategy: SchedulingStrategy;
  weights?: Record<string, number>;
  /** Its queues' jobs go only to workers of this pool. */
  isolated?: boolean;
  starvation_guard?: StarvationGuard;
}

/** Part of a multi-queue claim: take up to `count` jobs of `queue`. */
export interface QueueTake {
  queue: string;
  count: number;
}

const MAX_POOL_QUEUES = 100;
const MAX_WEIGHT = 1_000_000;

function positiveWeight(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_WEIGHT) {
    throw invalidRequest(`${field} must be an integer between 1 and ${MAX_WEIGHT}.`, { field });
  }
  return value;
}

function parseGuard(value: unknown): StarvationGuard | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) {
    throw invalidRequest('starvation_guard must be an object.', { field: 'starvation_guard' });
  }
  const guard = { ...DEFAULT_STARVATION_GUARD };
  if (value.enabled !== undefined) {
    if (typeof value.enabled !== 'boolean') {
      throw invalidRequest('starvation_guard.enabled must be a boolean.', {
        field: 'starvation_guard.enabled',
      });
    }
    guard.enabled = value.enabled;
  }
  if (value.rotation_interval !== undefined) {
    if (
      typeof value.rotation_interval !== 'string' ||
      parseWindowMs(value.rotation_interval) <= 0
    ) {
      throw invalidRequest('starvation_guard.rotation_interval must be an ISO 8601 duration.', {
        field: 'starvation_guard.rotation_interval',
      });
    }
    guard.rotation_interval = value.rotation_interval;
  }
  if (value.min_dispatch_ratio !== undefined) {
    const ratio = value.min_dispatch_ratio;
    if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 1)) {
      throw invalidRequest('starvation_guard.min_dispatch_ratio must be a number from 0 to 1.', {
        field: 'starvation_guard.min_dispatch_ratio',
      });
    }
    guard.min_dispatch_ratio = ratio;
  }
  return guard;
}

/** Seconds-to-days ISO 8601 durations (PT30S, PT1M, P1D); 0 when not one. */
export function parseWindowMs(text: string): number {
  const match = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text);
  if (match === null || text === 'P' || text.endsWith('T')) return 0;
  const [, d, h, m, s] = match;
  return (
    ((Number(d ?? 0) * 24 + Number(h ?? 0)) * 60 + Number(m ?? 0)) * 60_000 +
    Math.round(Number(s ?? 0) * 1000)
  );
}

/**
 * A pool from a PUT body (C15): `queues` as a list with `weights{}`, or the
 * suite's `queues:{q:{weight}}`; stored in the list form. A body `name`
 * other than the path's is refused.
 */
export function parsePool(name: string, body: unknown): PoolConfig {
  validateQueueName(name, 'name');
  if (!isObject(body)) throw invalidRequest('The pool must be a JSON object.');
  if (body.name !== undefined && body.name !== name) {
    throw invalidRequest(
      `The body's name '${String(body.name)}' differs from the path's '${name}'.`,
      {
        field: 'name',
      },
    );
  }
  let queues: string[];
  const weights: Record<string, number> = {};
  if (Array.isArray(body.queues)) {
    queues = body.queues.map((q, i) => {
      if (typeof q !== 'string') {
        throw invalidRequest(`queues[${i}] must be a queue name.`, { field: `queues[${i}]` });
      }
      return q;
    });
    if (body.weights !== undefined) {
      if (!isObject(body.weights)) {
        throw invalidRequest('weights must be an object of queue: weight.', { field: 'weights' });
      }
      for (const [queue, weight] of Object.entries(body.weights)) {
        if (!queues.includes(queue)) {
          throw invalidRequest(`weights names '${queue}', which is not one of the pool's queues.`, {
            field: `weights.${queue}`,
          });
        }
        weights[queue] = positiveWeight(weight, `weights.${queue}`);
      }
    }
  } else if (isObject(body.queues)) {
    queues = Object.keys(body.queues);
    for (const [queue, spec] of Object.entries(body.queues)) {
      if (spec === null || spec === undefined) continue;
      if (!isObject(spec)) {
        throw invalidRequest(`queues.${queue} must be an object like {"weight": 1}.`, {
          field: `queues.${queue}`,
        });
      }
      if (spec.weight !== undefined) {
        weights[queue] = positiveWeight(spec.weight, `queues.${queue}.weight`);
      }
    }
  } else {
    throw invalidRequest('queues is required: a list of queue names, or {queue: {weight}}.', {
      field: 'queues',
    });
  }
  if (queues.length === 0 || queues.length > MAX_POOL_QUEUES) {
    throw invalidRequest(`A pool has 1 to ${MAX_POOL_QUEUES} queues.`, { field: 'queues' });
  }
  if (new Set(queues).size !== queues.length) {
    throw invalidRequest('A pool names each queue once.', { field: 'queues' });
  }
  for (const queue of queues) validateQueueName(queue, 'queues[]');
  const strategy = body.strategy ?? 'round-robin';
  if (!(SCHEDULING_STRATEGIES as readonly unknown[]).includes(strategy)) {
    throw invalidRequest(`strategy must be one of ${SCHEDULING_STRATEGIES.join(', ')}.`, {
      field: 'strategy',
    });
  }
  const pool: PoolConfig = { name, queues, strategy: strategy as SchedulingStrategy };
  if (body.concurrency !== undefined && body.concurrency !== null) {
    pool.concurrency = positiveWeight(body.concurrency, 'concurrency');
  }
  if (Object.keys(weights).length > 0) pool.weights = weights;
  if (body.isolated !== undefined) {
    if (typeof body.isolated !== 'boolean') {
      throw invalidRequest('isolated must be a boolean.', { field: 'isolated' });
    }
    pool.isolated = body.isolated;
  }
  const guard = parseGuard(body.starvation_guard);
  if (guard !== undefined) pool.starvation_guard = guard;
  return pool;
}

/** A fetch's own `strategy` / `weights` (used when no pool decides). */
export function parseFetchScheduling(
  strategy: unknown,
  weights: unknown,
): { strategy?: SchedulingStrategy; weights?: Record<string, number> } {
  const out: { strategy?: SchedulingStrategy; weights?: Record<string, number> } = {};
  if (strategy !== undefined && strategy !== null) {
    if (!(SCHEDULING_STRATEGIES as readonly unknown[]).includes(strategy)) {
      throw invalidRequest(`strategy must be one of ${SCHEDULING_STRATEGIES.join(', ')}.`, {
        field: 'strategy',
      });
    }
    out.strategy = strategy as SchedulingStrategy;
  }
  if (weights !== undefined && weights !== null) {
    if (!isObject(weights)) {
      throw invalidRequest('weights must be an object of queue: weight.', { field: 'weights' });
    }
    out.weights = {};
    for (const [queue, weight] of Object.entries(weights)) {
      out.weights[queue] = positiveWeight(weight, `weights.${queue}`);
    }
  }
  return out;
}

/**
 * C17, stateless: the first slot to the first queue, the rest of `count`
 * dealt one per queue in turn starting after it. The store claims these
 * takes in order and fills any shortfall from the queues in order, so the
 * first job still comes from the first non-empty queue.
 */
export function interleaveTakes(queues: readonly string[], count: number): QueueTake[] {
  const n = queues.length;
  const takes = queues.map((queue) => ({ queue, count: 0 }));
  for (let slot = 0; slot < count; slot++) takes[slot % n]!.count++;
  return takes.filter((t) => t.count > 0);
}

/**
 * Each queue's share of dispatches: its weight (1 when unset) over the
 * total, raised to the guard's floor when the guard is on (the floors'
 * surplus taken from the others in proportion).
 */
export function dispatchShares(
  queues: readonly string[],
  weights: Record<string, number> | undefined,
  minRatio = 0,
): Map<string, number> {
  const raw = queues.map((q) => weights?.[q] ?? 1);
  const total = raw.reduce((a, b) => a + b, 0);
  const shares = new Map<string, number>();
  for (const [i, q] of queues.entries()) shares.set(q, raw[i]! / total);
  const floor = Math.min(minRatio, 1 / queues.length);
  if (floor <= 0) return shares;
  const low = queues.filter((q) => shares.get(q)! < floor);
  if (low.length === 0) return shares;
  const lifted = floor * low.length;
  const restTotal = queues.filter((q) => !low.includes(q)).reduce((a, q) => a + shares.get(q)!, 0);
  for (const q of queues) {
    shares.set(q, low.includes(q) ? floor : (shares.get(q)! / restTotal) * (1 - lifted));
  }
  return shares;
}

/**
 * Deficit dealing of `count` slots: each goes to the queue whose
 * dispatches so far (`dispatched`, plus the slots dealt here) are furthest
 * below its share. Ties go to the earlier queue, so equal shares deal one
 * per queue per cycle (round-robin).
 */
export function weightedTakes(
  queues: readonly string[],
  count: number,
  shares: ReadonlyMap<string, number>,
  dispatched: ReadonlyMap<string, number>,
): QueueTake[] {
  const counts = new Map<string, number>();
  let total = 0;
  for (const q of queues) total += dispatched.get(q) ?? 0;
  const dealt = new Map<string, number>();
  for (let slot = 0; slot < count; slot++) {
    let best: string | undefined;
    let bestDeficit = Number.NEGATIVE_INFINITY;
    for (const q of queues) {
      const have = (dispatched.get(q) ?? 0) + (dealt.get(q) ?? 0);
      const deficit = shares.get(q)! * (total + 1) - have;
      if (deficit > bestDeficit + 1e-9) {
        best = q;
        bestDeficit = deficit;
      }
    }
    dealt.set(best!, (dealt.get(best!) ?? 0) + 1);
    counts.set(best!, (counts.get(best!) ?? 0) + 1);
    total++;
  }
  return queues.filter((q) => counts.has(q)).map((queue) => ({ queue, count: counts.get(queue)! }));
}

/**
 * Least-loaded: the whole fetch from the deepest queue (most available
 * jobs); the store fills a shortfall from the others in order.
 */
export function leastLoadedTakes(
  queues: readonly string[],
  count: number,
  depths: ReadonlyMap<string, number>,
): QueueTake[] {
  let deepest = queues[0]!;
  for (const q of queues) if ((depths.get(q) ?? 0) > (depths.get(deepest) ?? 0)) deepest = q;
  return [{ queue: deepest, count }];
}

/**
 * The dispatch counts carried to the next fetch: the claim's, added; a
 * queue that gave fewer than its take had nothing more, so it forgets its
 * deficit (it is set to its share of the total), and the counts are halved
 * past a bound so old history weighs less than recent.
 */
export function carryDispatched(
  dispatched: Map<string, number>,
  takes: readonly QueueTake[],
  claimedByQueue: ReadonlyMap<string, number>,
  shares: ReadonlyMap<string, number>,
): void {
  for (const [queue, n] of claimedByQueue) {
    dispatched.set(queue, (dispatched.get(queue) ?? 0) + n);
  }
  let total = 0;
  for (const q of shares.keys()) total += dispatched.get(q) ?? 0;
  for (const take of takes) {
    const got = claimedByQueue.get(take.queue) ?? 0;
    if (got >= take.count) continue;
    const fair = shares.get(take.queue)! * total;
    if ((dispatched.get(take.queue) ?? 0) < fair) dispatched.set(take.queue, fair);
  }
  if (total > 1_000_000) {
    for (const [q, n] of dispatched) dispatched.set(q, n / 2);
  }
}

/**
 * The answer's order for a multi-queue claim: one job per queue in turn,
 * starting with the first queue that gave any (each queue's jobs keep
 * their claim order).
 */
export function interleaveByQueue<T extends { queue: string }>(
  jobs: readonly T[],
  queues: readonly string[],
): T[] {
  const byQueue = new Map<string, T[]>();
  for (const job of jobs) {
    let list = byQueue.get(job.queue);
    if (list === undefined) {
      list = [];
      byQueue.set(job.queue, list);
    }
    list.push(job);
  }
  const lists = queues.map((q) => byQueue.get(q)).filter((l): l is T[] => l !== undefined);
  for (const [queue, list] of byQueue) if (!queues.includes(queue)) lists.push(list);
  const out: T[] = [];
  for (let i = 0; out.length < jobs.length; i++) {
    for (const list of lists) if (i < list.length) out.push(list[i]!);
  }
  return out;
}

/**
 * The per-queue claims of a claim with takes, for the stores: yields each
 * (queue, wanted) and is sent back how many that queue gave. The takes
 * first, then the rest of `count` from `queues` in order, skipping a queue
 * a take found short (it has nothing more this claim).
 */
export function* claimSteps(
  takes: readonly QueueTake[],
  queues: readonly string[],
  count: number,
): Generator<QueueTake, void, number> {
  let claimed = 0;
  const short = new Set<string>();
  for (const take of takes) {
    const wanted = Math.min(take.count, count - claimed);
    if (wanted <= 0) break;
    const got = yield { queue: take.queue, count: wanted };
    claimed += got;
    if (got < wanted) short.add(take.queue);
  }
  for (const queue of queues) {
    if (claimed >= count) return;
    if (short.has(queue)) continue;
    claimed += yield { queue, count: count - claimed };
  }
}
