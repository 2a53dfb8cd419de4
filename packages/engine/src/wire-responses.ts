/**
 * The response bodies of the HTTP binding, built in one place from what
 * the engine returns (decision 0088). The HTTP routes send them; the SDK's
 * in-process transport reads them through `engine.wire` and parses them as
 * its HTTP transport parses the server's answers, so both answer the same;
 * the gRPC binding takes the same decisions from them (item results, health
 * status, paging) before it writes its messages.
 *
 * Pure functions of engine results; the input types are structural so this
 * module does not import engine.ts (which exposes it).
 */
import {
  isTerminal,
  type JobRecord,
  noisyNeighbours,
  type OjsError,
  type OjsEvent,
  type PoolConfig,
  type QueueInfo,
  type QueueStats,
  type TenantRecord,
  toIso,
  toWire,
  type WebhookDelivery,
  type WebhookSubscription,
  webhookSubscriptionToWire,
} from '@ojs/core';
import type { PoolView, QueueDispatchStats } from './scheduling.ts';
import type { TenantStats } from './tenants.ts';
import type { WorkerHealth } from './workers.ts';

type Obj = Record<string, unknown>;

/** An enqueue's outcome (engine EnqueueResult). */
export type PushOutcome =
  | { status: 'created'; job: JobRecord; warnings?: string[] }
  | { status: 'existing'; job: JobRecord }
  | { status: 'dropped' };

/** One settled item of a batched acknowledgement (engine SettleOutcome). */
export type SettledItem =
  | { jobId: string; status: 'ok'; job: JobRecord }
  | { jobId: string; status: 'conflict' | 'not_found' | 'invalid'; error: OjsError };

// ------------------------------------------------------------ errors and paging

/** The error of one item of a batch (push-many, ack-batch): lean, the request's id is in X-Request-Id. */
export function itemError(error: OjsError): Obj {
  return {
    code: error.code,
    type: error.code,
    message: error.message,
    retryable: error.retryable,
    details: error.details,
  };
}

/** Offset pagination of a listing (HB §17). */
export function offsetPagination(total: number, limit: number, offset: number, count: number) {
  return { total, limit, offset, has_more: offset + count < total };
}

// ------------------------------------------------------------ jobs

/** The status and body of one PUSH: POST /jobs, and each item of POST /jobs/many. */
export function pushResponse(result: PushOutcome): { status: number; body: Obj } {
  switch (result.status) {
    case 'created':
      // Schema validation in warn mode accepts the job and reports why (features §9).
      return {
        status: 201,
        body: result.warnings
          ? { job: toWire(result.job), warnings: result.warnings }
          : { job: toWire(result.job) },
      };
    case 'existing':
      // unique on_conflict ignore: the job that already holds the key (L4-UNIQ-004).
      return {
        status: 200,
        body: { job: toWire(result.job), duplicate: true, deduplicated: true },
      };
    case 'dropped':
      // An enqueue middleware dropped the job: not an error, nothing stored.
      return { status: 200, body: { job: null, enqueued: false } };
  }
}

/** POST /jobs/many: each item as POST /jobs would answer it alone, with its status. */
export function pushManyResponse(
  outcomes: readonly (PushOutcome | { status: 'error'; error: OjsError })[],
): Obj {
  return {
    results: outcomes.map((outcome) => {
      if (outcome.status === 'error') {
        return { status: outcome.error.status, error: itemError(outcome.error) };
      }
      const { status, body } = pushResponse(outcome);
      return { status, ...body };
    }),
  };
}

/** POST /jobs/batch (atomic). */
export function batchPushResponse(jobs: readonly JobRecord[], warnings?: unknown): Obj {
  return {
    jobs: jobs.map(toWire),
    count: jobs.length,
    ...(warnings ? { warnings } : {}),
  };
}

/** GET /jobs/:id and every answer that is one job. */
export function jobResponse(job: JobRecord): Obj {
  return { job: toWire(job) };
}

