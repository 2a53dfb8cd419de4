/**
 * Job records as a busy system holds them, for the scripts that fill a
 * store through its bulk insert (first-paint.ts, screenshots.ts): job i of
 * `total` is created `(total - i) * stepMs` before `end`, and is mostly
 * completed, else available, dead-lettered, retryable or scheduled.
 */
import { type JobRecord, type JobState, parseEnqueueRequest, toIso } from '@ojs/core';

export interface BulkShape {
  total: number;
  end: number;
  stepMs: number;
  queues: string[];
  types: string[];
}

export function bulkJob(i: number, shape: BulkShape): JobRecord {
  const created = shape.end - (shape.total - i) * shape.stepMs;
  const job = parseEnqueueRequest(
    {
      type: shape.types[i % shape.types.length]!,
      args: [{ n: i }],
      options: { queue: shape.queues[i % shape.queues.length]! },
    },
    created,
    { visibilityTimeoutMs: 300_000 },
  );
  const r = (i * 7) % 100;
  const state: JobState =
    r < 70
      ? 'completed'
      : r < 85
        ? 'available'
        : r < 92
          ? 'discarded'
          : r < 96
            ? 'retryable'
            : 'scheduled';
  job.state = state;
  if (state === 'completed') {
    job.attempt = 1;
    job.completed_at = toIso(created + 5);
  }
  if (state === 'discarded') {
    job.attempt = 3;
    job.discarded_at = toIso(created + 5);
    job.dead_letter = true;
    job.error = {
      code: 'handler_error',
      type: r % 2 ? 'Timeout' : 'SmtpError',
      message: 'upstream did not answer',
      attempt: 3,
      occurred_at: toIso(created + 5),
    };
    job.errors = [job.error];
  }
  if (state === 'retryable' || state === 'scheduled') job.run_at = created + 86_400_000;
  return job;
}
