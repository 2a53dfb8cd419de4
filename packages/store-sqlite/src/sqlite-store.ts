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
  ClaimedJobs,
  type ClaimRequest,
  type Commit,
  type CronRecord,
  cancel,
  claimSteps,
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
  uniqueConflicts,
  type WebhookDelivery,
  type WebhookDeliveryFilter,
  type WorkflowRecord,
  webhookDeliveryDueAt,
  webhookDeliverySettledAt,
} from '@ojs/core';
import { type ClaimContext, claimFromQueue } from './claim.ts';
import { commitOpenGroup, GroupCommit, Rollback } from './group-commit.ts';
import { ADD_JOB_COUNT, JobCountDeltas } from './job-counts.ts';
import * as queries from './job-queries.ts';
import { migrate } from './migrate.ts';
import {
  cronColumns,
  insertValues,
  lifecycleValues,
  parseJob,
  queueInfo,
  type Row,
  settingRecord,
  setValues,
  staleLease,
} from './rows.ts';
import * as sql from './statements.ts';
import { WakeWatch } from './wake-watch.ts';
import { WalSync } from './wal-sync.ts';

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
  /**
   * How many claimed jobs to keep in memory until settled, so an ACK or a
   * FAIL needs no read of the row (core ClaimedJobs); default 10,000, 0
   * keeps none.
   */
  keepClaimed?: number;
  /**
   * True where claimed jobs reach the caller as copies anyway (the store
   * thread: replies are structured clones), so the store keeps the objects
   * it returned. Otherwise it keeps a parse of the JSON it wrote, as the
   * PostgreSQL store does: a caller changing what it was handed cannot
   * change what an ACK is decided on.
   */
  callerGetsCopies?: boolean;
  /**
   * True where no caller changes a record the store returns (the server:
   * its bindings only serialise them), so the store keeps the claimed
   * objects themselves instead of a parse of the JSON it wrote (4-5 µs per
   * claimed job). Under `node --test` (NODE_TEST_CONTEXT set) the kept
   * records are deep-frozen, so a caller that changes one fails its test
   * instead of changing what an ACK is decided on (decision 0111).
   */
  recordsReadOnly?: boolean;
}

/**
 * How many listed events' positions to remember for `after` cursors: two
 * pages of 1,000 (the largest a listing reads) for each of a few tails.
 */
const REMEMBERED_EVENT_SEQS = 10_000;

/** Rows of the event log a listing reads first (listEvents; a row may hold many events). */
const FIRST_EVENT_PAGE_ROWS = 16;

/**
 * Most events in one row of the log (#writeEvents): a group's run is cut
 * there, so a listing or a cursor's lookup parses at most this many events
 * for the row it starts in.
 */
const MAX_EVENT_RUN = 128;

/** node:sqlite's `errcode` of an INSERT refused by a table's primary key (ojs_jobs.id). */
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;

/** Auto-checkpoint threshold (pages) left to the store's own connection as a safety net. */
const SAFETY_NET_CHECKPOINT_PAGES = 10_000;

export class SqliteStore implements Store {
  readonly backend = 'sqlite';
  readonly pipelinedWrites = true;
  /** Cross-connection wake-ups poll PRAGMA data_version (wake-watch.ts): watched only while fetches wait. */
  readonly polledWakeups = true;
  readonly #options: SqliteStoreOptions;
  #db: DatabaseSync | undefined;
  #group: GroupCommit | undefined;
  #checkpointer: Worker | undefined;
  /** total_changes() after init while the checkpointer waits for the first change. */
  #checkpointerDue: number | undefined;
  /** Makes committed groups durable off this thread (synchronous FULL on a file). */
  #walSync: WalSync | undefined;
  #wake: WakeWatch | undefined;
  /** The job sequence counter while a group is open (#nextSeq). */
  #seq: { group: number; last: number } | undefined;
  readonly #statements = new Map<string, StatementSync>();
  /** Job counts per (queue, state), written once per group (job-counts.ts). */
  readonly #counts = new JobCountDeltas(() => this.#stmt(ADD_JOB_COUNT));
  /** Claimed jobs as written, until settled (keepClaimed). */
  readonly #claimed: ClaimedJobs;
  /**
   * The seq of events this store listed lately, by id: where an `after`
   * cursor points (#eventSeq). A hint only, checked on use: a pruned or
   * re-numbered row is not found at it.
   */
  readonly #eventSeqs = new Map<string, number>();

  /** Kept records are deep-frozen: records are read-only and a test runs (recordsReadOnly). */
  readonly #freezeKept: boolean;

  constructor(options: SqliteStoreOptions) {
    this.#options = options;
    this.#freezeKept =
      options.recordsReadOnly === true &&
      options.callerGetsCopies !== true &&
      process.env.NODE_TEST_CONTEXT !== undefined;
    this.#claimed = new ClaimedJobs(options.keepClaimed ?? 10_000);
  }

