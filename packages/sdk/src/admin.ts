/**
 * The admin API of an OJS server (`urn:ojs:ext:admin-api`, dead-letter,
 * queue-config, rate-limiting inspection), as `client.admin`: find jobs
 * (filters, cursor pages), job detail with attempts, retry / cancel /
 * delete one job or many by filter, stats, queues and their configuration,
 * workers with quiet / terminate, dead letter stats, bulk retry and purge,
 * fair scheduling pools and dispatch stats.
 * HTTP only: the in-process transport has no admin API (UnsupportedFeatureError).
 *
 * Bulk actions and purges always send `confirm: true`: calling the method
 * is the confirmation; an empty filter still has to be passed explicitly.
 */
import { UnsupportedFeatureError } from './errors.ts';
import type { AdminCall, Job, RequestOptions, Transport } from './types.ts';

type Obj = Record<string, unknown>;

/** Job filters (comma lists or arrays; a type ending in `*` is a prefix). */
export interface JobFilter {
  state?: string | string[];
  queue?: string | string[];
  type?: string | string[];
  /** created_at range, RFC 3339. */
  since?: string;
  until?: string;
  error_type?: string;
  tag?: string;
  meta_key?: string;
}

export interface JobQuery extends JobFilter {
  /** Page size (max 100). */
  limit?: number;
  /** From a previous page's `nextCursor`: stable while jobs are added and change state. */
  cursor?: string;
  order?: 'asc' | 'desc';
}

export interface JobQueryPage {
  jobs: Job[];
  total: number;
  hasMore: boolean;
  nextCursor?: string;
}

export type BulkAction = 'retry' | 'cancel' | 'delete';

export interface BulkResult {
  action: BulkAction;
  matched: number;
  succeeded: number;
  failed: number;
  errors: { job_id: string; error: { code: string; message: string } }[];
  truncated: boolean;
  /** When truncated: pass it as `cursor` to continue after the jobs already visited. */
  next_cursor?: string;
}

/** A bulk action in steps (progress): at most `limit` jobs, continuing after `cursor`. */
export interface BulkStep {
  limit?: number;
  cursor?: string;
}

/** PUT .../config body: only the fields given change (null removes a limit). */
export interface QueueConfigUpdate {
  concurrency?: number | null;
  rate_limit?: { limit: number; period: string } | null;
  retention?: Partial<
    Record<'completed' | 'cancelled' | 'discarded' | 'dead_letter', string | null>
  >;
  backpressure?: { max_depth: number; strategy?: 'reject'; warning_threshold?: number };
  default_retry?: Obj;
}

/** Fair scheduling: how a pool picks among its queues. */
export type SchedulingStrategy = 'strict' | 'round-robin' | 'weighted' | 'least-loaded';

/** A scheduling pool as the server stores it (`urn:ojs:ext:fair-scheduling`). */
export interface Pool {
  name: string;
  queues: string[];
  /** Per-worker concurrency: a least-loaded pool serves a worker only below it. */
  concurrency?: number;
  strategy: SchedulingStrategy;
  /** Weights by queue (integers > 0; 1 when unset). */
  weights?: Record<string, number>;
  /** Its queues' jobs go only to workers of this pool. */
  isolated?: boolean;
  starvation_guard?: { enabled: boolean; rotation_interval: string; min_dispatch_ratio: number };
}

/** A pool as listed: with its running workers and its queues' active jobs. */
export interface PoolStatus extends Pool {
  active_workers: number;
  active_jobs: number;
}

/** PUT body: queues as a list (with `weights`) or as `{queue: {weight}}`. */
export type PoolDefinition = Omit<Pool, 'name' | 'strategy' | 'queues'> & {
  strategy?: SchedulingStrategy;
  queues: string[] | Record<string, { weight?: number }>;
};

export interface SchedulingStats {
  queues: {
    name: string;
    dispatch_count_1m: number;
    dispatch_ratio_1m: number;
    avg_wait_ms: number;
    active_jobs: number;
  }[];
  window: string;
}

