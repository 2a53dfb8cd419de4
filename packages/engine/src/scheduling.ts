/**
 * Fair scheduling (`urn:ojs:ext:fair-scheduling`, decision 0103): pools as
 * settings documents every server process sees (read through the engine's
 * short settings cache, written guarded on rev), the routing of a FETCH
 * (isolation, the pool's or the fetch's strategy) into the claim's queues
 * and takes (core fair-scheduling.ts decides), the per-pool dispatch counts
 * the weighted and round-robin strategies carry between fetches, and the
 * one-minute dispatch window of the stats route (each process flushes its
 * window to a settings document of its own, so the stats sum every
 * process's dispatches).
 *
 * A server with no pools pays one cached settings read per multi-queue
 * fetch; single-queue and count-1 fetches are claimed exactly as before;
 * a dispatching process writes one small document every FLUSH_MS. The
 * carried dispatch counts are this process's: with several server
 * processes each deals its own fetches in proportion, so the sum is
 * proportional too.
 */
import {
  carryDispatched,
  conflict,
  dispatchShares,
  interleaveTakes,
  type JobRecord,
  leastLoadedTakes,
  makeEvent,
  notFound,
  type PoolConfig,
  parsePool,
  parseWindowMs,
  type QueueTake,
  type SchedulingStrategy,
  type SettingRecord,
  uuidv7,
  validateQueueName,
  weightedTakes,
} from '@ojs/core';
import type { EngineContext } from './context.ts';
import type { JobObserver } from './observability/lifecycle.ts';
import { WORKER_NAMESPACE, type WorkerRecord, type WorkerRegistry } from './workers.ts';

export const POOL_NAMESPACE = 'scheduling-pool';
/** Each server process's dispatch window, one document per process (the stats route sums them). */
export const DISPATCH_NAMESPACE = 'scheduling-dispatch';
/** A process flushes its window at most this often, and within this long of a dispatch. */
const FLUSH_MS = 2000;
/** Windows of processes silent this long are deleted by the stats route. */
const STALE_WINDOW_MS = 10 * 60_000;
/** The stats window (C16: `window: "PT1M"`). */
const WINDOW_MS = 60_000;
const MAX_TRIES = 20;
/** Dispatch counts kept for explicit fetch strategies (not pools): bounded. */
const MAX_FETCH_POLICIES = 1000;

export interface SchedulingContext extends EngineContext {
  readonly workers: WorkerRegistry;
}

/** What a FETCH asks of the scheduler. */
export interface ScheduleRequest {
  queues: string[];
  count: number;
  workerId?: string;
  /** The worker's pool (a fetch's `pool`, else its registration's). */
  pool?: string;
  strategy?: SchedulingStrategy;
  weights?: Record<string, number>;
}

/** The claim the scheduler decided: its queues (isolation applied) and takes. */
export interface SchedulePlan {
  queues: string[];
  count: number;
  takes?: QueueTake[];
  /** Carried dispatch counts to update after the claim (weighted / round-robin). */
  policy?: DispatchPolicy;
}

interface DispatchPolicy {
  key: string;
  pool?: PoolConfig;
  shares: Map<string, number>;
  dispatched: Map<string, number>;
  takes: QueueTake[];
}

export interface PoolView extends PoolConfig {
  active_workers: number;
  active_jobs: number;
}

export interface QueueDispatchStats {
  name: string;
  dispatch_count_1m: number;
  dispatch_ratio_1m: number;
  avg_wait_ms: number;
  active_jobs: number;
}

/** One queue's dispatches in one second: count, summed wait (ms) of first attempts, their number. */
type Tally = [count: number, waitMs: number, waited: number];

/** One second of dispatches, as kept and as flushed to the shared document. */
interface Bucket {
  s: number;
  q: Record<string, Tally>;
}

/**
 * Jobs dispatched per queue over the last minute, by second (a job
 * observer). `changed` is told of each new dispatch, so the scheduler can
 * flush the window for the other server processes.
 */
export class DispatchWindow implements JobObserver {
  #buckets: Bucket[] = [];
  readonly #now: () => number;
  changed: (() => void) | undefined;

  constructor(now: () => number) {
    this.#now = now;
  }