/** DELETE /jobs/:id: the cancelled job and the state it left. */
export function cancelResponse(before: JobRecord, after: JobRecord): Obj {
  return { job: { ...toWire(after), previous_state: before.state } };
}

/** POST /jobs/:id/activate. */
export function activateResponse(job: JobRecord): Obj {
  return { job: { ...toWire(job), activated_at: job.enqueued_at, previous_state: 'pending' } };
}

/** POST /dead-letter/:id/retry. */
export function deadLetterRetryResponse(job: JobRecord): Obj {
  return { job: { ...toWire(job), re_enqueued_at: job.enqueued_at } };
}

/** GET /dead-letter: one page of dead-letter jobs. */
export function deadLetterPageResponse(
  page: { items: readonly JobRecord[]; total: number },
  limit: number,
  offset: number,
): Obj {
  return {
    jobs: page.items.map(toWire),
    pagination: offsetPagination(page.total, limit, offset, page.items.length),
  };
}

// ------------------------------------------------------------ the worker protocol

/** FETCH: `jobs`, and the first as `job` for clients that read one. */
export function fetchResponse(jobs: readonly JobRecord[]): Obj {
  const wire = jobs.map(toWire);
  return wire.length > 0 ? { jobs: wire, job: wire[0] } : { jobs: [] };
}

/** ACK: flat (the suite reads `$.state`), the job itself under `job`. */
export function ackResponse(job: JobRecord): Obj {
  return {
    acknowledged: true,
    id: job.id,
    job_id: job.id,
    state: job.state,
    completed_at: job.completed_at,
    job: toWire(job),
  };
}

/** NACK. `attempt` is the attempt that failed: FAIL never changes the counter (FETCH does). */
export function nackResponse(job: JobRecord): Obj {
  const out: Obj = {
    id: job.id,
    job_id: job.id,
    state: job.state,
    attempt: job.attempt,
    max_attempts: job.retry.max_attempts,
    job: toWire(job),
  };
  if (job.state === 'retryable') {
    out.next_attempt_at = job.next_attempt_at;
    out.retry_delay_ms = job.retry_delay_ms;
  }
  if (job.state === 'discarded') {
    out.discarded_at = job.discarded_at;
    out.completed_at = job.completed_at;
  }
  return out;
}

/** A batched acknowledgement (ack-batch): one result per item, acks first, then nacks. */
export function ackBatchResponse(outcomes: readonly SettledItem[]): {
  results: (
    | { job_id: string; status: 'ok'; state: string; attempt: number }
    | { job_id: string; status: 'conflict' | 'not_found' | 'invalid'; error: Obj }
  )[];
} {
  return {
    results: outcomes.map((outcome) =>
      outcome.status === 'ok'
        ? {
            job_id: outcome.jobId,
            status: 'ok',
            state: outcome.job.state,
            attempt: outcome.job.attempt,
          }
        : { job_id: outcome.jobId, status: outcome.status, error: itemError(outcome.error) },
    ),
  };
}

/** BEAT: the directive (`''` while running), the jobs extended and cancelled. */
export function heartbeatResponse(result: {
  state: string;
  jobsExtended: string[];
  jobsCancelled: string[];
  serverTime: string;
}): Obj {
  return {
    acknowledged: true,
    state: result.state,
    directive: result.state === 'running' ? '' : result.state,
    jobs_extended: result.jobsExtended,
    jobs_cancelled: result.jobsCancelled,
    server_time: result.serverTime,
  };
}

// ------------------------------------------------------------ queues and events

const queueStatus = (paused: boolean) => (paused ? 'paused' : 'active');

/** GET /queues: one page of every queue, each with its status. */
export function queuePageResponse(all: readonly QueueInfo[], limit: number, offset: number): Obj {
  const page = all.slice(offset, offset + limit);
  return {
    queues: page.map((q) => ({ ...q, status: queueStatus(q.paused) })),
    pagination: offsetPagination(all.length, limit, offset, page.length),
  };
}

/** Jobs completed per second over the last minute. */
export function throughputPerSecond(stats: QueueStats): number {
  return stats.completed_last_minute / 60;
}