function filterQuery(filter: JobFilter): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(filter)) {
    if (value !== undefined) out[key] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return out;
}

const q = encodeURIComponent;

function stepOf(options: BulkStep | undefined): BulkStep {
  const step: BulkStep = {};
  if (options?.limit !== undefined) step.limit = options.limit;
  if (options?.cursor !== undefined) step.cursor = options.cursor;
  return step;
}

/**
 * One call of the HTTP admin API (`operation` names the API in the error):
 * the admin, webhooks and outbox clients all send theirs through it. A
 * transport without the admin API (gRPC, in-process) refuses.
 */
export async function callAdmin(
  transport: Transport,
  call: AdminCall,
  operation: string,
  options?: RequestOptions,
): Promise<Obj> {
  if (transport.admin === undefined) {
    throw new UnsupportedFeatureError(
      `The ${transport.kind} transport has no ${operation} API; use an HTTP client.`,
      { code: 'unsupported', operation },
    );
  }
  return (await transport.admin(call, options)) ?? {};
}

export class OjsAdmin {
  readonly #transport: () => Transport;

  constructor(transport: () => Transport) {
    this.#transport = transport;
  }

  #call(call: AdminCall, options?: RequestOptions): Promise<Obj> {
    return callAdmin(this.#transport(), call, 'admin', options);
  }

