/**
 * Structured logs (http-binding §16.4): one pino logger, injected from the
 * server into the engine, its services and the stores. Job lifecycle lines
 * carry the job's id, type, queue, state, attempt and duration, never its
 * args, result or meta (they may hold personal data).
 */
import type { JobRecord } from '@ojs/core';
import { type Logger, pino } from 'pino';
import { elapsedMs, finishedAt, type JobObserver } from './lifecycle.ts';

export type { Logger };

/** A logger that writes nothing: the engine's default when none is injected. */
export const silentLogger: Logger = pino({ level: 'silent' });

/** pino's numeric levels. */
const INFO = 30;
const WARN = 40;

/** The spec's message and level for a job's new state (http-binding §16.4). */
function lineFor(
  job: JobRecord,
  expired: boolean,
): [level: 'info' | 'warn' | 'error', msg: string] {
  switch (job.state) {
    case 'completed':
      return ['info', 'job completed'];
    case 'retryable':
      return ['warn', 'job failed'];
    case 'discarded':
      return ['error', 'job discarded'];
    case 'cancelled':
      return ['info', 'job cancelled'];
    default:
      // Back to available: a lease expired or the worker requeued it (shutdown).
      return ['warn', expired ? 'job lease expired' : 'job requeued'];
  }
}

/** The fields every lifecycle line carries (http-binding §16.4). */
function jobFields(job: JobRecord): Record<string, unknown> {
  return {
    'ojs.job.id': job.id,
    'ojs.job.type': job.type,
    'ojs.job.queue': job.queue,
    'ojs.job.state': job.state,
  };
}

/** Logs every lifecycle change of a job (enqueued, started, settled). */
export class LifecycleLog implements JobObserver {
  readonly #logger: Logger;
  readonly #level: number;

  /** `level` is the level of the routine lines (enqueued, started, completed). */
  constructor(logger: Logger, level: 'info' | 'debug' = 'info') {
    this.#logger = logger;
    this.#level = level === 'info' ? INFO : 20;
  }

  enqueued(jobs: readonly JobRecord[]): void {
    if (this.#logger.levelVal > this.#level) return;
    for (const job of jobs) this.#routine(jobFields(job), 'job enqueued');
  }

  started(jobs: readonly JobRecord[]): void {
    if (this.#logger.levelVal > this.#level) return;
    for (const job of jobs) {
      const fields = jobFields(job);
      fields['ojs.job.attempt'] = job.attempt;
      fields['ojs.worker.id'] = job.worker_id;
      if (job.attempt === 1) {
        fields.queue_time_ms = elapsedMs(job.scheduled_at ?? job.enqueued_at, job.started_at);
      }
      this.#routine(fields, 'job started');
    }
  }

  #routine(fields: Record<string, unknown>, msg: string): void {
    if (this.#level === INFO) this.#logger.info(fields, msg);
    else this.#logger.debug(fields, msg);
  }

  settled(job: JobRecord, expired: boolean): void {
    const [level, msg] = lineFor(job, expired);
    const routine = level === 'info';
    if (this.#logger.levelVal > (routine ? this.#level : WARN)) return;
    const fields = jobFields(job);
    fields['ojs.job.attempt'] = job.attempt;
    fields.duration_ms = elapsedMs(job.started_at, finishedAt(job));
    if (job.error !== undefined && job.state !== 'completed') {
      // The error's code and type, not its message: messages may quote args.
      fields.error_code = job.error.code;
      fields.error_type = job.error.type;
    }
    this.#logger[routine && this.#level !== INFO ? 'debug' : level](fields, msg);
  }
}

/**
 * Background failures during an outage (every 100 ms per service) are
 * logged once, then summarised every `intervalMs` with how many were
 * suppressed, and the recovery is logged when the service works again.
 */
export class ErrorThrottle {
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #failing = new Map<string, { since: number; lastLogged: number; suppressed: number }>();

  readonly #now: () => number;

  constructor(logger: Logger, intervalMs = 30_000, now: () => number = Date.now) {
    this.#logger = logger;
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  failed(key: string, error: unknown, msg = 'background task failed'): void {
    const now = this.#now();
    const state = this.#failing.get(key);
    if (state === undefined) {
      this.#failing.set(key, { since: now, lastLogged: now, suppressed: 0 });
      this.#logger.error({ task: key, err: error }, msg);
      return;
    }
    if (now - state.lastLogged < this.#intervalMs) {
      state.suppressed++;
      return;
    }
    this.#logger.error(
      { task: key, err: error, failing_for_ms: now - state.since, suppressed: state.suppressed },
      `${msg} (still failing)`,
    );
    state.lastLogged = now;
    state.suppressed = 0;
  }

  /** Cheap when nothing is failing: one Map size check. */
  succeeded(key: string): void {
    if (this.#failing.size === 0) return;
    const state = this.#failing.get(key);
    if (state === undefined) return;
    this.#failing.delete(key);
    this.#logger.warn(
      { task: key, failed_for_ms: this.#now() - state.since, suppressed: state.suppressed },
      'background task recovered',
    );
  }
}
