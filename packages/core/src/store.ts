/**
 * The store seam (DESIGN §4). A Store speaks OJS semantics and commits what
 * core decided: every state change is a guarded write (the job's `rev` read
 * before the decision must still be the stored one), and everything that
 * belongs to one transition (the job, new jobs, workflow records, events)
 * commits atomically or not at all. Records handed across the seam are
 * never shared with the store's own state: a store keeps none of the caller's
 * objects and returns records no later read or write of the store touches.
 * (An inserted job is returned as the caller's job plus its `seq`: it may
 * share nested values with the caller's input, which is the caller's own.)
 */
import type { Clock } from './clock.ts';
import type { QueueTake } from './fair-scheduling.ts';
import type { JobFilter, JobPageRequest } from './job-query.ts';
import type { JobRecord, OjsEvent } from './job-types.ts';
import type { OutboxConsume, OutboxStore } from './outbox.ts';
import type { PruneTarget } from './queue-config.ts';
import type { LeaseItem, LeaseResult, SettleItem, SettleResult } from './settle.ts';
import type { JobState } from './states.ts';
import type { HandlerDeclaration } from './version.ts';
import type { WebhookDelivery, WebhookDeliveryFilter } from './webhook-types.ts';
import type { CronRecord, WorkflowRecord } from './workflow-types.ts';

export interface EventFilter {
  types?: string[];
  queues?: string[];
  jobTypes?: string[];
  /** Return events after this event id (ids sort by time). */
  after?: string;
  /** Only events about this subject (a job id, a workflow id, a cron name); not indexed. */
  subject?: string;
  limit: number;
  /** The newest `limit` events, newest first (a live stream's start, the dashboard's recent activity). */
  newestFirst?: boolean;
}

export interface ClaimRequest {
  queues: string[];
  count: number;
  workerId?: string;
  /** Overrides each job's own visibility_timeout_ms for this claim. */
  visibilityTimeoutMs?: number;
  /**
   * Job versioning (VER-004/005/006): when given, only jobs whose type is
   * listed are claimed, and a versioned job (version_num set) only when the
   * handler's range admits it (core `handlersAdmit`); unversioned jobs go to
   * any handler of the type. Jobs no handler admits stay available.
   */
  handlers?: HandlerDeclaration[];
  /**
   * Claim only this tenant's jobs (ext-multi-tenancy: a worker fetching for
   * one tenant); `_default` means the jobs that name no tenant. Absent: every
   * tenant, at no extra cost.
   */
  tenant?: string;
  /**
   * Tenant concurrency limits (ext-multi-tenancy MT-003, `max_concurrency`):
   * named tenant -> most active jobs of it at once, across all processes,
   * checked in the claim's atomic step like queue concurrency (a job of a
   * tenant at its limit is skipped and stays available). Absent: no check.
   */
  tenantConcurrency?: Record<string, number>;
  now: number;
  /**
   * Fair scheduling (core fair-scheduling.ts): claim up to each take's
   * count from its queue first, in this order, then the rest of `count`
   * from `queues` in order (skipping queues a take found short). Absent:
   * `queues` in order only (the single-queue and count-1 claims).
   */
  takes?: QueueTake[];
}

/** A small named document (schema, routing rule, worker declaration), guarded by rev. */
export interface SettingRecord {
  namespace: string;
  key: string;
  value: Record<string, unknown>;
  rev: number;
  updated_at: string;
}

/** A guarded update: applied only if the stored job's rev is still `expectRev`. */
export interface JobWrite {
  job: JobRecord;
  expectRev: number;
}

export interface Commit {
  /** Time of the change (the engine's clock), for queue rows and unique locks. */
  now?: number;
  updates?: JobWrite[];
  /**
   * New jobs (workflow steps, cron firings), seq in array order. Unique
   * policies apply as in insertJobs, except that a held key (reject or
   * ignore) skips that job silently (its events are dropped) instead of
   * failing the commit; replace cancels the holder.
   */
  inserts?: JobRecord[];
  /** Guarded deletes (dead letter delete). */
  deletes?: { id: string; expectRev: number }[];
  workflowInserts?: WorkflowRecord[];
  /** Guarded like job updates: applied only if the stored workflow's rev is `expectRev`. */
  workflowUpdates?: { workflow: WorkflowRecord; expectRev: number }[];
  /**
   * Guarded cron updates. Firing a cron commits the advanced record and the
   * job it enqueues together, so among processes racing on one fire time
   * exactly one commit succeeds (exactly-once per cron and fire time).
   */
  cronUpdates?: { cron: CronRecord; expectRev: number }[];
  events?: OjsEvent[];
}