  async init(): Promise<void> {
    const db = new DatabaseSync(this.#options.path);
    db.exec(sql.busyTimeout(this.#options.busyTimeoutMs ?? 5000));
    if (this.#options.path !== ':memory:') db.exec(sql.JOURNAL_WAL);
    const synchronous = this.#options.synchronous ?? 'FULL';
    // FULL on a file: durable before answered, but the fsync runs off this
    // thread (wal-sync.ts), so SQLite itself only appends (NORMAL).
    const walSync = synchronous === 'FULL' && this.#options.path !== ':memory:';
    db.exec(sql.synchronous(walSync ? 'NORMAL' : synchronous));
    db.exec(sql.FOREIGN_KEYS_ON);
    db.exec(sql.TEMP_STORE_MEMORY);
    // Another store of this process may hold the write lock in an open group.
    commitOpenGroup();
    migrate(db);
    this.#db = db;
    if (walSync) {
      const version = db.prepare(sql.DATA_VERSION);
      this.#walSync = new WalSync(
        this.#options.path,
        () => (version.get() as { data_version: number }).data_version,
      );
    }
    this.#group = new GroupCommit(db, { sync: this.#walSync });
    if (this.#options.path !== ':memory:' && this.#options.checkpointThread !== false) {
      db.exec(sql.walAutocheckpoint(SAFETY_NET_CHECKPOINT_PAGES));
      // Started by the first write that changes a row, not here: the thread is a V8
      // isolate of its own (about 10 MB) that an idle server does not need (decision 0108).
      this.#checkpointerDue = (this.#stmt(sql.TOTAL_CHANGES).get() as { n: number }).n;
    }
  }

  #startCheckpointer(): void {
    this.#checkpointerDue = undefined;
    this.#checkpointer = new Worker(new URL('./checkpointer.js', import.meta.url), {
      workerData: { path: this.#options.path, intervalMs: 50 },
    });
    // Never the reason a process stays alive.
    this.#checkpointer.unref();
  }

  /**
   * Cross-connection wake-ups (wake-watch.ts): another process's commit to
   * the same file wakes this engine's waiting fetches. A private
   * `:memory:` database has no other connections.
   */
  onJobsAvailable(listener: () => void): () => void {
    if (this.#options.path === ':memory:') return () => {};
    this.#wake ??= new WakeWatch(
      () => (this.#stmt(sql.DATA_VERSION).get() as { data_version: number }).data_version,
      { walPath: `${this.#options.path}-wal` },
    );
    return this.#wake.subscribe(listener);
  }

  async close(): Promise<void> {
    this.#wake?.stop();
    this.#wake = undefined;
    this.#group?.flush();
    this.#group = undefined;
    const walSync = this.#walSync;
    this.#walSync = undefined;
    if (walSync !== undefined) {
      await walSync.settled();
      walSync.close();
    }
    const checkpointer = this.#checkpointer;
    this.#checkpointer = undefined;
    this.#checkpointerDue = undefined;
    if (checkpointer !== undefined) {
      const exited = new Promise((resolve) => checkpointer.once('exit', resolve));
      // Unref'd while running; a close must keep the process alive until it is done.
      checkpointer.ref();
      checkpointer.postMessage('stop');
      await exited;
    }
    this.#statements.clear();
    this.#claimed.clear();
    this.#eventSeqs.clear();
    this.#db?.close();
    this.#db = undefined;
  }

  async ping(): Promise<void> {
    // Liveness only: SELECT 1 reads no row, so its answer has nothing to
    // wait for (no group's COMMIT, no WAL sync, no PRAGMA data_version read
    // per health probe; decision 0124). A closed store still throws.
    this.#stmt(sql.PING).get();
  }

  /** The statement of this SQL text (statements.ts), prepared once and cached by its text. */
  #stmt(text: string): StatementSync {
    let statement = this.#statements.get(text);
    if (statement === undefined) {
      if (this.#db === undefined) throw new Error('SqliteStore is not initialised (call init()).');
      statement = this.#db.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  }

  /** #stmt as a function, for the claim (claim.ts). */
  readonly #prepare = (text: string): StatementSync => this.#stmt(text);

  #groupCommit(): GroupCommit {
    if (this.#group === undefined) throw new Error('SqliteStore is not initialised (call init()).');
    return this.#group;
  }

  /**
   * One atomic write, group-committed with the other writes of this turn
   * (group-commit.ts); throwing Rollback(value) undoes it and answers value.
   */
  #write<T>(fn: () => T, durable = true): Promise<T> {
    const group = this.#groupCommit();
    const counts = this.#counts;
    return group.write(() => {
      // The group's events so far: this write's follow them (#appendEvents).
      const events = this.#events?.group === group.currentGroup() ? this.#events.list : undefined;
      const eventsBefore = events?.length ?? 0;
      let value: T;
      try {
        value = fn();
      } catch (error) {
        // Rolled back to its SAVEPOINT: its count deltas and events go with it.
        counts.discardWrite();
        const open = this.#events;
        if (open !== undefined && open.group === group.currentGroup()) {
          open.list.length = open.list === events ? eventsBefore : 0;
        }
        throw error;
      }
      counts.keepWrite(group);
      if (
        this.#checkpointerDue !== undefined &&
        (this.#stmt(sql.TOTAL_CHANGES).get() as { n: number }).n > this.#checkpointerDue
      ) {
        this.#startCheckpointer();
      }
      return value;
    }, durable);
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
      const row = this.#stmt(sql.READ_JOB_SEQ).get() as Row;
      cache = { group: number, last: row.value as number };
      this.#seq = cache;
      const written = cache;
      group.beforeCommit(() => {
        this.#stmt(sql.WRITE_JOB_SEQ).run(written.last);
      });
    }
    return ++cache.last;
  }

  /** Queues known to exist in the open group: one INSERT OR IGNORE per queue per group, not per job. */
  #queuesSeen: { epoch: number; names: Set<string> } | undefined;

  #ensureQueue(name: string, now: number): void {
    const epoch = this.#groupCommit().currentEpoch();
    if (this.#queuesSeen?.epoch !== epoch) this.#queuesSeen = { epoch, names: new Set() };
    if (this.#queuesSeen.names.has(name)) return;
    this.#stmt(sql.ENSURE_QUEUE).run(name, toIso(now));
    this.#queuesSeen.names.add(name);
  }

  /**
   * QUEUE_LIMITS rows read in the open group, by queue, while its epoch
   * lasts: a claim of one job read its queue's row each time (2 µs of
   * ~30), and a group of fetches claims from the same queues. Nobody else
   * writes the table while the group holds the write lock; this store's
   * own changes to a queue's limits or pause forget them (#forgetQueueLimits).
   * A row ENSURE_QUEUE adds is unpaused without limits, as a missing row
   * is read.
   */
  #queueLimitRows: { epoch: number; rows: Map<string, Row | undefined> } | undefined;

  readonly #queueLimits = (queue: string): Row | undefined => {
    const epoch = this.#groupCommit().currentEpoch();
    if (this.#queueLimitRows?.epoch !== epoch) {
      this.#queueLimitRows = { epoch, rows: new Map() };
    }
    const rows = this.#queueLimitRows.rows;
    if (rows.has(queue)) return rows.get(queue);
    const row = this.#stmt(sql.QUEUE_LIMITS).get(queue) as Row | undefined;
    rows.set(queue, row);
    return row;
  };

  #forgetQueueLimits(): void {
    this.#queueLimitRows = undefined;
  }

  #getJob(id: string): JobRecord | null {
    return parseJob(this.#stmt(sql.GET_JOB).get(id) as Row | undefined);
  }

  #insertJob(job: JobRecord, now: number): JobRecord {
    const stored: JobRecord = { ...job, seq: this.#nextSeq() };
    this.#stmt(sql.INSERT_JOB).run(...insertValues(stored, stored.seq!));
    this.#afterInsert(stored, now);
    // A new object; its nested values are the caller's own, which the store keeps no reference to.
    return stored;
  }

  /**
   * #insertJob, or null when the id is taken: the INSERT failed on the
   * primary key, SQLite undid that statement and nothing else ran.
   */
  #insertNewJob(job: JobRecord, now: number): JobRecord | null {
    const stored: JobRecord = { ...job, seq: this.#nextSeq() };
    try {
      this.#stmt(sql.INSERT_JOB).run(...insertValues(stored, stored.seq!));
    } catch (error) {
      if ((error as { errcode?: number }).errcode === SQLITE_CONSTRAINT_PRIMARYKEY) return null;
      throw error;
    }
    this.#afterInsert(stored, now);
    return stored;
  }

  /** What goes with a job's row: its count, its queue, its unique key. */
  #afterInsert(stored: JobRecord, now: number): void {
    this.#counts.add(stored.queue, stored.state, 1);
    this.#ensureQueue(stored.queue, now);
    if (stored.unique_key !== undefined) {
      this.#stmt(sql.TAKE_UNIQUE_KEY).run(stored.unique_key, stored.id, now);
    }
  }

  /**
   * Guarded update; false when the stored rev is no longer the expected one.
   * `from` is the job as read at `expectRev` in this transaction (its queue
   * and state, for the counts); without it the row is looked up.
   */
  #updateJob(
    job: JobRecord,
    expectRev: number,
    from?: Pick<JobRecord, 'queue' | 'state'>,
  ): boolean {
    const before =
      from ?? (this.#stmt(sql.JOB_QUEUE_STATE).get(job.id, expectRev) as JobRecord | undefined);
    if (before === undefined) return false;
    const result = this.#stmt(sql.UPDATE_JOB).run(...setValues(job), job.id, expectRev);
    if (Number(result.changes) !== 1) return false;
    this.#counts.move(before.queue, before.state, job.queue, job.state);
    return true;
  }

  /**
   * Appends events in order, as part of the write in progress: they are
   * serialised now and kept with the open group's (#events), and written
   * just before its COMMIT (#writeEvents), in the order the writes made
   * them. A write that rolls back takes its events with it (#write).
   */
  #appendEvents(events: readonly OjsEvent[]): void {
    if (events.length === 0) return;
    const group = this.#groupCommit();
    const number = group.currentGroup();
    let open = this.#events;
    if (open?.group !== number) {
      const list: PendingEvent[] = [];
      open = { group: number, list };
      this.#events = open;
      group.beforeCommit(() => this.#writeEvents(list));
    }
    for (const event of events) {
      open.list.push({
        columns: eventColumns(event),
        perJob: isPerJobEvent(event),
        json: JSON.stringify(event),
      });
    }
  }

  /** Events of the open group not yet written (#appendEvents), by group number. */
  #events: { group: number; list: PendingEvent[] } | undefined;

  /**
   * Writes a group's events (migration 014): a run of two or more per-job
   * events, of any writes of the group, is one row holding their JSON
   * array (at most MAX_EVENT_RUN), any other event a row of its own. Their
   * positions follow the last row's, read here, inside the group's
   * transaction and after its every other write: no gap, so the newest N
   * events are the last N positions (pruneEvents), and every event is
   * after any a reader has seen.
   */
  #writeEvents(events: PendingEvent[]): void {
    if (this.#events?.list === events) this.#events = undefined;
    if (events.length === 0) return;
    let next = ((this.#stmt(sql.NEXT_EVENT_SEQ).get() as Row | undefined)?.next as number) ?? 1;
    for (let i = 0; i < events.length; ) {
      let end = i;
      while (end < events.length && end - i < MAX_EVENT_RUN && events[end]!.perJob) end++;
      if (end - i < 2) {
        const event = events[i]!;
        this.#stmt(sql.INSERT_EVENT).run(next, ...event.columns, event.json);
        next++;
        i++;
        continue;
      }
      const run = events.slice(i, end);
      this.#stmt(sql.INSERT_EVENT_RUN).run(
        next,
        run.length,
        ...sharedColumns(run.map((event) => event.columns)),
        `[${run.map((event) => event.json).join(',')}]`,
      );
      next += run.length;
      i = end;
    }
  }

  async getJob(id: string): Promise<JobRecord | null> {
    return this.#read(() => this.#getJob(id));
  }

  /** The job holding `job`'s unique key in a conflicting way, if any (core uniqueConflicts). */
  #uniqueHolder(job: JobRecord, now: number): JobRecord | null {
    if (job.unique === undefined || job.unique_key === undefined) return null;
    const lock = this.#stmt(sql.UNIQUE_KEY_HOLDER).get(job.unique_key) as Row | undefined;
    const holder = lock === undefined ? null : this.#getJob(lock.job_id as string);
    if (holder === null || holder.id === job.id) return null;
    return uniqueConflicts(holder, job.unique, lock!.locked_at as number, now) ? holder : null;
  }

  /** on_conflict replace: the old job is cancelled in the same transaction. */
  #replaceHolder(holder: JobRecord, now: number): OjsEvent[] {
    if (isTerminal(holder.state)) return [];
    const cancelled = cancel(holder, now);
    this.#updateJob(cancelled, holder.rev, holder);
    return [jobEvent('job.cancelled', cancelled, { reason: 'unique_replace' }, now)];
  }

