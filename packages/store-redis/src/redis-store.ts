/**
 * The Redis store: several stateless server processes share one Redis
 * (DESIGN §4). Every write is one atomic script (lua/apply.lua) that checks
 * the guards core's decision rests on (a job's rev and state, a unique
 * key's holder, a claim's limits) and applies the decided records with
 * every index in the same step; reads that need several commands are one
 * function too (lua/read.lua). The three form one function library
 * (scripts.ts). Core decides, Redis applies: no OJS rule is
 * written in Lua. Leases and schedules follow Redis's clock (TIME, through
 * core DatabaseClock); waiting fetches of other processes wake on a pub/sub
 * message the apply script publishes when jobs become available.
 *
 * Keys: every key starts with `{<prefix>}:`, one hash tag, so a deployment
 * lives in one hash slot of a Redis Cluster and several deployments share
 * one Redis by prefix (see the README's Redis section and
 * docs/decisions/0084-redis-store.md for the key layout).
 */
import {
  ClaimedJobs,
  type ClaimRequest,
  type Commit,
  type CronRecord,
  cancel,
  conflict,
  DatabaseClock,
  decideLeaseExtension,
  decideSettlement,
  type EventFilter,
  expire,
  type InsertResult,
  isTerminal,
  JOB_STATES,
  type JobFilter,
  type JobPageRequest,
  type JobRecord,
  jobColumns,
  jobEvent,
  type LeaseItem,
  type LeaseResult,
  OjsError,
  type OjsEvent,
  type Page,
  type PruneTarget,
  promote,
  type QueueConfig,
  type QueueInfo,
  type QueueStateCount,
  type QueueStats,
  type RateLimitState,
  type SettingRecord,
  type SettleRequest,
  type SettleResult,
  type StateCounts,
  type Store,
  toIso,
  type WebhookDelivery,
  type WebhookDeliveryFilter,
  type WorkflowRecord,
  webhookDeliveryDueAt,
  webhookDeliverySettledAt,
} from '@ojs/core';
import { Redis, type RedisOptions } from 'ioredis';
import { claimJobs } from './claim.ts';
import { toStoreError } from './errors.ts';
import { judgePersistence, type Persistence } from './persistence.ts';
import { deleteKeys } from './prefix.ts';
import * as queries from './queries.ts';
import {
  decodeEvent,
  parseJob,
  parseJobPairs,
  parseJobs,
  queueInfo,
  type Reply,
} from './records.ts';
import { type Applied, Functions, Ops, parseApplied } from './scripts.ts';
import { type Lock, UniqueKeys, uniqueKeysOf } from './unique-keys.ts';

export interface RedisStoreOptions {
  /** redis://[user:password@]host:port/db or rediss://... (default redis://127.0.0.1:6379). */
  url?: string;
  /** Key prefix; deployments with different prefixes share one Redis (default 'ojs'). */
  prefix?: string;
  /** ioredis options applied over the store's defaults. */
  redis?: RedisOptions;
  /** Claimed jobs kept until settled, so an ACK needs no read (core ClaimedJobs); default 10,000. */
  keepClaimed?: number;
  /** Background errors (the wake-up subscription, clock re-sync); logged, never fatal. */
  onError?: (error: Error, context: string) => void;
  /** Start-up notes (what Redis persistence means for a 201). */
  log?: (level: 'info' | 'warn', message: string) => void;
  /** Clock re-sync interval (ms), default 60 s. */
  clockSyncMs?: number;
}

/** The key layout (decision 0084); changed whenever stored data would be read differently. */
const LAYOUT = 'ojs-redis-1';

/** A command without a reply after this long fails (503; a write's outcome is unknown). */
const COMMAND_TIMEOUT_MS = 10_000;

/** Retries of an optimistic write whose read went stale before it applied. */
const MAX_RETRIES = 50;
const PRUNE_STEP = 1000;

export class RedisStore implements Store {
  readonly backend = 'redis';
  readonly clock = new DatabaseClock();
  readonly #options: RedisStoreOptions;
  readonly #tag: string;
  readonly #seqKey: string;
  #redis: Redis | undefined;
  #functions: Functions | undefined;
  #sub: Redis | undefined;
  readonly #listeners = new Set<() => void>();
  #clockTimer: NodeJS.Timeout | undefined;
  readonly #claimed: ClaimedJobs;

  constructor(options: RedisStoreOptions = {}) {
    this.#options = options;
    const prefix = options.prefix ?? 'ojs';
    if (!/^[\w.:-]{1,64}$/.test(prefix)) {
      throw new Error(`Redis key prefix '${prefix}' must be 1-64 of A-Z a-z 0-9 _ . : -.`);
    }
    this.#tag = `{${prefix}}`;
    this.#seqKey = `${this.#tag}:seq`;
    this.#claimed = new ClaimedJobs(options.keepClaimed ?? 10_000);
  }

  /** A key of this deployment. */
  key(...parts: string[]): string {
    return `${this.#tag}:${parts.join(':')}`;
  }

