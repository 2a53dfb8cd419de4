/**
 * Tenants (ext-multi-tenancy §2.3, §2.4): their records (settings
 * documents in namespace `tenant`, rev-guarded, so every process sees a
 * change within the settings cache's TTL and no restart is needed),
 * auto-registration on a tenant's first enqueue, the enqueue-side limits as
 * the named link `tenant-limits` of the engine's enqueue chain, and the
 * admin API's reads (stats, the tenant's jobs).
 *
 * Cost: a server whose jobs name no tenant does no tenant work at all. A
 * tenant's first enqueue in a process reads (and maybe writes) its record
 * once; after that the process knows it. The limits link joins the chain
 * with the first tenanted job (or limit set) in the process, and reads
 * counts only for jobs of tenants that have limits.
 */
import {
  DEFAULT_TENANT,
  hasEnqueueLimits,
  invalidRequest,
  isTenantId,
  type JobRecord,
  jobTenant,
  makeEvent,
  newTenantRecord,
  notFound,
  parseIsoDuration,
  parseTenantLimits,
  parseTenantRecord,
  type SettingRecord,
  type TenantBreach,
  type TenantRecord,
  type TenantUsage,
  tenantBreach,
  tenantLimitError,
  toIso,
} from '@ojs/core';
import type { EngineContext } from './context.ts';
import type { EnqueueMiddleware, MiddlewareChain } from './middleware.ts';
import { dispatchTenants, TenantRoundRobin, type TenantWeight } from './tenant-fairness.ts';

export const TENANT_NAMESPACE = 'tenant';
/** The enqueue chain link that checks tenant limits (middleware.ts names). */
export const TENANT_LIMITS_LINK = 'tenant-limits';
const MAX_GUARD_RETRIES = 20;
/** Tenants a process remembers as registered (beyond it, a first enqueue reads the record again). */
const MAX_KNOWN = 10_000;
const DAY_MS = 86_400_000;

export interface TenancyOptions {
  /** C9's opt-in: a request and job with no tenant is refused (400) instead of `_default`. */
  strict?: boolean;
  /** Interleave tenants at dispatch (tenant-fairness.ts); default true. */
  fairness?: boolean;
}

/** What a claim applies of the tenants (from their records, cached). */
export interface TenantDispatch {
  /** Named tenant -> max_concurrency, when any tenant has one. */
  limits?: Record<string, number>;
  /** The tenants a fetch without a tenant interleaves, when there is more than one. */
  tenants?: TenantWeight[];
}

export interface TenantContext extends EngineContext {
  readonly enqueueMiddleware: MiddlewareChain<EnqueueMiddleware>;
}

export interface TenantStats {
  tenant_id: string;
  total_jobs: number;
  jobs: {
    available: number;
    active: number;
    scheduled: number;
    retryable: number;
    completed_24h: number;
    failed_24h: number;
  };
  throughput: { processed_per_minute: number; enqueued_per_minute: number };
  limits: Record<string, { limit: number; current: number }>;
  fairness: { weight: number; effective_share: number; actual_share: number };
}

export class TenantRegistry {
  readonly #ctx: TenantContext;
  readonly strict: boolean;
  /** Tenants known to have a record (registered by this process or read). */
  readonly #known = new Set<string>();
  #linked = false;
  readonly #fairness: boolean;
  /** Dispatch among tenants (fetches without a tenant). */
  readonly roundRobin = new TenantRoundRobin();
  #dispatch?: { source: SettingRecord[]; value: TenantDispatch };

  constructor(ctx: TenantContext, options: TenancyOptions = {}) {
    this.#ctx = ctx;
    this.strict = options.strict ?? false;
    this.#fairness = options.fairness ?? true;
  }

