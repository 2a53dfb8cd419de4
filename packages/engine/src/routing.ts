/**
 * Canary routing (seed 004 §10): weighted rules per job type decide, at
 * enqueue, which version a job is routed to; the choice is recorded on the
 * job (`routed_version`) and the claim routes by it. Weights are applied
 * with smooth weighted round-robin, so 10/90 over 1,000 jobs is exactly
 * 100/900 from one process (not merely close in expectation).
 * Auto-rollback: each process counts outcomes per (type, version) over the
 * evaluation window; when a version's error rate passes the threshold (with
 * at least `min_samples` outcomes), the rules are rewritten to send all
 * traffic to the previous version. The rewrite is a guarded write, so
 * processes racing on it apply it once.
 */
import {
  boundedArray,
  invalidRequest,
  isObject,
  type JobRecord,
  MAX_ROLLBACK_SAMPLES,
  MAX_ROUTING_RULES,
  MAX_ROUTING_WEIGHT,
  makeEvent,
  notFound,
  parseIsoDuration,
  parseVersion,
  toIso,
} from '@ojs/core';
import type { EngineContext } from './context.ts';

const NAMESPACE = 'routing';

export interface RoutingRule {
  version: string;
  weight: number;
}

export interface AutoRollback {
  error_rate_threshold: number;
  evaluation_window: string;
  action: 'route_all_to_previous';
  min_samples: number;
}

export interface RoutingConfig {
  type: string;
  rules: RoutingRule[];
  auto_rollback?: AutoRollback;
  state: 'active' | 'rolled_back';
  rolled_back_at?: string;
  rolled_back_from?: string;
  previous_rules?: RoutingRule[];
  updated_at: string;
}

type Obj = Record<string, unknown>;

export function parseRoutingConfig(type: string, body: unknown, now: number): RoutingConfig {
  if (!isObject(body) || !Array.isArray(body.rules) || body.rules.length === 0) {
    throw invalidRequest('rules must be a non-empty array of {version, weight}.', {
      field: 'rules',
    });
  }
  const rules = boundedArray(body.rules, 'rules', MAX_ROUTING_RULES).map(
    (rule, index): RoutingRule => {
      const field = `rules[${index}]`;
      if (!isObject(rule) || parseVersion(rule.version) === null) {
        throw invalidRequest(`${field}.version must be a version like "2.0".`, {
          field: `${field}.version`,
        });
      }
      if (
        typeof rule.weight !== 'number' ||
        !Number.isInteger(rule.weight) ||
        rule.weight < 0 ||
        rule.weight > MAX_ROUTING_WEIGHT
      ) {
        throw invalidRequest(
          `${field}.weight must be an integer from 0 to ${MAX_ROUTING_WEIGHT}.`,
          {
            field: `${field}.weight`,
          },
        );
      }
      return { version: String(rule.version), weight: rule.weight };
    },
  );
  if (rules.every((r) => r.weight === 0)) {
    throw invalidRequest('At least one rule needs a positive weight.', { field: 'rules' });
  }
  const config: RoutingConfig = { type, rules, state: 'active', updated_at: toIso(now) };
  if (body.auto_rollback !== undefined) {
    const ar = body.auto_rollback;
    const window =
      isObject(ar) && typeof ar.evaluation_window === 'string'
        ? parseIsoDuration(ar.evaluation_window)
        : null;
    if (
      !isObject(ar) ||
      typeof ar.error_rate_threshold !== 'number' ||
      ar.error_rate_threshold < 0 ||
      ar.error_rate_threshold > 1 ||
      window === null
    ) {
      throw invalidRequest(
        'auto_rollback needs error_rate_threshold (0..1) and evaluation_window (ISO 8601 duration).',
        { field: 'auto_rollback' },
      );
    }
    if (ar.action !== undefined && ar.action !== 'route_all_to_previous') {
      throw invalidRequest('auto_rollback.action must be route_all_to_previous.', {
        field: 'auto_rollback.action',
      });
    }
    const minSamples = ar.min_samples ?? 10;
    if (
      typeof minSamples !== 'number' ||
      !Number.isInteger(minSamples) ||
      minSamples < 1 ||
      minSamples > MAX_ROLLBACK_SAMPLES
    ) {
      throw invalidRequest(
        `auto_rollback.min_samples must be an integer from 1 to ${MAX_ROLLBACK_SAMPLES}.`,
        {
          field: 'auto_rollback.min_samples',
        },
      );
    }
    config.auto_rollback = {
      error_rate_threshold: ar.error_rate_threshold,
      evaluation_window: ar.evaluation_window as string,
      action: 'route_all_to_previous',
      min_samples: minSamples,
    };
  }
  return config;
}

/**
 * The version traffic falls back to: the newest rule older than the failing
 * version. None when the failing version is the oldest: rolling "back" to a
 * newer canary is not a rollback, so the rules stay as they are.
 */
