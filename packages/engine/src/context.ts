/**
 * What the engine's services (cron.ts, event-tail.ts, job-admin.ts,
 * queue-settings.ts, retention.ts, routing.ts, schemas.ts, services.ts,
 * workers.ts) use of the engine: the store, the clock, the wake-ups of
 * waiting fetches, the job observers, the settings cache, the background
 * error log and the guarded read-decide-commit of one job. The `Engine`
 * class (engine.ts) builds the services and hands itself over as this
 * interface, so the services never import engine.ts and the imports point
 * one way (decision 0092). A service that needs another service names it
 * in its own context type (e.g. `CronContext`).
 */
import type { JobRecord, OjsEvent, Store } from '@ojs/core';
import type { Notifier } from './notifier.ts';
import type { JobObservers } from './observability/lifecycle.ts';
import type { ErrorThrottle } from './observability/log.ts';
import type { SettingsCache } from './settings-cache.ts';

export interface EngineContext {
  readonly store: Store;
  /** The engine's clock (the store's, when it has one). */
  now(): number;
  /** Default visibility timeout of a job. */
  readonly visibilityTimeoutMs: number;
  /** Wakes the fetches waiting in this process. */
  readonly notifier: Notifier;
  /** Who learns of each committed job change: logs, metrics, traces. */
  readonly observers: JobObservers;
  /** Settings read on every enqueue (schemas, routing rules), cached briefly. */
  readonly settings: SettingsCache;
  /** Background failures, logged once per outage and then summarised. */
  readonly errors: ErrorThrottle;
  /**
   * Read-decide-commit of one job, retried on a stale guard (admin actions,
   * progress); a workflow job's advancement joins the commit.
   */
  transitionJob(
    id: string,
    decide: (job: JobRecord, now: number) => { job: JobRecord; events: OjsEvent[] },
  ): Promise<{ before: JobRecord; after: JobRecord }>;
}

/** What a heartbeat tells a worker to do. */
export type WorkerDirective = 'running' | 'quiet' | 'terminate';
