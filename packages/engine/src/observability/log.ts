/**
 * Structured logs (http-binding §16.4): one pino logger, injected from the
 * server into the engine, its services and the stores. Job lifecycle lines
 * carry the job's id, type, queue, state, attempt and duration, never its
 * args, result or meta (they may hold personal data).
 */
import type { JobRecord } from '@ojs/core';
import { type Logger, pino } from 'pino';
import { Elapsed, finishedAt, type JobObserver } from './lifecycle.ts';

export type { Logger };

/** A logger that writes nothing: the engine's default when none is injected. */
export const silentLogger: Logger = pino({ level: 'silent' });

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

const LEVEL_VALUES = { debug: 20, info: 30, warn: 40, error: 50 } as const;
type LineLevel = keyof typeof LEVEL_VALUES;

/**
 * Logs every lifecycle change of a job. The routine lines (enqueued,
 * started, completed: three per job) are written at `routine` level; the
 * others at the spec's level whatever `routine` is: failed (warn),
 * discarded (error), lease expired and requeued (warn), cancelled (info).
 * `ojs serve` writes the routine lines at debug (decision 0051: at info
 * they cost more than 10% of the hot path's throughput).
 */
export class LifecycleLog implements JobObserver {
  readonly #logger: Logger;
  readonly #routine: 'info' | 'debug';
  readonly #queueTimeMs = new Elapsed();
  readonly #durationMs = new Elapsed();

  constructor(logger: Logger, routine: 'info' | 'debug' = 'info') {
    this.#logger = logger;
    this.#routine = routine;
  }

  enqueued(jobs: readonly JobRecord[]): void {
    if (this.#logger.levelVal > LEVEL_VALUES[this.#routine]) return;
    for (const job of jobs) this.#logger[this.#routine](jobFields(job), 'job enqueued');
  }

  started(jobs: readonly JobRecord[]): void {
    if (this.#logger.levelVal > LEVEL_VALUES[this.#routine]) return;
    for (const job of jobs) {
      const fields = jobFields(job);
      fields['ojs.job.attempt'] = job.attempt;
      fields['ojs.worker.id'] = job.worker_id;
      if (job.attempt === 1) {
        fields.queue_time_ms = this.#queueTimeMs.ms(
          job.scheduled_at ?? job.enqueued_at,
          job.started_at,
        );
      }
      this.#logger[this.#routine](fields, 'job started');
    }
  }

  settled(job: JobRecord, expired: boolean): void {
    const [spec, msg] = lineFor(job, expired);
    const level: LineLevel = job.state === 'completed' ? this.#routine : spec;
    if (this.#logger.levelVal > LEVEL_VALUES[level]) return;
    const fields = jobFields(job);
    fields['ojs.job.attempt'] = job.attempt;
    fields.duration_ms = this.#durationMs.ms(job.started_at, finishedAt(job));
    if (job.error !== undefined && job.state !== 'completed') {
      // The error's code and type, not its message: messages may quote args.
      fields.error_code = job.error.code;
      fields.error_type = job.error.type;
    }
    this.#logger[level](fields, msg);
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