  async insertJobs(jobs: JobRecord[], events: OjsEvent[], now: number): Promise<InsertResult[]> {
    return this.#write(() => {
      const results: InsertResult[] = [];
      let abort = false;
      const extraEvents: OjsEvent[] = [];
      for (const job of jobs) {
        if (job.unique === undefined) {
          // No unique policy to judge before the insert: the primary key
          // finds a taken id, instead of a read before every insert.
          const inserted = this.#insertNewJob(job, now);
          if (inserted !== null) {
            results.push({ status: 'inserted', job: inserted });
          } else {
            results.push({ status: 'duplicate_id', existing: this.#getJob(job.id)! });
            abort = true;
          }
          continue;
        }
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
      const context: ClaimContext = {
        stmt: this.#prepare,
        queueLimits: this.#queueLimits,
        request,
        counts: this.#counts,
        kept: this.#claimed,
        keepReturned:
          this.#options.callerGetsCopies === true || this.#options.recordsReadOnly === true,
        freezeKept: this.#freezeKept,
      };
      const claimed: JobRecord[] = [];
      if (request.takes === undefined) {
        for (const queue of request.queues) {
          if (claimed.length >= request.count) break;
          claimed.push(...claimFromQueue(context, queue, request.count - claimed.length));
        }
      } else {
        const steps = claimSteps(request.takes, request.queues, request.count);
        for (let step = steps.next(0); !step.done; ) {
          const jobs = claimFromQueue(context, step.value.queue, step.value.count);
          claimed.push(...jobs);
          step = steps.next(jobs.length);
        }
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
      // Answered at COMMIT, before the fsync: a claim lost to a power cut
      // only hands the job out again (group-commit.ts write, decision 0037).
    }, false);
  }

  async commit(commit: Commit): Promise<boolean> {
    return this.#write(() => {
      for (const write of commit.updates ?? []) {
        if (!this.#updateJob(write.job, write.expectRev)) throw new Rollback(false);
      }
      for (const del of commit.deletes ?? []) {
        const deleted = this.#stmt(sql.DELETE_JOB).get(del.id, del.expectRev) as Row | undefined;
        if (deleted === undefined) throw new Rollback(false);
        this.#counts.add(deleted.queue as string, deleted.state as string, -1);
        this.#stmt(sql.RELEASE_UNIQUE_KEYS).run(del.id);
      }
      for (const write of commit.workflowUpdates ?? []) {
        const result = this.#stmt(sql.UPDATE_WORKFLOW).run(
          write.workflow.rev,
          JSON.stringify(write.workflow),
          write.workflow.id,
          write.expectRev,
        );
        if (Number(result.changes) !== 1) throw new Rollback(false);
      }
      for (const write of commit.cronUpdates ?? []) {
        const result = this.#stmt(sql.UPDATE_CRON).run(
          ...cronColumns(write.cron),
          write.cron.name,
          write.expectRev,
        );
        if (Number(result.changes) !== 1) throw new Rollback(false);
      }
      for (const workflow of commit.workflowInserts ?? []) {
        this.#stmt(sql.INSERT_WORKFLOW).run(workflow.id, workflow.rev, JSON.stringify(workflow));
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
      const results: SettleResult[] = [];
      const events: OjsEvent[] = [];
      for (const item of request.items) {
        const kept = this.#claimed.take(item.id);
        // An expiry is decided on the lease, which a kept copy may have old.
        const fromCopy =
          kept === undefined || item.settlement.kind === 'expire'
            ? undefined
            : this.#settleOne(kept, item, request);
        if (fromCopy?.status === 'settled') {
          events.push(...fromCopy.events);
          results.push(fromCopy.result);
          continue;
        }
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
        const outcome = this.#settleOne(job, item, request);
        if (outcome.status === 'settled') events.push(...outcome.events);
        results.push(outcome.result);
      }
      this.#appendEvents(events);
      return results;
    });
  }