  /**
   * The tenants' limits and weights a claim applies, from the records
   * through the settings cache (a change anywhere is seen within its TTL);
   * derived once per cached read. No tenant records: nothing to apply.
   */
  async dispatch(): Promise<TenantDispatch> {
    const records = await this.#ctx.settings.list(TENANT_NAMESPACE, '');
    if (this.#dispatch?.source === records) return this.#dispatch.value;
    const value: TenantDispatch = {};
    const weights: { id: string; weight: number }[] = [];
    for (const { value: raw } of records) {
      const record = raw as unknown as TenantRecord;
      const max = record.limits?.max_concurrency;
      if (max !== undefined) {
        value.limits ??= {};
        value.limits[record.tenant_id] = max;
      }
      weights.push({ id: record.tenant_id, weight: record.fairness_weight ?? 1 });
    }
    if (this.#fairness && weights.some((w) => w.id !== DEFAULT_TENANT)) {
      value.tenants = dispatchTenants(weights);
    }
    this.#dispatch = { source: records, value };
    return value;
  }

  /** The tenant's record, through the settings cache (another process's change shows within its TTL). */
  async get(id: string): Promise<TenantRecord | null> {
    const record = await this.#ctx.settings.get(TENANT_NAMESPACE, id);
    return record === null ? null : (record.value as unknown as TenantRecord);
  }

  async require(id: string): Promise<TenantRecord> {
    const record = await this.#ctx.store.getSetting(TENANT_NAMESPACE, id);
    if (record === null) throw notFound('tenant', id);
    return record.value as unknown as TenantRecord;
  }

  async list(): Promise<TenantRecord[]> {
    const records = await this.#ctx.store.listSettings(TENANT_NAMESPACE);
    return records.map((r) => r.value as unknown as TenantRecord);
  }

  /** Tenant records, cached (fairness and claims read them on the fetch path). */
  async cachedList(): Promise<TenantRecord[]> {
    const records = await this.#ctx.settings.list(TENANT_NAMESPACE, '');
    return records.map((r) => r.value as unknown as TenantRecord);
  }

  /**
   * New jobs were stored: their tenants not yet known to this process are
   * registered (a record with default limits, `tenant.created`), once.
   */
  async noteJobs(jobs: readonly JobRecord[]): Promise<void> {
    let fresh: Set<string> | undefined;
    for (const job of jobs) {
      const meta = job.meta;
      // The common case, no tenant: one property read per job.
      if (meta.tenant_id === undefined) continue;
      const tenant = jobTenant(job);
      this.roundRobin.woke(tenant, job.priority);
      if (tenant === DEFAULT_TENANT || this.#known.has(tenant)) continue;
      fresh ??= new Set();
      fresh.add(tenant);
    }
    if (fresh === undefined) return;
    for (const tenant of fresh) {
      // The jobs are stored: a failed registration must not fail their
      // enqueue (a retried PUSH would be a duplicate). The next enqueue of
      // the tenant tries again.
      try {
        await this.#register(tenant);
        this.#ctx.errors.succeeded('tenant registration');
      } catch (error) {
        this.#ctx.errors.failed('tenant registration', error, 'tenant registration failed');
      }
    }
  }

  async #register(tenant: string): Promise<void> {
    const store = this.#ctx.store;
    const existing = await store.getSetting(TENANT_NAMESPACE, tenant);
    if (existing === null) {
      const now = this.#ctx.now();
      const record = newTenantRecord(tenant, toIso(now));
      const stored = await store.putSetting(
        TENANT_NAMESPACE,
        tenant,
        record as unknown as Record<string, unknown>,
        null,
        now,
      );
      // null: another process registered it first (its event is the one).
      if (stored !== null) {
        this.#ctx.settings.invalidate(TENANT_NAMESPACE);
        await store.appendEvents([
          makeEvent('tenant.created', tenant, { tenant_id: tenant, auto: true }, now),
        ]);
      }
    }
    if (this.#known.size >= MAX_KNOWN) this.#known.clear();
    this.#known.add(tenant);
  }

  /**
   * The first job naming a tenant in this process puts the limits link at
   * the head of the enqueue chain (before it runs for that job): from then
   * on every tenanted job's limits are read through the settings cache, so
   * a limit set by any process applies within its TTL. A server whose jobs
   * name no tenant never gets the link.
   */
  armLimits(): void {
    if (this.#linked) return;
    this.#linked = true;
    this.#ctx.enqueueMiddleware.prepend(TENANT_LIMITS_LINK, (job, next) =>
      this.#checkLimits(job).then(() => next(job)),
    );
  }

  async #checkLimits(job: JobRecord): Promise<void> {
    if (job.meta.tenant_id === undefined) return;
    const tenant = jobTenant(job);
    const record = await this.get(tenant);
    if (record === null || !hasEnqueueLimits(record)) return;
    const breach = tenantBreach(
      record,
      await this.#usage(tenant, record),
      1,
      job.state === 'scheduled' ? 1 : 0,
    );
    if (breach === null) return;
    await this.#reportBreach(tenant, breach);
    if (record.quota_mode !== 'soft') throw tenantLimitError(tenant, breach);
  }

  async #usage(tenant: string, record: TenantRecord): Promise<TenantUsage> {
    const store = this.#ctx.store;
    const limits = record.limits;
    const usage: TenantUsage = {};
    if (limits.max_queue_depth !== undefined) {
      usage.depth = await store.countJobs({ tenant, states: ['available', 'scheduled'] });
    }
    if (limits.max_scheduled !== undefined) {
      usage.scheduled = await store.countJobs({ tenant, states: ['scheduled'] });
    }
    if (limits.max_enqueue_rate !== undefined) {
      // A sliding window over the jobs themselves: every process counts
      // the same stored jobs, so the limit holds across processes.
      const period = parseIsoDuration(limits.max_enqueue_rate.period) ?? 60_000;
      usage.enqueued = await store.countJobs({ tenant, createdFrom: this.#ctx.now() - period });
    }
    return usage;
  }

  async #reportBreach(tenant: string, breach: TenantBreach): Promise<void> {
    const now = this.#ctx.now();
    await this.#ctx.store.appendEvents([
      makeEvent(
        'tenant.limit_exceeded',
        tenant,
        {
          tenant_id: tenant,
          limit: breach.limit,
          current: breach.current,
          maximum: breach.maximum,
        },
        now,
      ),
    ]);
  }

  /** After a store reset (test mode): no tenant is known any more. */
  forgetAll(): void {
    this.#known.clear();
    this.#dispatch = undefined;
  }

  /** PUT /admin/tenants/{id}: an upsert, guarded on the record's rev. */
  async put(id: string, body: unknown): Promise<{ record: TenantRecord; created: boolean }> {
    return this.#update(id, (existing, now) => parseTenantRecord(id, body, existing, now));
  }

  /** PUT /admin/tenants/{id}/limits: runtime limits (no restart; every process within the cache TTL). */
  async setLimits(id: string, body: unknown): Promise<TenantRecord> {
    if (!isTenantId(id)) {
      throw invalidRequest('The tenant id does not match MT-001.', { field: 'id' });
    }
    const { record } = await this.#update(id, (existing, now) => {
      const base = existing ?? newTenantRecord(id, now);
      return { ...base, limits: parseTenantLimits(body, base.limits), updated_at: now };
    });
    return record;
  }

  async #update(
    id: string,
    decide: (existing: TenantRecord | null, now: string) => TenantRecord,
  ): Promise<{ record: TenantRecord; created: boolean }> {
    const store = this.#ctx.store;
    for (let tries = 0; tries < MAX_GUARD_RETRIES; tries++) {
      const stored = await store.getSetting(TENANT_NAMESPACE, id);
      const now = this.#ctx.now();
      const record = decide(
        stored === null ? null : (stored.value as unknown as TenantRecord),
        toIso(now),
      );
      const written = await store.putSetting(
        TENANT_NAMESPACE,
        id,
        record as unknown as Record<string, unknown>,
        stored?.rev ?? null,
        now,
      );
      if (written === null) continue;
      this.#ctx.settings.invalidate(TENANT_NAMESPACE);
      this.#known.add(id);
      if (hasEnqueueLimits(record)) this.armLimits();
      if (stored === null) {
        await store.appendEvents([makeEvent('tenant.created', id, { tenant_id: id }, now)]);
      }
      return { record, created: stored === null };
    }
    throw new Error(`Tenant '${id}' is changing too fast to update; retry.`);
  }

  async delete(id: string): Promise<void> {
    if (!(await this.#ctx.store.deleteSetting(TENANT_NAMESPACE, id))) throw notFound('tenant', id);
    this.#ctx.settings.invalidate(TENANT_NAMESPACE);
    this.#known.delete(id);
  }

  /** GET /admin/tenants/{id}/stats (the spec's shape, plus C12's total_jobs). */
  async stats(id: string, record?: TenantRecord | null): Promise<TenantStats> {
    const store = this.#ctx.store;
    const now = this.#ctx.now();
    const tenant = { tenant: id };
    const count = (filter: Parameters<typeof store.countJobs>[0]) =>
      store.countJobs({ ...tenant, ...filter });
    const [
      total,
      available,
      active,
      scheduled,
      retryable,
      completed24h,
      failed24h,
      processedMinute,
      enqueuedMinute,
      allActive,
    ] = await Promise.all([
      count({}),
      count({ states: ['available'] }),
      count({ states: ['active'] }),
      count({ states: ['scheduled'] }),
      count({ states: ['retryable'] }),
      count({ states: ['completed'], finishedFrom: now - DAY_MS }),
      count({ states: ['discarded'], finishedFrom: now - DAY_MS }),
      count({ states: ['completed'], finishedFrom: now - 60_000 }),
      count({ createdFrom: now - 60_000 }),
      store.countJobs({ states: ['active'] }),
    ]);
    const own = record === undefined ? await this.get(id) : record;
    const limits: TenantStats['limits'] = {};
    const l = own?.limits ?? {};
    if (l.max_concurrency !== undefined) {
      limits.max_concurrency = { limit: l.max_concurrency, current: active };
    }
    if (l.max_queue_depth !== undefined) {
      limits.max_queue_depth = { limit: l.max_queue_depth, current: available + scheduled };
    }
    if (l.max_scheduled !== undefined) {
      limits.max_scheduled = { limit: l.max_scheduled, current: scheduled };
    }
    if (l.max_enqueue_rate !== undefined) {
      const period = parseIsoDuration(l.max_enqueue_rate.period) ?? 60_000;
      limits.max_enqueue_rate = {
        limit: l.max_enqueue_rate.limit,
        current: period === 60_000 ? enqueuedMinute : await count({ createdFrom: now - period }),
      };
    }
    const weight = own?.fairness_weight ?? 1;
    const weights = (await this.cachedList()).reduce((sum, r) => sum + (r.fairness_weight ?? 1), 0);
    return {
      tenant_id: id,
      total_jobs: total,
      jobs: {
        available,
        active,
        scheduled,
        retryable,
        completed_24h: completed24h,
        failed_24h: failed24h,
      },
      throughput: { processed_per_minute: processedMinute, enqueued_per_minute: enqueuedMinute },
      limits,
      fairness: {
        weight,
        effective_share: weights > 0 ? Math.min(1, weight / weights) : 1,
        actual_share: allActive > 0 ? active / allActive : 0,
      },
    };
  }
}
