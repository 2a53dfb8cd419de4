/**
 * Background services with start/stop: the promoter (due scheduled and
 * retryable jobs, expiry), the lease reaper (visibility and execution
 * timeouts), the event pruner and the retention pruner (retention.ts).
 * Each runs on its own timer, never overlapping itself, and a failing tick
 * is logged and retried on the next one: a store outage must not crash the
 * server.
 */
import type { Store } from '@ojs/core';
import type { EngineContext } from './context.ts';
import type { CronScheduler } from './cron.ts';
import type { RetentionPruner } from './retention.ts';

export interface ServiceIntervals {
  promoteMs: number;
  reapMs: number;
  pruneMs: number;
  /** Cron evaluation; the spec forbids evaluating more than once per second. */
  cronMs: number;
  /** The retention pruner (finished jobs past their retention). */
  retentionMs: number;
}

const DEFAULT_INTERVALS: ServiceIntervals = {
  promoteMs: 100,
  reapMs: 100,
  pruneMs: 60_000,
  cronMs: 1000,
  retentionMs: 5000,
};

export type ServiceErrorHandler = (service: string, error: unknown) => void;

/**
 * Events deleted per store call. One DELETE of every event beyond the
 * retention held SQLite's write lock for seconds after a burst (a
 * 1,000,000-job fill leaves ~900,000 events to prune: claims stalled for
 * seconds in the bench's backlog phase, and the WAL and RSS grew by
 * hundreds of MiB); in steps, other writes run between them.
 */
export const EVENT_PRUNE_STEP = 5_000;

/** Prunes the event log down to `keep` in steps of EVENT_PRUNE_STEP; stops early when `stopped()`. */
export async function pruneEventsInSteps(
  store: Pick<Store, 'pruneEvents'>,
  keep: number,
  stopped: () => boolean = () => false,
): Promise<number> {
  let total = 0;
  for (;;) {
    const removed = await store.pruneEvents(keep, EVENT_PRUNE_STEP);
    total += removed;
    if (removed < EVENT_PRUNE_STEP || stopped()) return total;
  }
}

class Ticker {
  readonly #name: string;
  readonly #intervalMs: number;
  readonly #tick: (stopped: () => boolean) => Promise<unknown>;
  readonly #onError: ServiceErrorHandler;
  readonly #onSuccess: (service: string) => void;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = true;

  constructor(
    name: string,
    intervalMs: number,
    tick: (stopped: () => boolean) => Promise<unknown>,
    onError: ServiceErrorHandler,
    onSuccess: (service: string) => void,
  ) {
    this.#onSuccess = onSuccess;
    this.#name = name;
    this.#intervalMs = intervalMs;
    this.#tick = tick;
    this.#onError = onError;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#tick(() => this.#stopped)
        .then(() => this.#onSuccess(this.#name))
        .catch((error: unknown) => this.#onError(this.#name, error))
        .finally(() => {
          this.#running = undefined;
          this.#schedule();
        });
    }, this.#intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }
}

/** What the background services run: the engine's time-driven operations and pruners. */
export interface ServicesContext extends Pick<EngineContext, 'store' | 'errors'> {
  promoteDueJobs(): Promise<number>;
  expireLeases(): Promise<number>;
  readonly cron: Pick<CronScheduler, 'tick'>;
  readonly retention: Pick<RetentionPruner, 'tick'>;
  /** The webhooks' fan-out reads the event log: pruned only once it has read it (webhooks/service.ts). */
  readonly webhooks: { eventsConsumed(withinMs: number): Promise<boolean> };
}

export class BackgroundServices {
  readonly #tickers: Ticker[];

  constructor(
    engine: ServicesContext,
    intervals: Partial<ServiceIntervals> = {},
    eventRetention: number,
    // A store outage fails every tick (10 a second per service): logged once
    // per outage and summarised, through the engine's logger (log.ts).
    onError: ServiceErrorHandler = (service, error) =>
      engine.errors.failed(service, error, `${service} tick failed`),
  ) {
    const every = { ...DEFAULT_INTERVALS, ...intervals };
    const onSuccess = (service: string) => engine.errors.succeeded(service);
    this.#tickers = [
      new Ticker('promoter', every.promoteMs, () => engine.promoteDueJobs(), onError, onSuccess),
      new Ticker('lease-reaper', every.reapMs, () => engine.expireLeases(), onError, onSuccess),
      new Ticker('cron', every.cronMs, () => engine.cron.tick(), onError, onSuccess),
      new Ticker(
        'event-pruner',
        every.pruneMs,
        async (stopped) => {
          // The newest `eventRetention` events are kept: what a fan-out that
          // reached the head a moment ago has not read yet is among them.
          if (!(await engine.webhooks.eventsConsumed(every.pruneMs))) return 0;
          return pruneEventsInSteps(engine.store, eventRetention, stopped);
        },
        onError,
        onSuccess,
      ),
      new Ticker('retention', every.retentionMs, () => engine.retention.tick(), onError, onSuccess),
    ];
  }

  start(): void {
    for (const ticker of this.#tickers) ticker.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.#tickers.map((t) => t.stop()));
  }
}