  #connection(): RedisOptions {
    return {
      lazyConnect: true,
      // A command sent while Redis is down fails at once (503), it never waits.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 5_000,
      enableAutoPipelining: true,
      retryStrategy: (times) => Math.min(50 * times, 1_000),
      ...this.#options.redis,
    };
  }

  #client(): Redis {
    if (this.#redis === undefined) throw notConnected();
    return this.#redis;
  }

  #lib(): Functions {
    if (this.#functions === undefined) throw notConnected();
    return this.#functions;
  }

  async init(): Promise<void> {
    const url = this.#options.url ?? 'redis://127.0.0.1:6379';
    const redis = new Redis(url, this.#connection());
    // Errors are reported through commands; the event would be an unhandled one.
    redis.on('error', () => {});
    try {
      await redis.connect();
    } catch (error) {
      redis.disconnect();
      throw toStoreError(error, false);
    }
    this.#redis = redis;
    this.#functions = new Functions(redis);
    try {
      await this.#checkLayout(redis);
      await this.#functions.load();
    } catch (error) {
      redis.disconnect();
      this.#redis = undefined;
      this.#functions = undefined;
      throw toStoreError(error, false);
    }
    await this.#syncClock();
    this.#clockTimer = setInterval(() => {
      this.#syncClock().catch((error) => this.#options.onError?.(error as Error, 'redis clock'));
    }, this.#options.clockSyncMs ?? 60_000);
    this.#clockTimer.unref();
    const persistence = await this.persistence();
    const verdict = judgePersistence(persistence);
    this.#options.log?.(verdict.level, verdict.message);
  }

  /**
   * The key layout this code reads and writes, recorded under the prefix by
   * the first server (SET NX). A prefix written in another layout is
   * refused with a clear error instead of being misread.
   */
  async #checkLayout(redis: Redis): Promise<void> {
    const key = this.key('layout');
    await redis.set(key, LAYOUT, 'NX');
    const found = await redis.get(key);
    if (found !== LAYOUT) {
      throw new OjsError(
        'internal_error',
        `Redis prefix '${this.#tag}' holds data in key layout '${found}', and this server reads layout '${LAYOUT}'. Use another prefix (?prefix=) or the server version that wrote it.`,
        { backend: 'redis' },
      );
    }
  }

  async #syncClock(): Promise<void> {
    const redis = this.#client();
    await this.clock.sync(async () => {
      const [seconds, micros] = await redis.time();
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    });
  }

  /** Redis's persistence settings (null where CONFIG is refused). */
  async persistence(): Promise<Persistence> {
    const get = async (name: string): Promise<string | null> => {
      try {
        const reply = (await this.#client().config('GET', name)) as string[];
        return reply.length >= 2 ? String(reply[1]) : null;
      } catch {
        return null;
      }
    };
    return {
      appendonly: await get('appendonly'),
      appendfsync: await get('appendfsync'),
      save: await get('save'),
      maxmemoryPolicy: await get('maxmemory-policy'),
    };
  }

  onJobsAvailable(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (this.#sub === undefined && this.#redis !== undefined) {
      const sub = this.#redis.duplicate({ enableAutoPipelining: false, enableOfflineQueue: true });
      sub.on('error', (error) => this.#options.onError?.(error, 'redis wake-up subscription'));
      sub.on('message', () => {
        for (const l of this.#listeners) l();
      });
      // A resubscription after a reconnect may have missed messages: wake everyone.
      sub.on('ready', () => {
        for (const l of this.#listeners) l();
      });
      sub
        .subscribe(this.key('wake'))
        .catch((error) => this.#options.onError?.(error, 'redis subscribe'));
      this.#sub = sub;
    }
    return () => {
      this.#listeners.delete(listener);
    };
  }

  async close(): Promise<void> {
    if (this.#clockTimer !== undefined) clearInterval(this.#clockTimer);
    this.#clockTimer = undefined;
    const sub = this.#sub;
    this.#sub = undefined;
    sub?.disconnect();
    const redis = this.#redis;
    this.#redis = undefined;
    this.#functions = undefined;
    this.#claimed.clear();
    if (redis !== undefined) {
      await redis.quit().catch(() => redis.disconnect());
    }
  }

  async ping(): Promise<void> {
    await this.#call(false, (r) => r.ping());
  }

  /**
   * A Redis call whose connection errors become store errors (503), bounded
   * by the command timeout from the moment it is issued: ioredis starts a
   * command's timer only when its pipeline is written, so a call queued
   * behind a pipeline that is timing out would otherwise wait twice as long.
   */
  async #call<T>(write: boolean, fn: (redis: Redis) => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const call = fn(this.#client());
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('Command timed out')), this.#timeoutMs);
      });
      return await Promise.race([call, deadline]);
    } catch (error) {
      throw toStoreError(error, write);
    } finally {
      clearTimeout(timer);
    }
  }

  get #timeoutMs(): number {
    return this.#options.redis?.commandTimeout ?? COMMAND_TIMEOUT_MS;
  }

  #read(args: string[]): Promise<Reply[]> {
    return this.#call(false, () => this.#lib().read(this.#seqKey, args));
  }

  async #apply(ops: Ops, mode: 'all' | 'each', now: number, wanted = 0): Promise<Applied> {
    const argv = ops.argv(mode, now, wanted);
    return parseApplied(await this.#call(true, () => this.#lib().apply(this.#seqKey, argv)));
  }

  readonly #claimIo = {
    read: (args: string[]) => this.#read(args),
    apply: (ops: Ops, mode: 'each', now: number, wanted: number) =>
      this.#apply(ops, mode, now, wanted),
  };

  readonly #queryIo: queries.QueryIo = {
    range: (key, min, max, limit, dir) => this.#range(key, min, max, 0, limit, dir),
    firstScore: async (key, min) => {
      const [, score] = await this.#read(['scores', key, min, '+inf', '1']);
      return score === undefined || score === null ? null : Number(score);
    },
    countFrom: (keys, min) =>
      this.#call(false, (r) => Promise.all(keys.map((k) => r.zcount(k, min, '+inf')))),
    sizes: (keys) => this.#call(false, (r) => Promise.all(keys.map((k) => r.zcard(k)))),
    queues: () => this.#call(false, (r) => r.zrange(this.key('queues'), 0, -1)),
    key: (...parts) => this.key(...parts),
  };

  async #range(
    key: string,
    min: string,
    max: string,
    offset: number,
    limit: number,
    dir: 'asc' | 'desc',
  ): Promise<JobRecord[]> {
    return parseJobPairs(
      await this.#read(['range', key, min, max, String(offset), String(limit), dir]),
    );
  }

  async #jobs(ids: string[]): Promise<Map<string, JobRecord>> {
    const found = new Map<string, JobRecord>();
    if (ids.length === 0) return found;
    const jobs = parseJobs(await this.#read(['jobs', ...ids]));
    jobs.forEach((job, i) => {
      if (job !== null) found.set(ids[i]!, job);
    });
    return found;
  }

  async getJob(id: string): Promise<JobRecord | null> {
    return (await this.#jobs([id])).get(id) ?? null;
  }

  /** Unique-key holders as stored: key -> holder job and when it took the key. */
  async #locks(keys: string[]): Promise<Map<string, Lock>> {
    const locks = new Map<string, Lock>();
    if (keys.length === 0) return locks;
    const flat = await this.#read(['locks', ...keys]);
    keys.forEach((key, i) => {
      const job = parseJob(flat[i * 3 + 2]);
      if (flat[i * 3] !== null && job !== null) {
        locks.set(key, { job, at: Number(flat[i * 3 + 1]) });
      }
    });
    return locks;
  }

  async insertJobs(jobs: JobRecord[], events: OjsEvent[], now: number): Promise<InsertResult[]> {
    // Ids repeated within the call are judged (the later one is duplicate_id).
    if (
      jobs.every((job) => job.unique_key === undefined) &&
      new Set(jobs.map((j) => j.id)).size === jobs.length
    ) {
      const results = await this.#insertTurn(jobs, events, now);
      if (results !== null) return results;
    }
    return this.#insertJudged(jobs, events, now);
  }

  /** Inserts without unique keys waiting for the end of this event-loop turn (#flushTurn). */
  #turn: TurnCall[] = [];

  /**
   * Inserts without unique keys issued in one turn of the event loop (the
   * single POSTs of clients that send one request per job, 50 in flight)
   * share one apply call, one group per call in `each` mode: each call
   * stays all-or-none, and a call whose id is taken (its group refused)
   * returns null and is judged on its own (#insertJudged).
   */
  #insertTurn(jobs: JobRecord[], events: OjsEvent[], now: number): Promise<InsertResult[] | null> {
    return new Promise((resolve, reject) => {
      // After the poll phase: the calls of every request read in this turn are in.
      if (this.#turn.length === 0) setImmediate(() => this.#flushTurn());
      this.#turn.push({ jobs, events, now, resolve, reject });
    });
  }

  async #flushTurn(): Promise<void> {
    const calls = this.#turn;
    this.#turn = [];
    const ops = new Ops();
    for (const call of calls) {
      const ids = new Set<string>();
      for (const job of call.jobs) {
        ids.add(job.id);
        ops.absent(job.id).put(job, null);
      }
      ops.events(call.events.filter((e) => e.subject === undefined || ids.has(e.subject))).end();
    }
    let applied: Applied;
    try {
      applied = await this.#apply(ops, 'each', Math.max(...calls.map((c) => c.now)));
    } catch (error) {
      for (const call of calls) call.reject(error);
      return;
    }
    calls.forEach((call, i) => {
      if (applied.statuses[i] !== 1) {
        call.resolve(null);
        return;
      }
      call.resolve(
        call.jobs.map((job) => ({
          status: 'inserted',
          job: { ...job, seq: applied.seqs.get(job.id) },
        })),
      );
    });
  }

  /** Inserts read and judged in core: unique keys, taken ids; one apply call in `all` mode. */
  async #insertJudged(jobs: JobRecord[], events: OjsEvent[], now: number): Promise<InsertResult[]> {
    // First try: ids are new (no read); unique keys are read. A stale read retries with everything read.
    for (let attempt = 0; ; attempt++) {
      const uniqueKeys = uniqueKeysOf(jobs);
      const [locks, stored] = await Promise.all([
        this.#locks(uniqueKeys),
        attempt === 0
          ? Promise.resolve(new Map<string, JobRecord>())
          : this.#jobs(jobs.map((j) => j.id)),
      ]);
      const ops = new Ops();
      const results: InsertResult[] = [];
      const inBatch = new Map<string, JobRecord>();
      const keys = new UniqueKeys(locks, ops, now);
      const extraEvents: OjsEvent[] = [];
      let abort = false;
      for (const job of jobs) {
        const sameId = inBatch.get(job.id) ?? stored.get(job.id);
        if (sameId !== undefined) {
          results.push({ status: 'duplicate_id', existing: sameId });
          abort = true;
          continue;
        }
        const holder = keys.holder(job);
        if (holder !== undefined) {
          const policy = job.unique!.on_conflict;
          if (policy === 'reject') {
            results.push({ status: 'rejected', existing: holder });
            abort = true;
            continue;
          }
          if (policy === 'ignore') {
            results.push({ status: 'existing', existing: holder });
            continue;
          }
          if (!isTerminal(holder.state)) {
            const cancelled = cancel(holder, now);
            if (inBatch.has(holder.id)) inBatch.set(holder.id, cancelled);
            else ops.job(holder.id, holder.rev).put(cancelled, holder);
            extraEvents.push(
              jobEvent('job.cancelled', cancelled, { reason: 'unique_replace' }, now),
            );
          }
        }
        inBatch.set(job.id, job);
        keys.take(job);
        results.push({ status: 'inserted', job });
      }
      if (abort) return results;
      for (const job of inBatch.values()) {
        ops.absent(job.id).put(job, null);
        if (job.unique_key !== undefined) ops.lock(job.unique_key, job.id, now);
      }
      const insertedIds = new Set(inBatch.keys());
      ops.events([
        ...extraEvents,
        ...events.filter((e) => e.subject === undefined || insertedIds.has(e.subject)),
      ]);
      const applied = await this.#apply(ops, 'all', now);
      if (applied.statuses[0] === 1) {
        return results.map((r) =>
          r.status === 'inserted'
            ? { status: 'inserted', job: { ...r.job, seq: applied.seqs.get(r.job.id) } }
            : r,
        );
      }
      if (attempt >= MAX_RETRIES) {
        throw new OjsError(
          'backend_unavailable',
          'Redis insert kept racing with other writers; try again.',
          {
            backend: 'redis',
          },
        );
      }
    }
  }

  async claimJobs(request: ClaimRequest): Promise<JobRecord[]> {
    return claimJobs(this.#claimIo, request, this.#claimed);
  }

  async commit(commit: Commit): Promise<boolean> {
    const now = commit.now ?? this.clock.now();
    for (let attempt = 0; ; attempt++) {
      // The jobs as stored before the change (their index entries move with it).
      const before = await this.#jobs([
        ...new Set([
          ...(commit.updates ?? []).map((w) => w.job.id),
          ...(commit.deletes ?? []).map((d) => d.id),
        ]),
      ]);
      // Group 1: the caller's guarded writes (a failure answers false).
      const ops = new Ops();
      for (const write of commit.updates ?? []) {
        const old = before.get(write.job.id);
        if (old?.rev !== write.expectRev) return false;
        ops.job(write.job.id, write.expectRev).put(write.job, old);
        before.set(write.job.id, write.job);
      }
      for (const del of commit.deletes ?? []) {
        const old = before.get(del.id);
        if (old?.rev !== del.expectRev) return false;
        ops.job(del.id, del.expectRev).delete(old);
      }
      for (const write of commit.workflowUpdates ?? []) {
        ops.workflowRev(write.workflow.id, write.expectRev);
        ops.putWorkflow(write.workflow.id, write.workflow.rev, JSON.stringify(write.workflow));
      }
      for (const write of commit.cronUpdates ?? []) {
        ops.cronRev(write.cron.name, write.expectRev);
        this.#putCron(ops, write.cron);
      }
      for (const workflow of commit.workflowInserts ?? []) {
        ops
          .workflowRev(workflow.id, null)
          .putWorkflow(workflow.id, workflow.rev, JSON.stringify(workflow));
      }
      ops.end();
      // Group 2: new jobs under their unique policies (a race on a key retries here).
      const inserts = commit.inserts ?? [];
      const locks = await this.#locks(uniqueKeysOf(inserts));
      const skipped = new Set<string>();
      const extraEvents: OjsEvent[] = [];
      const keys = new UniqueKeys(locks, ops, now);
      for (const job of inserts) {
        const holder = keys.holder(job);
        if (
          holder !== undefined &&
          job.unique!.on_conflict !== 'replace' &&
          job.unique!.on_conflict !== 'replace_except_schedule'
        ) {
          skipped.add(job.id);
          continue;
        }
        if (holder !== undefined && !isTerminal(holder.state)) {
          const cancelled = cancel(holder, now);
          ops.job(holder.id, holder.rev).put(cancelled, holder);
          extraEvents.push(jobEvent('job.cancelled', cancelled, { reason: 'unique_replace' }, now));
        }
        ops.absent(job.id).put(job, null);
        if (job.unique_key !== undefined) ops.lock(job.unique_key, job.id, now);
        keys.take(job);
      }
      ops.events([
        ...extraEvents,
        ...(commit.events ?? []).filter((e) => e.subject === undefined || !skipped.has(e.subject)),
      ]);
      ops.end();
      const applied = await this.#apply(ops, 'all', now);
      if (applied.statuses.every((s) => s === 1)) return true;
      if (applied.statuses[0] !== 0) return false;
      const reason = String(applied.statuses[1]);
      if (reason.startsWith('dup:')) {
        throw conflict(`Job '${reason.slice(4)}' already exists.`, { job_id: reason.slice(4) });
      }
      if (attempt >= MAX_RETRIES) return false;
    }
  }

  #putCron(ops: Ops, cron: CronRecord): void {
    ops.putCron(
      cron.name,
      cron.rev,
      cron.enabled,
      cron.enabled ? (cron.next_run_ms ?? null) : null,
      JSON.stringify(cron),
    );
  }

  async settleJobs(request: SettleRequest): Promise<SettleResult[]> {
    const { items, now } = request;
    const results: (SettleResult | undefined)[] = new Array(items.length);
    // The jobs as this batch has decided them so far (a repeated id sees the earlier item's result).
    const current = new Map<string, JobRecord>();
    // Round 1 decides on kept copies, round 2 on the rows as read (items a copy could not settle).
    let pending = items.map((item, index) => ({ item, index }));
    for (let round = 0; round < 2 && pending.length > 0; round++) {
      const fromCopies = round === 0;
      const copies = new Map<string, JobRecord>();
      if (fromCopies) {
        for (const { item } of pending) {
          const kept = this.#claimed.take(item.id);
          // An expiry is decided on the lease, which a kept copy may have old.
          if (kept !== undefined && item.settlement.kind !== 'expire') copies.set(item.id, kept);
        }
      }
      const toRead = fromCopies
        ? pending.filter(({ item }) => !copies.has(item.id)).map(({ item }) => item.id)
        : pending.map(({ item }) => item.id);
      const rows = await this.#jobs([...new Set(toRead)]);
      current.clear();
      const ops = new Ops();
      const groups: { index: number; job: JobRecord; decided: JobRecord; copy: boolean }[] = [];
      const retry: typeof pending = [];
      for (const entry of pending) {
        const { item, index } = entry;
        const copy = !current.has(item.id) && copies.has(item.id);
        const job = current.get(item.id) ?? copies.get(item.id) ?? rows.get(item.id) ?? null;
        if (job === null) {
          results[index] = { status: 'not_found' };
          continue;
        }
        if (job.workflow_id !== undefined) {
          results[index] = { status: 'workflow', job };
          continue;
        }
        let decision: ReturnType<typeof decideSettlement>;
        try {
          decision = decideSettlement(job, item, now, request.random);
        } catch (error) {
          if (!(error instanceof OjsError)) throw error;
          if (copy) retry.push(entry);
          else results[index] = { status: 'conflict', error, job };
          continue;
        }
        ops.job(job.id, job.rev, 'active').put(decision.job, job).events(decision.events).end();
        groups.push({ index, job, decided: decision.job, copy });
        current.set(job.id, decision.job);
      }
      if (!ops.empty) {
        const applied = await this.#apply(ops, 'each', now);
        applied.statuses.forEach((status, i) => {
          const { index, job, decided, copy } = groups[i]!;
          if (status === 1) results[index] = { status: 'settled', job: decided };
          else if (copy) retry.push({ item: items[index]!, index });
          else if (status === 'missing') results[index] = { status: 'not_found' };
          else {
            results[index] = {
              status: 'conflict',
              error: conflict(`Job '${job.id}' changed while it was being settled.`, {
                job_id: job.id,
              }),
              job,
            };
          }
        });
      }
      pending = retry.sort((a, b) => a.index - b.index);
    }
    return results as SettleResult[];
  }

  async extendLeases(items: LeaseItem[], now: number): Promise<LeaseResult[]> {
    const rows = await this.#jobs([...new Set(items.map((i) => i.id))]);
    const ops = new Ops();
    const results: LeaseResult[] = [];
    const groups: { index: number; job: JobRecord }[] = [];
    items.forEach((item, index) => {
      const job = rows.get(item.id) ?? null;
      const decision = decideLeaseExtension(job, item, now);
      results.push(decision.result);
      if (decision.result.status === 'extended') {
        ops
          .job(job!.id, job!.rev, 'active')
          .put(decision.result.job, job)
          .events(decision.events)
          .end();
        groups.push({ index, job: job! });
        rows.set(job!.id, decision.result.job);
      } else if (decision.events.length > 0) {
        ops.events(decision.events).end();
        groups.push({ index: -1, job: job! });
      }
    });
    if (!ops.empty) {
      const applied = await this.#apply(ops, 'each', now);
      applied.statuses.forEach((status, i) => {
        const { index, job } = groups[i]!;
        if (status !== 1 && index >= 0) results[index] = { status: 'not_held', job };
      });
    }
    return results;
  }

  async promoteDueJobs(now: number): Promise<number> {
    const [expiring, due] = await Promise.all([
      this.#range(this.key('exp'), '-inf', String(now), 0, PRUNE_STEP, 'asc'),
      this.#range(this.key('due'), '-inf', String(now), 0, PRUNE_STEP, 'asc'),
    ]);
    if (expiring.length === 0 && due.length === 0) return 0;
    const ops = new Ops();
    const kinds: ('expire' | 'promote')[] = [];
    const expiredIds = new Set<string>();
    for (const job of expiring) {
      const expired = expire(job, now);
      ops.job(job.id, job.rev).put(expired, job);
      ops.events([
        jobEvent(
          'job.expired',
          expired,
          { created_at: job.created_at, expired_at: toIso(now) },
          now,
        ),
      ]);
      ops.end();
      kinds.push('expire');
      expiredIds.add(job.id);
    }
    for (const job of due) {
      if (expiredIds.has(job.id)) continue;
      ops.job(job.id, job.rev).put(promote(job), job).end();
      kinds.push('promote');
    }
    const applied = await this.#apply(ops, 'each', now);
    return applied.statuses.filter((s, i) => s === 1 && kinds[i] === 'promote').length;
  }

  async findExpiringWorkflowJobs(now: number, limit: number): Promise<JobRecord[]> {
    return this.#range(this.key('wexp'), '-inf', String(now), 0, limit, 'asc');
  }

  async findExpiredLeases(now: number, limit: number): Promise<JobRecord[]> {
    return this.#range(this.key('lease'), '-inf', String(now), 0, limit, 'asc');
  }

  async listDeadLetter(
    queue: string | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<JobRecord>> {
    const key = queue === undefined ? this.key('dead') : this.key('dead', queue);
    const [total, items] = await Promise.all([
      this.#call(false, (r) => r.zcard(key)),
      this.#range(key, '-inf', '+inf', offset, limit, 'desc'),
    ]);
    return { items, total };
  }

  async listJobs(request: JobPageRequest): Promise<JobRecord[]> {
    return queries.listJobs(this.#queryIo, request);
  }

  async countJobs(filter: JobFilter): Promise<number> {
    return queries.countJobs(this.#queryIo, filter);
  }

  async countJobsByQueue(): Promise<QueueStateCount[]> {
    const flat = await this.#read(['counts', ...JOB_STATES]);
    const counts: QueueStateCount[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      counts.push({
        queue: String(flat[i]),
        state: String(flat[i + 1]) as QueueStateCount['state'],
        count: Number(flat[i + 2]),
      });
    }
    return counts.sort((a, b) =>
      a.queue === b.queue ? (a.state < b.state ? -1 : 1) : a.queue < b.queue ? -1 : 1,
    );
  }

  async pruneJobs(target: PruneTarget, limit: number): Promise<number> {
    const all = await this.#queryIo.queues();
    const queues = all.filter(
      (q) =>
        (target.queues === undefined || target.queues.includes(q)) &&
        (target.exceptQueues === undefined || !target.exceptQueues.includes(q)),
    );
    const candidates: JobRecord[] = [];
    for (const queue of queues) {
      const key = this.key('ret', queue, target.retention);
      candidates.push(...(await this.#range(key, '-inf', `(${target.before}`, 0, limit, 'asc')));
    }
    if (candidates.length === 0) return 0;
    const finished = (job: JobRecord) => jobColumns(job).finished_at ?? 0;
    candidates.sort((a, b) => finished(a) - finished(b));
    const ops = new Ops();
    // Guarded on rev: a dead letter retry in between revives the job, which stays.
    for (const job of candidates.slice(0, limit)) ops.job(job.id, job.rev).delete(job).end();
    const applied = await this.#apply(ops, 'each', this.clock.now());
    return applied.statuses.filter((s) => s === 1).length;
  }

  async rateLimitState(key: string): Promise<RateLimitState> {
    const [active, waiting, start, count, doc] = await this.#read(['rate', key]);
    const newest = doc === '' ? null : parseJob(doc);
    return {
      key,
      active: Number(active),
      waiting: Number(waiting),
      window:
        start === '' || start === null ? null : { start: Number(start), count: Number(count) },
      policy: newest?.rate_limit ?? null,
    };
  }

  async listQueues(): Promise<QueueInfo[]> {
    const flat = await this.#read(['queues']);
    const queues: QueueInfo[] = [];
    for (let i = 0; i < flat.length; i += 6)
      queues.push(queueInfo(String(flat[i]), flat.slice(i + 1, i + 6)));
    return queues;
  }

  async #queue(name: string): Promise<QueueInfo> {
    return queueInfo(name, await this.#read(['queue', name]));
  }

  async queueStats(name: string, now: number): Promise<QueueStats> {
    const flat = await this.#read(['qstats', name, String(now), ...JOB_STATES]);
    const counts = Object.fromEntries(
      JOB_STATES.map((state, i) => [state, Number(flat[4 + i])]),
    ) as StateCounts;
    return {
      name,
      paused: flat[0] === '1',
      counts,
      completed_last_minute: Number(flat[1]),
      completed_last_hour: Number(flat[2]),
      failed_last_hour: Number(flat[3]),
    };
  }

  async setQueuePaused(name: string, paused: boolean, now: number): Promise<QueueInfo> {
    await this.#apply(new Ops().pauseQueue(name, paused), 'all', now);
    const info = await this.#queue(name);
    return { name, paused: info.paused, created_at: info.created_at };
  }

  async setQueueConfig(name: string, config: QueueConfig, now: number): Promise<QueueInfo> {
    await this.#apply(
      new Ops().configureQueue(name, config.concurrency, config.rate_limit),
      'all',
      now,
    );
    return this.#queue(name);
  }

  async getWorkflow(id: string): Promise<WorkflowRecord | null> {
    const doc = await this.#call(false, (r) => r.hget(this.key('wf', id), 'd'));
    return doc === null ? null : (JSON.parse(doc) as WorkflowRecord);
  }

  async listWorkflowJobs(workflowId: string): Promise<JobRecord[]> {
    return this.#range(this.key('wfj', workflowId), '-inf', '+inf', 0, 1_000_000, 'asc');
  }

  async #cronRev(name: string): Promise<number | null> {
    const rev = await this.#call(false, (r) => r.hget(this.key('cron', name), 'rev'));
    return rev === null ? null : Number(rev);
  }

  async upsertCron(cron: CronRecord): Promise<{ created: boolean; cron: CronRecord }> {
    for (;;) {
      const existing = await this.#cronRev(cron.name);
      const stored: CronRecord = { ...cron, rev: existing === null ? cron.rev : existing + 1 };
      const ops = new Ops().cronRev(cron.name, existing);
      this.#putCron(ops, stored);
      const applied = await this.#apply(ops, 'all', this.clock.now());
      if (applied.statuses[0] === 1) return { created: existing === null, cron: stored };
    }
  }

  async getCron(name: string): Promise<CronRecord | null> {
    const [doc] = await this.#read(['cron', name]);
    return doc === '' || doc === null || doc === undefined
      ? null
      : (JSON.parse(String(doc)) as CronRecord);
  }

  async listCrons(): Promise<CronRecord[]> {
    return (await this.#read(['crons'])).map((doc) => JSON.parse(String(doc)) as CronRecord);
  }

  async deleteCron(name: string): Promise<CronRecord | null> {
    for (;;) {
      const cron = await this.getCron(name);
      if (cron === null) return null;
      const ops = new Ops().cronRev(name, cron.rev).deleteCron(name);
      const applied = await this.#apply(ops, 'all', this.clock.now());
      if (applied.statuses[0] === 1) return cron;
    }
  }

  async dueCrons(now: number): Promise<CronRecord[]> {
    return (await this.#read(['crondue', String(now)])).map(
      (doc) => JSON.parse(String(doc)) as CronRecord,
    );
  }

  async getSetting(namespace: string, key: string): Promise<SettingRecord | null> {
    const doc = await this.#call(false, (r) => r.hget(this.key('sv', namespace), key));
    return doc === null ? null : (JSON.parse(doc) as SettingRecord);
  }

  async listSettings(namespace: string, keyPrefix = ''): Promise<SettingRecord[]> {
    const flat = await this.#read(['settings', namespace, keyPrefix]);
    const records: SettingRecord[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      const key = String(flat[i]);
      // The lex range is a superset for prefixes with bytes above \xff's neighbours; filter exactly.
      if (key.startsWith(keyPrefix)) records.push(JSON.parse(String(flat[i + 2])) as SettingRecord);
    }
    return records;
  }

  async putSetting(
    namespace: string,
    key: string,
    value: Record<string, unknown>,
    expectRev: number | null,
    now: number,
  ): Promise<SettingRecord | null> {
    const record: SettingRecord = {
      namespace,
      key,
      value,
      rev: expectRev === null ? 0 : expectRev + 1,
      updated_at: toIso(now),
    };
    const ops = new Ops().settingRev(namespace, key, expectRev);
    ops.putSetting(namespace, key, record.rev, JSON.stringify(record));
    const applied = await this.#apply(ops, 'all', now);
    return applied.statuses[0] === 1 ? record : null;
  }

  async deleteSetting(namespace: string, key: string): Promise<boolean> {
    for (;;) {
      const record = await this.getSetting(namespace, key);
      if (record === null) return false;
      const ops = new Ops().settingRev(namespace, key, record.rev).deleteSetting(namespace, key);
      const applied = await this.#apply(ops, 'all', this.clock.now());
      if (applied.statuses[0] === 1) return true;
    }
  }

  async appendEvents(events: OjsEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.#apply(new Ops().events(events), 'all', this.clock.now());
  }

  async listEvents(filter: EventFilter): Promise<OjsEvent[]> {
    const out: OjsEvent[] = [];
    const dir = filter.newestFirst ? 'desc' : 'asc';
    const page = Math.min(Math.max(filter.limit, 200), 2000);
    let cursor = '';
    for (;;) {
      const flat = await this.#read(['events', filter.after ?? '', cursor, dir, String(page)]);
      for (let i = 0; i < flat.length; i += 3) {
        const event = decodeEvent(String(flat[i + 1]), String(flat[i + 2]));
        if (eventMatches(filter, event)) out.push(event);
        if (out.length >= filter.limit) return out;
      }
      if (flat.length / 3 < page) return out;
      cursor = String(flat[flat.length - 3]);
    }
  }

  async pruneEvents(keep: number, limit?: number): Promise<number> {
    return this.#call(true, () =>
      this.#lib().pruneEvents(this.#seqKey, String(keep), String(limit ?? -1)),
    );
  }

  async insertWebhookDeliveries(deliveries: WebhookDelivery[]): Promise<number> {
    if (deliveries.length === 0) return 0;
    const args = deliveries.flatMap((d) => [
      d.id,
      String(d.rev),
      ...webhookDeliveryIndexArgs(d),
      JSON.stringify(d),
    ]);
    return this.#call(true, () => this.#lib().insertWebhookDeliveries(this.#seqKey, args));
  }

  async dueWebhookDeliveries(now: number, limit: number): Promise<WebhookDelivery[]> {
    const ids = await this.#call(false, (r) =>
      r.zrangebyscore(this.key('whdue'), '-inf', String(now), 'LIMIT', 0, limit),
    );
    return this.#webhookDeliveries(ids);
  }

  async #webhookDeliveries(ids: string[]): Promise<WebhookDelivery[]> {
    if (ids.length === 0) return [];
    const docs = await this.#call(false, (r) => r.hmget(this.key('whd'), ...ids));
    return docs.flatMap((doc) => (doc === null ? [] : [JSON.parse(doc) as WebhookDelivery]));
  }

  async updateWebhookDelivery(delivery: WebhookDelivery, expectRev: number): Promise<boolean> {
    const args = [
      delivery.id,
      String(expectRev),
      String(delivery.rev),
      ...webhookDeliveryIndexArgs(delivery),
      JSON.stringify(delivery),
    ];
    const applied = await this.#call(true, () =>
      this.#lib().updateWebhookDelivery(this.#seqKey, args),
    );
    return applied === 1;
  }

  async getWebhookDelivery(id: string): Promise<WebhookDelivery | null> {
    const doc = await this.#call(false, (r) => r.hget(this.key('whd'), id));
    return doc === null ? null : (JSON.parse(doc) as WebhookDelivery);
  }

  /** Walks the log newest first in pages, filtering each document (the log is an operator's view). */
  async listWebhookDeliveries(filter: WebhookDeliveryFilter): Promise<WebhookDelivery[]> {
    let start = 0;
    if (filter.after !== undefined) {
      const after = filter.after;
      const rank = await this.#call(false, (r) => r.zrevrank(this.key('whlog'), after));
      if (rank === null) return [];
      start = rank + 1;
    }
    const out: WebhookDelivery[] = [];
    const page = 500;
    for (;;) {
      const ids = await this.#call(false, (r) =>
        r.zrevrange(this.key('whlog'), start, start + page - 1),
      );
      for (const d of await this.#webhookDeliveries(ids)) {
        if (filter.subscriptionId !== undefined && d.subscription_id !== filter.subscriptionId)
          continue;
        if (filter.state !== undefined && d.state !== filter.state) continue;
        if (filter.tenantId !== undefined && d.tenant_id !== filter.tenantId) continue;
        out.push(d);
        if (out.length >= filter.limit) return out;
      }
      if (ids.length < page) return out;
      start += page;
    }
  }

  async pruneWebhookDeliveries(
    before: { delivered: number; dead: number },
    limit: number,
  ): Promise<number> {
    const args = [String(before.delivered), String(before.dead), String(limit)];
    return this.#call(true, () => this.#lib().pruneWebhookDeliveries(this.#seqKey, args));
  }

  async reset(): Promise<void> {
    this.#claimed.clear();
    const keep = new Set([this.#seqKey, this.key('evseq'), this.key('layout')]);
    await this.#call(true, (redis) => deleteKeys(redis, this.#tag, keep));
  }
}

/** A delivery's index arguments for lua/webhooks.lua: due ('' none), state, settled ('' none). */
function webhookDeliveryIndexArgs(d: WebhookDelivery): [string, string, string] {
  const due = webhookDeliveryDueAt(d);
  const settled = webhookDeliverySettledAt(d);
  return [due === null ? '' : String(due), d.state, settled === null ? '' : String(settled)];
}

/** A call before the first connection (a server started while Redis is down retries init). */
function notConnected(): OjsError {
  return new OjsError('backend_unavailable', 'Redis is unreachable: not connected yet.', {
    backend: 'redis',
  });
}

interface TurnCall {
  jobs: JobRecord[];
  events: OjsEvent[];
  now: number;
  resolve: (results: InsertResult[] | null) => void;
  reject: (error: unknown) => void;
}

/** An event's fields against the filter (the SQL stores' WHERE of listEvents). */
function eventMatches(filter: EventFilter, event: OjsEvent): boolean {
  if (filter.types !== undefined && filter.types.length > 0 && !filter.types.includes(event.type))
    return false;
  const queue = typeof event.data.queue === 'string' ? event.data.queue : null;
  if (
    filter.queues !== undefined &&
    filter.queues.length > 0 &&
    (queue === null || !filter.queues.includes(queue))
  ) {
    return false;
  }
  const jobType = typeof event.data.job_type === 'string' ? event.data.job_type : null;
  if (
    filter.jobTypes !== undefined &&
    filter.jobTypes.length > 0 &&
    (jobType === null || !filter.jobTypes.includes(jobType))
  ) {
    return false;
  }
  if (filter.subject !== undefined && event.subject !== filter.subject) return false;
  return true;
}