  started(jobs: readonly JobRecord[]): void {
    const second = Math.floor(this.#now() / 1000);
    let bucket = this.#buckets.at(-1);
    if (bucket === undefined || bucket.s !== second) {
      bucket = { s: second, q: {} };
      this.#buckets.push(bucket);
      while (this.#buckets[0]!.s <= second - WINDOW_MS / 1000) this.#buckets.shift();
    }
    for (const job of jobs) {
      let tally = bucket.q[job.queue];
      if (tally === undefined) {
        tally = [0, 0, 0];
        bucket.q[job.queue] = tally;
      }
      tally[0]++;
      const from = Date.parse(job.scheduled_at ?? job.enqueued_at ?? '');
      const to = Date.parse(job.started_at ?? '');
      if (job.attempt === 1 && Number.isFinite(from) && Number.isFinite(to)) {
        tally[1] += Math.max(0, to - from);
        tally[2]++;
      }
    }
    this.changed?.();
  }

  /** The buckets still in the window. */
  snapshot(): Bucket[] {
    const since = Math.floor(this.#now() / 1000) - WINDOW_MS / 1000;
    this.#buckets = this.#buckets.filter((b) => b.s > since);
    return this.#buckets;
  }
}

/** Per queue over the window: dispatches and summed wait, from several processes' buckets. */
function sumBuckets(lists: readonly Bucket[][], nowMs: number): Map<string, Tally> {
  const since = Math.floor(nowMs / 1000) - WINDOW_MS / 1000;
  const totals = new Map<string, Tally>();
  for (const buckets of lists) {
    for (const bucket of buckets) {
      if (bucket.s <= since) continue;
      for (const [queue, [count, waitMs, waited]] of Object.entries(bucket.q)) {
        const total = totals.get(queue) ?? [0, 0, 0];
        totals.set(queue, [total[0] + count, total[1] + waitMs, total[2] + waited]);
      }
    }
  }
  return totals;
}

export class FairScheduler {
  readonly #engine: SchedulingContext;
  readonly window: DispatchWindow;
  /** Carried dispatch counts, by pool name (or `fetch:` and the fetch's policy). */
  readonly #dispatched = new Map<string, Map<string, number>>();
  /** When each (pool, queue) last raised scheduling.queue_starved. */
  readonly #starvedAt = new Map<string, number>();
  /** This process's key among the dispatch documents. */
  readonly #processKey: string;
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #flushedRev: number | null = null;
  #stopped = false;

  constructor(engine: SchedulingContext) {
    this.#engine = engine;
    this.window = new DispatchWindow(() => engine.now());
    this.#processKey = uuidv7(Date.now());
    this.window.changed = () => this.#scheduleFlush();
    engine.observers.add(this.window);
  }

  /** Ends the pending flush (engine stop). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
  }

  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined || this.#stopped) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      this.#flush().catch((error: unknown) => {
        this.#engine.errors.failed('scheduling stats flush', error);
      });
    }, FLUSH_MS);
    this.#flushTimer.unref?.();
  }

  /** Writes this process's window to its document (it alone writes that key). */
  async #flush(): Promise<void> {
    const { store } = this.#engine;
    const now = this.#engine.now();
    const value = { at: now, buckets: this.window.snapshot() } as unknown as Record<
      string,
      unknown
    >;
    for (let tries = 0; tries < 2; tries++) {
      const written = await store.putSetting(
        DISPATCH_NAMESPACE,
        this.#processKey,
        value,
        this.#flushedRev,
        now,
      );
      if (written !== null) {
        this.#flushedRev = written.rev;
        return;
      }
      // Removed as stale by another process's stats read, or a first write lost: read the rev again.
      this.#flushedRev =
        (await store.getSetting(DISPATCH_NAMESPACE, this.#processKey))?.rev ?? null;
    }
  }

  // ------------------------------------------------------------ pools

  /** Every pool (cached: a write through another process is seen within the cache's TTL). */
  async pools(): Promise<PoolConfig[]> {
    const records = await this.#engine.settings.list(POOL_NAMESPACE, '');
    return records.map((r: SettingRecord) => r.value as unknown as PoolConfig);
  }

  async getPool(name: string): Promise<PoolConfig> {
    const record = await this.#engine.store.getSetting(POOL_NAMESPACE, name);
    if (record === null) throw notFound('pool', name);
    return record.value as unknown as PoolConfig;
  }

  /** Upsert (C15): both body forms, stored in the spec's form. */
  async putPool(name: string, body: unknown): Promise<{ pool: PoolConfig; created: boolean }> {
    const pool = parsePool(name, body);
    const { store, settings } = this.#engine;
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const existing = await store.getSetting(POOL_NAMESPACE, name);
      const value = pool as unknown as Record<string, unknown>;
      const now = this.#engine.now();
      if (
        (await store.putSetting(POOL_NAMESPACE, name, value, existing?.rev ?? null, now)) !== null
      ) {
        settings.invalidate(POOL_NAMESPACE);
        this.#dispatched.delete(name);
        return { pool, created: existing === null };
      }
    }
    throw conflict(`Pool '${name}' is being updated too fast; retry.`, { pool: name });
  }

  async deletePool(name: string): Promise<void> {
    validateQueueName(name, 'name');
    if (!(await this.#engine.store.deleteSetting(POOL_NAMESPACE, name)))
      throw notFound('pool', name);
    this.#engine.settings.invalidate(POOL_NAMESPACE);
    this.#dispatched.delete(name);
  }

  /** Pools with their live workers (draining and stale ones left out) and active jobs. */
  async listPools(): Promise<PoolView[]> {
    const [records, workers, counts] = await Promise.all([
      this.#engine.store.listSettings(POOL_NAMESPACE),
      this.#engine.workers.list(),
      this.#activeByQueue(),
    ]);
    const registered = await this.#registeredPools();
    return records.map((record) => {
      const pool = record.value as unknown as PoolConfig;
      const activeWorkers = workers.filter(
        (w) =>
          (w.pool ?? registered.get(w.id)) === pool.name &&
          this.#engine.workers.displayState(w) === 'running' &&
          w.directive === undefined,
      ).length;
      const activeJobs = pool.queues.reduce((sum, q) => sum + (counts.get(q) ?? 0), 0);
      return { ...pool, active_workers: activeWorkers, active_jobs: activeJobs };
    });
  }

  /** Pools named in workers' registrations (POST /workers/register `pool`). */
  async #registeredPools(): Promise<Map<string, string>> {
    const records = await this.#engine.store.listSettings('worker');
    const pools = new Map<string, string>();
    for (const r of records) if (typeof r.value.pool === 'string') pools.set(r.key, r.value.pool);
    return pools;
  }

  async #activeByQueue(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const row of await this.#engine.store.countJobsByQueue()) {
      if (row.state === 'active') counts.set(row.queue, row.count);
    }
    return counts;
  }

  async #availableByQueue(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const row of await this.#engine.store.countJobsByQueue()) {
      if (row.state === 'available') counts.set(row.queue, row.count);
    }
    return counts;
  }

