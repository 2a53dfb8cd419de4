/**
 * Fair scheduling (`urn:ojs:ext:fair-scheduling`, decision 0103): pools as
 * settings documents every server process sees (read through the engine's
 * short settings cache, written guarded on rev), the routing of a FETCH
 * (isolation, the pool's or the fetch's strategy) into the claim's queues
 * and takes (core fair-scheduling.ts decides), the per-pool dispatch counts
 * the weighted and round-robin strategies carry between fetches, and the
 * one-minute dispatch window of the stats route.
 *
 * A server with no pools pays one cached settings read per multi-queue
 * fetch; single-queue and count-1 fetches are claimed exactly as before.
 * Dispatch counts and the stats window are this process's: with several
 * server processes each deals its own fetches in proportion, so the sum
 * is proportional too.
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
  validateQueueName,
  weightedTakes,
} from '@ojs/core';
import type { EngineContext } from './context.ts';
import type { JobObserver } from './observability/lifecycle.ts';
import { WORKER_NAMESPACE, type WorkerRecord, type WorkerRegistry } from './workers.ts';

export const POOL_NAMESPACE = 'scheduling-pool';
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

interface Bucket {
  second: number;
  queues: Map<string, { count: number; waitMs: number; waited: number }>;
}

/** Jobs dispatched per queue over the last minute, by second (a job observer). */
export class DispatchWindow implements JobObserver {
  readonly #buckets: Bucket[] = [];
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  started(jobs: readonly JobRecord[]): void {
    const second = Math.floor(this.#now() / 1000);
    let bucket = this.#buckets.at(-1);
    if (bucket === undefined || bucket.second !== second) {
      bucket = { second, queues: new Map() };
      this.#buckets.push(bucket);
      while (this.#buckets[0]!.second <= second - WINDOW_MS / 1000) this.#buckets.shift();
    }
    for (const job of jobs) {
      let entry = bucket.queues.get(job.queue);
      if (entry === undefined) {
        entry = { count: 0, waitMs: 0, waited: 0 };
        bucket.queues.set(job.queue, entry);
      }
      entry.count++;
      const from = Date.parse(job.scheduled_at ?? job.enqueued_at ?? '');
      const to = Date.parse(job.started_at ?? '');
      if (job.attempt === 1 && Number.isFinite(from) && Number.isFinite(to)) {
        entry.waitMs += Math.max(0, to - from);
        entry.waited++;
      }
    }
  }

  /** Per queue over the window: dispatches and summed wait. */
  totals(): Map<string, { count: number; waitMs: number; waited: number }> {
    const since = Math.floor(this.#now() / 1000) - WINDOW_MS / 1000;
    const totals = new Map<string, { count: number; waitMs: number; waited: number }>();
    for (const bucket of this.#buckets) {
      if (bucket.second <= since) continue;
      for (const [queue, entry] of bucket.queues) {
        const total = totals.get(queue) ?? { count: 0, waitMs: 0, waited: 0 };
        total.count += entry.count;
        total.waitMs += entry.waitMs;
        total.waited += entry.waited;
        totals.set(queue, total);
      }
    }
    return totals;
  }
}

export class FairScheduler {
  readonly #engine: SchedulingContext;
  readonly window: DispatchWindow;
  /** Carried dispatch counts, by pool name (or `fetch:` and the fetch's policy). */
  readonly #dispatched = new Map<string, Map<string, number>>();
  /** When each (pool, queue) last raised scheduling.queue_starved. */
  readonly #starvedAt = new Map<string, number>();

  constructor(engine: SchedulingContext) {
    this.#engine = engine;
    this.window = new DispatchWindow(() => engine.now());
    engine.observers.add(this.window);
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

  /** C16: `{queues:[…], window:"PT1M"}`, this process's dispatches. */
  async stats(): Promise<{ queues: QueueDispatchStats[]; window: string }> {
    const totals = this.window.totals();
    const active = await this.#activeByQueue();
    const all = [...totals.values()].reduce((sum, t) => sum + t.count, 0);
    const names = [...new Set([...totals.keys(), ...active.keys()])].sort();
    return {
      queues: names.map((name) => {
        const t = totals.get(name) ?? { count: 0, waitMs: 0, waited: 0 };
        return {
          name,
          dispatch_count_1m: t.count,
          dispatch_ratio_1m: all === 0 ? 0 : t.count / all,
          avg_wait_ms: t.waited === 0 ? 0 : Math.round(t.waitMs / t.waited),
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
