/**
 * Event envelopes (EV §2) and the per-type data of the job events (EV §3).
 * Events are built by the engine next to the transition they describe and
 * committed with it, so a recorded event always matches a stored state.
 */
import type { JobRecord, OjsEvent } from './job-types.ts';
import { DEFAULT_TENANT } from './tenancy.ts';
import { toIso } from './time.ts';
import { uuidv7 } from './uuid.ts';

export const EVENT_SOURCE = 'ojs://ojs-ts/server';

export function makeEvent(
  type: string,
  subject: string | undefined,
  data: Record<string, unknown>,
  now: number,
): OjsEvent {
  const event: OjsEvent = {
    specversion: '1.0',
    id: `evt_${uuidv7(now)}`,
    type,
    source: EVENT_SOURCE,
    time: toIso(now),
    datacontenttype: 'application/json',
    data,
  };
  if (subject !== undefined) event.subject = subject;
  return event;
}

/**
 * A job event; carries trace_id when the job's meta has one (EV §8), and
 * tenant_id when the job has a tenant, so webhooks, SSE and the dashboard
 * scope events by tenant without reading the job (ext-multi-tenancy §2.2).
 */
export function jobEvent(
  type: string,
  job: JobRecord,
  data: Record<string, unknown>,
  now: number,
): OjsEvent {
  const payload: Record<string, unknown> = {
    job_id: job.id,
    job_type: job.type,
    queue: job.queue,
    state: job.state,
    ...data,
  };
  const traceId = job.meta.trace_id ?? job.meta.traceparent;
  if (traceId !== undefined) payload.trace_id = traceId;
  const tenantId = job.meta.tenant_id;
  if (typeof tenantId === 'string' && tenantId !== '') payload.tenant_id = tenantId;
  return makeEvent(type, job.id, payload, now);
}

/** Milliseconds between the job's start and `now`, for job.completed / job.failed. */
export function durationSinceStart(job: JobRecord, now: number): number {
  return job.started_at === undefined ? 0 : Math.max(0, now - Date.parse(job.started_at));
}

/** job.enqueued (and job.scheduled for a future job) for a newly stored job. */
export function enqueueEvents(job: JobRecord, now: number): OjsEvent[] {
  const data: Record<string, unknown> = { priority: job.priority };
  if (job.scheduled_at !== undefined) data.scheduled_at = job.scheduled_at;
  if (job.unique_key !== undefined) data.unique_key = job.unique_key;
  const events = [jobEvent('job.enqueued', job, data, now)];
  if (job.state === 'scheduled') {
    events.push(jobEvent('job.scheduled', job, { scheduled_at: job.scheduled_at }, now));
  }
  return events;
}

/**
 * The webhooks extension's own events (ext-webhooks §1.3, C8). Recorded in
 * the event log for streams and the dashboard; never delivered to webhooks
 * through it (webhook-filter.ts says why). `webhook.test` is sent by the
 * test route only.
 */
export const WEBHOOK_EVENT_TYPES = [
  'webhook.test',
  'webhook.delivered',
  'webhook.failed',
  'webhook.dead',
  'webhook.subscription.created',
  'webhook.subscription.deleted',
] as const;
/** The tenant an event is about: its data.tenant_id (jobEvent), else the default tenant. */
export function eventTenant(event: OjsEvent): string {
  const data = event.data as { tenant_id?: unknown } | undefined;
  return typeof data?.tenant_id === 'string' ? data.tenant_id : DEFAULT_TENANT;
}
