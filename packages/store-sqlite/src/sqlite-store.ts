/**
 * The embedded default store: one SQLite file (or :memory:) through
 * node:sqlite. node:sqlite is synchronous, so each operation below runs in
 * one BEGIN IMMEDIATE transaction within one turn of the event loop: no
 * other request of this process can interleave, and other processes sharing
 * the file wait on SQLite's write lock (busy_timeout).
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import {
  type ClaimRequest,
  type Commit,
  type CronRecord,
  cancel,
  claim,
  conflict,
  decideLeaseExtension,
  decideSettlement,
  type EventFilter,
  expire,
  type InsertResult,
  isTerminal,
  JOB_STATES,
  type JobRecord,
  jobColumns,
  jobEvent,
  type LeaseItem,
  type LeaseResult,
  OjsError,
  type OjsEvent,
  type Page,
  promote,
  type QueueConfig,
  type QueueInfo,
  type QueueStats,
  type SettingRecord,
  type SettleRequest,
  type SettleResult,
  type StateCounts,
  type Store,
  toIso,
  uniqueConflicts,
  type WorkflowRecord,
} from '@ojs/core';
import { GroupCommit, Rollback } from './group-commit.ts';
import { migrate } from './migrate.ts';

export interface SqliteStoreOptions {
  /** File path or ':memory:'. */
  path: string;
  /** 'FULL' (default, durable on power loss) or 'NORMAL' (faster, WAL-safe on crash). */
  synchronous?: 'FULL' | 'NORMAL';
  busyTimeoutMs?: number;
  /**
   * WAL checkpoints on their own thread (checkpointer.ts; default true for
   * files): the store's COMMITs then only append to the WAL.
   */
  checkpointThread?: boolean;
}

/** Auto-checkpoint threshold (pages) left to the store's own connection as a safety net. */
const SAFETY_NET_CHECKPOINT_PAGES = 10_000;

type Row = Record<string, unknown>;

const INSERT_JOB = `INSERT INTO ojs_jobs
  (id, seq, queue, type, state, priority, attempt, rev, run_at, deadline, expires_at, finished_at,
   dead_letter, unique_key, workflow_id, rate_key, version_num, worker_id, doc)
  VALUES (:id, :seq, :queue, :type, :state, :priority, :attempt, :rev, :run_at, :deadline,
   :expires_at, :finished_at, :dead_letter, :unique_key, :workflow_id, :rate_key, :version_num,
   :worker_id, :doc)`;

const SET_JOB = `SET queue = :queue, type = :type, state = :state,
  priority = :priority, attempt = :attempt, rev = :rev, run_at = :run_at, deadline = :deadline,
  expires_at = :expires_at, finished_at = :finished_at, dead_letter = :dead_letter,
  unique_key = :unique_key, workflow_id = :workflow_id, rate_key = :rate_key,
  version_num = :version_num, worker_id = :worker_id, doc = :doc`;

const UPDATE_JOB = `UPDATE ojs_jobs ${SET_JOB} WHERE id = :id AND rev = :expect_rev`;

/**
 * The lifecycle columns only. SQLite rewrites the entry of every index whose
 * column is named in SET, changed or not, so the hot transitions (claim,
 * settle), which never change queue, type, priority, expiry, unique key,
 * workflow, rate key or version, name only what they change.
 */
const SET_LIFECYCLE = `SET state = :state, attempt = :attempt, rev = :rev, run_at = :run_at,
  deadline = :deadline, finished_at = :finished_at, dead_letter = :dead_letter,
  worker_id = :worker_id, doc = :doc`;

/** A claim: guarded on the job still being available at the rev read. */
const CLAIM_JOB = `UPDATE ojs_jobs ${SET_LIFECYCLE}
  WHERE id = :id AND state = 'available' AND rev = :expect_rev`;

/** A settlement (ACK, FAIL, expiry): guarded on the lease as read, in the statement. */
const SETTLE_JOB = `UPDATE ojs_jobs ${SET_LIFECYCLE}
  WHERE id = :id AND state = 'active' AND attempt = :expect_attempt AND rev = :expect_rev
    AND worker_id IS :expect_worker`;

/** A heartbeat: the lease only; rev stays (a lease is not a revision). */
const EXTEND_LEASE = `UPDATE ojs_jobs SET deadline = :deadline, doc = :doc
  WHERE id = :id AND state = 'active' AND attempt = :expect_attempt AND rev = :expect_rev
    AND worker_id IS :expect_worker`;