export type InsertResult =
  | { status: 'inserted'; job: JobRecord }
  /** Same client id already stored. */
  | { status: 'duplicate_id'; existing: JobRecord }
  /** Unique conflict resolved by `ignore`: nothing inserted, existing returned. */
  | { status: 'existing'; existing: JobRecord }
  /** Unique conflict with `reject`. */
  | { status: 'rejected'; existing: JobRecord };

/** A refused insert: the id is taken or a unique key is held (`reject`). */
export type RefusedInsert = Extract<InsertResult, { status: 'duplicate_id' | 'rejected' }>;

/**
 * A result that refused its job. One refused job means the call stored
 * none of its jobs: the others' `inserted` results are not stored (the
 * engine inserts them again without the refused ones).
 */
export const isRefusedInsert = (result: InsertResult): result is RefusedInsert =>
  result.status === 'duplicate_id' || result.status === 'rejected';

export interface QueueInfo {
  name: string;
  paused: boolean;
  created_at?: string;
  /** Queue-level limits (queue config): max active jobs, max starts per window. */
  concurrency?: number;
  rate_limit?: { limit: number; period_ms: number };
}

export interface QueueConfig {
  concurrency?: number | null;
  rate_limit?: { limit: number; period_ms: number } | null;
}

export type StateCounts = Record<JobState, number>;

export interface QueueStats {
  name: string;
  paused: boolean;
  counts: StateCounts;
  /** Jobs completed in the last 60 s / last hour, for throughput. */
  completed_last_minute: number;
  completed_last_hour: number;
  failed_last_hour: number;
}

export interface Page<T> {
  items: T[];
  total: number;
}

/** Jobs of one queue in one state (admin counts). */
export interface QueueStateCount {
  queue: string;
  state: JobState;
  count: number;
}

/** What a rate-limit key looks like now (GET /ojs/v1/rate-limits/{key}). */
export interface RateLimitState {
  key: string;
  /** Active jobs holding the key. */
  active: number;
  /** Available jobs with the key, waiting for it. */
  waiting: number;
  /** The key's current fixed window, if one was opened. */
  window: { start: number; count: number } | null;
  /** The policy of the newest waiting or active job with the key (limits are per job). */
  policy: JobRecord['rate_limit'] | null;
}

export interface SettleRequest {
  items: SettleItem[];
  now: number;
  /** Backoff jitter source (tests pass a fixed one). */
  random?: () => number;
}

export interface Store {
  /** 'sqlite', 'postgres', 'redis'. */
  readonly backend: string;
  /** The clock that decides leases and schedules (the database's for shared stores). */
  readonly clock?: Clock;
  /**
   * True when calls issued one after another (without awaiting) are applied
   * in that order in one group commit, a later call seeing the earlier
   * ones' writes (SQLite's group commit). The engine then wakes waiting
   * fetches as soon as an insert is issued, so the claim joins the insert's
   * commit: one fsync from enqueue to delivery instead of two.
   */
  readonly pipelinedWrites?: boolean;
  /**
   * True when the store itself stores the `insertJobs` calls of one
   * event-loop turn together (PostgreSQL: one `enqueue` statement for the
   * calls made before its flush). The engine then hands each single PUSH
   * to the store at once instead of holding it for the turn as well: two
   * such waits in a row cost a whole event-loop turn (the second is set
   * during the first's flush, so it runs only after the next poll phase)
   * on the way from PUSH to handler start, for no fewer statements.
   */
  readonly coalescesInserts?: boolean;
  /**
   * True when `insertJobs` itself wakes this process's `onJobsAvailable`
   * subscribers once jobs it stored are visible (PostgreSQL: at COMMIT,
   * before the WAL flush the call still waits for). The engine then does
   * not wake its waiting fetches again when the call returns: a flush
   * later, the fetch that took the job is gone, and whoever waits then (a
   * worker's next long poll) had nothing new to find but claimed anyway,
   * beside the next enqueue.
   */
  readonly wakesOnInsert?: boolean;
  /**
   * True when `onJobsAvailable` costs work for as long as it is subscribed
   * (SQLite polls `PRAGMA data_version`): the engine then subscribes only
   * while fetches wait. Pushed wake-ups (LISTEN/NOTIFY) leave it unset.
   */
  readonly polledWakeups?: boolean;
  /**
   * Transactional enqueue (decision 0109): the outbox an application writes
   * jobs into inside its own transaction. Only stores sharing a database
   * with applications offer it (PostgreSQL).
   */
  readonly outbox?: OutboxStore;

