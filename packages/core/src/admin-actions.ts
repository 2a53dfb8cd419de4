/**
 * Operator actions on jobs (admin API §8, bulk operations §17): retry,
 * cancel and delete, one job or many by filter. Each is decided per job
 * here and committed by the engine with a guard on the rev it read, exactly
 * like a single CANCEL; bulk actions report matched / succeeded / failed.
 */
import { conflict } from './errors.ts';
import { jobEvent } from './events.ts';
import type { JobRecord, OjsEvent } from './job-types.ts';
import { cancel, reviveDeadLetter } from './lifecycle.ts';
import { type JobState, TERMINAL_STATES } from './states.ts';
import { toIso } from './time.ts';

export const BULK_ACTIONS = ['retry', 'cancel', 'delete'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** States each action applies to (bulk operations §17; others fail per job). */
export const BULK_ACTION_STATES: Record<BulkAction, readonly JobState[]> = {
  retry: ['retryable', 'discarded', 'cancelled'],
  cancel: ['scheduled', 'pending', 'available', 'retryable', 'active'],
  delete: [...TERMINAL_STATES],
};

/**
 * Admin retry: a retryable job runs now (its attempt count stays); a
 * discarded or cancelled job starts over with fresh attempts, history kept.
 */
export function retryNow(job: JobRecord, now: number): JobRecord {
  if (job.state === 'retryable') {
    const out: JobRecord = { ...job, rev: job.rev + 1, state: 'available' };
    delete out.run_at;
    delete out.next_attempt_at;
    return out;
  }
  if (job.state === 'cancelled') {
    const out = reviveDeadLetter({ ...job, state: 'discarded' }, now);
    delete out.cancelled_at;
    delete out.cancel_requested;
    return out;
  }
  if (job.state === 'discarded') return reviveDeadLetter(job, now);
  throw conflict(
    `Job '${job.id}' is ${job.state}; only retryable, discarded or cancelled jobs can be retried.`,
    {
      job_id: job.id,
      current_state: job.state,
    },
  );
}

export type BulkDecision =
  | { kind: 'update'; job: JobRecord; events: OjsEvent[] }
  | { kind: 'delete'; events: OjsEvent[] };

/** One job of a bulk action (or a single admin action); throws conflict when it does not apply. */
export function decideAdminAction(action: BulkAction, job: JobRecord, now: number): BulkDecision {
  switch (action) {
    case 'retry': {
      const retried = retryNow(job, now);
      return {
        kind: 'update',
        job: retried,
        events: [jobEvent('job.retried', retried, { previous_state: job.state }, now)],
      };
    }
    case 'cancel': {
      const cancelled = cancel(job, now);
      return {
        kind: 'update',
        job: cancelled,
        events: [jobEvent('job.cancelled', cancelled, { previous_state: job.state }, now)],
      };
    }
    case 'delete':
      if (!TERMINAL_STATES.has(job.state)) {
        throw conflict(`Job '${job.id}' is ${job.state}; only finished jobs can be deleted.`, {
          job_id: job.id,
          current_state: job.state,
        });
      }
      return {
        kind: 'delete',
        events: [jobEvent('job.deleted', job, { deleted_at: toIso(now) }, now)],
      };
  }
}
