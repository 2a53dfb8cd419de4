/**
 * Progress (features §15, `urn:ojs:ext:progress`): a worker reports how far
 * an active job is. The value is clamped to [0, 1] and never goes down
 * within an attempt; an update also extends the lease like a heartbeat.
 * Progress belongs to one attempt: it is recorded with the attempt number
 * and read as absent once a new attempt starts (so the claim need not
 * clear it), and a completed job that reported progress reads 1.0.
 */
import { invalidRequest } from './errors.ts';
import { jobEvent } from './events.ts';
import type { JobProgress, JobRecord, OjsEvent } from './job-types.ts';
import { toIso } from './time.ts';

export interface ProgressUpdate {
  progress?: number;
  message?: string;
  data?: Record<string, unknown>;
}

/** Largest `data` document kept with a progress update (spec: SHOULD be <= 4 KB). */
export const MAX_PROGRESS_DATA_BYTES = 4096;

/** Validates a PUT /jobs/{id}/progress body. */
export function parseProgressUpdate(body: Record<string, unknown>): ProgressUpdate {
  const update: ProgressUpdate = {};
  const { progress, message, data } = body;
  if (progress !== undefined && progress !== null) {
    if (typeof progress !== 'number' || !Number.isFinite(progress)) {
      throw invalidRequest('progress must be a number (0.0 to 1.0).', { field: 'progress' });
    }
    update.progress = progress;
  }
  if (message !== undefined && message !== null) {
    if (typeof message !== 'string' || message.length > 1024) {
      throw invalidRequest('message must be a string of at most 1024 characters.', {
        field: 'message',
      });
    }
    update.message = message;
  }
  if (data !== undefined && data !== null) {
    if (typeof data !== 'object' || Array.isArray(data)) {
      throw invalidRequest('data must be a JSON object.', { field: 'data' });
    }
    if (Buffer.byteLength(JSON.stringify(data)) > MAX_PROGRESS_DATA_BYTES) {
      throw invalidRequest(`data must be at most ${MAX_PROGRESS_DATA_BYTES} bytes of JSON.`, {
        field: 'data',
      });
    }
    update.data = data as Record<string, unknown>;
  }
  if (update.progress === undefined && update.data === undefined && update.message === undefined) {
    throw invalidRequest('Send at least one of progress, data or message.', { field: 'progress' });
  }
  return update;
}

/** The progress of the job's current attempt, as readers see it (null when none). */
export function currentProgress(job: JobRecord): JobProgress | null {
  const progress = job.progress;
  if (progress === undefined || progress.attempt !== job.attempt) return null;
  // ACK sets progress to 1.0 when progress was used (PRG lifecycle).
  if (job.state === 'completed') return { ...progress, value: 1 };
  return progress;
}

/**
 * Applies an update to an active job: the new record (rev + 1, lease
 * extended from now) and its job.progress event, or null when the update
 * is to be ignored (the job is not active: the spec says silently).
 */
export function recordProgress(
  job: JobRecord,
  update: ProgressUpdate,
  now: number,
): { job: JobRecord; events: OjsEvent[] } | null {
  if (job.state !== 'active') return null;
  const previous = currentProgress(job);
  let value = previous?.value ?? null;
  if (update.progress !== undefined) {
    const clamped = Math.min(1, Math.max(0, update.progress));
    // Monotonic within an attempt: a lower value is ignored, a higher one kept.
    value = value === null ? clamped : Math.max(value, clamped);
  }
  const progress: JobProgress = { value, updated_at: toIso(now), attempt: job.attempt };
  const message = update.message ?? previous?.message;
  const data = update.data ?? previous?.data;
  if (message !== undefined) progress.message = message;
  if (data !== undefined) progress.data = data;
  const out: JobRecord = {
    ...job,
    rev: job.rev + 1,
    progress,
    lease_until: now + job.visibility_timeout_ms,
  };
  const event = jobEvent(
    'job.progress',
    out,
    { progress: value, ...(message === undefined ? {} : { message }) },
    now,
  );
  return { job: out, events: [event] };
}

/** The GET /jobs/{id}/progress body. */
export function progressToWire(job: JobRecord): Record<string, unknown> {
  const progress = currentProgress(job);
  return {
    job_id: job.id,
    state: job.state,
    progress: progress?.value ?? null,
    message: progress?.message ?? null,
    data: progress?.data ?? null,
    updated_at: progress?.updated_at ?? null,
  };
}