  init(): Promise<void>;
  close(): Promise<void>;
  /** Cheap liveness check of the backing store; throws when unreachable. */
  ping(): Promise<void>;

  getJob(id: string): Promise<JobRecord | null>;
  /**
   * Inserts jobs atomically (all or none), assigning `seq` in array order and
   * enforcing id and unique-key uniqueness. If any result is `duplicate_id` or
   * `rejected`, nothing is stored. `replace` conflicts cancel the old job in
   * the same atomic step.
   */
  insertJobs(
    jobs: JobRecord[],
    events: OjsEvent[],
    now: number,
    /**
     * Outbox rows these jobs come from (transactional enqueue): deleted in
     * the same atomic step, which fails (storing nothing) unless `owner`
     * still leases every one. Only a store with `outbox` is given one.
     */
    consume?: OutboxConsume,
  ): Promise<InsertResult[]>;
  /**
   * Claims up to `count` available jobs in one atomic step: queues in the
   * given order, priority descending, then `seq`; skips paused queues and
   * expired jobs; sets active, attempt + 1, started_at, worker_id, lease
   * (core `claim`), and records job.started events.
   * Limits, all checked in the same atomic step (a limited job is skipped
   * and stays available; the next eligible job is tried):
   * - queue concurrency: active jobs of the queue < QueueInfo.concurrency;
   * - queue rate: starts in the current fixed window of the queue's
   *   rate_limit.period_ms (window key `queue-config:<name>`, distinct from
   *   job-level limits, whose default key is `queue:<name>`) < limit;
   * - job rate_limit: active jobs with the same rate_limit.key < concurrency,
   *   and starts in the key's current fixed window < rate.limit;
   * - tenant concurrency (request.tenantConcurrency): active jobs of the
   *   job's tenant < its limit.
   * A fixed window starts at the first start after the previous one ended.
   */
  claimJobs(request: ClaimRequest): Promise<JobRecord[]>;
  /**
   * The hot path of ACK, FAIL and lease expiry, batched: one atomic step (one
   * transaction, or one script) for all items. Per item, the store reads the
   * job as stored, lets core `decideSettlement` decide, and writes the result
   * guarded in the statement itself on state = 'active', attempt, worker_id
   * and rev, with the decision's events. Items are independent: a refused
   * item (`conflict`, `not_found`) does not stop the others. A job of a
   * workflow is not written (`workflow`): the engine settles it through
   * `commit` with its workflow's advancement. When one id appears more than
   * once, the first item decides and later ones see the job as it decided.
   * Results are in item order.
   */
  settleJobs(request: SettleRequest): Promise<SettleResult[]>;
  /**
   * Heartbeats, batched: per item core `decideLeaseExtension`; an extended
   * lease changes lease_until and the deadline column only (rev stays, so a
   * racing ACK of the same worker still commits), with job.heartbeat events.
   * Results in item order.
   */
  extendLeases(items: LeaseItem[], now: number): Promise<LeaseResult[]>;
  /** Applies a commit atomically; false (and nothing applied) if any guard failed. */
  commit(commit: Commit): Promise<boolean>;
  /**
   * Time-driven transitions: due scheduled/retryable jobs -> available;
   * unstarted jobs past expires_at -> discarded (job.expired event), except
   * jobs of a workflow (see findExpiringWorkflowJobs).
   * Returns the number of jobs made available.
   */
  promoteDueJobs(now: number): Promise<number>;
  /**
   * Unstarted jobs of workflows past expires_at, oldest expiry first, at
   * most `limit`. promoteDueJobs leaves them: the engine expires each one
   * through commit together with its workflow's advancement.
   */
  findExpiringWorkflowJobs(now: number, limit: number): Promise<JobRecord[]>;
  /** Active jobs whose visibility or execution deadline has passed. */
  findExpiredLeases(now: number, limit: number): Promise<JobRecord[]>;

