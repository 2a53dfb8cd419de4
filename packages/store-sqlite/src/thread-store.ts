/**
 * SQLite on its own thread (opt-in: OJS_SQLITE_THREAD=on; the server's
 * default runs SqliteStore on the event loop, decision 0080). node:sqlite is
 * synchronous: in the server's thread, every statement, every JSON
 * (de)serialisation of a job and every COMMIT's fsync (synchronous=FULL)
 * would stall all HTTP work. Here the connection lives in a worker thread
 * running the same SqliteStore (store-thread.ts); this class forwards each
 * Store call to it, batching the calls of one event-loop iteration into one
 * message.
 * Answers come back only after their group committed (group-commit.ts), so
 * an HTTP 2xx still means "on disk".
 *
 * Records cross the thread boundary by structured clone, so no record is
 * ever shared with the caller (the Store seam's rule). `random` in
 * settleJobs cannot cross a thread: the thread uses Math.random.
 */
import { Worker } from 'node:worker_threads';
import type {
  ClaimRequest,
  Commit,
  CronRecord,
  EventFilter,
  InsertResult,
  JobFilter,
  JobPageRequest,
  JobRecord,
  LeaseItem,
  LeaseResult,
  OjsEvent,
  Page,
  PruneTarget,
  QueueConfig,
  QueueInfo,
  QueueStateCount,
  QueueStats,
  RateLimitState,
  SettingRecord,
  SettleRequest,
  SettleResult,
  Store,
  WebhookDelivery,
  WebhookDeliveryFilter,
  WorkflowRecord,
} from '@ojs/core';
import type { SqliteStoreOptions } from './sqlite-store.ts';
import {
  type Call,
  type Reply,
  receiveError,
  receiveInsertResults,
  receiveSettleResults,
  type StoreMethod,
  WATCH_METHOD,
} from './thread-protocol.ts';

/** The thread store's options: the store's, plus what only a thread of its own can do. */
export interface SqliteThreadStoreOptions extends SqliteStoreOptions {
  /**
   * Give the thread's memory back after a burst once it is quiet (core
   * startQuietGc, decision 0075). The server turns it on; off by default,
   * as the process embedding the store may manage its memory itself.
   */
  quietGc?: boolean;
}