  /**
   * One settlement decided on `job` (the row as read, or a kept copy) and
   * written guarded on the lease as `job` has it. 'refused': the decision
   * or the guard said no (for a kept copy: decide again on the row).
   */
  #settleOne(
    job: JobRecord,
    item: SettleRequest['items'][number],
    request: SettleRequest,
  ):
    | { status: 'settled'; result: SettleResult; events: OjsEvent[] }
    | { status: 'refused'; result: SettleResult } {
    let decision: ReturnType<typeof decideSettlement>;
    try {
      decision = decideSettlement(job, item, request.now, request.random);
    } catch (error) {
      if (!(error instanceof OjsError)) throw error;
      return { status: 'refused', result: { status: 'conflict', error, job } };
    }
    const written = this.#stmt(sql.SETTLE_JOB).run(
      ...lifecycleValues(decision.job),
      job.id,
      job.attempt,
      job.rev,
      job.worker_id ?? null,
    );
    if (Number(written.changes) !== 1) {
      return { status: 'refused', result: { status: 'conflict', error: staleLease(job), job } };
    }
    this.#counts.move(job.queue, 'active', decision.job.queue, decision.job.state);
    return {
      status: 'settled',
      result: { status: 'settled', job: decision.job },
      events: decision.events,
    };
  }

  async extendLeases(items: LeaseItem[], now: number): Promise<LeaseResult[]> {
    return this.#write(() => {
      const extend = this.#stmt(sql.EXTEND_LEASE);
      const results: LeaseResult[] = [];
      const events: OjsEvent[] = [];
      for (const item of items) {
        const job = this.#getJob(item.id);
        const decision = decideLeaseExtension(job, item, now);
        if (decision.result.status === 'extended') {
          const extended = decision.result.job;
          const written = extend.run(
            jobColumns(extended).deadline,
            JSON.stringify(extended),
            extended.id,
            job!.attempt,
            job!.rev,
            job!.worker_id ?? null,
          );
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
      const expiring = this.#stmt(sql.EXPIRING_JOBS).all(now) as Row[];
      for (const row of expiring) {
        const job = parseJob(row)!;
        const expired = expire(job, now);
        if (this.#updateJob(expired, job.rev, job)) {
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
      const due = this.#stmt(sql.DUE_JOBS).all(now) as Row[];
      let promoted = 0;
      for (const row of due) {
        const job = parseJob(row)!;
        if (this.#updateJob(promote(job), job.rev, job)) promoted++;
      }
      this.#appendEvents(events);
      return promoted;
    });
  }

  async findExpiringWorkflowJobs(now: number, limit: number): Promise<JobRecord[]> {
    return this.#read(() =>
      (this.#stmt(sql.withLimit(sql.EXPIRING_WORKFLOW_JOBS, limit)).all(now) as Row[]).map(
        (row) => parseJob(row)!,
      ),
    );
  }

  async findExpiredLeases(now: number, limit: number): Promise<JobRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt(sql.withLimit(sql.EXPIRED_LEASES, limit)).all(now) as Row[];
      return rows.map((row) => parseJob(row)!);
    });
  }

  async listDeadLetter(
    queue: string | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<JobRecord>> {
    return this.#read(() => {
      const byQueue = queue !== undefined;
      const params = byQueue ? [queue] : [];
      const total = (this.#stmt(sql.deadLetterCount(byQueue)).get(...params) as Row).n as number;
      const rows = this.#stmt(sql.deadLetterPage(byQueue)).all(...params, limit, offset) as Row[];
      return { items: rows.map((row) => parseJob(row)!), total };
    });
  }

  /** A statement of a filter-dependent shape (job-queries.ts), cached by its text. */
  #query(query: queries.Query): Row[] {
    return this.#stmt(query.sql).all(...query.params) as Row[];
  }

  async listJobs(request: JobPageRequest): Promise<JobRecord[]> {
    return this.#read(() =>
      this.#query(queries.listJobsQuery(request)).map((row) => parseJob(row)!),
    );
  }

  async countJobs(filter: JobFilter): Promise<number> {
    return this.#read(() => this.#query(queries.countJobsQuery(filter))[0]!.n as number);
  }

  async countJobsByQueue(): Promise<QueueStateCount[]> {
    return this.#read(() =>
      (this.#stmt(queries.COUNT_BY_QUEUE).all() as Row[]).map((row) => ({
        queue: row.queue as string,
        state: row.state as QueueStateCount['state'],
        count: row.n as number,
      })),
    );
  }

  async pruneJobs(target: PruneTarget, limit: number): Promise<number> {
    return this.#write(() => {
      const ids = this.#query(queries.pruneCandidatesQuery(target, limit));
      const remove = this.#stmt(queries.DELETE_PRUNED);
      const release = this.#stmt(sql.RELEASE_UNIQUE_KEYS);
      for (const { id, queue, state } of ids) {
        // Selected in this transaction, which holds the write lock: still there.
        remove.run(id as string);
        release.run(id as string);
        this.#counts.add(queue as string, state as string, -1);
      }
      return ids.length;
    });
  }

  async rateLimitState(key: string): Promise<RateLimitState> {
    return this.#read(() => {
      const counts = this.#stmt(queries.RATE_KEY_COUNTS).get(key, key) as Row;
      const window = this.#stmt(sql.RATE_WINDOW).get(key) as Row | undefined;
      const policy = this.#stmt(queries.RATE_KEY_POLICY).get(key) as Row | undefined;
      return {
        key,
        active: counts.active as number,
        waiting: counts.waiting as number,
        window:
          window === undefined
            ? null
            : { start: window.window_start as number, count: window.count as number },
        policy:
          policy?.policy == null
            ? null
            : (JSON.parse(policy.policy as string) as RateLimitState['policy']),
      };
    });
  }

  async listQueues(): Promise<QueueInfo[]> {
    return this.#read(() => {
      const rows = this.#stmt(sql.LIST_QUEUES).all() as Row[];
      return rows.map(queueInfo);
    });
  }

  async setQueueConfig(name: string, config: QueueConfig, now: number): Promise<QueueInfo> {
    return this.#write(() => {
      this.#ensureQueue(name, now);
      this.#forgetQueueLimits();
      if (config.concurrency !== undefined) {
        this.#stmt(sql.SET_QUEUE_CONCURRENCY).run(config.concurrency, name);
      }
      if (config.rate_limit !== undefined) {
        this.#stmt(sql.SET_QUEUE_RATE_LIMIT).run(
          config.rate_limit?.limit ?? null,
          config.rate_limit?.period_ms ?? null,
          name,
        );
      }
      return queueInfo(this.#stmt(sql.GET_QUEUE).get(name) as Row);
    });
  }

  async getWorkflow(id: string): Promise<WorkflowRecord | null> {
    return this.#read(() => {
      const row = this.#stmt(sql.GET_WORKFLOW).get(id) as Row | undefined;
      return row === undefined ? null : (JSON.parse(row.doc as string) as WorkflowRecord);
    });
  }

  async listWorkflowJobs(workflowId: string): Promise<JobRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt(sql.WORKFLOW_JOBS).all(workflowId) as Row[];
      return rows.map((row) => parseJob(row)!);
    });
  }

  async upsertCron(cron: CronRecord): Promise<{ created: boolean; cron: CronRecord }> {
    return this.#write(() => {
      const existing = this.#stmt(sql.CRON_REV).get(cron.name) as Row | undefined;
      const rev = existing === undefined ? cron.rev : (existing.rev as number) + 1;
      const stored: CronRecord = { ...cron, rev };
      this.#stmt(sql.UPSERT_CRON).run(...cronColumns(stored), stored.name);
      return { created: existing === undefined, cron: stored };
    });
  }

  async getCron(name: string): Promise<CronRecord | null> {
    return this.#read(() => {
      const row = this.#stmt(sql.GET_CRON).get(name) as Row | undefined;
      return row === undefined ? null : (JSON.parse(row.doc as string) as CronRecord);
    });
  }

  async listCrons(): Promise<CronRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt(sql.LIST_CRONS).all() as Row[];
      return rows.map((row) => JSON.parse(row.doc as string) as CronRecord);
    });
  }

  async deleteCron(name: string): Promise<CronRecord | null> {
    return this.#write(() => {
      const row = this.#stmt(sql.DELETE_CRON).get(name) as Row | undefined;
      return row === undefined ? null : (JSON.parse(row.doc as string) as CronRecord);
    });
  }

  async getSetting(namespace: string, key: string): Promise<SettingRecord | null> {
    return this.#read(() => {
      const row = this.#stmt(sql.GET_SETTING).get(namespace, key) as Row | undefined;
      return row === undefined ? null : settingRecord(row);
    });
  }

  async listSettings(namespace: string, keyPrefix = ''): Promise<SettingRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt(sql.LIST_SETTINGS).all(
        namespace,
        keyPrefix.length,
        keyPrefix,
      ) as Row[];
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
          ? this.#stmt(sql.CREATE_SETTING).run(
              namespace,
              key,
              record.rev,
              record.updated_at,
              JSON.stringify(value),
            )
          : this.#stmt(sql.UPDATE_SETTING).run(
              record.rev,
              record.updated_at,
              JSON.stringify(value),
              namespace,
              key,
              expectRev,
            );
      return Number(result.changes) === 1 ? record : null;
    });
  }

  async deleteSetting(namespace: string, key: string): Promise<boolean> {
    return this.#write(() => {
      const result = this.#stmt(sql.DELETE_SETTING).run(namespace, key);
      return Number(result.changes) === 1;
    });
  }

  async dueCrons(now: number): Promise<CronRecord[]> {
    return this.#read(() => {
      const rows = this.#stmt(sql.DUE_CRONS).all(now) as Row[];
      return rows.map((row) => JSON.parse(row.doc as string) as CronRecord);
    });
  }

  async queueStats(name: string, now: number): Promise<QueueStats> {
    return this.#read(() => {
      const counts = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as StateCounts;
      const rows = this.#stmt(sql.QUEUE_STATE_COUNTS).all(name) as Row[];
      for (const row of rows) counts[row.state as keyof StateCounts] = row.n as number;
      const finished = this.#stmt(sql.FINISHED_SINCE);
      const queue = this.#stmt(sql.QUEUE_PAUSED).get(name) as Row | undefined;
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
      this.#stmt(sql.SET_QUEUE_PAUSED).run(paused ? 1 : 0, paused ? toIso(now) : null, name);
      this.#forgetQueueLimits();
      const row = this.#stmt(sql.QUEUE_CREATED_AT).get(name) as Row;
      return { name, paused, created_at: row.created_at as string };
    });
  }

  async appendEvents(events: OjsEvent[]): Promise<void> {
    return this.#write(() => this.#appendEvents(events));
  }

  async listEvents(filter: EventFilter): Promise<OjsEvent[]> {
    return this.#read(() => {
      if (filter.limit <= 0) return [];
      const afterSeq = filter.after === undefined ? 0 : this.#eventSeq(filter.after);
      // The row holding the cursor's event may hold later events too.
      const fromSeq =
        afterSeq === 0
          ? 0
          : (((this.#stmt(sql.EVENT_ROW_AT).get(afterSeq) as Row | undefined)?.seq as number) ?? 0);
      const query = sql.listEventRows(filter, fromSeq);
      const statement = this.#db!.prepare(query.sql);
      const listed: OjsEvent[] = [];
      const newest = filter.newestFirst === true;
      let bound = newest ? Number.MAX_SAFE_INTEGER : 0;
      // A row may hold up to a batch's events or none that match: pages of
      // rows start small (a page of `limit` rows of 40 events each would
      // parse 40 times what is listed) and double until the limit is
      // reached or the log ends.
      for (let pageRows = Math.min(filter.limit, FIRST_EVENT_PAGE_ROWS); ; ) {
        const rows = statement.all(...query.params, bound, pageRows) as Row[];
        for (const row of rows) {
          const events = rowEvents(row);
          const first = row.seq as number;
          for (let k = 0; k < events.length; k++) {
            const index = newest ? events.length - 1 - k : k;
            const event = events[index]!;
            const seq = first + index;
            if (seq <= afterSeq || !eventMatches(event, filter)) continue;
            this.#rememberEventSeq(event.id, seq);
            listed.push(event);
            if (listed.length === filter.limit) return listed;
          }
        }
        if (rows.length < pageRows) return listed;
        bound = rows.at(-1)!.seq as number;
        pageRows = Math.min(pageRows * 2, filter.limit);
      }
    });
  }

  /**
   * The position of an `after` cursor's event; 0 when it is not in the log
   * (listed from the start, as an unknown cursor always was). The log has
   * no index on id (migration 010): a cursor is an id this store listed
   * (a live tail's, a poller's), whose remembered position the row holding
   * it confirms, or else it is searched from the newest event back.
   */
  #eventSeq(id: string): number {
    const remembered = this.#eventSeqs.get(id);
    if (remembered !== undefined) {
      const row = this.#stmt(sql.EVENT_ROW_AT).get(remembered) as Row | undefined;
      if (row !== undefined && eventAt(row, remembered)?.id === id) return remembered;
    }
    const search = this.#stmt(sql.EVENT_ROW_WITH_ID);
    const text = `"id":${JSON.stringify(id)}`;
    for (let below = Number.MAX_SAFE_INTEGER; ; ) {
      const row = search.get(id, text, below) as Row | undefined;
      if (row === undefined) return 0;
      const index = rowEvents(row).findIndex((event) => event.id === id);
      if (index >= 0) return (row.seq as number) + index;
      below = row.seq as number;
    }
  }

  #rememberEventSeq(id: string, seq: number): void {
    const seqs = this.#eventSeqs;
    // Re-inserted so the most recently listed ids are evicted last.
    seqs.delete(id);
    seqs.set(id, seq);
    if (seqs.size > REMEMBERED_EVENT_SEQS) seqs.delete(seqs.keys().next().value!);
  }

  /**
   * Keeps the newest `keep` events (positions are dense, #appendEvents),
   * removing at most `limit`, oldest first: whole rows, and the oldest
   * events of the row the cut falls in.
   */
  async pruneEvents(keep: number, limit?: number): Promise<number> {
    return this.#write(() => {
      const next = (this.#stmt(sql.NEXT_EVENT_SEQ).get() as Row | undefined)?.next as
        | number
        | undefined;
      if (next === undefined) return 0;
      const first = (this.#stmt(sql.FIRST_EVENT_ROW).get() as Row).seq as number;
      let last = next - 1 - keep;
      if (limit !== undefined && limit >= 0) last = Math.min(last, first + limit - 1);
      if (last < first) return 0;
      let removed = 0;
      for (const row of this.#stmt(sql.DELETE_EVENT_ROWS).all(last) as Row[]) {
        removed += row.n as number;
      }
      const cut = this.#stmt(sql.EVENT_ROW_AT).get(last) as Row | undefined;
      if (cut !== undefined && (cut.seq as number) + (cut.n as number) - 1 > last) {
        const from = cut.seq as number;
        const rest = rowEvents(cut).slice(last - from + 1);
        removed += (cut.n as number) - rest.length;
        const columns =
          rest.length === 1
            ? [...eventColumns(rest[0]!), JSON.stringify(rest[0])]
            : [null, ...sharedColumns(rest.map(eventColumns)), JSON.stringify(rest)];
        this.#stmt(sql.REWRITE_EVENT_ROW).run(last + 1, rest.length, ...columns, from);
      }
      return removed;
    });
  }

  async insertWebhookDeliveries(deliveries: WebhookDelivery[]): Promise<number> {
    if (deliveries.length === 0) return 0;
    return this.#write(() => {
      const insert = this.#stmt(sql.INSERT_WEBHOOK_DELIVERY);
      let inserted = 0;
      for (const d of deliveries) {
        inserted += Number(insert.run(...webhookDeliveryColumns(d)).changes);
      }
      return inserted;
    });
  }

  async dueWebhookDeliveries(now: number, limit: number): Promise<WebhookDelivery[]> {
    return this.#read(() =>
      (this.#stmt(sql.withLimit(sql.DUE_WEBHOOK_DELIVERIES, limit)).all(now) as Row[]).map(
        (row) => JSON.parse(row.doc as string) as WebhookDelivery,
      ),
    );
  }

  async updateWebhookDelivery(delivery: WebhookDelivery, expectRev: number): Promise<boolean> {
    return this.#write(() => {
      const [id, , , state, dueAt, settledAt, rev, doc] = webhookDeliveryColumns(delivery);
      const result = this.#stmt(sql.UPDATE_WEBHOOK_DELIVERY).run(
        state,
        dueAt,
        settledAt,
        rev,
        doc,
        id,
        expectRev,
      );
      return Number(result.changes) === 1;
    });
  }

  async getWebhookDelivery(id: string): Promise<WebhookDelivery | null> {
    return this.#read(() => {
      const row = this.#stmt(sql.GET_WEBHOOK_DELIVERY).get(id) as Row | undefined;
      return row === undefined ? null : (JSON.parse(row.doc as string) as WebhookDelivery);
    });
  }

  async listWebhookDeliveries(filter: WebhookDeliveryFilter): Promise<WebhookDelivery[]> {
    return this.#read(() => {
      let beforeSeq: number | undefined;
      if (filter.after !== undefined) {
        const row = this.#stmt(sql.WEBHOOK_DELIVERY_SEQ).get(filter.after) as Row | undefined;
        if (row === undefined) return [];
        beforeSeq = row.seq as number;
      }
      const query = sql.listWebhookDeliveries({ ...filter, beforeSeq });
      return (this.#db!.prepare(query.sql).all(...query.params) as Row[]).map(
        (row) => JSON.parse(row.doc as string) as WebhookDelivery,
      );
    });
  }

  async pruneWebhookDeliveries(
    before: { delivered: number; dead: number },
    limit: number,
  ): Promise<number> {
    return this.#write(() =>
      Number(
        this.#stmt(sql.PRUNE_WEBHOOK_DELIVERIES).run(before.delivered, before.dead, limit).changes,
      ),
    );
  }

  async reset(): Promise<void> {
    return this.#write(() => {
      for (const table of sql.RESET_TABLES) this.#db!.exec(sql.deleteAll(table));
      this.#claimed.clear();
      // The counts of jobs written earlier in this group went with them.
      this.#counts.forgetGroup();
      // The events of the group's earlier writes would have been deleted with the log.
      if (this.#events !== undefined) this.#events.list.length = 0;
      // Queue rows are gone: whatever deletes them must forget #queuesSeen.
      this.#queuesSeen = undefined;
      this.#forgetQueueLimits();
    });
  }
}

