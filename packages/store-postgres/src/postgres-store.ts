/**
 * The PostgreSQL store: several stateless server processes share one
 * database (DESIGN §4). Every operation is one statement or one transaction
 * on a pooled connection (database.ts); every job transition is a guarded
 * write (`UPDATE ... WHERE id = $1 AND rev = $2`) and the writes of one
 * commit apply together or not at all (writes.ts, inserts.ts); claims take
 * jobs with FOR UPDATE SKIP LOCKED (claim.ts). Jobs that become available
 * are announced with NOTIFY in the same transaction (listener.ts); leases and
 * schedules follow the database's clock (core database-clock.ts).
 */
import {
  ClaimedJobs,
  type ClaimRequest,
  type Commit,
  type CronRecord,
  DatabaseClock,
  type EventFilter,
  type InsertResult,
  isRefusedInsert,
  JOB_STATES,
  type JobFilter,
  type JobPageRequest,
  type JobRecord,
  type LeaseItem,
  type LeaseResult,
  type OjsEvent,
  type OutboxConsume,
  type Page,
  type PruneTarget,
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
import pg from 'pg';
import { claimInTransaction, claimOneQueue, type GatedRow } from './claim.ts';
import { Database, MAX_ATTEMPTS, OutcomeUnknown } from './database.ts';
import { isUniqueViolation, wrapError } from './errors.ts';
import { type EventPosition, listEventsQuery } from './event-queries.ts';
import { EnqueueTurn, enqueue, enqueueInOneStatement, insertJobsTx } from './inserts.ts';
import { countJobsQuery, listJobsQuery, pruneQuery } from './job-queries.ts';
import { JobsAvailableListener } from './listener.ts';
import { migrate } from './migrate.ts';
import {
  assertSchemaName,
  DEFAULT_SCHEMA,
  jobsAvailableChannel,
  splitSchemaParam,
} from './names.ts';
import { consumeOutboxTx, outboxChannel, PostgresOutbox } from './outbox.ts';
import {
  cronRow,
  eventRow,
  eventValues,
  type QueueRow,
  queueInfo,
  type SettingRow,
  settingRecord,
  toNumber,
} from './rows.ts';
import {
  autocommitWriter,
  extendLeasesTx,
  keptAlone,
  settleJobsTx,
  settleKept,
  settleRefusedTx,
  type Writer,
} from './settle.ts';
import { preparedNames, type Statements, statements } from './statements.ts';
import { appendEvents, notifyAvailable, type Tx } from './tx.ts';
import { WalFlush } from './wal-flush.ts';
import { commitTx, promoteDueJobsTx } from './writes.ts';

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database (or use `pool` for discrete settings). */
  connectionString?: string;
  /** Extra pg pool settings, applied over the defaults (max 10, connect timeout 5 s, ...). */
  pool?: pg.PoolConfig;
  /**
   * Schema holding the store's tables; one database can host several stores.
   * Default: the connection string's `schema` parameter
   * (postgres://host/db?schema=NAME), else $OJS_POSTGRES_SCHEMA, else 'ojs'.
   */
  schema?: string;
  /** Apply pending migrations in init() (default true). */
  migrate?: boolean;
  /** How often the database clock offset is re-measured (default 60 s; 0 = only at init). */
  clockSyncIntervalMs?: number;
  /**
   * How often the job count deltas are folded into the counters (default
   * 1 s; 0 = never). Counts are exact either way; folding keeps them cheap.
   */
  countCompactionIntervalMs?: number;
  /**
   * How many of the jobs this process claimed are kept (as copies) until
   * settled, so that their ACK or FAIL is written without reading the row
   * first (core ClaimedJobs); default 10,000, 0 keeps none. The oldest go
   * first, as do copies beyond 32 MiB of JSON in all.
   */
  keepClaimed?: number;
  /** application_name of the connections (default 'ojs'); the LISTEN connection adds ':listen'. */
  applicationName?: string;
  /**
   * Where background errors go (idle connections dropped, LISTEN connection
   * lost, clock re-sync failures). Default: console.warn. Errors of calls
   * are thrown to the caller, never reported here.
   */
  onError?: (error: Error, context: string) => void;
}