  listDeadLetter(
    queue: string | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<JobRecord>>;
  /**
   * A page of jobs matching `filter`, ordered by seq (`order`), starting
   * after `afterSeq`; at most `limit` jobs. Served from indexes for the
   * ranges core `indexRanges` names.
   */
  listJobs(request: JobPageRequest): Promise<JobRecord[]>;
  /** How many jobs match `filter`. */
  countJobs(filter: JobFilter): Promise<number>;
  /** Job counts per queue and state (only non-zero pairs). */
  countJobsByQueue(): Promise<QueueStateCount[]>;
  /**
   * Retention: deletes up to `limit` finished jobs of the target's class
   * (completed, cancelled, plain discarded, or dead-lettered discarded)
   * whose finished time is before `target.before`, restricted to or
   * excluding the target's queues, and releases their unique keys in the
   * same atomic step. Jobs of a workflow are kept (the workflow reads its
   * steps' results). Safe to run from several processes at once. Returns
   * how many were deleted.
   */
  pruneJobs(target: PruneTarget, limit: number): Promise<number>;
  rateLimitState(key: string): Promise<RateLimitState>;
  listQueues(): Promise<QueueInfo[]>;
  queueStats(name: string, now: number): Promise<QueueStats>;
  setQueuePaused(name: string, paused: boolean, now: number): Promise<QueueInfo>;
  /** Sets (or with null clears) queue-level concurrency and rate limits. */
  setQueueConfig(name: string, config: QueueConfig, now: number): Promise<QueueInfo>;

  getWorkflow(id: string): Promise<WorkflowRecord | null>;
  /** Jobs belonging to a workflow, in seq order. */
  listWorkflowJobs(workflowId: string): Promise<JobRecord[]>;

  /** Inserts or replaces a cron by name (upsert); `created` tells which. */
  upsertCron(cron: CronRecord): Promise<{ created: boolean; cron: CronRecord }>;
  getCron(name: string): Promise<CronRecord | null>;
  listCrons(): Promise<CronRecord[]>;
  deleteCron(name: string): Promise<CronRecord | null>;
  /** Enabled crons whose next_run_ms <= now. */
  dueCrons(now: number): Promise<CronRecord[]>;

  getSetting(namespace: string, key: string): Promise<SettingRecord | null>;
  /** Settings of a namespace whose key starts with `keyPrefix` (all when omitted), by key. */
  listSettings(namespace: string, keyPrefix?: string): Promise<SettingRecord[]>;
  /**
   * Inserts (expectRev null: fails if the key exists) or updates guarded on
   * rev; returns the stored record, or null when the guard failed.
   */
  putSetting(
    namespace: string,
    key: string,
    value: Record<string, unknown>,
    expectRev: number | null,
    now: number,
  ): Promise<SettingRecord | null>;
  deleteSetting(namespace: string, key: string): Promise<boolean>;

  appendEvents(events: OjsEvent[]): Promise<void>;
  listEvents(filter: EventFilter): Promise<OjsEvent[]>;
  /**
   * Deletes the oldest events beyond the newest `keep`, at most `limit` of
   * them (all when omitted); returns how many were removed. The engine
   * prunes in bounded steps so one large backlog of events never becomes
   * one long write holding the store.
   */
  pruneEvents(keep: number, limit?: number): Promise<number>;

  /**
   * Webhook deliveries (ext-webhooks): the delivery log and its queue.
   * Inserts new deliveries; a delivery whose id is already stored is left
   * as it is (ids are derived from event and subscription, so the fan-out
   * may insert one again after a crash or from another process). Returns
   * how many were new.
   */
  insertWebhookDeliveries(deliveries: WebhookDelivery[]): Promise<number>;
  /**
   * Up to `limit` deliveries a process may claim at `now`: pending ones due
   * (`next_attempt_at <= now`) and delivering ones whose lease ran out,
   * soonest first (core `webhookDeliveryDueAt`).
   */
  dueWebhookDeliveries(now: number, limit: number): Promise<WebhookDelivery[]>;
  /**
   * Writes the decided delivery (claim, settlement, replay) only if the
   * stored one's rev is still `expectRev`; false and nothing written
   * otherwise. Every claim changes rev, so a settlement guarded on the
   * claim's rev lands only for the holder of the latest claim.
   */
  updateWebhookDelivery(delivery: WebhookDelivery, expectRev: number): Promise<boolean>;
  getWebhookDelivery(id: string): Promise<WebhookDelivery | null>;
  /** The delivery log, newest first, filtered; a page after `after`. */
  listWebhookDeliveries(filter: WebhookDeliveryFilter): Promise<WebhookDelivery[]>;
  /**
   * Deletes up to `limit` settled deliveries: delivered ones settled
   * (core `webhookDeliverySettledAt`) before `before.delivered`, dead ones
   * before `before.dead`. Returns how many were deleted.
   */
  pruneWebhookDeliveries(
    before: { delivered: number; dead: number },
    limit: number,
  ): Promise<number>;

  /**
   * Cross-process wake-ups for waiting fetches (LISTEN/NOTIFY, pub/sub):
   * the store calls `listener` when another process made jobs available.
   * Returns an unsubscribe function. Optional: single-process stores omit it.
   */
  onJobsAvailable?(listener: () => void): () => void;

  /** Wipes everything (test mode only). */
  reset(): Promise<void>;
}
