/**
 * Job records in the states of a busy system, for the dev scripts that fill
 * a store through its bulk insert instead of the engine (the listing
 * benchmark, the dashboard's first-paint and screenshot scripts): mostly
 * completed, else available, dead-lettered, retryable or scheduled, with
 * the fields each state has.
 */
import { type JobRecord, type JobState, parseEnqueueRequest, toIso } from '@ojs/core';

export interface BusyJob {
  /** The enqueue request (type, args, options) the job is parsed from. */
  request: Record<string, unknown>;
  createdAt: number;
  /**
   * 0 to 99; picks the state: below 70 completed, 85 available, 92
   * discarded (dead letter), 96 retryable, else scheduled. The caller
   * derives it from the job's index, so a run seeds the same mix each time.
   */
  roll: number;
  /** A dead-lettered job: the attempts it used and its last error's message. */
  deadLetter: { attempts: number; message: string };
}

export function busyJob({ request, createdAt, roll, deadLetter }: BusyJob): JobRecord {
  const job = parseEnqueueRequest(request, createdAt, { visibilityTimeoutMs: 300_000 });
  const state: JobState =
    roll < 70
      ? 'completed'
      : roll < 85
        ? 'available'
        : roll < 92
          ? 'discarded'
          : roll < 96
            ? 'retryable'
            : 'scheduled';
  job.state = state;
  if (state === 'completed') {
    job.attempt = 1;
    job.completed_at = toIso(createdAt + 5);
  }
  if (state === 'discarded') {
    job.attempt = deadLetter.attempts;
    job.discarded_at = toIso(createdAt + 5);
    job.dead_letter = true;
    job.error = {
      code: 'handler_error',
      type: roll % 2 ? 'Timeout' : 'SmtpError',
      message: deadLetter.message,
      attempt: deadLetter.attempts,
      occurred_at: toIso(createdAt + 5),
    };
    job.errors = [job.error];
  }
  if (state === 'retryable' || state === 'scheduled') job.run_at = createdAt + 86_400_000;
  return job;
}