/** Young generation of the store thread's V8 heap, MiB (see init()). */
const STORE_THREAD_YOUNG_MB = 16;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export class SqliteThreadStore implements Store {
  readonly backend = 'sqlite';
  readonly pipelinedWrites = true;
  /** Cross-connection wake-ups poll PRAGMA data_version (wake-watch.ts): watched only while fetches wait. */
  readonly polledWakeups = true;
  readonly #options: SqliteThreadStoreOptions;
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  #outbox: Call[] = [];
  #closed = false;
  readonly #wakeListeners = new Set<() => void>();

  constructor(options: SqliteThreadStoreOptions) {
    this.#options = options;
  }

  #call<T>(method: StoreMethod, args: unknown[]): Promise<T> {
    const worker = this.#worker;
    if (worker === undefined || this.#closed) {
      return Promise.reject(new Error('SqliteThreadStore is not open (call init()).'));
    }
    const id = this.#nextId++;
    // Sent after the event loop's poll phase, not at the end of this task: the
    // calls of every request read in one iteration share one message (a
    // message costs ~25 µs on this thread; measured: 4-15% less server CPU
    // per single enqueue, 50 in flight).
    if (this.#outbox.length === 0) setImmediate(() => this.#flush());
    this.#outbox.push({ id, method, args });
    // The thread is unref'd while idle, so a forgotten store never keeps a
    // process alive; a pending call must, or its await would be dropped.
    if (this.#pending.size === 0) worker.ref();
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    });
  }

  #flush(): void {
    const calls = this.#outbox;
    this.#outbox = [];
    if (calls.length > 0) this.#worker?.postMessage(calls);
  }

  #receive(replies: Reply[]): void {
    for (const message of replies) {
      if ('wake' in message) {
        for (const listener of [...this.#wakeListeners]) listener();
        continue;
      }
      const pending = this.#pending.get(message.id);
      if (pending === undefined) continue;
      this.#pending.delete(message.id);
      if ('error' in message) pending.reject(receiveError(message.error));
      else pending.resolve(message.value);
    }
    if (this.#pending.size === 0) this.#worker?.unref();
  }

  /** The thread died (a crash, not a close): every waiting call fails. */
  #fail(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    this.#closed = true;
  }

  async init(): Promise<void> {
    // The thread's module has this module's extension: .ts in the repository, .js when built.
    const extension = import.meta.url.endsWith('.js') ? '.js' : '.ts';
    const worker = new Worker(new URL(`./store-thread${extension}`, import.meta.url), {
      workerData: this.#options,
      // V8 sizes a thread's young generation from the machine's memory (up
      // to 128 MiB here, on 24 GiB) and keeps it once a burst (a 10,000-job
      // batch) has grown it; the store thread's objects are short-lived rows
      // and replies, so a small one costs no throughput (decision 0039).
      resourceLimits: { maxYoungGenerationSizeMb: STORE_THREAD_YOUNG_MB },
    });
    worker.on('message', (replies: Reply[]) => this.#receive(replies));
    worker.on('error', (error) => this.#fail(error));
    worker.on('exit', (code) => {
      if (!this.#closed) this.#fail(new Error(`The SQLite store thread exited (code ${code}).`));
    });
    this.#worker = worker;
    this.#closed = false;
    try {
      await this.#call('init', []);
      if (this.#wakeListeners.size > 0) await this.#call(WATCH_METHOD, [true]);
    } catch (error) {
      this.#closed = true;
      await worker.terminate();
      throw error;
    }
  }

  /** Cross-process wake-ups, watched in the store thread (SqliteStore.onJobsAvailable). */
  onJobsAvailable(listener: () => void): () => void {
    this.#wakeListeners.add(listener);
    if (this.#wakeListeners.size === 1 && this.#worker !== undefined && !this.#closed) {
      this.#call(WATCH_METHOD, [true]).catch(() => {});
    }
    return () => {
      this.#wakeListeners.delete(listener);
      if (this.#wakeListeners.size === 0 && this.#worker !== undefined && !this.#closed) {
        this.#call(WATCH_METHOD, [false]).catch(() => {});
      }
    };
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    if (worker === undefined || this.#closed) return;
    try {
      await this.#call('close', []);
    } finally {
      this.#closed = true;
      this.#worker = undefined;
      await worker.terminate();
    }
  }

  ping(): Promise<void> {
    return this.#call('ping', []);
  }
  getJob(id: string): Promise<JobRecord | null> {
    return this.#call('getJob', [id]);
  }
  async insertJobs(jobs: JobRecord[], events: OjsEvent[], now: number): Promise<InsertResult[]> {
    const sent = await this.#call<Parameters<typeof receiveInsertResults>[0]>('insertJobs', [
      jobs,
      events,
      now,
    ]);
    return receiveInsertResults(sent, jobs);
  }
  claimJobs(request: ClaimRequest): Promise<JobRecord[]> {
    return this.#call('claimJobs', [request]);
  }
  commit(commit: Commit): Promise<boolean> {
    return this.#call('commit', [commit]);
  }
  async settleJobs(request: SettleRequest): Promise<SettleResult[]> {
    const sent = await this.#call<Parameters<typeof receiveSettleResults>[0]>('settleJobs', [
      { items: request.items, now: request.now },
    ]);
    return receiveSettleResults(sent);
  }
  extendLeases(items: LeaseItem[], now: number): Promise<LeaseResult[]> {
    return this.#call('extendLeases', [items, now]);
  }
  promoteDueJobs(now: number): Promise<number> {
    return this.#call('promoteDueJobs', [now]);
  }
  findExpiredLeases(now: number, limit: number): Promise<JobRecord[]> {
    return this.#call('findExpiredLeases', [now, limit]);
  }
  findExpiringWorkflowJobs(now: number, limit: number): Promise<JobRecord[]> {
    return this.#call('findExpiringWorkflowJobs', [now, limit]);
  }
  listDeadLetter(
    queue: string | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<JobRecord>> {
    return this.#call('listDeadLetter', [queue, limit, offset]);
  }
  listQueues(): Promise<QueueInfo[]> {
    return this.#call('listQueues', []);
  }
  listJobs(request: JobPageRequest): Promise<JobRecord[]> {
    return this.#call('listJobs', [request]);
  }

  countJobs(filter: JobFilter): Promise<number> {
    return this.#call('countJobs', [filter]);
  }

  countJobsByQueue(): Promise<QueueStateCount[]> {
    return this.#call('countJobsByQueue', []);
  }

  pruneJobs(target: PruneTarget, limit: number): Promise<number> {
    return this.#call('pruneJobs', [target, limit]);
  }

  rateLimitState(key: string): Promise<RateLimitState> {
    return this.#call('rateLimitState', [key]);
  }

  queueStats(name: string, now: number): Promise<QueueStats> {
    return this.#call('queueStats', [name, now]);
  }
  setQueuePaused(name: string, paused: boolean, now: number): Promise<QueueInfo> {
    return this.#call('setQueuePaused', [name, paused, now]);
  }
  setQueueConfig(name: string, config: QueueConfig, now: number): Promise<QueueInfo> {
    return this.#call('setQueueConfig', [name, config, now]);
  }
  getWorkflow(id: string): Promise<WorkflowRecord | null> {
    return this.#call('getWorkflow', [id]);
  }
  listWorkflowJobs(workflowId: string): Promise<JobRecord[]> {
    return this.#call('listWorkflowJobs', [workflowId]);
  }
  upsertCron(cron: CronRecord): Promise<{ created: boolean; cron: CronRecord }> {
    return this.#call('upsertCron', [cron]);
  }
  getCron(name: string): Promise<CronRecord | null> {
    return this.#call('getCron', [name]);
  }
  listCrons(): Promise<CronRecord[]> {
    return this.#call('listCrons', []);
  }
  deleteCron(name: string): Promise<CronRecord | null> {
    return this.#call('deleteCron', [name]);
  }
  dueCrons(now: number): Promise<CronRecord[]> {
    return this.#call('dueCrons', [now]);
  }
  getSetting(namespace: string, key: string): Promise<SettingRecord | null> {
    return this.#call('getSetting', [namespace, key]);
  }
  listSettings(namespace: string, keyPrefix?: string): Promise<SettingRecord[]> {
    return this.#call('listSettings', [namespace, keyPrefix]);
  }
  putSetting(
    namespace: string,
    key: string,
    value: Record<string, unknown>,
    expectRev: number | null,
    now: number,
  ): Promise<SettingRecord | null> {
    return this.#call('putSetting', [namespace, key, value, expectRev, now]);
  }
  deleteSetting(namespace: string, key: string): Promise<boolean> {
    return this.#call('deleteSetting', [namespace, key]);
  }
  appendEvents(events: OjsEvent[]): Promise<void> {
    return this.#call('appendEvents', [events]);
  }
  listEvents(filter: EventFilter): Promise<OjsEvent[]> {
    return this.#call('listEvents', [filter]);
  }
  pruneEvents(keep: number, limit?: number): Promise<number> {
    return this.#call('pruneEvents', [keep, limit]);
  }
  insertWebhookDeliveries(deliveries: WebhookDelivery[]): Promise<number> {
    return this.#call('insertWebhookDeliveries', [deliveries]);
  }
  dueWebhookDeliveries(now: number, limit: number): Promise<WebhookDelivery[]> {
    return this.#call('dueWebhookDeliveries', [now, limit]);
  }
  updateWebhookDelivery(delivery: WebhookDelivery, expectRev: number): Promise<boolean> {
    return this.#call('updateWebhookDelivery', [delivery, expectRev]);
  }
  getWebhookDelivery(id: string): Promise<WebhookDelivery | null> {
    return this.#call('getWebhookDelivery', [id]);
  }
  listWebhookDeliveries(filter: WebhookDeliveryFilter): Promise<WebhookDelivery[]> {
    return this.#call('listWebhookDeliveries', [filter]);
  }
  pruneWebhookDeliveries(
    before: { delivered: number; dead: number },
    limit: number,
  ): Promise<number> {
    return this.#call('pruneWebhookDeliveries', [before, limit]);
  }
  reset(): Promise<void> {
    return this.#call('reset', []);
  }
}