/** An event a row of several may hold (migration 014): a per-job type. */
function isPerJobEvent(event: OjsEvent): boolean {
  return (sql.PER_JOB_EVENT_TYPES as readonly string[]).includes(event.type);
}

/** An event's row columns: id, type, queue and job type (the filter columns). */
type EventColumns = [id: string, type: string, queue: string | null, jobType: string | null];

/** An event appended in the open group, as it will be written (#writeEvents). */
interface PendingEvent {
  columns: EventColumns;
  /** A per-job type: may share a row with others (migration 014). */
  perJob: boolean;
  /** Serialised when appended: a caller changing the event later changes nothing stored. */
  json: string;
}

function eventColumns(event: OjsEvent): EventColumns {
  const queue = typeof event.data.queue === 'string' ? event.data.queue : null;
  const jobType = typeof event.data.job_type === 'string' ? event.data.job_type : null;
  return [event.id, event.type, queue, jobType];
}

/** The type, queue and job type all of `events` share, each null where they differ. */
function sharedColumns(
  events: readonly EventColumns[],
): [string | null, string | null, string | null] {
  const [, type, queue, jobType] = events[0]!;
  const shared: [string | null, string | null, string | null] = [type, queue, jobType];
  for (let i = 1; i < events.length; i++) {
    const [, t, q, j] = events[i]!;
    if (shared[0] !== t) shared[0] = null;
    if (shared[1] !== q) shared[1] = null;
    if (shared[2] !== j) shared[2] = null;
  }
  return shared;
}