  /** One page of jobs matching the filter, newest first unless `order: 'asc'`. */
  async listJobs(query: JobQuery = {}, options?: RequestOptions): Promise<JobQueryPage> {
    const { limit, cursor, order, ...filter } = query;
    const body = await this.#call(
      {
        method: 'GET',
        path: '/admin/jobs',
        query: { ...filterQuery(filter), per_page: limit, cursor, order },
        idempotent: true,
      },
      options,
    );
    const pagination = (body.pagination ?? {}) as Obj;
    return {
      jobs: (body.items ?? []) as Job[],
      total: Number(pagination.total ?? 0),
      hasMore: pagination.has_more === true,
      ...(typeof pagination.next_cursor === 'string' ? { nextCursor: pagination.next_cursor } : {}),
    };
  }

  /** Every job matching the filter, page by page (cursor pages: none missed or repeated). */
  async *jobs(query: JobQuery = {}, options?: RequestOptions): AsyncGenerator<Job> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.listJobs({ ...query, cursor }, options);
      yield* page.jobs;
      if (!page.hasMore || page.nextCursor === undefined) return;
      cursor = page.nextCursor;
    }
  }

  /** The job with `attempts` (each attempt's outcome and error). */
  job(id: string, options?: RequestOptions): Promise<Obj> {
    return this.#call({ method: 'GET', path: `/admin/jobs/${q(id)}`, idempotent: true }, options);
  }

  async retryJob(id: string, options?: RequestOptions): Promise<Job> {
    const body = await this.#call(
      { method: 'POST', path: `/admin/jobs/${q(id)}/retry`, body: {}, idempotent: false },
      options,
    );
    return body.job as Job;
  }

  async cancelJob(id: string, options?: RequestOptions): Promise<Job> {
    const body = await this.#call(
      { method: 'POST', path: `/admin/jobs/${q(id)}/cancel`, body: {}, idempotent: true },
      options,
    );
    return body.job as Job;
  }

  async deleteJob(id: string, options?: RequestOptions): Promise<void> {
    await this.#call({ method: 'DELETE', path: `/admin/jobs/${q(id)}`, idempotent: true }, options);
  }

  /** Retry, cancel or delete every job the filter matches (the server caps one request). */
  async bulk(
    action: BulkAction,
    filter: JobFilter,
    options?: RequestOptions & BulkStep,
  ): Promise<BulkResult> {
    return (await this.#call(
      {
        method: 'POST',
        path: `/admin/jobs/bulk/${action}`,
        body: { filter, confirm: true, ...stepOf(options) },
        idempotent: action !== 'retry',
      },
      options,
    )) as unknown as BulkResult;
  }

  stats(options?: RequestOptions): Promise<Obj> {
    return this.#call({ method: 'GET', path: '/admin/stats', idempotent: true }, options);
  }

  /** Queues with their job counts per state. */
  async queues(options?: RequestOptions): Promise<Obj[]> {
    const body = await this.#call(
      { method: 'GET', path: '/admin/queues', query: { per_page: 100 }, idempotent: true },
      options,
    );
    return (body.items ?? []) as Obj[];
  }

  /** A queue's counts, depth, throughput and configuration. */
  queue(name: string, options?: RequestOptions): Promise<Obj> {
    return this.#call(
      { method: 'GET', path: `/admin/queues/${q(name)}`, idempotent: true },
      options,
    );
  }

  /** What FETCH sees in a queue now: limits in use and `blocked_by` (why nothing is handed out). */
  queueState(name: string, options?: RequestOptions): Promise<Obj> {
    return this.#call(
      { method: 'GET', path: `/admin/queues/${q(name)}/state`, idempotent: true },
      options,
    );
  }

  async configureQueue(
    name: string,
    config: QueueConfigUpdate,
    options?: RequestOptions,
  ): Promise<Obj> {
    const body = await this.#call(
      { method: 'PUT', path: `/admin/queues/${q(name)}/config`, body: config, idempotent: true },
      options,
    );
    return body.configuration as Obj;
  }

  async workers(options?: RequestOptions): Promise<{ items: Obj[]; summary: Obj }> {
    const body = await this.#call(
      { method: 'GET', path: '/admin/workers', query: { per_page: 100 }, idempotent: true },
      options,
    );
    return { items: (body.items ?? []) as Obj[], summary: (body.summary ?? {}) as Obj };
  }

  /** Tells a worker (in its next heartbeat) to stop fetching, or to shut down. */
  directWorker(
    id: string,
    directive: 'quiet' | 'terminate',
    options?: RequestOptions,
  ): Promise<Obj> {
    return this.#call(
      { method: 'POST', path: `/admin/workers/${q(id)}/${directive}`, body: {}, idempotent: true },
      options,
    );
  }

  /** Fair scheduling pools with their running workers and active jobs. */
  async pools(options?: RequestOptions): Promise<PoolStatus[]> {
    const body = await this.#call(
      { method: 'GET', path: '/admin/pools', idempotent: true },
      options,
    );
    return (body.items ?? []) as PoolStatus[];
  }

  async pool(name: string, options?: RequestOptions): Promise<Pool> {
    const body = await this.#call(
      { method: 'GET', path: `/admin/pools/${q(name)}`, idempotent: true },
      options,
    );
    return body.pool as Pool;
  }

  /** Creates or replaces a pool; the server answers it in its stored form. */
  async setPool(name: string, pool: PoolDefinition, options?: RequestOptions): Promise<Pool> {
    const body = await this.#call(
      { method: 'PUT', path: `/admin/pools/${q(name)}`, body: pool, idempotent: true },
      options,
    );
    return body.pool as Pool;
  }

  async deletePool(name: string, options?: RequestOptions): Promise<void> {
    await this.#call(
      { method: 'DELETE', path: `/admin/pools/${q(name)}`, idempotent: true },
      options,
    );
  }

  /** Dispatches per queue over the last minute, summed over every server process. */
  async schedulingStats(options?: RequestOptions): Promise<SchedulingStats> {
    const body = await this.#call(
      { method: 'GET', path: '/admin/scheduling/stats', idempotent: true },
      options,
    );
    return body.stats as SchedulingStats;
  }

  deadLetterStats(options?: RequestOptions): Promise<Obj> {
    return this.#call(
      { method: 'GET', path: '/admin/dead-letter/stats', idempotent: true },
      options,
    );
  }

  async retryDeadLetters(
    filter: JobFilter,
    options?: RequestOptions & BulkStep,
  ): Promise<BulkResult> {
    return (await this.#call(
      {
        method: 'POST',
        path: '/admin/dead-letter/retry',
        body: { filter, confirm: true, ...stepOf(options) },
        idempotent: false,
      },
      options,
    )) as unknown as BulkResult;
  }

  /** Deletes dead letters (older than an ISO 8601 duration, of a queue), confirmed. */
  async purgeDeadLetters(
    scope: { olderThan?: string; queue?: string } = {},
    options?: RequestOptions & BulkStep,
  ): Promise<BulkResult & { purged_count: number }> {
    const body: Obj = { confirm: true, ...stepOf(options) };
    if (scope.olderThan !== undefined) body.older_than = scope.olderThan;
    if (scope.queue !== undefined) body.queue = scope.queue;
    return (await this.#call(
      { method: 'DELETE', path: '/admin/dead-letter', body, idempotent: true },
      options,
    )) as unknown as BulkResult & { purged_count: number };
  }

  /** Enqueues a cron's job now (this server's `POST /cron/:name/trigger`); the schedule is unchanged. */
  async triggerCron(name: string, options?: RequestOptions): Promise<Job> {
    const body = await this.#call(
      { method: 'POST', path: `/cron/${q(name)}/trigger`, body: {}, idempotent: false },
      options,
    );
    return body.job as Job;
  }

  /** A rate-limit key's concurrency use, window and waiting jobs. */
  rateLimit(key: string, options?: RequestOptions): Promise<Obj> {
    return this.#call({ method: 'GET', path: `/rate-limits/${q(key)}`, idempotent: true }, options);
  }

  // ------------------------------------------------ outbox (transactional enqueue, PostgreSQL store)

  /** A page of outbox rows with the counts per state (other stores: UnsupportedFeatureError). */
  async outbox(query: OutboxQuery = {}, options?: RequestOptions): Promise<OutboxPage> {
    const body = await this.#call(
      {
        method: 'GET',
        path: '/admin/outbox',
        query: { state: query.state, after: query.after, limit: query.limit },
        idempotent: true,
      },
      options,
    );
    const pagination = (body.pagination ?? {}) as Obj;
    return {
      entries: (body.entries ?? []) as OutboxEntry[],
      counts: body.counts as OutboxPage['counts'],
      relaying: body.relaying === true,
      ...(typeof pagination.next_after === 'string' ? { nextAfter: pagination.next_after } : {}),
    };
  }

  async outboxEntry(id: string, options?: RequestOptions): Promise<OutboxEntry> {
    const body = await this.#call(
      { method: 'GET', path: `/admin/outbox/${q(id)}`, idempotent: true },
      options,
    );
    return body.entry as OutboxEntry;
  }

  /** An invalid row back to pending (after fixing what refused it): relayed again at once. */
  async retryOutboxEntry(id: string, options?: RequestOptions): Promise<OutboxEntry> {
    const body = await this.#call(
      { method: 'POST', path: `/admin/outbox/${q(id)}/retry`, idempotent: true },
      options,
    );
    return body.entry as OutboxEntry;
  }

  /** Removes a row for good; returns it as it was. */
  async deleteOutboxEntry(id: string, options?: RequestOptions): Promise<OutboxEntry> {
    const body = await this.#call(
      { method: 'DELETE', path: `/admin/outbox/${q(id)}`, idempotent: true },
      options,
    );
    return body.entry as OutboxEntry;
  }

  // ------------------------------------------------ tenants (ext-multi-tenancy §2.4)

  /** Every tenant with its record and stats. */
  async tenants(options?: RequestOptions): Promise<TenantInfo[]> {
    const body = await this.#call(
      { method: 'GET', path: '/admin/tenants', idempotent: true },
      options,
    );
    return (body.tenants ?? []) as TenantInfo[];
  }

  /** One tenant's record (limits, fairness weight, quota mode). */
  async tenant(id: string, options?: RequestOptions): Promise<TenantInfo> {
    const body = await this.#call(
      { method: 'GET', path: `/admin/tenants/${q(id)}`, idempotent: true },
      options,
    );
    return body.tenant as TenantInfo;
  }

  /** Creates or updates a tenant (upsert): only the fields given change. */
  async putTenant(id: string, update: TenantUpdate, options?: RequestOptions): Promise<TenantInfo> {
    const body = await this.#call(
      { method: 'PUT', path: `/admin/tenants/${q(id)}`, body: update, idempotent: true },
      options,
    );
    return body.tenant as TenantInfo;
  }

  /** Sets a tenant's limits at run time (null removes one); every server process applies them. */
  async setTenantLimits(
    id: string,
    limits: TenantLimits & { reason?: string },
    options?: RequestOptions,
  ): Promise<TenantInfo> {
    const body = await this.#call(
      { method: 'PUT', path: `/admin/tenants/${q(id)}/limits`, body: limits, idempotent: true },
      options,
    );
    return body.tenant as TenantInfo;
  }

  async deleteTenant(id: string, options?: RequestOptions): Promise<void> {
    await this.#call(
      { method: 'DELETE', path: `/admin/tenants/${q(id)}`, idempotent: true },
      options,
    );
  }

  /** A tenant's stats: job counts by state, throughput, limits in use, fairness shares, total_jobs. */
  tenantStats(id: string, options?: RequestOptions): Promise<Obj> {
    return this.#call(
      { method: 'GET', path: `/admin/tenants/${q(id)}/stats`, idempotent: true },
      options,
    );
  }

  /** A page of a tenant's jobs (optionally in one state). */
  async tenantJobs(
    id: string,
    query: { state?: string; limit?: number; cursor?: string } = {},
    options?: RequestOptions,
  ): Promise<JobQueryPage> {
    const body = await this.#call(
      {
        method: 'GET',
        path: `/admin/tenants/${q(id)}/jobs`,
        query: { state: query.state, per_page: query.limit, cursor: query.cursor },
        idempotent: true,
      },
      options,
    );
    const pagination = (body.pagination ?? {}) as Obj;
    return {
      jobs: (body.jobs ?? []) as Job[],
      total: Number(pagination.total ?? 0),
      hasMore: pagination.has_more === true,
      ...(typeof pagination.next_cursor === 'string' ? { nextCursor: pagination.next_cursor } : {}),
    };
  }
}