/** The lifecycle columns of SET_LIFECYCLE, plus the document. */
function lifecycleColumns(job: JobRecord): Record<string, string | number | null> {
  const derived = jobColumns(job);
  return {
    id: derived.id,
    state: derived.state,
    attempt: derived.attempt,
    rev: derived.rev,
    run_at: derived.run_at,
    deadline: derived.deadline,
    finished_at: derived.finished_at,
    dead_letter: derived.dead_letter ? 1 : 0,
    worker_id: derived.worker_id,
    doc: JSON.stringify(job),
  };
}

/** The core-derived index columns in SQLite's types, plus the document. */
function columns(job: JobRecord): Record<string, string | number | null> {
  const derived = jobColumns(job);
  return { ...derived, dead_letter: derived.dead_letter ? 1 : 0, doc: JSON.stringify(job) };
}

/** Version routing as JSON rows for the claim query: one row per (type, interval). */
function handlerFilter(request: ClaimRequest): string | null {
  if (request.handlers === undefined) return null;
  return JSON.stringify(
    request.handlers.flatMap((h) =>
      h.range.any
        ? [{ type: h.type, any: 1 }]
        : h.range.intervals.map(([lo, hi]) => ({ type: h.type, any: 0, lo, hi })),
    ),
  );
}

function settingRecord(row: Row): SettingRecord {
  return {
    namespace: row.namespace as string,
    key: row.key as string,
    value: JSON.parse(row.doc as string) as Record<string, unknown>,
    rev: row.rev as number,
    updated_at: row.updated_at as string,
  };
}

function cronColumns(cron: CronRecord): [number, number, number | null, string] {
  return [
    cron.rev,
    cron.enabled ? 1 : 0,
    cron.enabled ? (cron.next_run_ms ?? null) : null,
    JSON.stringify(cron),
  ];
}

function queueInfo(row: Row): QueueInfo {
  const info: QueueInfo = {
    name: row.name as string,
    paused: row.paused === 1,
    created_at: row.created_at as string,
  };
  if (typeof row.concurrency === 'number') info.concurrency = row.concurrency;
  if (typeof row.rate_limit === 'number') {
    info.rate_limit = { limit: row.rate_limit, period_ms: row.rate_period_ms as number };
  }
  return info;
}

/** A guard that failed in the statement itself (the lease changed under the decision). */
function staleLease(job: JobRecord): OjsError {
  return conflict(`Job '${job.id}' changed while it was being settled.`, { job_id: job.id });
}

const parseJob = (row: Row | undefined): JobRecord | null =>
  row === undefined ? null : (JSON.parse(row.doc as string) as JobRecord);

export class SqliteStore implements Store {
  readonly backend = 'sqlite';
  readonly pipelinedWrites = true;
  readonly #options: SqliteStoreOptions;
  #db: DatabaseSync | undefined;
  #group: GroupCommit | undefined;
  #checkpointer: Worker | undefined;
  /** The job sequence counter while a group is open (#nextSeq). */
  #seq: { group: number; last: number } | undefined;
  readonly #statements = new Map<string, StatementSync>();

  constructor(options: SqliteStoreOptions) {
    this.#options = options;
  }

  async init(): Promise<void> {
    const db = new DatabaseSync(this.#options.path);
    db.exec(`PRAGMA busy_timeout = ${this.#options.busyTimeoutMs ?? 5000}`);
    if (this.#options.path !== ':memory:') db.exec('PRAGMA journal_mode = WAL');
    db.exec(`PRAGMA synchronous = ${this.#options.synchronous ?? 'FULL'}`);
    db.exec('PRAGMA foreign_keys = ON');
    migrate(db);
    this.#db = db;
    this.#group = new GroupCommit(db);
    if (this.#options.path !== ':memory:' && this.#options.checkpointThread !== false) {
      db.exec(`PRAGMA wal_autocheckpoint = ${SAFETY_NET_CHECKPOINT_PAGES}`);
      this.#checkpointer = new Worker(new URL('./checkpointer.ts', import.meta.url), {
        workerData: { path: this.#options.path, intervalMs: 50 },
      });
      // Never the reason a process stays alive.
      this.#checkpointer.unref();
    }
  }

  async close(): Promise<void> {
    this.#group?.flush();
    this.#group = undefined;
    const checkpointer = this.#checkpointer;
    this.#checkpointer = undefined;
    if (checkpointer !== undefined) {
      const exited = new Promise((resolve) => checkpointer.once('exit', resolve));
      // Unref'd while running; a close must keep the process alive until it is done.
      checkpointer.ref();
      checkpointer.postMessage('stop');
      await exited;
    }
    this.#statements.clear();
    this.#db?.close();
    this.#db = undefined;
  }

  async ping(): Promise<void> {
    await this.#read(() => this.#stmt('SELECT 1').get());
  }

  #stmt(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      if (this.#db === undefined) throw new Error('SqliteStore is not initialised (call init()).');
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #groupCommit(): GroupCommit {
    if (this.#group === undefined) throw new Error('SqliteStore is not initialised (call init()).');
    return this.#group;
  }

  /**
   * One atomic write, group-committed with the other writes of this turn
   * (group-commit.ts); throwing Rollback(value) undoes it and answers value.
   */
  #write<T>(fn: () => T): Promise<T> {
    return this.#groupCommit().write(fn);
  }

