/**
 * Queue configuration (features §16, `urn:ojs:ext:queue-config`, and the
 * backpressure extension, http-binding §13): what an operator sets per
 * queue over `PUT /ojs/v1/admin/queues/{name}/config`, validated here, and
 * the pure decisions that use it (retention cut-offs for the pruner,
 * backpressure on enqueue). Concurrency and the queue rate limit are kept
 * by the store beside the queue (QueueConfig in store.ts) because the claim
 * enforces them; the rest is a settings document.
 */
import { formatIsoDuration, parseIsoDuration } from './duration.ts';
import { invalidRequest } from './errors.ts';
import { normalizeRetryPolicy, type RetryPolicy } from './retry.ts';

/** Final states the pruner deletes, plus dead-lettered discarded jobs as their own class. */
export const RETENTION_CLASSES = ['completed', 'cancelled', 'discarded', 'dead_letter'] as const;
export type RetentionClass = (typeof RETENTION_CLASSES)[number];

/** Age (ms) after which a finished job is deleted; null keeps it forever. */
export type RetentionPolicy = Record<RetentionClass, number | null>;

const DAY = 24 * 3600 * 1000;

/**
 * Defaults: the queue-config spec's (completed and cancelled 7 days,
 * discarded 30 days) and the dead-letter spec's 180 days for dead letters.
 */
export const DEFAULT_RETENTION: RetentionPolicy = {
  completed: 7 * DAY,
  cancelled: 7 * DAY,
  discarded: 30 * DAY,
  dead_letter: 180 * DAY,
};

export type BackpressureStrategy = 'reject';

export interface BackpressureConfig {
  /** Queue depth bound (available + scheduled + retryable + pending); 0 = unbounded. */
  max_depth: number;
  strategy: BackpressureStrategy;
  /** Share of the bound above which accepted enqueues carry pressure headers. */
  warning_threshold: number;
}

/** The settings-document part of a queue's configuration. */
export interface QueueSettings {
  retention?: Partial<RetentionPolicy>;
  backpressure?: BackpressureConfig;
  default_retry?: RetryPolicy;
}

function durationField(value: unknown, field: string): number | null {
  if (value === null || value === 'never') return null;
  if (typeof value === 'string') {
    const ms = parseIsoDuration(value);
    if (ms !== null && ms > 0) return ms;
  }
  throw invalidRequest(`${field} must be an ISO 8601 duration such as "P7D", or null to keep.`, {
    field,
  });
}

function objectField(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidRequest(`${field} must be an object.`, { field });
  }
  return value as Record<string, unknown>;
}

function rejectUnknown(obj: Record<string, unknown>, known: readonly string[], field: string) {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      throw invalidRequest(`${field}.${key} is not a known field; use ${known.join(', ')}.`, {
        field: `${field}.${key}`,
      });
    }
  }
}

/** `{completed: "P1D", discarded: null, ...}` -> ms per class (only the classes given). */
export function parseRetention(value: unknown, field = 'retention'): Partial<RetentionPolicy> {
  const obj = objectField(value, field);
  rejectUnknown(obj, RETENTION_CLASSES, field);
  const out: Partial<RetentionPolicy> = {};
  for (const key of RETENTION_CLASSES) {
    if (key in obj) out[key] = durationField(obj[key], `${field}.${key}`);
  }
  return out;
}

export function retentionToWire(policy: Partial<RetentionPolicy>): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const key of RETENTION_CLASSES) {
    const ms = policy[key];
    if (ms !== undefined) out[key] = ms === null ? null : formatIsoDuration(ms);
  }
  return out;
}

export function parseBackpressure(value: unknown, field = 'backpressure'): BackpressureConfig {
  const obj = objectField(value, field);
  rejectUnknown(obj, ['max_depth', 'strategy', 'warning_threshold'], field);
  const maxDepth = obj.max_depth ?? 0;
  if (typeof maxDepth !== 'number' || !Number.isInteger(maxDepth) || maxDepth < 0) {
    throw invalidRequest(`${field}.max_depth must be an integer >= 0 (0 = unbounded).`, {
      field: `${field}.max_depth`,
    });
  }
  const strategy = obj.strategy ?? 'reject';
  if (strategy !== 'reject') {
    throw invalidRequest(
      `${field}.strategy '${String(strategy)}' is not supported; this server implements 'reject'.`,
      { field: `${field}.strategy` },
    );
  }
  const threshold = obj.warning_threshold ?? 0.8;
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold <= 1)) {
    throw invalidRequest(`${field}.warning_threshold must be a number in (0, 1].`, {
      field: `${field}.warning_threshold`,
    });
  }
  return { max_depth: maxDepth, strategy, warning_threshold: threshold };
}

export interface BackpressureDecision {
  accept: boolean;
  depth: number;
  bound: number;
  /** depth / bound after the enqueue (1.0 when rejected). */
  pressure: number;
  /** Above the warning threshold: accepted responses carry the pressure headers. */
  warn: boolean;
}

/**
 * Whether `adding` jobs fit under the queue's bound (reject strategy: a
 * batch that does not fit as a whole is rejected as a whole, BP §"batch").
 */
export function decideBackpressure(
  config: BackpressureConfig,
  depth: number,
  adding: number,
): BackpressureDecision | null {
  if (config.max_depth === 0) return null;
  const bound = config.max_depth;
  if (depth + adding > bound) {
    return { accept: false, depth, bound, pressure: Math.min(1, depth / bound), warn: true };
  }
  const pressure = (depth + adding) / bound;
  return { accept: true, depth, bound, pressure, warn: pressure >= config.warning_threshold };
}

/** The settings part of a PUT .../config body (concurrency and rate_limit are the store's). */
export function parseQueueSettings(body: Record<string, unknown>): QueueSettings {
  const out: QueueSettings = {};
  if (body.retention !== undefined && body.retention !== null) {
    out.retention = parseRetention(body.retention);
  }
  if (body.backpressure !== undefined && body.backpressure !== null) {
    out.backpressure = parseBackpressure(body.backpressure);
  }
  if (body.default_retry !== undefined && body.default_retry !== null) {
    out.default_retry = normalizeRetryPolicy(body.default_retry, 'default_retry');
  }
  return out;
}

/** One delete pass of the pruner: finished jobs of one class older than `before`. */
export interface PruneTarget {
  retention: RetentionClass;
  before: number;
  /** Only these queues (a queue's own policy). */
  queues?: string[];
  /** Every queue but these (the default policy, minus queues with their own). */
  exceptQueues?: string[];
}

/**
 * The pruner's passes at `now`: the default policy for every queue without
 * its own value for a class, and one pass per queue that sets its own.
 * A class kept forever (null) yields no pass.
 */
export function pruneTargets(
  defaults: RetentionPolicy,
  perQueue: ReadonlyMap<string, Partial<RetentionPolicy>>,
  now: number,
): PruneTarget[] {
  const targets: PruneTarget[] = [];
  for (const retention of RETENTION_CLASSES) {
    const own = [...perQueue].filter(([, policy]) => policy[retention] !== undefined);
    const fallback = defaults[retention];
    if (fallback !== null) {
      const target: PruneTarget = { retention, before: now - fallback };
      if (own.length > 0) target.exceptQueues = own.map(([queue]) => queue).sort();
      targets.push(target);
    }
    for (const [queue, policy] of own) {
      const ms = policy[retention];
      if (ms !== null && ms !== undefined) {
        targets.push({ retention, before: now - ms, queues: [queue] });
      }
    }
  }
  return targets;
}
