/**
 * Cron (features §4): registration as upsert, and the scheduler tick that
 * fires due crons. Firing commits the advanced cron record (guarded on its
 * rev) together with the job it enqueues, so when several server processes
 * race on one fire time exactly one commit lands: exactly-once per (cron,
 * fire time) without a leader. After downtime a cron fires at most one
 * catch-up occurrence.
 */
import {
  assignTenant,
  type CronRecord,
  cancel,
  conflict,
  dueOccurrence,
  enqueueEvents,
  invalidRequest,
  isObject,
  isTerminal,
  type JobRecord,
  jobEvent,
  jobTenant,
  makeEvent,
  nextFireTime,
  notFound,
  type OjsEvent,
  type OverlapPolicy,
  parseCronSchedule,
  parseEnqueueRequest,
  type TenantScope,
  tenantDenied,
  toIso,
} from '@ojs/core';
import type { EngineContext } from './context.ts';
import type { VersionRouter } from './routing.ts';
import type { SchemaRegistry } from './schemas.ts';

type Obj = Record<string, unknown>;

/** Cron spec §4.1: lowercase letters, digits, '-' and '.', at most 255 characters. */
const NAME_PATTERN = /^[a-z0-9][a-z0-9.-]{0,254}$/;
const OVERLAP_POLICIES: Record<string, OverlapPolicy> = {
  skip: 'skip',
  allow: 'allow',
  cancel: 'cancel_previous',
  cancel_previous: 'cancel_previous',
  enqueue: 'enqueue',
};

/** Accepts the OA/suite shape (expression + job_template) and the cron spec shape (cron + flat type/args/options). */
export function parseCronRequest(
  body: unknown,
  now: number,
  visibilityTimeoutMs: number,
): CronRecord {
  if (!isObject(body)) throw invalidRequest('The cron registration must be a JSON object.');
  const name = body.name;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw invalidRequest(`name is required and must match ${NAME_PATTERN.source}.`, {
      field: 'name',
    });
  }
  const expression = body.expression ?? body.cron ?? body.schedule;
  const schedule = parseCronSchedule(expression, body.timezone ?? 'UTC');
  const policyValue = body.overlap_policy ?? 'skip';
  const overlap = typeof policyValue === 'string' ? OVERLAP_POLICIES[policyValue] : undefined;
  if (overlap === undefined) {
    throw invalidRequest('overlap_policy must be one of skip, allow, cancel_previous, enqueue.', {
      field: 'overlap_policy',
    });
  }
  if (body.enabled !== undefined && typeof body.enabled !== 'boolean') {
    throw invalidRequest('enabled must be a boolean.', { field: 'enabled' });
  }
  const template: Obj = isObject(body.job_template)
    ? { ...body.job_template }
    : { type: body.type, args: body.args ?? [], meta: body.meta, options: body.options };
  if (template.args === undefined) template.args = [];
  for (const key of Object.keys(template)) if (template[key] === undefined) delete template[key];
  // Validate the template now so a bad cron fails at registration, not at 3 a.m.
  parseEnqueueRequest(template, now, { visibilityTimeoutMs });
  const enabled = body.enabled !== false;
  const cron: CronRecord = {
    name,
    expression: schedule.expression,
    timezone: schedule.timezone,
    overlap_policy: overlap,
    enabled,
    job_template: template,
    created_at: toIso(now),
    updated_at: toIso(now),
    run_count: 0,
    rev: 0,
  };
  if (typeof body.description === 'string') cron.description = body.description;
  if (enabled) setNextRun(cron, nextFireTime(schedule, now));
  return cron;
}

function setNextRun(cron: CronRecord, next: number | null): void {
  if (next === null) {
    delete cron.next_run_ms;
    delete cron.next_run_at;
  } else {
    cron.next_run_ms = next;
    cron.next_run_at = toIso(next);
  }
}

export function cronToWire(cron: CronRecord): Obj {
  const { rev: _rev, next_run_ms: _ms, ...rest } = cron;
  return {
    ...rest,
    cron: cron.expression,
    next_run_at: cron.next_run_at ?? null,
    last_run_at: cron.last_run_at ?? null,
    status: cron.enabled ? 'active' : 'disabled',
  };
}

