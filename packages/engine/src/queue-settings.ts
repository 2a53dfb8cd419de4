/**
 * Queue configuration (queue-config and backpressure extensions): the
 * store keeps concurrency and the queue rate limit (the claim enforces
 * them); retention, backpressure and the default retry policy are a
 * settings document per queue, read through the engine's settings cache on
 * the enqueue path (a change through another server process is seen within
 * the cache's TTL).
 *
 * Backpressure is checked before the insert with a count of the queue's
 * depth: a soft bound, since enqueues admitted concurrently (in this or
 * another process) can each see room for themselves.
 */
import {
  type BackpressureDecision,
  DEFAULT_RETENTION,
  decideBackpressure,
  formatIsoDuration,
  type JobRecord,
  makeEvent,
  OjsError,
  parseIsoDuration,
  parseQueueSettings,
  type QueueConfig,
  type QueueInfo,
  type QueueSettings,
  type RetentionPolicy,
  retentionToWire,
  toIso,
  validateQueueName,
} from '@ojs/core';
import type { EngineContext } from './context.ts';

export const QUEUE_NAMESPACE = 'queue-config';

/** Depth counts: the states a queue bound covers (BP §13: available + scheduled + retryable). */
const DEPTH_STATES = ['available', 'scheduled', 'retryable', 'pending'] as const;

/** The configuration of one queue as the admin API shows it. */
export interface QueueConfiguration {
  concurrency: number | null;
  rate_limit: { limit: number; period: string } | null;
  retention: Record<string, string | null>;
  backpressure: QueueSettings['backpressure'] | null;
  default_retry: QueueSettings['default_retry'] | null;
}

/** Why a queue hands out nothing now (QueueState.blocked_by). */
export type QueueBlock = 'paused' | 'empty' | 'concurrency_limit' | 'rate_limit';

/** What FETCH sees in a queue now: counts, limit usage and what blocks it. */
export interface QueueState {
  name: string;
  paused: boolean;
  available: number;
  active: number;
  scheduled: number;
  retryable: number;
  concurrency: { limit: number; active: number } | null;
  rate_limit: {
    limit: number;
    period: string;
    window_count: number;
    window_resets_at: string | null;
  } | null;
  /** Reasons FETCH returns nothing from this queue; empty when it can hand out jobs. */
  blocked_by: QueueBlock[];
  /**
   * Available jobs exist and no queue-level block applies, yet a fetch may
   * still skip them: each job's own rate-limit key, or version routing.
   */
  note?: string;
}

/** Pressure of an accepted enqueue, for the X-OJS-Queue-* headers. */
export type QueuePressure = Pick<BackpressureDecision, 'depth' | 'bound' | 'pressure'>;

function limitsFromBody(body: Record<string, unknown>): QueueConfig {
  const config: QueueConfig = {};
  if ('concurrency' in body) {
    const value = body.concurrency;
    if (value !== null && (typeof value !== 'number' || !Number.isInteger(value) || value < 1)) {
      throw new OjsError('invalid_request', 'concurrency must be an integer >= 1, or null.', {
        field: 'concurrency',
      });
    }
    config.concurrency = value as number | null;
  }
  if ('rate_limit' in body) {
    const value = body.rate_limit as Record<string, unknown> | null;
    if (value === null) config.rate_limit = null;
    else {
      const limit = value?.limit;
      const period = typeof value?.period === 'string' ? value.period : undefined;
      const periodMs = period === undefined ? null : normalizePeriod(period);
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || periodMs === null) {
        throw new OjsError(
          'invalid_request',
          'rate_limit must be {limit: integer >= 1, period: ISO 8601 duration}, or null.',
          { field: 'rate_limit' },
        );
      }
      config.rate_limit = { limit, period_ms: periodMs };
    }
  }
  return config;
}

function normalizePeriod(period: string): number | null {
  const ms = parseIsoDuration(period);
  return ms !== null && ms > 0 ? ms : null;
}

/** Whether an enqueue body sets its own retry policy (a queue's default_retry then stays out). */
export function setsRetry(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<string, unknown>;
  const options = (typeof b.options === 'object' && b.options !== null ? b.options : {}) as Record<
    string,
    unknown
  >;
  return [b.retry, b.retry_policy, options.retry, options.retry_policy].some((v) => v != null);
}

const CONFIG_KEYS = ['concurrency', 'rate_limit', 'retention', 'backpressure', 'default_retry'];

export class QueueSettingsRegistry {
  readonly #engine: EngineContext;
  /** Server-wide retention defaults (flags / env), per final state. */
  readonly retentionDefaults: RetentionPolicy;

  constructor(engine: EngineContext, retention: Partial<RetentionPolicy> = {}) {
    this.#engine = engine;
    this.retentionDefaults = { ...DEFAULT_RETENTION, ...retention };
  }