/** Connections of the claim pool (decision 0082): claims are short, the long poll waits in the engine. */
const CLAIM_CONNECTIONS = 5;
/** Startup option of the claim pool's connections: their commits do not wait for the WAL flush. */
export const ASYNC_COMMIT_OPTION = '-c synchronous_commit=off';
/**
 * Startup options of the claim pool's connections: the claim statement is
 * planned once per connection (decision 0106). PostgreSQL would otherwise
 * keep planning it on every call, because its generic plan's guess of
 * `LIMIT $6` costs more than a custom plan; the statement's shape
 * (statements.ts claimSet) makes the generic plan the one a custom plan
 * finds, and each call skips the planner. A
 * generic plan is kept until the table's statistics change, so one made
 * while the table was nearly empty would read the whole table once it has
 * grown (17 ms per claim at 15,000 jobs): `enable_seqscan=off` keeps that
 * plan on its indexes, the only right plan for a claim (one page of one
 * queue, by id). Nothing else runs on these connections.
 */
/** How many listed events' positions a store remembers (#eventPositions). */
const REMEMBERED_EVENT_POSITIONS = 10_000;

export const GENERIC_PLANS_OPTION = '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off';

/** Jobs inserted through this process between two background ANALYZEs of the jobs table. */
const ANALYZE_EVERY = 20_000;