/** What the scheduler uses of the engine: its context, schema checks and version routing. */
export interface CronContext extends EngineContext {
  readonly schemas: Pick<SchemaRegistry, 'check'>;
  readonly routing: Pick<VersionRouter, 'route'>;
}

export class CronScheduler {
  readonly #engine: CronContext;

  constructor(engine: CronContext) {
    this.#engine = engine;
  }

  /**
   * Registers (or replaces) a cron. With `tenant`, its jobs belong to that
   * tenant (written into the template's meta, checked as an enqueue's), and
   * a cron of another tenant by that name is not replaced (403).
   */
  async register(
    body: unknown,
    tenant?: TenantScope,
  ): Promise<{ created: boolean; cron: CronRecord }> {
    const engine = this.#engine;
    const now = engine.now();
    const cron = parseCronRequest(body, now, engine.visibilityTimeoutMs);
    const template = cron.job_template;
    if (tenant !== undefined || isObject(template.meta)) {
      const meta = isObject(template.meta) ? { ...template.meta } : {};
      assignTenant({ meta }, tenant);
      if (tenant !== undefined) template.meta = meta;
    }
    // The template's args meet the registered schema now, not at 3 a.m.
    await engine.schemas.check(
      parseEnqueueRequest(cron.job_template, now, {
        visibilityTimeoutMs: engine.visibilityTimeoutMs,
      }),
    );
    const existing = await engine.store.getCron(cron.name);
    if (
      existing !== null &&
      tenant !== undefined &&
      jobTenant(existing.job_template) !== tenant.id
    ) {
      throw tenantDenied(jobTenant(existing.job_template));
    }
    if (existing !== null) {
      // An update keeps history (created_at, run_count, last run).
      cron.created_at = existing.created_at;
      cron.run_count = existing.run_count;
      if (existing.last_run_at !== undefined) cron.last_run_at = existing.last_run_at;
      if (existing.last_job_id !== undefined) cron.last_job_id = existing.last_job_id;
    }
    return engine.store.upsertCron(cron);
  }

  async get(name: string): Promise<CronRecord> {
    const cron = await this.#engine.store.getCron(name);
    if (cron === null) throw notFound('cron', name);
    return cron;
  }

  async delete(name: string): Promise<CronRecord> {
    const cron = await this.#engine.store.deleteCron(name);
    if (cron === null) throw notFound('cron', name);
    return cron;
  }