  /** The settings document of a queue (cached), {} when none. */
  async settings(queue: string): Promise<QueueSettings> {
    const record = await this.#engine.settings.get(QUEUE_NAMESPACE, queue);
    return (record?.value ?? {}) as QueueSettings;
  }

  /** Every queue's retention overrides, for the pruner. */
  async retentionOverrides(): Promise<Map<string, Partial<RetentionPolicy>>> {
    const records = await this.#engine.store.listSettings(QUEUE_NAMESPACE);
    const out = new Map<string, Partial<RetentionPolicy>>();
    for (const record of records) {
      const retention = (record.value as QueueSettings).retention;
      if (retention !== undefined && Object.keys(retention).length > 0) {
        out.set(record.key, retention);
      }
    }
    return out;
  }

  /**
   * PUT .../config: validates the whole body first, then applies the
   * store's limits and merges the settings document (fields not sent stay).
   */
  async configure(queue: string, body: Record<string, unknown>): Promise<QueueConfiguration> {
    validateQueueName(queue, 'queue');
    for (const key of Object.keys(body)) {
      if (!CONFIG_KEYS.includes(key)) {
        throw new OjsError(
          'invalid_request',
          `${key} is not a queue configuration field; use ${CONFIG_KEYS.join(', ')}.`,
          { field: key },
        );
      }
    }
    const limits = limitsFromBody(body);
    const settings = parseQueueSettings(body);
    const engine = this.#engine;
    const now = engine.now();
    if (Object.keys(limits).length > 0) await engine.store.setQueueConfig(queue, limits, now);
    if (Object.keys(settings).length > 0) {
      for (let tries = 0; ; tries++) {
        const existing = await engine.store.getSetting(QUEUE_NAMESPACE, queue);
        const current = (existing?.value ?? {}) as QueueSettings;
        const merged: QueueSettings = {
          ...current,
          ...settings,
          retention: { ...current.retention, ...settings.retention },
        };
        const value = merged as unknown as Record<string, unknown>;
        if (
          await engine.store.putSetting(QUEUE_NAMESPACE, queue, value, existing?.rev ?? null, now)
        ) {
          break;
        }
        if (tries >= 20)
          throw new OjsError('conflict', `Queue '${queue}' config is changing too fast.`);
      }
      engine.settings.forget(QUEUE_NAMESPACE, queue);
    }
    await engine.store.appendEvents([
      makeEvent('queue.config_updated', queue, { queue, fields: Object.keys(body) }, now),
    ]);
    // Raised or removed limits can make waiting jobs claimable.
    engine.notifier.notify();
    return this.configuration(queue);
  }

