/**
 * Settling active jobs (ACK, FAIL, lease expiry) and extending their leases,
 * as pure decisions over the job as stored. Stores call these per job inside
 * their one batch transaction (or Lua script) and write the results in bulk,
 * guarded in the statement on state, attempt and rev; the engine never reads
 * a job before it settles it.
 */
import { conflict, notFound } from './errors.ts';
import { durationSinceStart, jobEvent } from './events.ts';
import type { JobRecord, OjsEvent } from './job-types.ts';
import { assertLeaseHolder, complete, expireLease, fail, leaseExtension } from './lifecycle.ts';
import type { FailureReport } from './retry.ts';
import { inTenant } from './tenancy.ts';
import { toIso } from './time.ts';

export type Settlement =
  /** ACK: the handler succeeded. */
  | { kind: 'complete'; result?: unknown }
  /** FAIL (nack); `requeue` hands the job back without counting a failure. */
  | { kind: 'fail'; error: FailureReport & { backtrace?: unknown }; requeue?: boolean }
  /** Lease reaper: the visibility or execution deadline passed. */
  | { kind: 'expire' };

/** One job to settle. `workerId` and `attempt` fence it when given (DESIGN §4). */
export interface SettleItem {
  id: string;
  workerId?: string;
  attempt?: number;
  settlement: Settlement;
  /** The tenant the request acts for: a job of another tenant is not found (nothing written). */
  tenant?: string;
}

export type SettleResult =
  | { status: 'settled'; job: JobRecord }
  | { status: 'not_found' }
  /** Refused by the fence or the state (409 per item); nothing was written for it. */
  | { status: 'conflict'; error: Error; job: JobRecord }
  /**
   * The job belongs to a workflow: nothing was written; the engine settles it
   * through `commit`, together with the workflow's advancement.
   */
  | { status: 'workflow'; job: JobRecord };

/** A heartbeat's lease extension for one job. */
export interface LeaseItem {
  id: string;
  workerId?: string;
  attempt?: number;
  /** New lease length from now; the job's own visibility_timeout_ms when absent. */
  visibilityTimeoutMs?: number;
  /** The tenant the request acts for: a job of another tenant is not held. */
  tenant?: string;
}

export type LeaseResult =
  /** Extended: `job` carries the new lease_until. The job's rev is unchanged. */
  | { status: 'extended'; job: JobRecord }
  /** The job was cancelled while active: its worker should stop it. */
  | { status: 'cancelled'; job: JobRecord }
  /** Unknown, no longer active, or leased to another worker / attempt. */
  | { status: 'not_held'; job: JobRecord | null };

/** Error data of job.failed / job.retrying / job.discarded events. */
function errorData(job: JobRecord) {
  const error = job.error;
  return error && { code: error.code, message: error.message, retryable: error.retryable ?? true };
}

/** The events of a failure (nack or expiry): failed, then retrying or discarded (+ dead letter). */
export function failureEvents(before: JobRecord, after: JobRecord, now: number): OjsEvent[] {
  if (after.state === 'available' && after.error === before.error) return [];
  const error = errorData(after);
  const events = [
    jobEvent(
      'job.failed',
      after,
      { attempt: before.attempt, error, duration_ms: durationSinceStart(before, now) },
      now,
    ),
  ];
  if (after.state === 'retryable') {
    events.push(
      jobEvent(
        'job.retrying',
        after,
        {
          attempt: before.attempt,
          max_attempts: after.retry.max_attempts,
          next_retry_at: after.next_attempt_at,
          error,
        },
        now,
      ),
    );
  } else if (after.state === 'discarded') {
    events.push(
      jobEvent('job.discarded', after, { total_attempts: before.attempt, last_error: error }, now),
    );
    if (after.dead_letter)
      events.push(jobEvent('dead_letter.added', after, { reason: 'exhausted' }, now));
  }
  return events;
}

/**
 * The record and events a settlement writes for `job` as stored, or throws
 * a 409 OjsError when the fence or the state refuses it. `random` drives
 * backoff jitter.
 */
export function decideSettlement(
  job: JobRecord,
  item: SettleItem,
  now: number,
  random: () => number = Math.random,
): { job: JobRecord; events: OjsEvent[] } {
  if (!inTenant(job, item.tenant)) throw notFound('job', item.id);
  const settlement = item.settlement;
  switch (settlement.kind) {
    case 'complete': {
      assertLeaseHolder(job, item, 'ack');
      const completed = complete(job, settlement.result, now);
      const data: Record<string, unknown> = {
        attempt: job.attempt,
        duration_ms: durationSinceStart(job, now),
      };
      if (settlement.result !== undefined) data.result = settlement.result;
      return { job: completed, events: [jobEvent('job.completed', completed, data, now)] };
    }
    case 'fail': {
      assertLeaseHolder(job, item, 'nack');
      const failed = fail(job, settlement.error, now, { requeue: settlement.requeue, random });
      return { job: failed, events: failureEvents(job, failed, now) };
    }
    case 'expire': {
      assertLeaseHolder(job, item, 'expire');
      if (!leaseExpired(job, now)) {
        throw conflict(`Job '${job.id}' still holds its lease.`, { job_id: job.id });
      }
      const expired = expireLease(job, now, random);
      return { job: expired, events: failureEvents(job, expired, now) };
    }
  }
}

/** True when an active job's visibility or execution deadline has passed. */
export function leaseExpired(job: JobRecord, now: number): boolean {
  return (
    (job.lease_until !== undefined && job.lease_until <= now) ||
    (job.timeout_at !== undefined && job.timeout_at <= now)
  );
}

/**
 * A heartbeat's decision for one job as stored: extend (a lease is not a
 * revision: rev stays, so a concurrent ACK's guard still holds), report a
 * cancellation, or refuse.
 */
export function decideLeaseExtension(
  job: JobRecord | null,
  item: LeaseItem,
  now: number,
): { result: LeaseResult; events: OjsEvent[] } {
  if (job === null || !inTenant(job, item.tenant)) {
    return { result: { status: 'not_held', job: null }, events: [] };
  }
  if (job.state === 'cancelled' && job.cancel_requested) {
    return { result: { status: 'cancelled', job }, events: [] };
  }
  const held =
    job.state === 'active' &&
    (item.attempt === undefined || item.attempt === job.attempt) &&
    (item.workerId === undefined || job.worker_id === undefined || item.workerId === job.worker_id);
  if (!held) return { result: { status: 'not_held', job }, events: [] };
  const extended = leaseExtension(job, now, item.visibilityTimeoutMs);
  const event = jobEvent(
    'job.heartbeat',
    extended,
    {
      worker_id: item.workerId ?? job.worker_id ?? null,
      attempt: job.attempt,
      visible_until: toIso(extended.lease_until!),
    },
    now,
  );
  return { result: { status: 'extended', job: extended }, events: [event] };
}
