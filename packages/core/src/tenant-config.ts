/**
 * A tenant's record (ext-multi-tenancy §2.3): its limits, fairness weight
 * and quota mode, as the admin API reads and writes it, and the decision
 * whether an enqueue breaches a limit. Pure: the engine reads the counts
 * from the store and applies the answer.
 */
import { parseIsoDuration } from './duration.ts';
import { invalidRequest, OjsError } from './errors.ts';
import { isObject } from './is-object.ts';
import { isTenantId } from './tenancy.ts';

export interface TenantLimits {
  /** Active jobs of the tenant at once, across all processes (MT-003). */
  max_concurrency?: number;
  /** Enqueues per period (ISO 8601 duration, e.g. PT1M). */
  max_enqueue_rate?: { limit: number; period: string };
  /** Available plus scheduled jobs. */
  max_queue_depth?: number;
  /** Scheduled jobs. */
  max_scheduled?: number;
}

export interface TenantRecord {
  tenant_id: string;
  limits: TenantLimits;
  /** Share of dispatch among tenants with waiting jobs (C18: wins over fair scheduling's). */
  fairness_weight: number;
  priority_boost?: number;
  /** hard (default): a breach is refused with 429; soft: admitted, reported as an event. */
  quota_mode: 'hard' | 'soft';
  name?: string;
  created_at: string;
  updated_at: string;
}

const LIMIT_NAMES = ['max_concurrency', 'max_queue_depth', 'max_scheduled'] as const;

function positiveInt(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidRequest(`${field} must be a non-negative integer.`, { field });
  }
  return value;
}

/** Limits from a request body (`null` clears one); merged over `current`. */
export function parseTenantLimits(body: unknown, current: TenantLimits = {}): TenantLimits {
  if (!isObject(body)) throw invalidRequest('limits must be an object.', { field: 'limits' });
  const limits: TenantLimits = { ...current };
  for (const key of Object.keys(body)) {
    if (key === 'reason') continue;
    if (!(LIMIT_NAMES as readonly string[]).includes(key) && key !== 'max_enqueue_rate') {
      throw invalidRequest(`limits.${key} is not a tenant limit.`, { field: `limits.${key}` });
    }
  }
  for (const name of LIMIT_NAMES) {
    const value = body[name];
    if (value === null) delete limits[name];
    else if (value !== undefined) limits[name] = positiveInt(value, `limits.${name}`);
  }
  const rate = body.max_enqueue_rate;
  if (rate === null) delete limits.max_enqueue_rate;
  else if (rate !== undefined) {
    if (!isObject(rate)) {
      throw invalidRequest('limits.max_enqueue_rate must be {limit, period}.', {
        field: 'limits.max_enqueue_rate',
      });
    }
    const period = rate.period ?? 'PT1M';
    if (typeof period !== 'string' || !(parseIsoDuration(period)! > 0)) {
      throw invalidRequest('limits.max_enqueue_rate.period must be an ISO 8601 duration.', {
        field: 'limits.max_enqueue_rate.period',
      });
    }
    limits.max_enqueue_rate = {
      limit: positiveInt(rate.limit, 'limits.max_enqueue_rate.limit'),
      period,
    };
  }
  return limits;
}

/** The record a PUT /admin/tenants/{id} stores (an upsert over `existing`). */
export function parseTenantRecord(
  id: string,
  body: unknown,
  existing: TenantRecord | null,
  now: string,
): TenantRecord {
  if (!isTenantId(id))
    throw invalidRequest('The tenant id does not match MT-001.', { field: 'id' });
  if (!isObject(body)) throw invalidRequest('The body must be a tenant object.');
  if (body.tenant_id !== undefined && body.tenant_id !== id) {
    throw invalidRequest('tenant_id in the body differs from the path.', { field: 'tenant_id' });
  }
  const record: TenantRecord = existing ? { ...existing } : newTenantRecord(id, now);
  if (body.limits !== undefined) record.limits = parseTenantLimits(body.limits, record.limits);
  if (body.fairness_weight !== undefined) {
    const weight = body.fairness_weight;
    if (typeof weight !== 'number' || !(weight > 0) || weight > 1000) {
      throw invalidRequest('fairness_weight must be a number in (0, 1000].', {
        field: 'fairness_weight',
      });
    }
    record.fairness_weight = weight;
  }
  if (body.priority_boost !== undefined) {
    record.priority_boost = positiveInt(body.priority_boost, 'priority_boost');
  }
  if (body.quota_mode !== undefined) {
    if (body.quota_mode !== 'hard' && body.quota_mode !== 'soft') {
      throw invalidRequest("quota_mode must be 'hard' or 'soft'.", { field: 'quota_mode' });
    }
    record.quota_mode = body.quota_mode;
  }
  if (body.name !== undefined) {
    if (typeof body.name !== 'string' || body.name.length > 255) {
      throw invalidRequest('name must be a string of at most 255 characters.', { field: 'name' });
    }
    record.name = body.name;
  }
  record.updated_at = now;
  return record;
}

