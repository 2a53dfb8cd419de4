/**
 * Webhook delivery decisions (ext-webhooks §1.3, C4, C7): the retry
 * schedule, a delivery's stable id, and each step of its life as a new
 * record the store writes guarded on `rev` (pending -> delivering by a
 * claim with a lease; delivering -> delivered | pending (retry) | dead by
 * the attempt's outcome; dead -> pending by a replay). A lease that ran
 * out (the process died mid-attempt) makes the delivery claimable again,
 * so a delivery is never lost, and every claim changes `rev`, so only the
 * holder of the latest claim can settle it.
 */
import { createHash } from 'node:crypto';
import type { OjsEvent } from './job-types.ts';
import { toIso } from './time.ts';
import type { WebhookDelivery, WebhookSubscription } from './webhook-types.ts';

/** The recommended schedule: immediate, 30 s, 2 min, 10 min, 1 h, 4 h, 12 h, 24 h (delay before each attempt, ms). */
export const WEBHOOK_RETRY_SCHEDULE: readonly number[] = [
  0, 30_000, 120_000, 600_000, 3_600_000, 14_400_000, 43_200_000, 86_400_000,
];

/** The spec's floor: at least 5 attempts. */
export const MIN_WEBHOOK_ATTEMPTS = 5;

/** The longest Retry-After a 429 may ask for (longer ones wait this long). */
const MAX_RETRY_AFTER_MS = 86_400_000;

/** The request timeout (M: 30 s) and the range a subscription may choose. */
export const WEBHOOK_TIMEOUT_MS = 30_000;
export const WEBHOOK_TIMEOUT_RANGE = { min: 5_000, max: 60_000 } as const;

/** How much of a receiver's response body the delivery log keeps. */
export const WEBHOOK_RESPONSE_BODY_BYTES = 1024;

/** A schedule from delays in ms; an error naming what is wrong (too few attempts, a bad delay). */
export function parseRetrySchedule(delays: readonly number[]): number[] {
  if (delays.length < MIN_WEBHOOK_ATTEMPTS) {
    throw new Error(
      `A webhook retry schedule needs at least ${MIN_WEBHOOK_ATTEMPTS} attempts (got ${delays.length}).`,
    );
  }
  for (const d of delays) {
    if (!Number.isInteger(d) || d < 0) {
      throw new Error(`A webhook retry delay must be an integer number of ms >= 0 (got ${d}).`);
    }
  }
  return [...delays];
}

/** The delivery id of (event, subscription): the same on every attempt and every re-insert. */
export function webhookDeliveryId(eventId: string, subscriptionId: string): string {
  const hash = createHash('sha256').update(`${eventId}\n${subscriptionId}`).digest('hex');
  return `whd_${hash.slice(0, 32)}`;
}

/** A new pending delivery of `event` to `sub`, due now. */
export function newWebhookDelivery(
  event: OjsEvent,
  sub: WebhookSubscription,
  maxAttempts: number,
  now: number,
): WebhookDelivery {
  const delivery: WebhookDelivery = {
    id: webhookDeliveryId(event.id, sub.id),
    subscription_id: sub.id,
    event_id: event.id,
    event_type: event.type,
    event,
    state: 'pending',
    attempts: 0,
    max_attempts: maxAttempts,
    next_attempt_at: now,
    rev: 0,
    created_at: toIso(now),
    updated_at: toIso(now),
  };
  if (sub.tenant_id !== undefined) delivery.tenant_id = sub.tenant_id;
  return delivery;
}

/** True when a delivery may be claimed now: pending and due, or delivering with an expired lease. */
export function webhookDeliveryDue(d: WebhookDelivery, now: number): boolean {
  if (d.state === 'pending') return d.next_attempt_at <= now;
  return d.state === 'delivering' && (d.lease_until ?? 0) <= now;
}

/** The store's due index key: when a delivery next needs a process (null: never again). */
export function webhookDeliveryDueAt(d: WebhookDelivery): number | null {
  if (d.state === 'pending') return d.next_attempt_at;
  if (d.state === 'delivering') return d.lease_until ?? 0;
  return null;
}

/** When a delivery was settled for good (delivered or dead), for the log's pruning; null while it is not. */
export function webhookDeliverySettledAt(d: WebhookDelivery): number | null {
  return d.state === 'delivered' || d.state === 'dead' ? Date.parse(d.updated_at) : null;
}