  async configuration(queue: string): Promise<QueueConfiguration> {
    const [info, settings] = await Promise.all([this.#queueInfo(queue), this.settings(queue)]);
    return {
      concurrency: info?.concurrency ?? null,
      rate_limit:
        info?.rate_limit === undefined
          ? null
          : { limit: info.rate_limit.limit, period: formatIsoDuration(info.rate_limit.period_ms) },
      retention: retentionToWire({ ...this.retentionDefaults, ...settings.retention }),
      backpressure: settings.backpressure ?? null,
      default_retry: settings.default_retry ?? null,
    };
  }

  async #queueInfo(queue: string): Promise<QueueInfo | undefined> {
    return (await this.#engine.store.listQueues()).find((q) => q.name === queue);
  }

  /** The queue as FETCH sees it now (visible state: limits in use, why nothing is handed out). */
  async state(queue: string): Promise<QueueState> {
    validateQueueName(queue, 'queue');
    const { store } = this.#engine;
    const now = this.#engine.now();
    const [stats, info, window] = await Promise.all([
      store.queueStats(queue, now),
      this.#queueInfo(queue),
      store.rateLimitState(`queue-config:${queue}`),
    ]);
    const { counts } = stats;
    const blocked: QueueBlock[] = [];
    if (stats.paused) blocked.push('paused');
    if (counts.available === 0) blocked.push('empty');
    const concurrency =
      info?.concurrency === undefined ? null : { limit: info.concurrency, active: counts.active };
    if (concurrency !== null && concurrency.active >= concurrency.limit) {
      blocked.push('concurrency_limit');
    }
    let rate: QueueState['rate_limit'] = null;
    if (info?.rate_limit !== undefined) {
      const { limit, period_ms } = info.rate_limit;
      const open = window.window !== null && now < window.window.start + period_ms;
      rate = {
        limit,
        period: formatIsoDuration(period_ms),
        window_count: open ? window.window!.count : 0,
        window_resets_at: open ? toIso(window.window!.start + period_ms) : null,
      };
      if (rate.window_count >= limit) blocked.push('rate_limit');
    }
    return {
      name: queue,
      paused: stats.paused,
      available: counts.available,
      active: counts.active,
      scheduled: counts.scheduled,
      retryable: counts.retryable,
      concurrency,
      rate_limit: rate,
      blocked_by: blocked,
      ...(blocked.length === 0
        ? {
            note: 'Jobs can be fetched; a job is still skipped while its own rate-limit key is at its limit or no handler version admits it.',
          }
        : {}),
    };
  }

  /** The depth a queue bound counts. */
  async depth(queue: string): Promise<number> {
    return this.#engine.store.countJobs({ queues: [queue], states: [...DEPTH_STATES] });
  }

  /**
   * Before jobs are stored: applies each queue's default retry policy to
   * jobs that did not set one, and its backpressure bound (a batch that
   * does not fit is rejected whole with `QUEUE_FULL`, and a
   * backpressure.rejected event). Returns the pressure of bounded queues
   * above their warning threshold.
   */
  async admit(
    jobs: readonly JobRecord[],
    /** Ids of the jobs whose request set a retry policy (setsRetry). */
    explicitRetry: ReadonlySet<string>,
  ): Promise<QueuePressure | undefined> {
    const byQueue = new Map<string, JobRecord[]>();
    for (const job of jobs) {
      const group = byQueue.get(job.queue);
      if (group === undefined) byQueue.set(job.queue, [job]);
      else group.push(job);
    }
    let warning: QueuePressure | undefined;
    for (const admitted of await this.admitEach([...byQueue.values()], explicitRetry)) {
      if (admitted instanceof OjsError) throw admitted;
      if (admitted !== undefined) warning = admitted;
    }
    return warning;
  }

  /**
   * `admit` for several admission units, each the jobs of one queue that one
   * request adds (a PUSH: its job; a push-many: its jobs of that queue),
   * decided in order as if each had come alone: a unit that does not fit
   * under its queue's bound after the units before it is refused whole,
   * and the others go on. Answers, per unit, the refusal (`QUEUE_FULL`) or
   * the pressure to report (undefined below the warning threshold). Each
   * queue's settings and depth are read once.
   */
  async admitEach(
    units: readonly (readonly JobRecord[])[],
    explicitRetry: ReadonlySet<string>,
  ): Promise<(QueuePressure | OjsError | undefined)[]> {
    const answers: (QueuePressure | OjsError | undefined)[] = new Array(units.length);
    /** Per bounded queue: the depth counted so far and the units refused. */
    const bounded = new Map<string, { depth: number; rejected: number; bound: number }>();
    // Each queue's settings read once per call: the single PUSHes of one
    // turn (one unit each) mostly name the same queue.
    const read = new Map<string, QueueSettings>();
    for (let index = 0; index < units.length; index++) {
      const unit = units[index]!;
      const queue = unit[0]?.queue;
      if (queue === undefined) continue;
      let settings = read.get(queue);
      if (settings === undefined) {
        settings = await this.settings(queue);
        read.set(queue, settings);
      }
      if (settings.default_retry !== undefined) {
        for (const job of unit) {
          if (!explicitRetry.has(job.id)) job.retry = { ...settings.default_retry };
        }
      }
      if (settings.backpressure === undefined) continue;
      let seen = bounded.get(queue);
      if (seen === undefined) {
        seen = { depth: await this.depth(queue), rejected: 0, bound: 0 };
        bounded.set(queue, seen);
      }
      const decision = decideBackpressure(settings.backpressure, seen.depth, unit.length);
      if (decision === null) continue;
      if (!decision.accept) {
        seen.rejected += unit.length;
        seen.bound = decision.bound;
        answers[index] = new OjsError(
          'QUEUE_FULL',
          `Queue '${queue}' is full: depth ${seen.depth} of ${decision.bound}; ${unit.length} more job(s) do not fit.`,
          { queue, depth: seen.depth, bound: decision.bound, retry_after_seconds: 1 },
        );
        continue;
      }
      seen.depth += unit.length;
      if (decision.warn)
        answers[index] = {
          depth: decision.depth,
          bound: decision.bound,
          pressure: decision.pressure,
        };
    }
    const refusals = [...bounded].filter(([, seen]) => seen.rejected > 0);
    if (refusals.length > 0) {
      const now = this.#engine.now();
      await this.#engine.store.appendEvents(
        refusals.map(([queue, seen]) =>
          makeEvent(
            'backpressure.rejected',
            queue,
            {
              queue,
              depth: seen.depth,
              bound: seen.bound,
              rejected: seen.rejected,
              strategy: 'reject',
            },
            now,
          ),
        ),
      );
    }
    return answers;
  }
}