  /**
   * C16: `{queues:[…], window:"PT1M"}`: this process's dispatches as they
   * are, the other processes' as of their last flush (at most FLUSH_MS
   * behind). Windows of processes silent for STALE_WINDOW_MS are deleted.
   */
  async stats(): Promise<{ queues: QueueDispatchStats[]; window: string }> {
    const { store } = this.#engine;
    const now = this.#engine.now();
    const [docs, active] = await Promise.all([
      store.listSettings(DISPATCH_NAMESPACE),
      this.#activeByQueue(),
    ]);
    const lists: Bucket[][] = [this.window.snapshot()];
    for (const doc of docs) {
      if (doc.key === this.#processKey) continue;
      const at = doc.value.at as number;
      if (now - at > STALE_WINDOW_MS) {
        await store.deleteSetting(DISPATCH_NAMESPACE, doc.key);
        continue;
      }
      if (Array.isArray(doc.value.buckets)) lists.push(doc.value.buckets as Bucket[]);
    }
    const totals = sumBuckets(lists, now);
    const all = [...totals.values()].reduce((sum, t) => sum + t[0], 0);
    const names = [...new Set([...totals.keys(), ...active.keys()])].sort();
    return {
      queues: names.map((name) => {
        const [count, waitMs, waited] = totals.get(name) ?? [0, 0, 0];
        return {
          name,
          dispatch_count_1m: count,
          dispatch_ratio_1m: all === 0 ? 0 : count / all,
          avg_wait_ms: waited === 0 ? 0 : Math.round(waitMs / waited),
          active_jobs: active.get(name) ?? 0,
        };
      }),
      window: 'PT1M',
    };
  }

  // ------------------------------------------------------------ FETCH

  /** The worker's pool: the fetch's, else its registration's (cached read). */
  async #workerPool(request: ScheduleRequest): Promise<string | undefined> {
    if (request.pool !== undefined || request.workerId === undefined) return request.pool;
    const record = await this.#engine.settings.get(WORKER_NAMESPACE, request.workerId);
    const reported = (record?.value as unknown as WorkerRecord | undefined)?.pool;
    if (reported !== undefined) return reported;
    const registered = await this.#engine.settings.get('worker', request.workerId);
    return typeof registered?.value.pool === 'string' ? registered.value.pool : undefined;
  }