export class PostgresStore implements Store {
  readonly backend = 'postgres';
  /** The database's clock (core database-clock.ts): decides leases and schedules in every process alike. */
  readonly clock: DatabaseClock = new DatabaseClock();
  readonly schema: string;
  /** Enqueues of one event-loop turn are one statement (inserts.ts EnqueueTurn). */
  readonly coalescesInserts = true;
  /**
   * insertJobs wakes this process's waiting fetches itself once its jobs
   * are visible: at COMMIT on the one-statement path (#enqueue), after the
   * transaction on the other.
   */
  readonly wakesOnInsert = true;
  readonly #options: PostgresStoreOptions;
  readonly #pool: pg.Pool;
  readonly #db: Database;
  /**
   * Connections whose commits do not wait for the WAL flush
   * (`synchronous_commit=off` for the session), for claims run as one
   * statement (decision 0082); nothing else runs on them.
   */
  readonly #claimPool: pg.Pool;
  readonly #claimDb: Database;
  /** settleJobs run on its own (autocommit) for settleKept (decision 0083). */
  readonly #settleAlone: Writer;
  #insertedSinceAnalyze = 0;
  #analyzing = false;
  readonly #sql: Statements;
  readonly #channel: string;
  readonly #listener: JobsAvailableListener;
  /** The outbox's own LISTEN connection (its channel wakes only the relay). */
  readonly #outboxListener: JobsAvailableListener;
  /** Transactional enqueue (outbox.ts, decision 0109). */
  readonly outbox: PostgresOutbox;
  readonly #onError: (error: Error, context: string) => void;
  #clockTimer: NodeJS.Timeout | undefined;
  #compactTimer: NodeJS.Timeout | undefined;
  #compacting: Promise<void> | undefined;
  #closed = false;
  /** Claimed jobs as claimed, until settled (keepClaimed). */
  readonly #claimed: ClaimedJobs;
  /**
   * Where the events this process listed lately are (id -> position), so
   * an `after` cursor (a live tail's, the webhook fan-out's) is found by
   * reading the one row at that position rather than searched for in the
   * rows of several events (decision 0113). A hint, confirmed by the
   * statement: positions are the database's, not counted here.
   */
  readonly #eventPositions = new Map<string, EventPosition>();
  /** WAL flushes after asynchronous commits, shared by concurrent callers (wal-flush.ts). */
  readonly #walFlush = new WalFlush(async () => {
    try {
      await this.#db.query(this.#sql.flushWal, []);
    } catch (error) {
      // Committed and visible, but whether it reached the disk is not known.
      throw wrapError(error, true);
    }
  });
  /**
   * One `enqueue` statement, on its own. It commits without waiting for
   * the WAL flush (decision 0115): its jobs are visible and announced at
   * COMMIT, so fetches waiting in this process claim now, and those of
   * other processes on the NOTIFY, while the flush runs; the enqueuer is
   * answered once the flush is done, as when the COMMIT waited for it.
   */
  readonly #enqueue = async (jobs: JobRecord[], events: OjsEvent[], now: number) => {
    const results = await enqueue(this.#db, this.#sql, this.#channel, jobs, events, now);
    if (results === null) return null;
    if (jobs.some((job) => job.state === 'available')) {
      this.#listener.wakeLocal();
      // The flush is sent after the claims of the fetches just woken: they
      // are on the way to a handler, it only on the way to the enqueuer's
      // answer. Sent first, its statement (a socket write that wakes a
      // backend, then that backend's work) ran ahead of every woken claim.
      await new Promise(setImmediate);
    }
    await this.#walFlush.flush();
    return results;
  };
  /** Enqueues of one event-loop turn, coalesced into one statement (inserts.ts). */
  readonly #enqueueTurn = new EnqueueTurn(this.#enqueue);

  constructor(options: PostgresStoreOptions) {
    this.#options = options;
    const { connectionString, schema } = splitSchemaParam(options.connectionString);
    this.schema = assertSchemaName(
      options.schema ?? schema ?? process.env.OJS_POSTGRES_SCHEMA ?? DEFAULT_SCHEMA,
    );
    this.#sql = statements(this.schema);
    this.#claimed = new ClaimedJobs(options.keepClaimed ?? 10_000);
    this.#channel = jobsAvailableChannel(this.schema);
    this.#onError =
      options.onError ??
      ((error, context) => console.warn(`[ojs store-postgres] ${context}: ${error.message}`));
    const base: pg.ClientConfig = {
      connectionString,
      connectionTimeoutMillis: 5000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // A process stuck inside a transaction must not hold row locks forever.
      idle_in_transaction_session_timeout: 60_000,
      application_name: options.applicationName ?? 'ojs',
      ...options.pool,
    };
    this.#pool = new pg.Pool({ max: 10, idleTimeoutMillis: 30_000, ...base });
    this.#claimPool = new pg.Pool({
      max: CLAIM_CONNECTIONS,
      idleTimeoutMillis: 30_000,
      ...base,
      options: [base.options, ASYNC_COMMIT_OPTION, GENERIC_PLANS_OPTION].filter(Boolean).join(' '),
    });
    // Idle connections that die (pg_terminate_backend, restarts) are removed by
    // the pool, which reports them here; without a listener they would crash the process.
    this.#pool.on('error', (error) => this.#onError(error, 'idle pooled connection'));
    // Every pooled client keeps an 'error' listener for life: a connection
    // terminated while a client is checked out but between statements (a
    // window no single code path can fully close) then fails that client's
    // next statement as a connection error, instead of an unhandled 'error'
    // event crashing the process (seen under backend terminations).
    // The claim pool's clients too (migration 014 gave claims a pool of
    // their own; without this, a claim connection terminated between two
    // statements crashed the process, seen in the resilience test).
    const keepErrorListener = (client: pg.PoolClient) => {
      client.on('error', () => {});
    };
    this.#pool.on('connect', keepErrorListener);
    this.#db = new Database(this.#pool, preparedNames(this.#sql), this.#onError);
    this.#settleAlone = autocommitWriter(this.#db, this.#sql, this.#channel);
    this.#claimPool.on('error', (error) => this.#onError(error, 'idle pooled connection'));
    this.#claimPool.on('connect', keepErrorListener);
    this.#claimDb = new Database(this.#claimPool, preparedNames(this.#sql), this.#onError);
    this.#listener = new JobsAvailableListener({
      config: { ...base, application_name: `${base.application_name}:listen` },
      channel: this.#channel,
      onError: this.#onError,
    });
    this.#outboxListener = new JobsAvailableListener({
      config: { ...base, application_name: `${base.application_name}:outbox` },
      channel: outboxChannel(this.schema),
      onError: this.#onError,
    });
    this.outbox = new PostgresOutbox(this.#db, this.schema, this.#outboxListener);
  }

  // ------------------------------------------------------------ lifecycle

  async init(): Promise<void> {
    try {
      if (this.#options.migrate !== false) await migrate(this.#pool, this.schema);
      await this.#syncClock();
    } catch (error) {
      throw wrapError(error);
    }
    const interval = this.#options.clockSyncIntervalMs ?? 60_000;
    if (interval > 0 && this.#clockTimer === undefined) {
      this.#clockTimer = setInterval(() => {
        this.#syncClock().catch((error: Error) => this.#onError(error, 'database clock sync'));
      }, interval);
      this.#clockTimer.unref();
    }
    const compactEvery = this.#options.countCompactionIntervalMs ?? 1000;
    if (compactEvery > 0 && this.#compactTimer === undefined) {
      this.#compactTimer = setInterval(() => {
        if (this.#compacting !== undefined) return;
        this.#compacting = this.compactJobCounts()
          .catch((error: Error) => this.#onError(error, 'job count compaction'))
          .finally(() => {
            this.#compacting = undefined;
          });
      }, compactEvery);
      this.#compactTimer.unref();
    }
  }

  /** Folds the job count deltas into the counters (migration 008); safe in any number of processes. */
  async compactJobCounts(): Promise<void> {
    await this.#db.query(this.#sql.compactJobCounts, []);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#clockTimer);
    this.#clockTimer = undefined;
    clearInterval(this.#compactTimer);
    this.#compactTimer = undefined;
    await this.#compacting;
    await Promise.all([this.#listener.close(), this.#outboxListener.close()]);
    await Promise.all([this.#pool.end(), this.#claimPool.end()]);
    this.#claimed.clear();
  }

  async ping(): Promise<void> {
    // Retried on a lost connection like any read: an idle pooled connection
    // that died (a restart, a terminated backend) is not an unhealthy store.
    // Seen as a flaky test: the pool handed out a terminated idle connection
    // before its error event had removed it, and health answered 503.
    await this.#db.query('SELECT 1', []);
  }

  async #syncClock(): Promise<void> {
    await this.clock.sync(async () => {
      const { rows } = await this.#db.query<{ ms: number }>(this.#sql.dbTimeMs, []);
      return rows[0]!.ms;
    });
  }

  /** Pool statistics, for health reporting. */
  get poolStats(): { total: number; idle: number; waiting: number } {
    return {
      total: this.#pool.totalCount,
      idle: this.#pool.idleCount,
      waiting: this.#pool.waitingCount,
    };
  }

  /** One transaction (database.ts) with the store's SQL and channel at hand. */
  #transaction<T>(body: (tx: Tx) => Promise<T>, durable = true): Promise<T> {
    return this.#db.transaction(
      (client, state) =>
        body({ client, sql: this.#sql, schema: this.schema, channel: this.#channel, state }),
      durable,
    );
  }

  // ------------------------------------------------------------ jobs

  async getJob(id: string): Promise<JobRecord | null> {
    const { rows } = await this.#db.query<{ doc: JobRecord }>(this.#sql.getJob, [id]);
    return rows[0]?.doc ?? null;
  }

  /**
   * Fresh planner statistics after a large intake. Autovacuum analyzes the
   * jobs table only after it grew by a share of its size and at its next
   * round (up to a minute later); until then a table analyzed while small
   * is planned as tiny, and the claim sorts the whole queue instead of
   * walking jobs_claim (measured: 230 ms instead of 0.9 ms per claim at
   * 100,000 queued). So every ANALYZE_EVERY inserted jobs this process
   * analyzes the table in the background (never on a request's path).
   */
  #noteInserted(count: number): void {
    this.#insertedSinceAnalyze += count;
    if (this.#insertedSinceAnalyze < ANALYZE_EVERY || this.#analyzing || this.#closed) return;
    this.#insertedSinceAnalyze = 0;
    this.#analyzing = true;
    this.#db
      .query(this.#sql.analyzeJobs, [], false)
      .catch((error: Error) => this.#onError(error, 'ANALYZE of the jobs table'))
      .finally(() => {
        this.#analyzing = false;
      });
  }

  async insertJobs(
    jobs: JobRecord[],
    events: OjsEvent[],
    now: number,
    consume?: OutboxConsume,
  ): Promise<InsertResult[]> {
    this.#noteInserted(jobs.length);
    if (consume === undefined && enqueueInOneStatement(jobs)) {
      const results = jobs.every((job) => job.unique_key === undefined)
        ? await this.#enqueueTurn.enqueue(jobs, events, now)
        : await this.#enqueue(jobs, events, now);
      if (results !== null) return results;
    }
    // A held unique key or a duplicate id: the transaction path judges and reports it.
    for (let attempt = 1; ; attempt++) {
      try {
        const results = await this.#transaction(async (tx) => {
          const results = await insertJobsTx(tx, jobs, events, now);
          // Relayed outbox rows go in the same transaction as their jobs.
          if (consume !== undefined) await consumeOutboxTx(tx, consume);
          return results;
        });
        // Committed (its NOTIFY wakes the other processes): this one's
        // fetches wake now, not a LISTEN round trip later (wakesOnInsert).
        // A refused job rolled the whole call back (its 'inserted' are not stored).
        if (
          !results.some(isRefusedInsert) &&
          results.some((r) => r.status === 'inserted' && r.job.state === 'available')
        ) {
          this.#listener.wakeLocal();
        }
        return results;
      } catch (error) {
        // A concurrent insert of the same id committed first: run again to report duplicate_id.
        if (attempt < MAX_ATTEMPTS && isUniqueViolation(error, 'jobs_pkey')) continue;
        throw error;
      }
    }
  }

  async claimJobs(request: ClaimRequest): Promise<JobRecord[]> {
    // Committed without waiting for the WAL flush (decision 0078): a claim
    // lost in a database crash leaves its jobs available at their previous
    // attempt, so they run again and the lost holder's ACK is refused by the
    // fence. An ACK's flush covers every earlier commit in the WAL, so a job
    // acknowledged as done had its claim on disk first.
    const { jobs, docs } = await this.#claim(request);
    // Kept once committed. Workflow jobs are settled by the engine's commit().
    for (const [index, job] of jobs.entries()) {
      // A second parse of the claim's JSON: the caller gets `job` itself
      // (Engine.fetch in-process hands it on), and a handler changing it must
      // not change what its settlement decides on (3.8 µs for a small job,
      // against ~7 for a JSON round trip of the object, ~9 for structuredClone).
      const text = docs[index]!;
      if (!job.workflow_id) this.#claimed.keep(job.id, text.length, () => JSON.parse(text));
    }
    return jobs;
  }

  /**
   * The claim of one queue (a worker's usual fetch) is one statement on its
   * own, in autocommit mode on a claim connection (decision 0082): it
   * checks that the queue needs no transaction (not paused, unlimited, no
   * rate-limited job waiting) and claims, in one round trip instead of
   * BEGIN, plan, claim, COMMIT. Every other claim is one transaction.
   */
  async #claim(request: ClaimRequest): Promise<{ jobs: JobRecord[]; docs: string[] }> {
    if (
      request.queues.length === 1 &&
      request.count > 0 &&
      request.tenant === undefined &&
      request.tenantConcurrency === undefined
    ) {
      const claimed = await claimOneQueue(
        (text, params) =>
          this.#claimDb.autocommit<GatedRow, GatedRow[]>(
            text,
            params,
            (rows) => rows,
            // Sent and then lost: whether it committed cannot be told
            // without a trace of its own. The fetch fails (503, outcome
            // unknown); jobs it may have claimed come back when their
            // lease expires, like those of a fetch response lost on the way.
            async () => {
              throw new OutcomeUnknown();
            },
            true,
          ),
        this.#sql,
        request,
      );
      if (claimed !== undefined) return claimed;
    }
    return this.#transaction(async (tx) => {
      const claimed = await claimInTransaction(tx, request);
      await appendEvents(tx, claimed.events);
      return claimed;
    }, false);
  }

  /**
   * A batch of jobs this process claimed and kept (the SDK worker's usual
   * ACK batch) is decided on the copies and written by ONE statement on its
   * own, in autocommit mode (decision 0083): one round trip instead of
   * BEGIN, settleJobs, COMMIT, and a synchronous commit as before. Items
   * whose copy the guard refused are decided again on their rows in a
   * transaction; every other batch is one transaction.
   */
  async settleJobs(request: SettleRequest): Promise<SettleResult[]> {
    if (request.items.length === 0) return [];
    if (!keptAlone(this.#claimed, request)) {
      return this.#transaction((tx) => settleJobsTx(tx, request, this.#claimed));
    }
    const { results, refused } = await settleKept(this.#settleAlone, request, this.#claimed);
    if (refused.length > 0) {
      await this.#transaction((tx) => settleRefusedTx(tx, request, refused, results));
    }
    return results;
  }

  async extendLeases(items: LeaseItem[], now: number): Promise<LeaseResult[]> {
    if (items.length === 0) return [];
    return this.#transaction((tx) => extendLeasesTx(tx, items, now));
  }

  async commit(commit: Commit): Promise<boolean> {
    const now = commit.now ?? this.clock.now();
    return this.#transaction((tx) => commitTx(tx, commit, now));
  }

  async promoteDueJobs(now: number): Promise<number> {
    // Nearly always nothing is due: one read tells so, where the transaction
    // is five round trips (BEGIN, two locking reads, txid, COMMIT), run by
    // every fetch's claim at most every 50 ms, beside it (decision 0115).
    const { rows } = await this.#db.query<{ due: boolean }>(this.#sql.anyDue, [now]);
    if (rows[0]?.due !== true) return 0;
    return this.#transaction((tx) => promoteDueJobsTx(tx, now));
  }

  async findExpiringWorkflowJobs(now: number, limit: number): Promise<JobRecord[]> {
    const { rows } = await this.#db.query<{ doc: JobRecord }>(this.#sql.expiringWorkflowJobs, [
      now,
      limit,
    ]);
    return rows.map((row) => row.doc);
  }

  async findExpiredLeases(now: number, limit: number): Promise<JobRecord[]> {
    const { rows } = await this.#db.query<{ doc: JobRecord }>(this.#sql.expiredLeases, [
      now,
      limit,
    ]);
    return rows.map((row) => row.doc);
  }

  async listDeadLetter(
    queue: string | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<JobRecord>> {
    const [count, page] = await Promise.all([
      this.#db.query<{ n: string }>(this.#sql.deadLetterCount, [queue ?? null]),
      this.#db.query<{ doc: JobRecord }>(this.#sql.deadLetterPage, [queue ?? null, limit, offset]),
    ]);
    return { items: page.rows.map((row) => row.doc), total: toNumber(count.rows[0]!.n) };
  }

  // ------------------------------------------------------------ finding jobs, retention

  async listJobs(request: JobPageRequest): Promise<JobRecord[]> {
    const { text, values } = listJobsQuery(this.#sql.quotedSchema, request);
    const { rows } = await this.#db.query<{ doc: JobRecord }>(text, values);
    return rows.map((row) => row.doc);
  }

  async countJobs(filter: JobFilter): Promise<number> {
    const { text, values } = countJobsQuery(this.#sql.quotedSchema, filter);
    const { rows } = await this.#db.query<{ n: string }>(text, values);
    return toNumber(rows[0]!.n);
  }

  async countJobsByQueue(): Promise<QueueStateCount[]> {
    const { rows } = await this.#db.query<{ queue: string; state: string; n: string }>(
      this.#sql.countJobsByQueue,
      [],
    );
    return rows.map((row) => ({
      queue: row.queue,
      state: row.state as QueueStateCount['state'],
      count: toNumber(row.n),
    }));
  }

  async pruneJobs(target: PruneTarget, limit: number): Promise<number> {
    const { text, values } = pruneQuery(this.#sql.quotedSchema, target, limit);
    // Retried after a lost connection like any read: a repeat only deletes a further batch.
    const { rows } = await this.#db.query<{ n: string }>(text, values);
    return toNumber(rows[0]!.n);
  }

  async rateLimitState(key: string): Promise<RateLimitState> {
    const { rows } = await this.#db.query<{
      active: string;
      waiting: string;
      policy: RateLimitState['policy'];
      win: { start: number; count: number } | null;
    }>(this.#sql.rateKeyState, [key]);
    const row = rows[0]!;
    return {
      key,
      active: toNumber(row.active),
      waiting: toNumber(row.waiting),
      window: row.win,
      policy: row.policy ?? null,
    };
  }

  // ------------------------------------------------------------ queues

  async listQueues(): Promise<QueueInfo[]> {
    const { rows } = await this.#db.query<QueueRow>(this.#sql.listQueues, []);
    return rows.map(queueInfo);
  }

  async queueStats(name: string, now: number): Promise<QueueStats> {
    const { rows } = await this.#db.query<{
      paused: boolean | null;
      counts: Record<string, number>;
      completed_last_minute: string;
      completed_last_hour: string;
      failed_last_hour: string;
    }>(this.#sql.queueStats, [name, now - 60_000, now - 3_600_000]);
    const row = rows[0]!;
    const counts = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as StateCounts;
    for (const [state, n] of Object.entries(row.counts)) counts[state as keyof StateCounts] = n;
    return {
      name,
      paused: row.paused === true,
      counts,
      completed_last_minute: toNumber(row.completed_last_minute),
      completed_last_hour: toNumber(row.completed_last_hour),
      failed_last_hour: toNumber(row.failed_last_hour),
    };
  }

  async setQueuePaused(name: string, paused: boolean, now: number): Promise<QueueInfo> {
    return this.#transaction(async (tx) => {
      await tx.client.query(this.#sql.ensureQueue, [name, toIso(now)]);
      const { rows } = await tx.client.query<QueueRow>(this.#sql.setPaused, [
        name,
        paused,
        paused ? toIso(now) : null,
      ]);
      if (!paused) await notifyAvailable(tx);
      return queueInfo(rows[0]!);
    });
  }

  async setQueueConfig(name: string, config: QueueConfig, now: number): Promise<QueueInfo> {
    return this.#transaction(async (tx) => {
      const sql = this.#sql;
      await tx.client.query(sql.ensureQueue, [name, toIso(now)]);
      if (config.concurrency !== undefined) {
        await tx.client.query(sql.setConcurrency, [name, config.concurrency]);
      }
      if (config.rate_limit !== undefined) {
        await tx.client.query(sql.setRateLimit, [
          name,
          config.rate_limit?.limit ?? null,
          config.rate_limit?.period_ms ?? null,
        ]);
      }
      const { rows } = await tx.client.query<QueueRow>(sql.getQueue, [name]);
      // Raised or removed limits can make waiting jobs claimable.
      await notifyAvailable(tx);
      return queueInfo(rows[0]!);
    });
  }

  // ------------------------------------------------------------ workflows

  async getWorkflow(id: string): Promise<WorkflowRecord | null> {
    const { rows } = await this.#db.query<{ doc: WorkflowRecord }>(this.#sql.getWorkflow, [id]);
    return rows[0]?.doc ?? null;
  }

  async listWorkflowJobs(workflowId: string): Promise<JobRecord[]> {
    const { rows } = await this.#db.query<{ doc: JobRecord }>(this.#sql.workflowJobs, [workflowId]);
    return rows.map((row) => row.doc);
  }

  // ------------------------------------------------------------ crons

  async upsertCron(cron: CronRecord): Promise<{ created: boolean; cron: CronRecord }> {
    const row = cronRow(cron);
    const { rows } = await this.#db.query<{ created: boolean; doc: CronRecord }>(
      this.#sql.upsertCron,
      [row.name, row.rev, row.enabled, row.next_run_ms, JSON.stringify(cron)],
    );
    return { created: rows[0]!.created, cron: rows[0]!.doc };
  }

  async getCron(name: string): Promise<CronRecord | null> {
    const { rows } = await this.#db.query<{ doc: CronRecord }>(this.#sql.getCron, [name]);
    return rows[0]?.doc ?? null;
  }

  async listCrons(): Promise<CronRecord[]> {
    const { rows } = await this.#db.query<{ doc: CronRecord }>(this.#sql.listCrons, []);
    return rows.map((row) => row.doc);
  }

  async deleteCron(name: string): Promise<CronRecord | null> {
    const { rows } = await this.#db.query<{ doc: CronRecord }>(this.#sql.deleteCron, [name]);
    return rows[0]?.doc ?? null;
  }

  async dueCrons(now: number): Promise<CronRecord[]> {
    const { rows } = await this.#db.query<{ doc: CronRecord }>(this.#sql.dueCrons, [now]);
    return rows.map((row) => row.doc);
  }

  // ------------------------------------------------------------ settings

  async getSetting(namespace: string, key: string): Promise<SettingRecord | null> {
    const { rows } = await this.#db.query<SettingRow>(this.#sql.getSetting, [namespace, key]);
    return rows[0] === undefined ? null : settingRecord(rows[0]);
  }

  async listSettings(namespace: string, keyPrefix = ''): Promise<SettingRecord[]> {
    const { rows } = await this.#db.query<SettingRow>(this.#sql.listSettings, [
      namespace,
      keyPrefix,
    ]);
    return rows.map(settingRecord);
  }

  async putSetting(
    namespace: string,
    key: string,
    value: Record<string, unknown>,
    expectRev: number | null,
    now: number,
  ): Promise<SettingRecord | null> {
    const rev = expectRev === null ? 0 : expectRev + 1;
    const params = [namespace, key, rev, toIso(now), JSON.stringify(value)];
    const { rows } =
      expectRev === null
        ? await this.#db.query<SettingRow>(this.#sql.createSetting, params, false)
        : await this.#db.query<SettingRow>(this.#sql.updateSetting, [...params, expectRev], false);
    return rows[0] === undefined ? null : settingRecord(rows[0]);
  }

  async deleteSetting(namespace: string, key: string): Promise<boolean> {
    const result = await this.#db.query(this.#sql.deleteSetting, [namespace, key]);
    return result.rowCount === 1;
  }

  // ------------------------------------------------------------ events

  async appendEvents(events: OjsEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.#db.query(this.#sql.insertEvents, eventValues(events.map(eventRow)), false);
  }

  async listEvents(filter: EventFilter): Promise<OjsEvent[]> {
    const remembered =
      filter.after === undefined ? undefined : this.#eventPositions.get(filter.after);
    const query = listEventsQuery(this.#sql.eventsTable, filter, remembered);
    const { rows } = await this.#db.query<{ doc: OjsEvent; seq: string; k: number }>(
      query.text,
      query.values,
    );
    const positions = this.#eventPositions;
    const events: OjsEvent[] = [];
    for (const row of rows) {
      // Re-inserted so the most recently listed ids are evicted last.
      positions.delete(row.doc.id);
      positions.set(row.doc.id, { seq: row.seq, k: row.k });
      events.push(row.doc);
    }
    while (positions.size > REMEMBERED_EVENT_POSITIONS) {
      positions.delete(positions.keys().next().value!);
    }
    return events;
  }

  async pruneEvents(keep: number, limit?: number): Promise<number> {
    const { rows } = await this.#db.query<{ removed: number }>(this.#sql.pruneEvents, [
      Math.max(0, keep),
      limit ?? null,
    ]);
    return rows[0]?.removed ?? 0;
  }

  // ------------------------------------------------------------ wake-ups, admin

  onJobsAvailable(listener: () => void): () => void {
    return this.#listener.subscribe(listener);
  }

  /** Resolves once this process LISTENs (tests; the server need not wait for it). */
  async listening(): Promise<void> {
    await this.#listener.ready();
  }

  // ------------------------------------------------------------ webhooks

  async insertWebhookDeliveries(deliveries: WebhookDelivery[]): Promise<number> {
    if (deliveries.length === 0) return 0;
    const rows = deliveries.map((d) => ({
      id: d.id,
      subscription_id: d.subscription_id,
      tenant_id: d.tenant_id ?? null,
      state: d.state,
      due_at: webhookDeliveryDueAt(d),
      settled_at: webhookDeliverySettledAt(d),
      rev: d.rev,
      doc: d,
    }));
    const result = await this.#db.query(this.#sql.insertWebhookDeliveries, [JSON.stringify(rows)]);
    return result.rowCount ?? 0;
  }

  async dueWebhookDeliveries(now: number, limit: number): Promise<WebhookDelivery[]> {
    const { rows } = await this.#db.query<{ doc: WebhookDelivery }>(
      this.#sql.dueWebhookDeliveries,
      [now, limit],
    );
    return rows.map((row) => row.doc);
  }

  async updateWebhookDelivery(delivery: WebhookDelivery, expectRev: number): Promise<boolean> {
    const result = await this.#db.query(
      this.#sql.updateWebhookDelivery,
      [
        delivery.id,
        delivery.state,
        webhookDeliveryDueAt(delivery),
        delivery.rev,
        JSON.stringify(delivery),
        expectRev,
        webhookDeliverySettledAt(delivery),
      ],
      false,
    );
    return result.rowCount === 1;
  }

  async pruneWebhookDeliveries(
    before: { delivered: number; dead: number },
    limit: number,
  ): Promise<number> {
    const result = await this.#db.query(this.#sql.pruneWebhookDeliveries, [
      before.delivered,
      before.dead,
      limit,
    ]);
    return result.rowCount ?? 0;
  }

  async getWebhookDelivery(id: string): Promise<WebhookDelivery | null> {
    const { rows } = await this.#db.query<{ doc: WebhookDelivery }>(this.#sql.getWebhookDelivery, [
      id,
    ]);
    return rows[0]?.doc ?? null;
  }

  async listWebhookDeliveries(filter: WebhookDeliveryFilter): Promise<WebhookDelivery[]> {
    const { rows } = await this.#db.query<{ doc: WebhookDelivery }>(
      this.#sql.listWebhookDeliveries,
      [
        filter.subscriptionId ?? null,
        filter.state ?? null,
        filter.tenantId ?? null,
        filter.after ?? null,
        filter.limit,
      ],
    );
    return rows.map((row) => row.doc);
  }

  async reset(): Promise<void> {
    await this.#transaction(async (tx) => {
      await tx.client.query(this.#sql.reset);
    });
    this.#claimed.clear();
    this.#eventPositions.clear();
  }
}