/** The events of a row of the log, in order: its doc is one event (n = 1) or their array. */
function rowEvents(row: Row): OjsEvent[] {
  const doc = JSON.parse(row.doc as string) as OjsEvent | OjsEvent[];
  return row.n === 1 ? [doc as OjsEvent] : (doc as OjsEvent[]);
}

/** The event at position `seq` of `row`, if the row holds it. */
function eventAt(row: Row, seq: number): OjsEvent | undefined {
  const index = seq - (row.seq as number);
  if (index < 0 || index >= (row.n as number)) return undefined;
  if (row.n === 1) return row.id === undefined ? undefined : ({ id: row.id } as OjsEvent);
  return rowEvents(row)[index];
}

/** Whether an event matches a listing's filter (the rows' columns only narrowed the search). */
function eventMatches(event: OjsEvent, filter: EventFilter): boolean {
  const [, type, queue, jobType] = eventColumns(event);
  if (filter.types !== undefined && filter.types.length > 0 && !filter.types.includes(type)) {
    return false;
  }
  if (filter.queues !== undefined && filter.queues.length > 0) {
    if (queue === null || !filter.queues.includes(queue)) return false;
  }
  if (filter.jobTypes !== undefined && filter.jobTypes.length > 0) {
    if (jobType === null || !filter.jobTypes.includes(jobType)) return false;
  }
  return filter.subject === undefined || event.subject === filter.subject;
}

/** A delivery's row: id, subscription_id, tenant_id, state, due_at, settled_at, rev, doc. */
function webhookDeliveryColumns(
  d: WebhookDelivery,
): [string, string, string | null, string, number | null, number | null, number, string] {
  return [
    d.id,
    d.subscription_id,
    d.tenant_id ?? null,
    d.state,
    webhookDeliveryDueAt(d),
    webhookDeliverySettledAt(d),
    d.rev,
    JSON.stringify(d),
  ];
}