  /**
   * The claim of a FETCH: isolation (an isolated pool's queues only for its
   * own workers), then the pool's strategy (config wins over the fetch's),
   * else the fetch's own strategy, else C17's stateless interleave.
   */
  async plan(request: ScheduleRequest): Promise<SchedulePlan> {
    const pools = await this.pools();
    let queues = request.queues;
    let pool: PoolConfig | undefined;
    // A fetch of a pool's queues (none named) needs the pool to exist.
    if (queues.length === 0 && !pools.some((p) => p.name === request.pool)) {
      throw notFound('pool', request.pool ?? '');
    }
    if (pools.length > 0) {
      const name = await this.#workerPool(request);
      pool = name === undefined ? undefined : pools.find((p) => p.name === name);
      const isolated = new Set<string>();
      for (const p of pools) {
        if (p.isolated && p.name !== pool?.name) for (const q of p.queues) isolated.add(q);
      }
      if (pool?.isolated) for (const q of pool.queues) isolated.delete(q);
      if (queues.length === 0 && pool !== undefined) queues = pool.queues;
      if (isolated.size > 0) queues = queues.filter((q) => !isolated.has(q));
    }
    const count = await this.#count(request, pool);
    const plan: SchedulePlan = { queues, count };
    if (queues.length < 2 || count < 1) return plan;
    const strategy = pool?.strategy ?? request.strategy;
    const weights = pool?.weights ?? request.weights;
    if (strategy === 'strict') return plan;
    if (strategy === 'least-loaded') {
      plan.takes = leastLoadedTakes(queues, count, await this.#availableByQueue());
      return plan;
    }
    if (strategy === undefined && weights === undefined) {
      if (count > 1) plan.takes = interleaveTakes(queues, count);
      return plan;
    }
    const guard = pool?.starvation_guard;
    const shares = dispatchShares(
      queues,
      strategy === 'round-robin' ? undefined : weights,
      guard?.enabled ? guard.min_dispatch_ratio : 0,
    );
    const key =
      pool !== undefined ? pool.name : `fetch:${JSON.stringify([queues, strategy, weights])}`;
    let dispatched = this.#dispatched.get(key);
    if (dispatched === undefined) {
      if (this.#dispatched.size >= MAX_FETCH_POLICIES) this.#dispatched.clear();
      dispatched = new Map();
      this.#dispatched.set(key, dispatched);
    }
    plan.takes = weightedTakes(queues, count, shares, dispatched);
    plan.policy = { key, pool, shares, dispatched, takes: plan.takes };
    return plan;
  }

  /** Least-loaded pools serve a worker only below the pool's concurrency (its reported active jobs). */
  async #count(request: ScheduleRequest, pool: PoolConfig | undefined): Promise<number> {
    if (pool?.strategy !== 'least-loaded' || pool.concurrency === undefined) return request.count;
    if (request.workerId === undefined) return Math.min(request.count, pool.concurrency);
    const record = await this.#engine.settings.get(WORKER_NAMESPACE, request.workerId);
    const active = (record?.value as unknown as WorkerRecord | undefined)?.active_jobs ?? 0;
    return Math.max(0, Math.min(request.count, pool.concurrency - active));
  }

  /** After the claim: carry the dispatch counts; the starvation guard's event. */
  record(plan: SchedulePlan, jobs: readonly JobRecord[]): void {
    const policy = plan.policy;
    if (policy === undefined) return;
    const byQueue = new Map<string, number>();
    for (const job of jobs) byQueue.set(job.queue, (byQueue.get(job.queue) ?? 0) + 1);
    carryDispatched(policy.dispatched, policy.takes, byQueue, policy.shares);
    const guard = policy.pool?.starvation_guard;
    if (!guard?.enabled || jobs.length === 0) return;
    const weights = policy.pool!.weights;
    const raw = dispatchShares([...policy.shares.keys()], weights);
    const now = this.#engine.now();
    const intervalMs = parseWindowMs(guard.rotation_interval) || 30_000;
    const events = [];
    for (const [queue, n] of byQueue) {
      if (raw.get(queue)! >= guard.min_dispatch_ratio || n === 0) continue;
      const starvedKey = `${policy.key}\u0000${queue}`;
      if (now - (this.#starvedAt.get(starvedKey) ?? Number.NEGATIVE_INFINITY) < intervalMs)
        continue;
      this.#starvedAt.set(starvedKey, now);
      events.push(
        makeEvent(
          'scheduling.queue_starved',
          queue,
          {
            pool: policy.pool!.name,
            queue,
            weight_ratio: raw.get(queue),
            min_dispatch_ratio: guard.min_dispatch_ratio,
          },
          now,
        ),
      );
    }
    if (events.length > 0) {
      this.#engine.store.appendEvents(events).catch((error: unknown) => {
        this.#engine.errors.failed('scheduling.queue_starved event', error);
      });
    }
  }
}