/** GET /queues/:name/stats: the union of the HB and OA shapes (http-binding digest §4.12). */
export function queueStatsResponse(stats: QueueStats, now: number): Obj {
  const { counts } = stats;
  const status = queueStatus(stats.paused);
  const depth = counts.available + counts.scheduled + counts.retryable + counts.pending;
  return {
    queue: { name: stats.name, paused: stats.paused, status, ...counts },
    status,
    stats: {
      queue: stats.name,
      depth,
      ...counts,
      completed_last_hour: stats.completed_last_hour,
      failed_last_hour: stats.failed_last_hour,
      throughput_per_second: Math.round(throughputPerSecond(stats) * 1000) / 1000,
    },
    computed_at: toIso(now),
  };
}

/** POST /queues/:name/pause and /resume. */
export function queuePausedResponse(name: string, paused: boolean, now: number): Obj {
  const status = queueStatus(paused);
  const at = toIso(now);
  return {
    queue: { name, paused, status },
    status,
    ...(paused ? { paused_at: at } : { resumed_at: at }),
  };
}

/** GET /events: a page, the cursor to continue from, whether more wait. `events` holds limit + 1. */
export function eventPageResponse(events: readonly OjsEvent[], limit: number, after: unknown): Obj {
  const page = events.slice(0, limit);
  return {
    events: page,
    cursor: page.length > 0 ? page[page.length - 1]!.id : (after ?? null),
    has_more: events.length > limit,
  };
}

// ------------------------------------------------------------ job event streams

/** Events after which a job's event stream ends: its job reached a terminal state. */
export const JOB_STREAM_ENDS: ReadonlySet<string> = new Set([
  'job.completed',
  'job.cancelled',
  'job.discarded',
]);

/**
 * The first event of a job's stream (RT §2, SSE and in-process): a
 * `job.state_changed` snapshot of the job; `ends` when the job is already
 * terminal, so that snapshot is the whole stream.
 */
export function jobStreamStart(
  job: JobRecord,
  now: number,
): {
  event: { type: 'job.state_changed'; subject: string; time: string; data: Obj };
  ends: boolean;
} {
  const timestamp = new Date(now).toISOString();
  const data = {
    job_id: job.id,
    queue: job.queue,
    type: job.type,
    from: null,
    to: job.state,
    timestamp,
  };
  return {
    event: { type: 'job.state_changed', subject: job.id, time: timestamp, data },
    ends: isTerminal(job.state),
  };
}

// ------------------------------------------------------------ health

/** The engine's health report (engine.health()). */
export interface HealthReport {
  ok: boolean;
  latencyMs: number;
  error?: string;
  draining: boolean;
}

/** `ok`, `draining` (graceful shutdown) or `error` (the store is unreachable). */
export function healthStatus(report: HealthReport): 'ok' | 'draining' | 'error' {
  return report.ok ? (report.draining ? 'draining' : 'ok') : 'error';
}

/**
 * GET /ojs/v1/health. `backend.status` is the conformance suite's
 * vocabulary (EXT-OBS-002), not the OpenAPI's connected/disconnected
 * (decision 0050). The store's own message is shown only when `showError`
 * (the HTTP route answers strangers and logs it instead).
 */
export function healthResponse(
  report: HealthReport,
  at: { backend: string; uptimeSeconds: number; showError?: boolean },
): Obj {
  return {
    status: healthStatus(report),
    version: '1.0',
    uptime_seconds: at.uptimeSeconds,
    backend: {
      type: at.backend,
      status: report.ok ? 'ok' : 'unhealthy',
      latency_ms: report.latencyMs,
      ...(report.ok ? {} : { error: at.showError ? report.error : 'store unreachable' }),
    },
  };
}

// ------------------------------------------------------------ webhooks (ext-webhooks, C2)

/** `{subscription}`; the secret only on create and rotate (C3). */
export function webhookSubscriptionResponse(
  sub: WebhookSubscription,
  withSecret = false,
): { subscription: Obj } {
  return { subscription: webhookSubscriptionToWire(sub, withSecret) };
}