/** A tenant seen for the first time (auto-registration on its first enqueue). */
export function newTenantRecord(id: string, now: string): TenantRecord {
  return {
    tenant_id: id,
    limits: {},
    fairness_weight: 1,
    quota_mode: 'hard',
    created_at: now,
    updated_at: now,
  };
}

/** True when the record has a limit an enqueue must check. */
export function hasEnqueueLimits(record: TenantRecord): boolean {
  const l = record.limits;
  return (
    l.max_enqueue_rate !== undefined ||
    l.max_queue_depth !== undefined ||
    l.max_scheduled !== undefined
  );
}

/** The counts an enqueue's limit check needs (each read only when its limit is set). */
export interface TenantUsage {
  /** Available plus scheduled. */
  depth?: number;
  scheduled?: number;
  /** Jobs created within the rate's period. */
  enqueued?: number;
}

/** One breached limit: what the 429 reports (C14). */
export interface TenantBreach {
  limit: 'max_enqueue_rate' | 'max_queue_depth' | 'max_scheduled';
  current: number;
  maximum: number;
  /** Seconds until a retry may pass. */
  retryAfter: number;
}

/** Whether admitting `adding` more jobs (of which `scheduled` are scheduled) breaches a limit. */
export function tenantBreach(
  record: TenantRecord,
  usage: TenantUsage,
  adding: number,
  scheduled: number,
): TenantBreach | null {
  const l = record.limits;
  if (l.max_enqueue_rate !== undefined && usage.enqueued !== undefined) {
    const period = parseIsoDuration(l.max_enqueue_rate.period) ?? 60_000;
    if (usage.enqueued + adding > l.max_enqueue_rate.limit) {
      return {
        limit: 'max_enqueue_rate',
        current: usage.enqueued,
        maximum: l.max_enqueue_rate.limit,
        retryAfter: Math.max(1, Math.ceil(period / 1000)),
      };
    }
  }
  if (l.max_queue_depth !== undefined && usage.depth !== undefined) {
    if (usage.depth + adding > l.max_queue_depth) {
      return {
        limit: 'max_queue_depth',
        current: usage.depth,
        maximum: l.max_queue_depth,
        retryAfter: 1,
      };
    }
  }
  if (l.max_scheduled !== undefined && usage.scheduled !== undefined && scheduled > 0) {
    if (usage.scheduled + scheduled > l.max_scheduled) {
      return {
        limit: 'max_scheduled',
        current: usage.scheduled,
        maximum: l.max_scheduled,
        retryAfter: 1,
      };
    }
  }
  return null;
}

/** The 429 of a breach (C14: the spec's code, retryable, details). */
export function tenantLimitError(tenant: string, breach: TenantBreach): OjsError {
  return new OjsError(
    'TENANT_LIMIT_EXCEEDED',
    `Tenant '${tenant}' is at its ${breach.limit} (${breach.current} of ${breach.maximum}).`,
    {
      tenant_id: tenant,
      limit: breach.limit,
      current: breach.current,
      maximum: breach.maximum,
      retry_after_seconds: breach.retryAfter,
    },
  );
}

/** What noisy-neighbour detection reads of each tenant (ext-multi-tenancy §2.3). */
export interface TenantLoad {
  tenant_id: string;
  /** Available plus scheduled jobs. */
  depth: number;
  active: number;
  enqueuedPerMinute: number;
}

/**
 * The spec's noisy-neighbour signals per tenant: depth above 10x the
 * median depth, enqueue rate above 5x the mean, or more than half of all
 * active jobs. Only with at least two tenants (alone, a tenant is its own
 * median). Error rates are not tracked per tenant.
 */
export function noisyNeighbours(loads: readonly TenantLoad[]): Map<string, string[]> {
  const flagged = new Map<string, string[]>();
  if (loads.length < 2) return flagged;
  const depths = loads.map((l) => l.depth).sort((a, b) => a - b);
  const mid = Math.floor(depths.length / 2);
  const median = depths.length % 2 === 1 ? depths[mid]! : (depths[mid - 1]! + depths[mid]!) / 2;
  const meanRate = loads.reduce((sum, l) => sum + l.enqueuedPerMinute, 0) / loads.length;
  const active = loads.reduce((sum, l) => sum + l.active, 0);
  for (const load of loads) {
    const signals: string[] = [];
    if (load.depth > 10 * median && load.depth > 0) signals.push('depth');
    if (load.enqueuedPerMinute > 5 * meanRate && load.enqueuedPerMinute > 0) signals.push('rate');
    if (active > 0 && load.active > active / 2) signals.push('active_share');
    if (signals.length > 0) flagged.set(load.tenant_id, signals);
  }
  return flagged;
}