/** How long the delivery log keeps settled deliveries: delivered 7 days, dead 30 (replayable until then). */
export const WEBHOOK_LOG_RETENTION = {
  deliveredMs: 7 * 86_400_000,
  deadMs: 30 * 86_400_000,
} as const;

/** A claim: the next attempt starts, held by `owner` until `now + leaseMs`. */
export function claimWebhookDelivery(
  d: WebhookDelivery,
  owner: string,
  leaseMs: number,
  now: number,
): WebhookDelivery {
  return {
    ...d,
    state: 'delivering',
    attempts: d.attempts + 1,
    lease_owner: owner,
    lease_until: now + leaseMs,
    rev: d.rev + 1,
    updated_at: toIso(now),
  };
}

/** What one attempt came to. */
export interface WebhookAttemptResult {
  /** The final response's status (after redirects); absent on a timeout or connection error. */
  statusCode?: number;
  /** A timeout, a connection error, a refused address, too many redirects. */
  error?: string;
  /** A 429's Retry-After header, as sent. */
  retryAfter?: string;
  responseBody?: string;
  responseTimeMs: number;
}

export type WebhookOutcome = 'delivered' | 'retry' | 'dead';

/** 2xx delivered; 429, 5xx, timeout and connection errors retried; any other status dead at once. */
export function webhookOutcome(result: WebhookAttemptResult): WebhookOutcome {
  const status = result.statusCode;
  if (status === undefined) return 'retry';
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 429 || status >= 500) return 'retry';
  return 'dead';
}

/** Retry-After as a delay in ms (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

/**
 * The delivery after an attempt by its claim holder: delivered, pending
 * again at the schedule's next delay (a 429's Retry-After when it asks for
 * longer), or dead after the last attempt or on a status that will not
 * change by retrying.
 */
export function settleWebhookDelivery(
  d: WebhookDelivery,
  result: WebhookAttemptResult,
  schedule: readonly number[],
  now: number,
): WebhookDelivery {
  const outcome = webhookOutcome(result);
  const next: WebhookDelivery = {
    ...d,
    rev: d.rev + 1,
    updated_at: toIso(now),
    last_response_time_ms: result.responseTimeMs,
  };
  delete next.lease_owner;
  delete next.lease_until;
  delete next.last_status_code;
  delete next.last_error;
  delete next.last_response_body;
  if (result.statusCode !== undefined) next.last_status_code = result.statusCode;
  if (result.error !== undefined) next.last_error = result.error;
  if (result.responseBody !== undefined) next.last_response_body = result.responseBody;
  if (outcome === 'delivered') {
    next.state = 'delivered';
    next.delivered_at = toIso(now);
    return next;
  }
  if (outcome === 'dead' || d.attempts >= d.max_attempts) {
    next.state = 'dead';
    return next;
  }
  const scheduled = schedule[Math.min(d.attempts, schedule.length - 1)] ?? 0;
  const asked = result.statusCode === 429 ? retryAfterMs(result.retryAfter, now) : undefined;
  next.state = 'pending';
  next.next_attempt_at = now + Math.max(scheduled, asked ?? 0);
  return next;
}

/** A delivery whose subscription is gone (deleted): ended, as pending deliveries are cancelled. */
export function abandonWebhookDelivery(
  d: WebhookDelivery,
  reason: string,
  now: number,
): WebhookDelivery {
  const next: WebhookDelivery = {
    ...d,
    state: 'dead',
    last_error: reason,
    rev: d.rev + 1,
    updated_at: toIso(now),
  };
  delete next.lease_owner;
  delete next.lease_until;
  return next;
}

/** Replay of a dead delivery: pending and due now, with a fresh set of attempts. */
export function replayWebhookDelivery(
  d: WebhookDelivery,
  maxAttempts: number,
  now: number,
): WebhookDelivery {
  return {
    ...d,
    state: 'pending',
    max_attempts: d.attempts + maxAttempts,
    next_attempt_at: now,
    rev: d.rev + 1,
    updated_at: toIso(now),
  };
}

/** A response body as the log keeps it: at most WEBHOOK_RESPONSE_BODY_BYTES bytes of UTF-8. */
export function truncateResponseBody(body: Buffer): string {
  return body.subarray(0, WEBHOOK_RESPONSE_BODY_BYTES).toString('utf8');
}