/** An outbox row of transactional enqueue (PostgreSQL store): committed, not yet a job, or invalid. */
export interface OutboxEntry {
  /** The row's id (a bigint, as a decimal string). */
  id: string;
  /** What the application wrote: the body of POST /ojs/v1/jobs. */
  envelope: unknown;
  state: 'pending' | 'invalid';
  /** Relay attempts so far. */
  attempts: number;
  /** Why the row is invalid, or why its last attempt was put off (pending). */
  error: { code: string; message: string; retryable: boolean; details?: Obj } | null;
  created_at: string;
  updated_at: string;
}

export interface OutboxQuery {
  state?: 'pending' | 'invalid';
  /** The page after this row id (a previous page's `nextAfter`). */
  after?: string;
  /** 1..500 (default 50). */
  limit?: number;
}

export interface OutboxPage {
  /** Oldest first. */
  entries: OutboxEntry[];
  counts: { pending: number; invalid: number };
  /** Whether the answering server process relays the outbox (--no-outbox-relay: false). */
  relaying: boolean;
  /** Pass as `after` for the next page; absent on the last one. */
  nextAfter?: string;
}

/** A tenant's limits (ext-multi-tenancy §2.3); null removes one in an update. */
export interface TenantLimits {
  max_concurrency?: number | null;
  max_enqueue_rate?: { limit: number; period?: string } | null;
  max_queue_depth?: number | null;
  max_scheduled?: number | null;
}

export interface TenantUpdate {
  limits?: TenantLimits;
  fairness_weight?: number;
  priority_boost?: number;
  quota_mode?: 'hard' | 'soft';
  name?: string;
}

export interface TenantInfo {
  tenant_id: string;
  limits: TenantLimits;
  fairness_weight: number;
  quota_mode: 'hard' | 'soft';
  name?: string;
  created_at: string;
  updated_at: string;
  /** In listings: the tenant's stats. */
  stats?: Obj;
}