export function previousVersion(rules: RoutingRule[], failing: string): string | undefined {
  const failingNum = parseVersion(failing)!;
  const older = rules
    .filter((r) => parseVersion(r.version)! < failingNum)
    .sort((a, b) => parseVersion(b.version)! - parseVersion(a.version)!);
  return older[0]?.version;
}

interface Outcome {
  at: number;
  failed: boolean;
}

export class VersionRouter {
  readonly #engine: EngineContext;
  /** Smooth weighted round-robin state per type and rules revision. */
  readonly #wrr = new Map<string, { rev: number; current: number[] }>();
  readonly #outcomes = new Map<string, Outcome[]>();

  constructor(engine: EngineContext) {
    this.#engine = engine;
  }

  async put(type: string, body: unknown): Promise<RoutingConfig> {
    const store = this.#engine.store;
    const config = parseRoutingConfig(type, body, this.#engine.now());
    for (;;) {
      const existing = await store.getSetting(NAMESPACE, type);
      const stored = await store.putSetting(
        NAMESPACE,
        type,
        config as unknown as Obj,
        existing?.rev ?? null,
        this.#engine.now(),
      );
      if (stored !== null) {
        this.#engine.settings.invalidate(NAMESPACE);
        return config;
      }
    }
  }

  async get(type: string): Promise<RoutingConfig> {
    const record = await this.#engine.store.getSetting(NAMESPACE, type);
    if (record === null) throw notFound('routing', type);
    return record.value as unknown as RoutingConfig;
  }

  async delete(type: string): Promise<void> {
    const deleted = await this.#engine.store.deleteSetting(NAMESPACE, type);
    this.#engine.settings.invalidate(NAMESPACE);
    if (!deleted) throw notFound('routing', type);
  }

  /** Routes a new job when rules exist for its type: records routed_version and routes by it. */
  async route(job: JobRecord): Promise<void> {
    const record = await this.#engine.settings.get(NAMESPACE, job.type);
    if (record === null) return;
    const config = record.value as unknown as RoutingConfig;
    const version = this.#pick(job.type, record.rev, config.rules);
    job.routed_version = version;
    job.version_num = parseVersion(version)!;
  }

  #pick(type: string, rev: number, rules: RoutingRule[]): string {
    let state = this.#wrr.get(type);
    if (state === undefined || state.rev !== rev || state.current.length !== rules.length) {
      state = { rev, current: rules.map(() => 0) };
      this.#wrr.set(type, state);
    }
    const total = rules.reduce((sum, r) => sum + r.weight, 0);
    let best = 0;
    for (const [i, rule] of rules.entries()) {
      state.current[i]! += rule.weight;
      if (state.current[i]! > state.current[best]!) best = i;
    }
    state.current[best]! -= total;
    return rules[best]!.version;
  }

  /** Records the outcome of a routed job's attempt and rolls back when the error rate trips. */
  async observe(job: JobRecord, failed: boolean): Promise<void> {
    if (job.routed_version === undefined) return;
    const record = await this.#engine.settings.get(NAMESPACE, job.type);
    if (record === null) return;
    const config = record.value as unknown as RoutingConfig;
    const rollback = config.auto_rollback;
    if (rollback === undefined || config.state !== 'active') return;
    const now = this.#engine.now();
    const windowMs = parseIsoDuration(rollback.evaluation_window)!;
    const key = `${job.type}@${job.routed_version}`;
    const outcomes = (this.#outcomes.get(key) ?? []).filter((o) => o.at > now - windowMs);
    outcomes.push({ at: now, failed });
    // The newest outcomes only: the window may be long, and every ACK walks them.
    if (outcomes.length > MAX_ROLLBACK_SAMPLES)
      outcomes.splice(0, outcomes.length - MAX_ROLLBACK_SAMPLES);
    this.#outcomes.set(key, outcomes);
    if (outcomes.length < rollback.min_samples) return;
    const rate = outcomes.filter((o) => o.failed).length / outcomes.length;
    if (rate <= rollback.error_rate_threshold) return;
    const previous = previousVersion(config.rules, job.routed_version);
    if (previous === undefined) return;
    const rolledBack: RoutingConfig = {
      ...config,
      rules: [{ version: previous, weight: 100 }],
      state: 'rolled_back',
      rolled_back_at: toIso(now),
      rolled_back_from: job.routed_version,
      previous_rules: config.rules,
      updated_at: toIso(now),
    };
    const stored = await this.#engine.store.putSetting(
      NAMESPACE,
      job.type,
      rolledBack as unknown as Obj,
      record.rev,
      now,
    );
    this.#engine.settings.invalidate(NAMESPACE);
    if (stored !== null) {
      this.#outcomes.delete(key);
      await this.#engine.store.appendEvents([
        makeEvent(
          'routing.rolled_back',
          job.type,
          {
            job_type: job.type,
            from_version: job.routed_version,
            to_version: previous,
            error_rate: rate,
            samples: outcomes.length,
          },
          now,
        ),
      ]);
    }
  }
}