  async setEnabled(name: string, enabled: boolean): Promise<CronRecord> {
    const cron = await this.get(name);
    const next: CronRecord = { ...cron, enabled, updated_at: toIso(this.#engine.now()) };
    setNextRun(
      next,
      enabled
        ? nextFireTime(parseCronSchedule(cron.expression, cron.timezone), this.#engine.now())
        : null,
    );
    return (await this.#engine.store.upsertCron(next)).cron;
  }

  /**
   * Runs a cron's job now (an operator's `ojs cron trigger`, the
   * dashboard's "run now"): one job from its template, marked
   * `meta.cron_manual`, whether the cron is enabled or not, recorded as the
   * cron's last run. The schedule is untouched: the next fire time stays.
   * Guarded on the cron's rev like a scheduled firing.
   */
  async trigger(name: string): Promise<JobRecord> {
    const engine = this.#engine;
    for (let tries = 0; tries < 20; tries++) {
      const cron = await this.get(name);
      const now = engine.now();
      const job = this.#jobFor(cron, now, now);
      job.meta = { ...job.meta, cron_manual: true };
      await engine.routing.route(job);
      const advanced: CronRecord = {
        ...cron,
        rev: cron.rev + 1,
        last_run_at: toIso(now),
        last_job_id: job.id,
        run_count: cron.run_count + 1,
      };
      const event = makeEvent(
        'cron.triggered',
        cron.name,
        {
          cron_name: cron.name,
          cron_expression: cron.expression,
          timezone: cron.timezone,
          manual: true,
          job_id: job.id,
          job_type: job.type,
          run_count: advanced.run_count,
          actual_time: toIso(now),
        },
        now,
      );
      const committed = await engine.store.commit({
        now,
        cronUpdates: [{ cron: advanced, expectRev: cron.rev }],
        inserts: [job],
        events: [event, ...enqueueEvents(job, now)],
      });
      if (committed) {
        if (job.state === 'available') engine.notifier.notify();
        return job;
      }
    }
    throw conflict(`Cron '${name}' kept changing while it was triggered; retry.`);
  }

  /** One scheduler tick: fires every due cron once. Returns how many jobs it enqueued. */
  async tick(): Promise<number> {
    const engine = this.#engine;
    const now = engine.now();
    let fired = 0;
    for (const cron of await engine.store.dueCrons(now)) {
      if (await this.#fire(cron, now)) fired++;
    }
    if (fired > 0) engine.notifier.notify();
    return fired;
  }

  async #fire(cron: CronRecord, now: number): Promise<boolean> {
    const engine = this.#engine;
    const schedule = parseCronSchedule(cron.expression, cron.timezone);
    const occurrence = dueOccurrence(schedule, cron.next_run_ms!, now);
    if (occurrence === null) return false;
    const advanced: CronRecord = { ...cron, rev: cron.rev + 1 };
    setNextRun(advanced, occurrence.next);
    const scheduledTime = toIso(occurrence.fireAt);
    const previous =
      cron.last_job_id === undefined ? null : await engine.store.getJob(cron.last_job_id);
    const running = previous !== null && !isTerminal(previous.state);
    const base = {
      cron_name: cron.name,
      cron_expression: cron.expression,
      cron_expr: cron.expression,
      timezone: cron.timezone,
      scheduled_time: scheduledTime,
    };

    if (running && cron.overlap_policy === 'skip') {
      const event = makeEvent(
        'cron.skipped',
        cron.name,
        {
          ...base,
          reason: 'overlap_skip',
          active_job_id: previous.id,
          existing_job_id: previous.id,
          job_type: previous.type,
        },
        now,
      );
      // The occurrence is consumed (next_run advances) but nothing is enqueued.
      await engine.store.commit({
        cronUpdates: [{ cron: advanced, expectRev: cron.rev }],
        events: [event],
      });
      return false;
    }

    const job = this.#jobFor(cron, occurrence.fireAt, now);
    await engine.routing.route(job);
    advanced.last_run_at = toIso(now);
    advanced.last_job_id = job.id;
    advanced.run_count = cron.run_count + 1;
    const updates: { job: JobRecord; expectRev: number }[] = [];
    const events: OjsEvent[] = [];
    if (running && cron.overlap_policy === 'cancel_previous') {
      const cancelled = cancel(previous, now);
      updates.push({ job: cancelled, expectRev: previous.rev });
      events.push(jobEvent('job.cancelled', cancelled, { reason: 'cron_cancel_previous' }, now));
    }
    events.push(
      makeEvent(
        'cron.triggered',
        cron.name,
        {
          ...base,
          job_id: job.id,
          job_type: job.type,
          run_count: advanced.run_count,
          scheduled_at: scheduledTime,
          actual_time: toIso(now),
        },
        now,
      ),
      ...enqueueEvents(job, now),
    );
    const committed = await engine.store.commit({
      now,
      cronUpdates: [{ cron: advanced, expectRev: cron.rev }],
      updates,
      inserts: [job],
      events,
    });
    if (committed) {
      for (const update of updates) engine.observers.settled(update.job);
      engine.observers.enqueued([job]);
    }
    return committed;
  }

  #jobFor(cron: CronRecord, fireAt: number, now: number): JobRecord {
    const job = parseEnqueueRequest(cron.job_template, now, {
      visibilityTimeoutMs: this.#engine.visibilityTimeoutMs,
    });
    // Correlation for overlap detection and operators.
    job.meta = { ...job.meta, cron_name: cron.name, cron_triggered_at: toIso(fireAt) };
    if (cron.overlap_policy === 'enqueue') {
      // Runs never overlap: at most one active job of this cron at a time.
      job.rate_limit = { key: `cron:${cron.name}`, concurrency: 1 };
    }
    return job;
  }
}
