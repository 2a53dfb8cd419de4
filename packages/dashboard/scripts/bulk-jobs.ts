/**
 * Job records as a busy system holds them, for the scripts that fill a
 * store through its bulk insert (first-paint.ts, screenshots.ts): job i of
 * `total` is created `(total - i) * stepMs` before `end`, in a state of
 * scripts/busy-jobs.ts (mostly completed).
 */
import type { JobRecord } from '@ojs/core';
import { busyJob } from '../../../scripts/busy-jobs.ts';

export interface BulkShape {
  total: number;
  end: number;
  stepMs: number;
  queues: string[];
  types: string[];
}

export function bulkJob(i: number, shape: BulkShape): JobRecord {
  return busyJob({
    request: {
      type: shape.types[i % shape.types.length]!,
      args: [{ n: i }],
      options: { queue: shape.queues[i % shape.queues.length]! },
    },
    createdAt: shape.end - (shape.total - i) * shape.stepMs,
    // Consecutive jobs differ in state, so every page of a listing shows the
    // mix (i % 100 would give runs of 70 completed jobs).
    roll: (i * 7) % 100,
    deadLetter: { attempts: 3, message: 'upstream did not answer' },
  });
}