  /** A read, answered once anything it may have seen is committed. */
  #read<T>(fn: () => T): Promise<T> {
    return this.#groupCommit().read(fn);
  }

  /**
   * The next FIFO sequence number. The counter row is read once per group
   * and written back once, just before the group commits (we hold the write
   * lock for the whole group, so no other connection can take numbers in
   * between): one UPDATE per group instead of one per job. A write of the
   * group that rolls back leaves a gap, which FIFO order does not mind.
   */
  #nextSeq(): number {
    const group = this.#groupCommit();
    const number = group.currentGroup();
    let cache = this.#seq;
    if (cache?.group !== number) {
      const row = this.#stmt("SELECT value FROM ojs_counters WHERE name = 'job_seq'").get() as Row;
      cache = { group: number, last: row.value as number };
      this.#seq = cache;
      const written = cache;
      group.beforeCommit(() => {
        this.#stmt("UPDATE ojs_counters SET value = ? WHERE name = 'job_seq'").run(written.last);
      });
    }
    return ++cache.last;
  }

  #ensureQueue(name: string, now: number): void {
    this.#stmt('INSERT OR IGNORE INTO ojs_queues (name, paused, created_at) VALUES (?, 0, ?)').run(
      name,
      toIso(now),
    );
  }

  #getJob(id: string): JobRecord | null {
    return parseJob(this.#stmt('SELECT doc FROM ojs_jobs WHERE id = ?').get(id) as Row | undefined);
  }

  #insertJob(job: JobRecord, now: number): JobRecord {
    const stored: JobRecord = { ...job, seq: this.#nextSeq() };
    this.#stmt(INSERT_JOB).run({ ...columns(stored), seq: stored.seq! });
    this.#ensureQueue(job.queue, now);
    if (stored.unique_key !== undefined) {
      this.#stmt(
        'INSERT INTO ojs_unique_locks (key, job_id, locked_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, locked_at = excluded.locked_at',
      ).run(stored.unique_key, stored.id, now);
    }
    return structuredClone(stored);
  }

  /** Guarded update; false when the stored rev is no longer the expected one. */
  #updateJob(job: JobRecord, expectRev: number): boolean {
    const result = this.#stmt(UPDATE_JOB).run({ ...columns(job), expect_rev: expectRev });
    return Number(result.changes) === 1;
  }

  #appendEvents(events: readonly OjsEvent[]): void {
    const insert = this.#stmt(
      'INSERT INTO ojs_events (id, type, queue, job_type, doc) VALUES (?, ?, ?, ?, ?)',
    );
    for (const event of events) {
      const queue = typeof event.data.queue === 'string' ? event.data.queue : null;
      const jobType = typeof event.data.job_type === 'string' ? event.data.job_type : null;
      insert.run(event.id, event.type, queue, jobType, JSON.stringify(event));
    }
  }

  async getJob(id: string): Promise<JobRecord | null> {
    return this.#read(() => this.#getJob(id));
  }

  /** The job holding `job`'s unique key in a conflicting way, if any (core uniqueConflicts). */
  #uniqueHolder(job: JobRecord, now: number): JobRecord | null {
    if (job.unique === undefined || job.unique_key === undefined) return null;
    const lock = this.#stmt('SELECT job_id, locked_at FROM ojs_unique_locks WHERE key = ?').get(
      job.unique_key,
    ) as Row | undefined;
    const holder = lock === undefined ? null : this.#getJob(lock.job_id as string);
    if (holder === null || holder.id === job.id) return null;
    return uniqueConflicts(holder, job.unique, lock!.locked_at as number, now) ? holder : null;
  }

  /** on_conflict replace: the old job is cancelled in the same transaction. */
  #replaceHolder(holder: JobRecord, now: number): OjsEvent[] {
    if (isTerminal(holder.state)) return [];
    const cancelled = cancel(holder, now);
    this.#updateJob(cancelled, holder.rev);
    return [jobEvent('job.cancelled', cancelled, { reason: 'unique_replace' }, now)];
  }

  async insertJobs(jobs: JobRecord[], events: OjsEvent[], now: number): Promise<InsertResult[]> {
    return this.#write(() => {
      const results: InsertResult[] = [];
      let abort = false;
      const extraEvents: OjsEvent[] = [];
      for (const job of jobs) {
        const sameId = this.#getJob(job.id);
        if (sameId !== null) {
          results.push({ status: 'duplicate_id', existing: sameId });
          abort = true;
          continue;
        }
        const holder = this.#uniqueHolder(job, now);
        if (holder !== null) {
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
          extraEvents.push(...this.#replaceHolder(holder, now));
        }
        results.push({ status: 'inserted', job: this.#insertJob(job, now) });
      }
      if (abort) throw new Rollback(results);
      const insertedIds = new Set(
        results.flatMap((r) => (r.status === 'inserted' ? [r.job.id] : [])),
      );
      this.#appendEvents([
        ...extraEvents,
        ...events.filter((e) => e.subject === undefined || insertedIds.has(e.subject)),
      ]);
      return results;
    });
  }

  async claimJobs(request: ClaimRequest): Promise<JobRecord[]> {
    return this.#write(() => {
      const claimed: JobRecord[] = [];
      for (const queue of request.queues) {
        if (claimed.length >= request.count) break;
        claimed.push(...this.#claimFromQueue(queue, request, request.count - claimed.length));
      }
      this.#appendEvents(
        claimed.map((job) =>
          jobEvent(
            'job.started',
            job,
            { worker_id: job.worker_id ?? null, attempt: job.attempt },
            request.now,
          ),
        ),
      );
      return claimed;
    });
  }

  /** Claims from one queue, skipping jobs held back by a limit (they stay available). */
  #claimFromQueue(queue: string, request: ClaimRequest, wanted: number): JobRecord[] {
    const config = this.#stmt(
      'SELECT paused, concurrency, rate_limit, rate_period_ms FROM ojs_queues WHERE name = ?',
    ).get(queue) as Row | undefined;
    if (config?.paused === 1) return [];
    const activeInQueue = this.#stmt(
      "SELECT count(*) AS n FROM ojs_jobs WHERE queue = ? AND state = 'active'",
    );
    const activeWithKey = this.#stmt(
      "SELECT count(*) AS n FROM ojs_jobs WHERE rate_key = ? AND state = 'active'",
    );
    const page = this.#stmt(
      `SELECT doc FROM ojs_jobs WHERE queue = :queue AND state = 'available'
         AND (expires_at IS NULL OR expires_at > :now)
         AND (priority < :priority OR (priority = :priority AND seq > :seq))
         AND (rate_key IS NULL OR rate_key NOT IN (SELECT value FROM json_each(:blocked)))
         AND (:handlers IS NULL OR EXISTS (
           SELECT 1 FROM json_each(:handlers) AS h
            WHERE h.value ->> 'type' = ojs_jobs.type
              AND (ojs_jobs.version_num IS NULL OR h.value ->> 'any' = 1
                   OR ((h.value ->> 'lo' IS NULL OR ojs_jobs.version_num >= h.value ->> 'lo')
                       AND (h.value ->> 'hi' IS NULL OR ojs_jobs.version_num < h.value ->> 'hi')))))
       ORDER BY priority DESC, seq ASC LIMIT :limit`,
    );
    const handlers = handlerFilter(request);
    const claimed: JobRecord[] = [];
    let cursor = { priority: Number.MAX_SAFE_INTEGER, seq: 0 };
    // Keys found at their limit are excluded from later pages, so one key's
    // backlog cannot hide eligible jobs behind it.
    const blocked = new Set<string>();
    for (let scanned = 0; claimed.length < wanted && scanned < 10_000; ) {
      const rows = page.all({
        queue,
        now: request.now,
        priority: cursor.priority,
        seq: cursor.seq,
        blocked: JSON.stringify([...blocked]),
        handlers,
        limit: Math.max(wanted - claimed.length, 16),
      }) as Row[];
      if (rows.length === 0) break;
      for (const row of rows) {
        scanned++;
        const job = parseJob(row)!;
        cursor = { priority: job.priority, seq: job.seq! };
        if (claimed.length >= wanted) break;
        if (typeof config?.concurrency === 'number') {
          if (((activeInQueue.get(queue) as Row).n as number) >= config.concurrency) return claimed;
        }
        const limit = job.rate_limit;
        if (limit !== undefined && blocked.has(limit.key)) continue;
        if (limit?.concurrency !== undefined) {
          if (((activeWithKey.get(limit.key) as Row).n as number) >= limit.concurrency) {
            blocked.add(limit.key);
            continue;
          }
        }
        const queueRate =
          typeof config?.rate_limit === 'number'
            ? {
                key: `queue-config:${queue}`,
                limit: config.rate_limit,
                period: config.rate_period_ms as number,
              }
            : undefined;
        if (
          queueRate &&
          !this.#rateAllows(queueRate.key, queueRate.limit, queueRate.period, request.now)
        ) {
          return claimed;
        }
        if (
          limit?.rate &&
          !this.#rateAllows(limit.key, limit.rate.limit, limit.rate.period_ms, request.now)
        ) {
          blocked.add(limit.key);
          continue;
        }
        const active = claim(job, {
          workerId: request.workerId,
          now: request.now,
          visibilityTimeoutMs: request.visibilityTimeoutMs,
        });
        const written = this.#stmt(CLAIM_JOB).run({
          ...lifecycleColumns(active),
          expect_rev: job.rev,
        });
        if (Number(written.changes) !== 1) continue;
        if (queueRate) this.#rateTake(queueRate.key, queueRate.period, request.now);
        if (limit?.rate) this.#rateTake(limit.key, limit.rate.period_ms, request.now);
        claimed.push(active);
      }
    }
    return claimed;
  }

  /** Fixed window: a window starts at the first start after the previous one ended. */
  #rateAllows(key: string, limit: number, periodMs: number, now: number): boolean {
    const row = this.#stmt('SELECT window_start, count FROM ojs_rate_windows WHERE key = ?').get(
      key,
    ) as Row | undefined;
    if (row === undefined || now >= (row.window_start as number) + periodMs) return true;
    return (row.count as number) < limit;
  }

  #rateTake(key: string, periodMs: number, now: number): void {
    this.#stmt(
      `INSERT INTO ojs_rate_windows (key, window_start, count) VALUES (:key, :now, 1)
       ON CONFLICT (key) DO UPDATE SET
         window_start = CASE WHEN :now >= window_start + :period THEN :now ELSE window_start END,
         count = CASE WHEN :now >= window_start + :period THEN 1 ELSE count + 1 END`,
    ).run({ key, now, period: periodMs });
  }

  async commit(commit: Commit): Promise<boolean> {
    return this.#write(() => {
      for (const write of commit.updates ?? []) {
        if (!this.#updateJob(write.job, write.expectRev)) throw new Rollback(false);
      }
      for (const del of commit.deletes ?? []) {
        const result = this.#stmt('DELETE FROM ojs_jobs WHERE id = ? AND rev = ?').run(
          del.id,
          del.expectRev,
        );
        if (Number(result.changes) !== 1) throw new Rollback(false);
        this.#stmt('DELETE FROM ojs_unique_locks WHERE job_id = ?').run(del.id);
      }
      for (const write of commit.workflowUpdates ?? []) {
        const result = this.#stmt(
          'UPDATE ojs_workflows SET rev = ?, doc = ? WHERE id = ? AND rev = ?',
        ).run(
          write.workflow.rev,
          JSON.stringify(write.workflow),
          write.workflow.id,
          write.expectRev,
        );
        if (Number(result.changes) !== 1) throw new Rollback(false);
      }
      for (const write of commit.cronUpdates ?? []) {
        const result = this.#stmt(
          'UPDATE ojs_crons SET rev = ?, enabled = ?, next_run_ms = ?, doc = ? WHERE name = ? AND rev = ?',
        ).run(...cronColumns(write.cron), write.cron.name, write.expectRev);
        if (Number(result.changes) !== 1) throw new Rollback(false);
      }
      for (const workflow of commit.workflowInserts ?? []) {
        this.#stmt('INSERT INTO ojs_workflows (id, rev, doc) VALUES (?, ?, ?)').run(
          workflow.id,
          workflow.rev,
          JSON.stringify(workflow),
        );
      }
      const now = commit.now ?? Date.now();
      // Inserts honour unique policies too (cron firings, workflow steps):
      // a job whose key is held (reject or ignore) is not inserted.
      const skipped = new Set<string>();
      const extraEvents: OjsEvent[] = [];
      for (const job of commit.inserts ?? []) {
        const holder = this.#uniqueHolder(job, now);
        if (
          holder !== null &&
          job.unique!.on_conflict !== 'replace' &&
          job.unique!.on_conflict !== 'replace_except_schedule'
        ) {
          skipped.add(job.id);
          continue;
        }
        if (holder !== null) extraEvents.push(...this.#replaceHolder(holder, now));
        this.#insertJob(job, now);
      }
      this.#appendEvents([
        ...extraEvents,
        ...(commit.events ?? []).filter((e) => e.subject === undefined || !skipped.has(e.subject)),
      ]);
      return true;
    });
  }

  async settleJobs(request: SettleRequest): Promise<SettleResult[]> {
    return this.#write(() => {
      const settle = this.#stmt(SETTLE_JOB);
      const results: SettleResult[] = [];
      const events: OjsEvent[] = [];
      for (const item of request.items) {
        // Read inside the write transaction: a repeated id sees the earlier item's result.
        const job = this.#getJob(item.id);
        if (job === null) {
          results.push({ status: 'not_found' });
          continue;
        }
        if (job.workflow_id !== undefined) {
          results.push({ status: 'workflow', job });
          continue;
        }
        let decision: ReturnType<typeof decideSettlement>;
        try {
          decision = decideSettlement(job, item, request.now, request.random);
        } catch (error) {
          if (!(error instanceof OjsError)) throw error;
          results.push({ status: 'conflict', error, job });
          continue;
        }
        const written = settle.run({
          ...lifecycleColumns(decision.job),
          expect_attempt: job.attempt,
          expect_rev: job.rev,
          expect_worker: job.worker_id ?? null,
        });
        if (Number(written.changes) !== 1) {
          results.push({ status: 'conflict', error: staleLease(job), job });
          continue;
        }
        events.push(...decision.events);
        results.push({ status: 'settled', before: job, job: decision.job });
      }
      this.#appendEvents(events);
      return results;
    });
  }

  async extendLeases(items: LeaseItem[], now: number): Promise<LeaseResult[]> {
    return this.#write(() => {
      const extend = this.#stmt(EXTEND_LEASE);
      const results: LeaseResult[] = [];
      const events: OjsEvent[] = [];
      for (const item of items) {
        const job = this.#getJob(item.id);
        const decision = decideLeaseExtension(job, item, now);
        if (decision.result.status === 'extended') {
          const extended = decision.result.job;
          const written = extend.run({
            id: extended.id,
            deadline: jobColumns(extended).deadline,
            doc: JSON.stringify(extended),
            expect_attempt: job!.attempt,
            expect_rev: job!.rev,
            expect_worker: job!.worker_id ?? null,
          });
          if (Number(written.changes) !== 1) {
            results.push({ status: 'not_held', job });
            continue;
          }
        }
        events.push(...decision.events);
        results.push(decision.result);
      }
      this.#appendEvents(events);
      return results;
    });
  }

  async promoteDueJobs(now: number): Promise<number> {
    return this.#write(() => {
      const events: OjsEvent[] = [];
      const expiring = this.#stmt(
        `SELECT doc FROM ojs_jobs WHERE expires_at IS NOT NULL AND expires_at <= ?
           AND state IN ('scheduled', 'available', 'pending', 'retryable') LIMIT 1000`,
      ).all(now) as Row[];
      for (const row of expiring) {
        const job = parseJob(row)!;
        const expired = expire(job, now);
        if (this.#updateJob(expired, job.rev)) {
          events.push(
            jobEvent(
              'job.expired',
              expired,
              { created_at: job.created_at, expired_at: toIso(now) },
              now,
            ),
          );
        }
      }
      const due = this.#stmt(
        `SELECT doc FROM ojs_jobs WHERE state IN ('scheduled', 'retryable') AND run_at <= ?
         ORDER BY run_at LIMIT 1000`,
      ).all(now) as Row[];
      let promoted = 0;
      for (const row of due) {
        const job = parseJob(row)!;
        if (this.#updateJob(promote(job), job.rev)) promoted++;
      }
      this.#appendEvents(events);
      return promoted;
    });
  }

  async findExpiredLeases(now: number, limit: number): Promise<JobRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt(
        `SELECT doc FROM ojs_jobs WHERE state = 'active' AND deadline <= ? ORDER BY deadline LIMIT ?`,
      ).all(now, limit) as Row[];
      return rows.map((row) => parseJob(row)!);
    });
  }

  async listDeadLetter(
    queue: string | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<JobRecord>> {
    return this.#read(() => {
      const where = queue === undefined ? 'dead_letter = 1' : 'dead_letter = 1 AND queue = ?';
      const params = queue === undefined ? [] : [queue];
      const total = (
        this.#stmt(`SELECT count(*) AS n FROM ojs_jobs WHERE ${where}`).get(...params) as Row
      ).n as number;
      const rows = this.#stmt(
        `SELECT doc FROM ojs_jobs WHERE ${where} ORDER BY seq DESC LIMIT ? OFFSET ?`,
      ).all(...params, limit, offset) as Row[];
      return { items: rows.map((row) => parseJob(row)!), total };
    });
  }

  async listQueues(): Promise<QueueInfo[]> {
    return this.#read(() => {
      const rows = this.#stmt('SELECT * FROM ojs_queues ORDER BY name').all() as Row[];
      return rows.map(queueInfo);
    });
  }

  async setQueueConfig(name: string, config: QueueConfig, now: number): Promise<QueueInfo> {
    return this.#write(() => {
      this.#ensureQueue(name, now);
      if (config.concurrency !== undefined) {
        this.#stmt('UPDATE ojs_queues SET concurrency = ? WHERE name = ?').run(
          config.concurrency,
          name,
        );
      }
      if (config.rate_limit !== undefined) {
        this.#stmt('UPDATE ojs_queues SET rate_limit = ?, rate_period_ms = ? WHERE name = ?').run(
          config.rate_limit?.limit ?? null,
          config.rate_limit?.period_ms ?? null,
          name,
        );
      }
      return queueInfo(this.#stmt('SELECT * FROM ojs_queues WHERE name = ?').get(name) as Row);
    });
  }

  async getWorkflow(id: string): Promise<WorkflowRecord | null> {
    return this.#read(() => {
      const row = this.#stmt('SELECT doc FROM ojs_workflows WHERE id = ?').get(id) as
        | Row
        | undefined;
      return row === undefined ? null : (JSON.parse(row.doc as string) as WorkflowRecord);
    });
  }

  async listWorkflowJobs(workflowId: string): Promise<JobRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt('SELECT doc FROM ojs_jobs WHERE workflow_id = ? ORDER BY seq').all(
        workflowId,
      ) as Row[];
      return rows.map((row) => parseJob(row)!);
    });
  }

  async upsertCron(cron: CronRecord): Promise<{ created: boolean; cron: CronRecord }> {
    return this.#write(() => {
      const existing = this.#stmt('SELECT rev FROM ojs_crons WHERE name = ?').get(cron.name) as
        | Row
        | undefined;
      const rev = existing === undefined ? cron.rev : (existing.rev as number) + 1;
      const stored: CronRecord = { ...cron, rev };
      this.#stmt(
        `INSERT INTO ojs_crons (rev, enabled, next_run_ms, doc, name) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET rev = excluded.rev, enabled = excluded.enabled,
           next_run_ms = excluded.next_run_ms, doc = excluded.doc`,
      ).run(...cronColumns(stored), stored.name);
      return { created: existing === undefined, cron: stored };
    });
  }

  async getCron(name: string): Promise<CronRecord | null> {
    return this.#read(() => {
      const row = this.#stmt('SELECT doc FROM ojs_crons WHERE name = ?').get(name) as
        | Row
        | undefined;
      return row === undefined ? null : (JSON.parse(row.doc as string) as CronRecord);
    });
  }

  async listCrons(): Promise<CronRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt('SELECT doc FROM ojs_crons ORDER BY name').all() as Row[];
      return rows.map((row) => JSON.parse(row.doc as string) as CronRecord);
    });
  }

  async deleteCron(name: string): Promise<CronRecord | null> {
    return this.#write(() => {
      const row = this.#stmt('DELETE FROM ojs_crons WHERE name = ? RETURNING doc').get(name) as
        | Row
        | undefined;
      return row === undefined ? null : (JSON.parse(row.doc as string) as CronRecord);
    });
  }

  async getSetting(namespace: string, key: string): Promise<SettingRecord | null> {
    return this.#read(() => {
      const row = this.#stmt('SELECT * FROM ojs_settings WHERE namespace = ? AND key = ?').get(
        namespace,
        key,
      ) as Row | undefined;
      return row === undefined ? null : settingRecord(row);
    });
  }

  async listSettings(namespace: string, keyPrefix = ''): Promise<SettingRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt(
        'SELECT * FROM ojs_settings WHERE namespace = ? AND substr(key, 1, ?) = ? ORDER BY key',
      ).all(namespace, keyPrefix.length, keyPrefix) as Row[];
      return rows.map(settingRecord);
    });
  }

  async putSetting(
    namespace: string,
    key: string,
    value: Record<string, unknown>,
    expectRev: number | null,
    now: number,
  ): Promise<SettingRecord | null> {
    return this.#write(() => {
      const record: SettingRecord = {
        namespace,
        key,
        value,
        rev: expectRev === null ? 0 : expectRev + 1,
        updated_at: toIso(now),
      };
      const result =
        expectRev === null
          ? this.#stmt(
              'INSERT INTO ojs_settings (namespace, key, rev, updated_at, doc) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
            ).run(namespace, key, record.rev, record.updated_at, JSON.stringify(value))
          : this.#stmt(
              'UPDATE ojs_settings SET rev = ?, updated_at = ?, doc = ? WHERE namespace = ? AND key = ? AND rev = ?',
            ).run(record.rev, record.updated_at, JSON.stringify(value), namespace, key, expectRev);
      return Number(result.changes) === 1 ? record : null;
    });
  }

  async deleteSetting(namespace: string, key: string): Promise<boolean> {
    return this.#write(() => {
      const result = this.#stmt('DELETE FROM ojs_settings WHERE namespace = ? AND key = ?').run(
        namespace,
        key,
      );
      return Number(result.changes) === 1;
    });
  }

  async dueCrons(now: number): Promise<CronRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt(
        'SELECT doc FROM ojs_crons WHERE enabled = 1 AND next_run_ms <= ? ORDER BY next_run_ms',
      ).all(now) as Row[];
      return rows.map((row) => JSON.parse(row.doc as string) as CronRecord);
    });
  }

  async queueStats(name: string, now: number): Promise<QueueStats> {
    return this.#read(() => {
      const counts = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as StateCounts;
      const rows = this.#stmt(
        'SELECT state, count(*) AS n FROM ojs_jobs WHERE queue = ? GROUP BY state',
      ).all(name) as Row[];
      for (const row of rows) counts[row.state as keyof StateCounts] = row.n as number;
      const finished = this.#stmt(
        'SELECT count(*) AS n FROM ojs_jobs WHERE queue = ? AND state = ? AND finished_at >= ?',
      );
      const queue = this.#stmt('SELECT paused FROM ojs_queues WHERE name = ?').get(name) as
        | Row
        | undefined;
      return {
        name,
        paused: queue?.paused === 1,
        counts,
        completed_last_minute: (finished.get(name, 'completed', now - 60_000) as Row).n as number,
        completed_last_hour: (finished.get(name, 'completed', now - 3_600_000) as Row).n as number,
        failed_last_hour: (finished.get(name, 'discarded', now - 3_600_000) as Row).n as number,
      };
    });
  }

  async setQueuePaused(name: string, paused: boolean, now: number): Promise<QueueInfo> {
    return this.#write(() => {
      this.#ensureQueue(name, now);
      this.#stmt('UPDATE ojs_queues SET paused = ?, paused_at = ? WHERE name = ?').run(
        paused ? 1 : 0,
        paused ? toIso(now) : null,
        name,
      );
      const row = this.#stmt('SELECT created_at FROM ojs_queues WHERE name = ?').get(name) as Row;
      return { name, paused, created_at: row.created_at as string };
    });
  }

  async appendEvents(events: OjsEvent[]): Promise<void> {
    return this.#write(() => this.#appendEvents(events));
  }

  async listEvents(filter: EventFilter): Promise<OjsEvent[]> {
    return this.#read(() => {
      const clauses: string[] = [];
      const params: (string | number)[] = [];
      const within = (column: string, values: string[] | undefined) => {
        if (values === undefined || values.length === 0) return;
        clauses.push(`${column} IN (${values.map(() => '?').join(', ')})`);
        params.push(...values);
      };
      within('type', filter.types);
      within('queue', filter.queues);
      within('job_type', filter.jobTypes);
      if (filter.after !== undefined) {
        clauses.push('seq > coalesce((SELECT seq FROM ojs_events WHERE id = ?), 0)');
        params.push(filter.after);
      }
      const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
      const rows = this.#db!.prepare(
        `SELECT doc FROM ojs_events ${where} ORDER BY seq LIMIT ?`,
      ).all(...params, filter.limit) as Row[];
      return rows.map((row) => JSON.parse(row.doc as string) as OjsEvent);
    });
  }

  async pruneEvents(keep: number): Promise<number> {
    return this.#write(() => {
      const result = this.#stmt(
        'DELETE FROM ojs_events WHERE seq <= (SELECT coalesce(max(seq), 0) FROM ojs_events) - ?',
      ).run(keep);
      return Number(result.changes);
    });
  }

  async reset(): Promise<void> {
    return this.#write(() => {
      for (const table of [
        'ojs_jobs',
        'ojs_queues',
        'ojs_events',
        'ojs_unique_locks',
        'ojs_rate_windows',
        'ojs_workflows',
        'ojs_crons',
        'ojs_settings',
      ]) {
        this.#db!.exec(`DELETE FROM ${table}`);
      }
    });
  }
}