/** `{subscriptions}`, never with secrets. */
export function webhookSubscriptionsResponse(subs: readonly WebhookSubscription[]): {
  subscriptions: Obj[];
} {
  return { subscriptions: subs.map((sub) => webhookSubscriptionToWire(sub)) };
}

/** A delivery log entry: its state, attempts and last outcome, with the event it carries. */
export function webhookDeliveryToWire(d: WebhookDelivery): Obj {
  const out: Obj = {
    id: d.id,
    subscription_id: d.subscription_id,
    event_id: d.event_id,
    event_type: d.event_type,
    state: d.state,
    attempts: d.attempts,
    max_attempts: d.max_attempts,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
  if (d.state === 'pending') out.next_attempt_at = toIso(d.next_attempt_at);
  if (d.last_status_code !== undefined) out.last_status_code = d.last_status_code;
  if (d.last_error !== undefined) out.last_error = d.last_error;
  if (d.last_response_time_ms !== undefined) out.last_response_time_ms = d.last_response_time_ms;
  if (d.last_response_body !== undefined) out.last_response_body = d.last_response_body;
  if (d.delivered_at !== undefined) out.delivered_at = d.delivered_at;
  if (d.tenant_id !== undefined) out.tenant_id = d.tenant_id;
  out.event = d.event;
  return out;
}

/** `{deliveries, next_cursor}`: newest first; `next_cursor` when a full page may have more. */
export function webhookDeliveriesResponse(
  deliveries: readonly WebhookDelivery[],
  limit: number,
): { deliveries: Obj[]; next_cursor: string | null } {
  const last = deliveries[deliveries.length - 1];
  return {
    deliveries: deliveries.map(webhookDeliveryToWire),
    next_cursor: deliveries.length === limit && last !== undefined ? last.id : null,
  };
}

/** A tenant's record as the admin API shows it (ext-multi-tenancy §2.4). */
export function tenantWire(record: TenantRecord, stats?: TenantStats): Obj {
  return stats === undefined ? { ...record } : { ...record, stats };
}

/**
 * GET /admin/tenants: every tenant with its stats (MT-005) and, for a
 * tenant showing noisy-neighbour signals (core noisyNeighbours), `noisy`.
 */
export function tenantListResponse(
  items: readonly { record: TenantRecord; stats: TenantStats }[],
): Obj {
  const noisy = noisyNeighbours(
    items.map(({ stats }) => ({
      tenant_id: stats.tenant_id,
      depth: stats.jobs.available + stats.jobs.scheduled,
      active: stats.jobs.active,
      enqueuedPerMinute: stats.throughput.enqueued_per_minute,
    })),
  );
  return {
    tenants: items.map(({ record, stats }) => {
      const signals = noisy.get(record.tenant_id);
      return signals === undefined
        ? tenantWire(record, stats)
        : { ...tenantWire(record, stats), noisy: signals };
    }),
    pagination: { total: items.length },
  };
}

/** PUT /admin/pools/{name} (C15): 201 when created, 200 when replaced; the pool wrapped. */
export function poolResponse(result: { pool: PoolConfig; created: boolean }): {
  status: number;
  body: Obj;
} {
  return { status: result.created ? 201 : 200, body: { pool: result.pool } };
}

/** GET /admin/pools: each pool with its live workers and active jobs. */
export function poolListResponse(pools: readonly PoolView[]): Obj {
  return { items: pools };
}

/** GET /admin/scheduling/stats (C16): wrapped in `stats`. */
export function schedulingStatsResponse(stats: {
  queues: readonly QueueDispatchStats[];
  window: string;
}): Obj {
  return { stats };
}

/** GET /workers/{id}/health (C22): 200 while running, 503 otherwise. */
export function workerHealthResponse(health: WorkerHealth): { status: number; body: Obj } {
  return { status: health.state === 'running' ? 200 : 503, body: { ...health } };
}
